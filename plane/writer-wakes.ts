/**
 * Waking writers' feeds (GET /v1/writer-changes: writer-changes.ts; GET
 * /v1/writer-decisions: writer-decisions.ts) by the runs their entries are
 * about, not by the project: a project's change or decision wakes only the
 * long polls of the writers whose feed may hold it, so what one commit costs
 * the plane does not grow with the project's writers.
 *
 * Per feed and project, while any writer's poll of it waits in this process,
 * one watcher reads the feed's entries committed since the newest it read
 * (`seen`) and which writers they concern (the feed's `WakeSource`), and
 * wakes those writers' polls. It reads at once when this process commits
 * entries of the project (the feed's `announce`), and every FEED_RECHECK_MS
 * for those of other plane processes. An entry concerns:
 * - every writer, when the source says so (a deletion: a writer's change
 *   feed serves every deletion);
 * - the writers the source names (in touch with its run, or owning it);
 * - and the polls that asked for runs with a decision (`decided`), when its
 *   run has a decision recorded at the plane.
 * That is at least every writer whose feed holds the entry, so no poll
 * misses one; a writer woken for an entry its feed then skips reads one page
 * and waits on.
 *
 * What changes who an entry concerns without stamping a new one (a decision
 * recorded for a run, a restore's contact, an owner row) does not wake a
 * poll: its feed serves the entry on its next page (at the latest at its
 * deadline), as it did before this watcher.
 *
 * A read takes at most WATCH_SCAN entries, then reads on. A read that fails
 * wakes every poll of the project (each then reads its own page).
 *
 * Never missed: a poll subscribes (and, for a project's first poll, the
 * watcher reads `seen`) before it reads its first page, so an entry committed
 * before is in that page and one committed after has a seq above `seen` (a
 * feed's seqs commit in order per project: clocks.ts), which the watcher's
 * next read finds. `seen` moves only when a read succeeds.
 */
import { type PlaneDb, rowsOf } from './db/open.js';
import { FEED_RECHECK_MS, feedSignal } from './long-poll.js';

/** A feed's entries one read of the watcher takes at most; a full read is followed by another at once. */
export const WATCH_SCAN = 1000;

/** Whom a feed's entries after a seq concern (see above), and the newest seq read. */
export interface Concerned {
  newest: number | null;
  /** WATCH_SCAN entries were read: more may follow. */
  full: boolean;
  /** An entry concerns every writer. */
  everyone: boolean;
  /** An entry is of a run with a decision recorded at the plane (wakes the polls that asked for those). */
  decided: boolean;
  writers: string[];
}

/** What a writer feed's watcher reads: the feed's `announce` channel, its newest seq, and whom its entries concern. */
export interface WakeSource {
  feed: string;
  newest(db: PlaneDb, projectId: string): Promise<number | null>;
  /** Whom the project's entries after `after` concern, reading at most WATCH_SCAN of them. */
  concerned(db: PlaneDb, projectId: string, after: number): Promise<Concerned>;
}

/** A `concerned` statement's one row: the newest seq read, how many were read, and the writers (a JSON array). */
type ConcernedRow = {
  newest: string | number | null;
  scanned: string | number;
  everyone?: boolean;
  decided?: boolean;
  writers: string[] | string;
};

/** What a `concerned` statement answered (its one row, as ConcernedRow names its columns). */
export function concernedOf(got: unknown): Concerned {
  const [row] = rowsOf<ConcernedRow>(got);
  return {
    newest: row.newest == null ? null : Number(row.newest),
    full: Number(row.scanned) >= WATCH_SCAN,
    everyone: row.everyone === true,
    decided: row.decided === true,
    writers: typeof row.writers === 'string' ? (JSON.parse(row.writers) as string[]) : row.writers,
  };
}

interface Watcher {
  /** The newest seq read. */
  seen: number;
  /** Wake-ups of the waiting polls, by writer. */
  polls: Map<string, Set<() => void>>;
  /** The waiting polls that asked for runs with a decision too. */
  decided: Set<() => void>;
  timer: NodeJS.Timeout | undefined;
  /** A read in progress, and whether another was asked for meanwhile. */
  reading: boolean;
  again: boolean;
  /** This process's commits of the project's entries. */
  onAnnounce: (projectId: string) => void;
}

