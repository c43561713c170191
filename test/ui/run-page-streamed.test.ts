/**
 * A run's page sends its start (the document's head, the nav and the run's summary) before the rest of the run is
 * read, on both UIs that serve it: `waymark ui` over a SQLite store whose idempotency read waits on a gate the test
 * holds, and the plane's inspector on a real Postgres whose idempotency table the test holds locked. The body is read
 * as it arrives over real HTTP on 127.0.0.1: the summary is there while the rest's read still waits, and the whole
 * page follows once it is let go; a store whose reads hold the thread without yielding (SQLite's are synchronous)
 * still lets the start out first. A read that fails after the start is said where the rest would be, and the
 * document still ends.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLongRun } from '../../bench/lib/long-run.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import type { IdempotencyEntry } from '../../shared/rows.js';
import { forkTs, nextMessage } from '../helpers/child.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { takeEvents } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-run-page-streamed-');
const pg = await pgReady('run page streamed');
const RUN = 'long-run';
/** The last thing of a run page's start (the live toggle after the summary). */
const START_ENDS = 'data-testid="live"';

/** A promise the test settles: the store's read waits on it. */
function gate() {
  let open!: () => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { done, open, fail };
}

/** A SQLite store whose idempotency read (the run page reads it after its summary) waits for `hold`, when set. */
class HeldStore extends SqliteCheckpointer {
  hold: ReturnType<typeof gate> | null = null;
  /** Resolves when a read reached the gate. */
  reached = gate();
  override async listIdempotent(executionId: string): Promise<IdempotencyEntry[]> {
    if (this.hold) {
      this.reached.open();
      await this.hold.done;
    }
    return super.listIdempotent(executionId);
  }
}

/** A page fetched over HTTP, its body read only as far as a test asks. */
function openPage(url: string, headers: Record<string, string> = {}) {
  const decoder = new TextDecoder();
  const got = { status: 0, text: '', done: false };
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let pending: Promise<void> | null = null;
  const step = async () => {
    if (!reader) {
      const res = await fetch(url, { headers });
      got.status = res.status;
      reader = res.body!.getReader();
      return;
    }
    const r = await reader.read();
    if (r.done) got.done = true;
    else got.text += decoder.decode(r.value, { stream: true });
  };
  return {
    got,
    /** Read until `s` has arrived (true), or the body ended or `ms` passed without it (false); `s` null: to its end. */
    async until(s: string | null, ms: number): Promise<boolean> {
      const arrived = () => (s === null ? got.done : got.text.includes(s));
      const deadline = Date.now() + ms;
      while (!arrived() && !got.done) {
        pending ??= step().finally(() => {
          pending = null;
        });
        const left = deadline - Date.now();
        if (left <= 0) return false;
        let timer: NodeJS.Timeout | undefined;
        const late = await Promise.race([
          pending.then(() => false),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(resolve, left, true);
          }),
        ]);
        clearTimeout(timer);
        if (late) return false;
      }
      return arrived();
    },
  };
}

/** What a run page's start holds: the head, the nav, the summary; and nothing of the rest. */
function expectStartOnly(text: string) {
  expect(text).toContain(`<title>${RUN} · waymark</title>`);
  expect(text).toContain('<nav aria-label="main">');
  expect(text).toMatch(/<div data-live="summary"><h1>Run <span class="mono">long-run<\/span>/);
  expect(text).not.toContain('id="timeline-h"');
  expect(text).not.toContain('id="idem-h"');
}

/** The whole page, once the rest was read. */
function expectWhole(page: ReturnType<typeof openPage>) {
  expect(page.got.status).toBe(200);
  expect(page.got.done).toBe(true);
  expect(page.got.text).toContain('id="timeline-h"');
  expect(page.got.text).toMatch(/id="idem-h">Idempotency entries<\/h2><p class="muted">(?!None)/);
  expect(page.got.text.trimEnd()).toMatch(/<\/html>$/);
}

let store: HeldStore;
let ui: LocalUi;

beforeAll(async () => {
  store = new HeldStore({ path: tmp.file('laptop.db'), writerId: 'laptop' });
  // model calls (usage in the summary), a delegated worker's idempotent charges (the entries read last), a pause
  await writeLongRun(store, RUN, 60);
  ui = await serveLocalUi(store, { port: 0 });
}, 60_000);
afterAll(async () => {
  await ui?.close();
  await store?.close();
  tmp.cleanup();
});

