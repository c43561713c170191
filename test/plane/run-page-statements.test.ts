/**
 * What one GET of a run's page in the plane's inspector costs its database, counted: the SQL statements it sends,
 * traced on its PGlite (bench/lib/sql-trace.ts). Each statement crosses PGlite's protocol layer, which is most of
 * the page's server time, so the page reads each part of a run once, reads none of the parts a run has none of
 * (holes, takeovers, claim conflicts, quarantined rows, decisions), and no part row by row. The bound is a count of
 * statements, not a time: a read added per part or per row shows here on any machine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLongRun } from '../../bench/lib/long-run.js';
import { traceSql } from '../../bench/lib/sql-trace.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { takeEvents } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-run-page-statements-');
/**
 * The most statements one GET of a run's page sends: the session (1), the frame's approvals count and writer names
 * (2), the run's summary with which parts it has (1), the timeline's page (1), the diff's two states (2), the
 * idempotency entries' page (1), the pause with its claim (1) and a resumed pause's answer (2), the usage (1) and
 * the fork links (1). 13; one more for a hole, a takeover or the like would still pass, a read per part would not.
 */
const MAX_STATEMENTS = 14;
let store: SqliteCheckpointer;
let plane: TestPlane;
let cookie = '';

beforeAll(async () => {
  store = new SqliteCheckpointer({ path: tmp.file('laptop.db'), writerId: 'laptop' });
  // a supervisor's model and tool calls, a delegated worker with idempotent charges, and a pause it was resumed from
  await writeLongRun(store, 'long-run', 120);
  plane = await startTestPlane('pglite');
  const ingest = await plane.key('acme', ['ingest']);
  const events = await takeEvents(store);
  const r = await call(`${plane.url}/v1/ingest`, {
    key: ingest,
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
  await store?.close();
  tmp.cleanup();
});

describe("a run's page on the plane", () => {
  it(`sends at most ${MAX_STATEMENTS} SQL statements for a run of 120 rows, and shows the run`, async () => {
    const get = async () => {
      const res = await fetch(`${plane.url}/runs/long-run`, { headers: { cookie } });
      return { status: res.status, html: await res.text() };
    };
    await get();
    const trace = traceSql(plane.database.db);
    let page: Awaited<ReturnType<typeof get>>;
    try {
      page = await get();
    } finally {
      trace.stop();
    }
    expect(page.status).toBe(200);
    // what the reads fed: the timeline, the resumed pause's answer, the idempotency entries
    expect(page.html).toContain('id="timeline-h"');
    expect(page.html).toContain('data-testid="pause-stand"');
    expect(page.html).toMatch(/id="idem-h">Idempotency entries<\/h2><(table|div|p class="muted">(?!None))/);
    const statements = trace.statements.map((s) => s.sql.replace(/\s+/g, ' ').slice(0, 160));
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(MAX_STATEMENTS);
  });
});
