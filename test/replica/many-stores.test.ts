import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { step } from '../helpers/rows.js';

describe('several stores in one process, each connected to its own plane or project', () => {
  let p1: TestPlane;
  let p2: TestPlane;
  beforeAll(async () => {
    [p1, p2] = await Promise.all([startTestPlane('pglite'), startTestPlane('pglite')]);
  });
  afterAll(async () => Promise.all([p1?.close(), p2?.close()]));

  it('keeps every store on its own plane and project, with no shared connection', async () => {
    const a = new SqliteCheckpointer({ path: ':memory:' });
    const b = new SqliteCheckpointer({ path: ':memory:' });
    const c = new SqliteCheckpointer({ path: ':memory:' });
    const keys = {
      a: await p1.key('alpha', ['ingest', 'read']),
      b: await p1.key('beta', ['ingest', 'read']),
      c: await p2.key('gamma', ['ingest', 'read']),
    };
    const ra = connectPlane(a, { url: p1.url, apiKey: keys.a, pollMs: 0 });
    const rb = connectPlane(b, { url: p1.url, apiKey: keys.b, pollMs: 0 });
    const rc = connectPlane(c, { url: p2.url, apiKey: keys.c, pollMs: 0 });
    await a.put(step('only-a', 0));
    await b.put(step('only-b', 0));
    await c.put(step('only-c', 0));
    await Promise.all([ra.flush(), rb.flush(), rc.flush()]);
    const list = async (url: string, key: string) =>
      (await call(`${url}/v1/executions`, { key })).body.items.map((e: { executionId: string }) => e.executionId);
    expect(await list(p1.url, keys.a)).toEqual(['only-a']);
    expect(await list(p1.url, keys.b)).toEqual(['only-b']);
    expect(await list(p2.url, keys.c)).toEqual(['only-c']);
    await Promise.all([ra.stop(), rb.stop(), rc.stop()]);
    await Promise.all([a.close(), b.close(), c.close()]);
  });
});
