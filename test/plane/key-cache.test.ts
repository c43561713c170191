/**
 * A plane process reuses a key's row for KEY_CACHE_MS (plane/auth.ts): requests with a key it read moments ago
 * send no statement on `api_keys` (counted by the plane's own statement hook, plane/db/open.ts `StatementTrace`),
 * and a revocation is still refused within the bound every plane promises (1 s): at once when made through the
 * same plane, within KEY_CACHE_MS when made through another handle on the database, as another plane process
 * makes it (test/plane/one-process.test.ts checks that with two plane processes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEY_CACHE_MS, revokeKey } from '../../plane/auth.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { call, openTestPlaneDatabase, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { refusedWithin } from '../helpers/plane-process.js';

const ready = await pgReady('key cache');
const idOf = (key: string) => key.slice(3, 19);

describe.skipIf(!ready)('the key cache: a key read once per KEY_CACHE_MS, revocations refused within it', () => {
  let db: TestDatabase;
  let plane: TestPlane;
  /** Another handle on the plane's database, with a cache of its own: what another plane process holds. */
  let other: PlaneDatabase;
  const sent: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase('waymark_key_cache');
    plane = await startTestPlane({ url: db.url }, { trace: { logQuery: (sql) => sent.push(sql) } });
    other = await openTestPlaneDatabase({ url: db.url });
  }, 60_000);
  afterAll(async () => {
    await other?.close();
    await plane?.close();
    await db?.drop();
  });

  it('answers requests with a key read moments ago without reading the key again', async () => {
    const key = await plane.key('alpha', ['read']);
    // from before the first request's read of the key: its row is reused until KEY_CACHE_MS after that
    const t0 = performance.now();
    expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
    sent.length = 0;
    for (let i = 0; i < 20; i++) expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
    const elapsed = performance.now() - t0;
    const keyReads = sent.filter((s) => /"api_keys"/.test(s));
    // the routes' own statements were seen: the hook was on
    expect(sent.length).toBeGreaterThanOrEqual(20);
    // one read per KEY_CACHE_MS at most (a machine that stalls the 20 requests past it reads the key again), and
    // fewer reads than requests whatever the bound says
    expect(keyReads.length, `${keyReads.length} key reads in ${Math.round(elapsed)} ms`).toBeLessThanOrEqual(
      Math.min(19, Math.floor(elapsed / KEY_CACHE_MS)),
    );
  });

  it('refuses a key revoked through this plane from its next request on', async () => {
    const key = await plane.key('alpha', ['read']);
    expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
    expect(await revokeKey(plane.database.db, idOf(key))).toBe(true);
    expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(401);
  });

  it(`refuses a key revoked through another handle within KEY_CACHE_MS (${KEY_CACHE_MS} ms), inside the 1 s promised`, async () => {
    expect(KEY_CACHE_MS).toBeLessThan(1000);
    const key = await plane.key('alpha', ['read']);
    expect((await call(`${plane.url}/v1/executions`, { key })).status).toBe(200);
    expect(await revokeKey(other.db, idOf(key))).toBe(true);
    // every request sent KEY_CACHE_MS or more after the revocation committed is refused
    const answers = await refusedWithin(
      async () => (await call(`${plane.url}/v1/executions`, { key })).status,
      performance.now(),
      KEY_CACHE_MS,
    );
    console.log(`revoked through another handle: ${JSON.stringify(answers)}`);
  });
});
