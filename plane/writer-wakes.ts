/**
 * Waking writers' feeds (writer-changes.ts) by the runs that changed, not by
 * the project: a project's change wakes only the long polls of the writers
 * whose feed may hold it, so what one commit costs the plane does not grow
 * with the project's writers.
 *
 * Per project, while any writer's poll of it waits in this process, one
 * watcher reads the project's changes committed since the newest it read
 * (`seen`) and which writers they concern, and wakes those writers' polls. It
 * reads at once when this process commits changes of the project (the change
 * feed's `announce`), and every FEED_RECHECK_MS for those of other plane
 * processes. A change concerns:
 * - every writer, when it is a deletion or its run has a decision recorded at
 *   the plane (the writer feed serves those to all: writer-changes.ts);
 * - else each writer in touch with its run (`run_contacts`) or owning it
 *   (`run_owners`), but the writer of its newest row while its pause is
 *   unclaimed or claimed by that writer (its own change, which its feed skips).
 * That is at least every writer whose feed holds the change, so no poll
 * misses one; a writer woken for a change its feed then skips reads one page
 * and waits on.
 *
 * What changes who a change concerns without stamping a new change (a
 * decision recorded for a run, a restore's contact, an owner row) does not
 * wake a poll: its feed serves the entry on its next page (at the latest at
 * its deadline), as it did before this watcher.
 *
 * A read takes at most WATCH_SCAN changes, then reads on. A read that fails
 * wakes every poll of the project (each then reads its own page).
 *
 * Never missed: a poll subscribes (and, for a project's first poll, the
 * watcher reads `seen`) before it reads its first page, so a change committed
 * before is in that page and one committed after has a seq above `seen` (a
 * project's change seqs commit in order: clocks.ts), which the watcher's next
 * read finds. `seen` moves only when a read succeeds.
 */
import { sql } from 'drizzle-orm';
import { newestChange } from './changes.js';
import { type PlaneDb, rowsOf } from './db/open.js';
import { FEED_RECHECK_MS, feedSignal } from './long-poll.js';

/** The project's changes one read of the watcher takes at most; a full read is followed by another at once. */
export const WATCH_SCAN = 1000;

interface Watcher {
  /** The newest change seq read. */
  seen: number;
  /** Wake-ups of the waiting polls, by writer. */
  polls: Map<string, Set<() => void>>;
  timer: NodeJS.Timeout | undefined;
  /** A read in progress, and whether another was asked for meanwhile. */
  reading: boolean;
  again: boolean;
  /** This process's commits of the project's changes. */
  onAnnounce: (projectId: string) => void;
}

const watchers = new WeakMap<object, Map<string, Promise<Watcher>>>();