describe("waymark ui: a run's page", () => {
  it('sends the head, the nav and the summary while the rest is still being read, then the rest', async () => {
    store.hold = gate();
    store.reached = gate();
    const page = openPage(`${ui.url}/runs/${RUN}`);
    try {
      expect(await page.until(START_ENDS, 10_000), 'the start of the page, while the rest waits').toBe(true);
      await store.reached.done;
      expect(page.got.status).toBe(200);
      expectStartOnly(page.got.text);
      // nothing more comes while the read waits
      expect(await page.until('id="idem-h"', 300)).toBe(false);
    } finally {
      store.hold.open();
      store.hold = null;
    }
    expect(await page.until(null, 10_000)).toBe(true);
    expectWhole(page);
  });

  it('a read that fails after the start is said where the rest would be; the status stays and the document ends', async () => {
    store.hold = gate();
    store.reached = gate();
    const page = openPage(`${ui.url}/runs/${RUN}`);
    try {
      expect(await page.until(START_ENDS, 10_000)).toBe(true);
      await store.reached.done;
      store.hold.fail(new WaymarkError(ErrorCode.CORRUPT_ROW, 'the idempotency entries could not be read'));
      expect(await page.until('</html>', 10_000)).toBe(true);
    } finally {
      store.hold = null;
    }
    expect(page.got.status).toBe(200);
    expect(page.got.text).toContain('data-testid="page-stopped"');
    expect(page.got.text).toContain(`The rest of this page could not be read: ${ErrorCode.CORRUPT_ROW}`);
    expect(page.got.text).not.toContain('the idempotency entries could not be read');
    expect(page.got.text.trimEnd()).toMatch(/<\/html>$/);
    // the next load reads the whole page again
    const next = openPage(`${ui.url}/runs/${RUN}`);
    expect(await next.until(null, 10_000)).toBe(true);
    expectWhole(next);
  });
});

describe("waymark ui over a store whose reads hold the thread: a run's page", () => {
  it('writes its start before the rest is read, though the reads never yield to the event loop', async () => {
    // the server in a process of its own: its thread held by a read, a client in this one still takes the bytes
    const child = forkTs(new URL('./run-page-busy-ui.ts', import.meta.url).pathname, [tmp.file('laptop.db'), '1500']);
    try {
      const { url } = await nextMessage<{ url: string }>(child);
      const page = openPage(`${url}/runs/${RUN}`);
      expect(await page.until(START_ENDS, 20_000)).toBe(true);
      const startAt = Date.now();
      expectStartOnly(page.got.text);
      expect(await page.until(null, 20_000)).toBe(true);
      // the start came before the 1.5 s read, not with the rest after it
      expect(Date.now() - startAt).toBeGreaterThan(1000);
      expectWhole(page);
    } finally {
      child.send('close');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 60_000);
});

describe.skipIf(!pg)("the plane's inspector (Postgres): a run's page", () => {
  let db: TestDatabase;
  let plane: TestPlane;
  let cookie = '';
  beforeAll(async () => {
    db = await createTestDatabase('waymark_run_page_streamed');
    plane = await startTestPlane({ url: db.url });
    const events = await takeEvents(store);
    const r = await call(`${plane.url}/v1/ingest`, {
      key: await plane.key('acme', ['ingest']),
      json: { protocol: 1, writerId: store.writerId, rows: events },
    });
    expect([r.status, r.body.rejected]).toEqual([200, 0]);
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key: await plane.key('acme', ['read']), next: '/' }),
    });
    cookie = login.headers.get('set-cookie')!.split(';')[0];
  }, 120_000);
  afterAll(async () => {
    await plane?.close();
    await db?.drop();
  });

  it('sends the head, the nav and the summary while the idempotency table is locked, then the rest', async () => {
    const sql = postgres(db.url, { max: 2, onnotice: () => {} });
    const locked = gate();
    const release = gate();
    // another session holds the table the page's rest reads: its read waits on the lock until this commits
    const holder = sql.begin(async (tx) => {
      await tx`LOCK TABLE idempotency IN ACCESS EXCLUSIVE MODE`;
      locked.open();
      await release.done;
    });
    try {
      await locked.done;
      const page = openPage(`${plane.url}/runs/${RUN}`, { cookie });
      expect(await page.until(START_ENDS, 10_000), 'the start of the page, while the rest waits').toBe(true);
      // the page's read of the table is waiting on the lock
      let waiting = 0;
      for (let i = 0; i < 100 && waiting === 0; i++) {
        [{ n: waiting }] = await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%idempotency%'`;
        if (waiting === 0) await new Promise((r) => setTimeout(r, 50));
      }
      expect(waiting, "the page's read waits on the lock").toBeGreaterThan(0);
      expect(page.got.status).toBe(200);
      expectStartOnly(page.got.text);
      expect(await page.until('id="idem-h"', 300)).toBe(false);
      release.open();
      await holder;
      expect(await page.until(null, 10_000)).toBe(true);
      expectWhole(page);
    } finally {
      release.open();
      await holder.catch(() => {});
      await sql.end({ timeout: 2 });
    }
  });
});