/** The watchers of a database, by feed and project. */
const watchers = new WeakMap<object, Map<string, Promise<Watcher>>>();

const watcherKey = (feed: string, projectId: string) => `${feed}\u0000${projectId}`;

function read(db: PlaneDb, source: WakeSource, projectId: string, w: Watcher): void {
  if (w.reading) {
    w.again = true;
    return;
  }
  w.reading = true;
  void (async () => {
    do {
      w.again = false;
      let woken: Set<() => void>[];
      try {
        const c = await source.concerned(db, projectId, w.seen);
        if (c.newest === null || c.newest <= w.seen) continue;
        w.seen = c.newest;
        // more than one read's worth committed: read on at once
        if (c.full) w.again = true;
        woken = c.everyone ? [...w.polls.values()] : c.writers.flatMap((x) => w.polls.get(x) ?? []);
        if (c.decided && !c.everyone) woken.push(w.decided);
      } catch {
        // a read that failed: every poll is woken and reads its own page, as when woken per project; `seen`
        // stays, and the next read (announce or recheck) asks again
        woken = [...w.polls.values()];
      }
      for (const polls of woken) for (const wake of polls) wake();
    } while (w.again && w.polls.size);
    w.reading = false;
  })();
}

/**
 * Wake `wake` when an entry of `source`'s feed of the project concerns
 * `writerId` (see above), or, with `decided`, is of a run with a decision at
 * the plane; resolves once it is watched, with the call that stops it.
 */
export async function wakeWriter(
  db: PlaneDb,
  source: WakeSource,
  projectId: string,
  writerId: string,
  wake: () => void,
  decided = false,
): Promise<() => void> {
  const all = watchers.get(db) ?? new Map<string, Promise<Watcher>>();
  watchers.set(db, all);
  const key = watcherKey(source.feed, projectId);
  let made = all.get(key);
  if (!made) {
    made = (async (): Promise<Watcher> => {
      const w: Watcher = {
        seen: (await source.newest(db, projectId)) ?? 0,
        polls: new Map(),
        decided: new Set(),
        timer: undefined,
        reading: false,
        again: false,
        onAnnounce: (p) => {
          if (p === projectId) read(db, source, projectId, w);
        },
      };
      feedSignal(db).on(source.feed, w.onAnnounce);
      const tick = () => {
        read(db, source, projectId, w);
        w.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
      };
      w.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
      return w;
    })();
    all.set(key, made);
    // a watcher that could not start is not kept: the next poll makes another
    made.catch(() => {
      if (all.get(key) === made) all.delete(key);
    });
  }
  const w = await made;
  // the project's last poll left while this one waited for the watcher to start: start another
  if (all.get(key) !== made) return wakeWriter(db, source, projectId, writerId, wake, decided);
  const mine = w.polls.get(writerId) ?? new Set<() => void>();
  w.polls.set(writerId, mine);
  mine.add(wake);
  if (decided) w.decided.add(wake);
  return () => {
    mine.delete(wake);
    w.decided.delete(wake);
    if (!mine.size && w.polls.get(writerId) === mine) w.polls.delete(writerId);
    if (w.polls.size || all.get(key) !== made) return;
    // the project's last waiting poll left: the watcher stops
    clearTimeout(w.timer);
    feedSignal(db).off(source.feed, w.onAnnounce);
    all.delete(key);
  };
}

/** The writer-feed watchers of one feed of a database in this process: the newest seq each has read, by project (for tests: none when no poll waits). */
export async function writerWakesOf(db: PlaneDb, feed = 'changes'): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const prefix = watcherKey(feed, '');
  for (const [key, w] of watchers.get(db) ?? [])
    if (key.startsWith(prefix)) out.set(key.slice(prefix.length), (await w).seen);
  return out;
}