/** The writers a project's changes after `after` concern (see above), and the newest change seq read. */
async function concerned(
  db: PlaneDb,
  projectId: string,
  after: number,
): Promise<{ newest: number | null; full: boolean; everyone: boolean; writers: string[] }> {
  // every table says project_id = the project: one shard per statement (test/plane/shard-routing.test.ts)
  const got = await db.execute(sql`
    WITH ch AS MATERIALIZED (
      SELECT * FROM (
        (SELECT e.execution_id, e.change_seq, false AS deleted, e.writer_id AS last_writer_id, p.claimed_by
         FROM executions e
         LEFT JOIN pending_interrupts p ON p.project_id = ${projectId} AND p.execution_id = e.execution_id
         WHERE e.project_id = ${projectId} AND e.change_seq > ${after}
         ORDER BY e.change_seq LIMIT ${WATCH_SCAN})
        UNION ALL
        (SELECT t.execution_id, t.change_seq, true, NULL, NULL
         FROM execution_tombstones t
         WHERE t.project_id = ${projectId} AND t.change_seq > ${after}
         ORDER BY t.change_seq LIMIT ${WATCH_SCAN})
      ) u ORDER BY change_seq LIMIT ${WATCH_SCAN}
    ),
    touched AS (
      SELECT ch.*, c.writer_id FROM ch
      JOIN run_contacts c ON c.project_id = ${projectId} AND c.execution_id = ch.execution_id
      UNION
      SELECT ch.*, o.writer_id FROM ch
      JOIN run_owners o ON o.project_id = ${projectId} AND o.execution_id = ch.execution_id
    )
    SELECT
      (SELECT max(change_seq) FROM ch) AS newest,
      (SELECT count(*) FROM ch) AS scanned,
      (SELECT coalesce(bool_or(ch.deleted OR EXISTS (
         SELECT 1 FROM decisions d WHERE d.project_id = ${projectId} AND d.execution_id = ch.execution_id)), false)
       FROM ch) AS everyone,
      (SELECT coalesce(json_agg(DISTINCT writer_id), '[]'::json) FROM touched
       WHERE NOT (coalesce(last_writer_id = writer_id, false) AND coalesce(claimed_by, writer_id) = writer_id)) AS writers`);
  const [row] = rowsOf<{
    newest: string | number | null;
    scanned: string | number;
    everyone: boolean;
    writers: string[] | string;
  }>(got);
  const writers = typeof row.writers === 'string' ? (JSON.parse(row.writers) as string[]) : row.writers;
  return {
    newest: row.newest == null ? null : Number(row.newest),
    full: Number(row.scanned) >= WATCH_SCAN,
    everyone: row.everyone,
    writers,
  };
}

function read(db: PlaneDb, projectId: string, w: Watcher): void {
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
        const c = await concerned(db, projectId, w.seen);
        if (c.newest === null || c.newest <= w.seen) continue;
        w.seen = c.newest;
        // more than one read's worth committed: read on at once
        if (c.full) w.again = true;
        woken = c.everyone ? [...w.polls.values()] : c.writers.flatMap((x) => w.polls.get(x) ?? []);
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
 * Wake `wake` when a change of the project concerns `writerId` (see above);
 * resolves once it is watched, with the call that stops it.
 */
export async function wakeWriter(
  db: PlaneDb,
  projectId: string,
  writerId: string,
  wake: () => void,
): Promise<() => void> {
  const byProject = watchers.get(db) ?? new Map<string, Promise<Watcher>>();
  watchers.set(db, byProject);
  let made = byProject.get(projectId);
  if (!made) {
    made = (async (): Promise<Watcher> => {
      const w: Watcher = {
        seen: (await newestChange(db, projectId)) ?? 0,
        polls: new Map(),
        timer: undefined,
        reading: false,
        again: false,
        onAnnounce: (p) => {
          if (p === projectId) read(db, projectId, w);
        },
      };
      feedSignal(db).on('changes', w.onAnnounce);
      const tick = () => {
        read(db, projectId, w);
        w.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
      };
      w.timer = setTimeout(tick, FEED_RECHECK_MS).unref();
      return w;
    })();
    byProject.set(projectId, made);
    // a watcher that could not start is not kept: the next poll makes another
    made.catch(() => {
      if (byProject.get(projectId) === made) byProject.delete(projectId);
    });
  }
  const w = await made;
  // the project's last poll left while this one waited for the watcher to start: start another
  if (byProject.get(projectId) !== made) return wakeWriter(db, projectId, writerId, wake);
  const mine = w.polls.get(writerId) ?? new Set<() => void>();
  w.polls.set(writerId, mine);
  mine.add(wake);
  return () => {
    mine.delete(wake);
    if (!mine.size && w.polls.get(writerId) === mine) w.polls.delete(writerId);
    if (w.polls.size || byProject.get(projectId) !== made) return;
    // the project's last waiting poll left: the watcher stops
    clearTimeout(w.timer);
    feedSignal(db).off('changes', w.onAnnounce);
    byProject.delete(projectId);
  };
}

/** The writer-feed watchers of a database in this process: the newest change seq each has read, by project (for tests: none when no poll waits). */
export async function writerWakesOf(db: PlaneDb): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [projectId, w] of watchers.get(db) ?? []) out.set(projectId, (await w).seen);
  return out;
}
