/**
 * The decision worker reads one page of the plane's open run requests per
 * pass, keeping a cursor, and starts again from the first after the last page:
 * requests no worker holds stay open without making every poll read them all.
 * Real plane (PGlite, HTTP), SQLite files; the worker's HTTP requests counted
 * by an undici interceptor.
 */
import { Agent as HttpAgent, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, connectPlane, ScriptedModel, serveDecisions } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-requests-paging-');
let plane: TestPlane;
let key = '';
let operator = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('paging', ['ingest', 'read']);
  operator = await plane.key('paging', ['operate']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const failing = () =>
  new ScriptedModel(() => {
    throw Object.assign(new Error('upstream 500'), { code: 'MODEL_ERROR' });
  });

describe('the worker’s listing of open requests', () => {
  it('one page per pass, the cursor moving on and starting again after the last page', async () => {
    const lists: { at: number; after: string | null; items: number }[] = [];
    const dispatcher = new HttpAgent().compose((dispatch) => (opts, handler) => {
      const path = String(opts.path);
      if (path.startsWith('/v1/requests?'))
        lists.push({ at: Date.now(), after: new URL(path, 'http://x').searchParams.get('after'), items: 0 });
      return dispatch(opts, handler);
    }) as Dispatcher;
    const a = new SqliteCheckpointer({ path: tmp.file('a.db') });
    const ra = connectPlane(a, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 5,
      followChanges: false,
      dispatcher,
    });
    const agentA = new Agent({ name: 'bot', model: failing(), checkpointer: a });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      await agentA.run('hello', { executionId: `page-${i}` });
    }
    await ra.flush({ timeoutMs: 10_000 });
    for (let i = 0; i < 5; i++) {
      const r = await call(`${plane.url}/v1/executions/page-${i}/requests`, {
        key: operator,
        json: { action: 'retry' },
      });
      expect(r.status).toBe(201);
      ids.push(r.body.requestId);
    }

    // the machine's worker, whose application takes none of these runs (no agent for them): they stay open
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 1500);
    const summary = await serveDecisions({
      agentFor: () => null,
      agentForRequest: () => null,
      store: a,
      replica: ra,
      signal: stop.signal,
      pollMs: 50,
      pageSize: 2,
    });
    clearTimeout(timer);
    await ra.stop();
    await a.close();
    expect(summary.requests.applied).toBe(0);
    // a pass asks once: never two listings back to back
    expect(lists.length).toBeGreaterThan(4);
    for (let i = 1; i < lists.length; i++) expect(lists[i].at - lists[i - 1].at).toBeGreaterThanOrEqual(40);
    // the cursor moves on (pages of 2 of 5: from the start, twice on, then from the start again)
    expect(lists.slice(0, 4).map((l) => l.after === null)).toEqual([true, false, false, true]);
  }, 60_000);
});
