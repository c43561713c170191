/**
 * A key revoked while a replica only follows the plane's feeds (a decision
 * worker with nothing left to drain) is said at once: the replica goes
 * `auth_failed` with the plane's 401 as its last error, its 'state' event
 * fires and `waymark sync status` reads it from the store. Before, the worker
 * heard nothing, its status said `idle` with no error, and the decisions made
 * on the plane were never applied. A replaced key starts it again. A key that
 * lacks a feed's scope (403: an ingest-only key) is not refused for draining.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane, type Replica } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createKey, revokeKey } from '../../plane/auth.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pollUntil } from '../helpers/plane-process.js';
import { step } from '../helpers/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-feed-key-');
let plane: TestPlane;
beforeAll(async () => {
  plane = await startTestPlane('pglite');
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const fast = {
  pollMs: 0,
  debounceMs: 5,
  timeoutMs: 5000,
  decisionWaitSeconds: 1,
  changeWaitSeconds: 1,
  backoffBaseMs: 50,
  backoffCapMs: 200,
};

describe('a key refused to a replica that only follows the feeds', () => {
  it('revoked: auth_failed at once, with the 401, noted for sync status; a new key starts it again', async () => {
    const k = await createKey(plane.database.db, { createProject: true, project: 'feeds', scopes: ['ingest', 'read'] });
    const store = new SqliteCheckpointer({ path: tmp.file('worker.db') });
    let replica: Replica | null = null;
    try {
      replica = connectPlane(store, { url: plane.url, apiKey: k.key, ...fast });
      const unfollow = replica.followDecisions();
      const states: string[] = [];
      replica.on('state', (s) => states.push(s));
      await replica.flush({ timeoutMs: 10_000 });
      expect((await replica.status()).state).toBe('idle');
      await revokeKey(plane.database.db, k.id);
      // the outbox is empty: only the feeds ask the plane now
      await pollUntil(async () => (await replica!.status()).state === 'auth_failed', 60_000);
      const status = await replica.status();
      expect(status.lastError).toMatch(/401/);
      expect(states).toContain('auth_failed');
      // what `waymark sync status` reads in another process
      await pollUntil(async () => JSON.parse((await store.getMeta('drain')) ?? '{}').state === 'auth_failed', 10_000);
      expect(JSON.parse((await store.getMeta('drain'))!).lastError).toMatch(/401/);

      const fresh = await createKey(plane.database.db, { project: 'feeds', scopes: ['ingest', 'read'] });
      replica.setApiKey(fresh.key);
      await store.put(step('after-new-key', 0));
      await replica.flush({ timeoutMs: 10_000 });
      expect((await replica.status()).pendingRows).toBe(0);
      expect((await replica.status()).state).not.toBe('auth_failed');
      unfollow();
    } finally {
      await replica?.stop();
      await store.close();
    }
  }, 120_000);

  it('an ingest-only key, refused the feeds (403), still drains: the replica is not auth_failed', async () => {
    const k = await createKey(plane.database.db, { project: 'feeds', scopes: ['ingest'] });
    const store = new SqliteCheckpointer({ path: tmp.file('ingest-only.db') });
    const replica = connectPlane(store, { url: plane.url, apiKey: k.key, ...fast });
    try {
      const unfollow = replica.followDecisions();
      // rounds of both feeds refused 403, several times over
      await new Promise((r) => setTimeout(r, 1500));
      await store.put(step('ingest-only', 0));
      await replica.flush({ timeoutMs: 10_000 });
      const status = await replica.status();
      expect({ state: status.state, pendingRows: status.pendingRows }).toEqual({ state: 'idle', pendingRows: 0 });
      unfollow();
    } finally {
      await replica.stop();
      await store.close();
    }
  }, 60_000);
});
