/**
 * restoreThread brings a thread's own executions from the plane: its root and
 * its subgraph namespaces, never another thread whose id merely starts with
 * `<thread>|` (a thread id may contain `|`). Real plane (PGlite), real SQLite files.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { WaymarkSaver, restoreThread } from '../../client/langgraph/index.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';
import { checkpoint, meta } from '../helpers/graph-checkpoint.js';

const tmp = scratchDir('waymark-lg-restore-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('lg-restore', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

describe('restoreThread and thread ids containing "|"', () => {
  it('restores thread "acct" and its namespace (unicode, "/", "%", "?"), not the other thread "acct|b"; a local thread "acct|b" on the target is left as it was', async () => {
    const a = new WaymarkSaver(new SqliteCheckpointer({ path: tmp.file('a.db') }));
    await a.setup();
    await a.put({ configurable: { thread_id: 'acct' } }, checkpoint({ who: 'acct root' }), meta, { who: 1 });
    await a.put(
      { configurable: { thread_id: 'acct', checkpoint_ns: 'süb 1/%?' } },
      checkpoint({ who: 'acct sub' }),
      meta,
      { who: 1 },
    );
    await a.put({ configurable: { thread_id: 'acct|b' } }, checkpoint({ who: 'other thread on A' }), meta, { who: 1 });
    const replica = connectPlane(a.store, {
      url: plane.url,
      apiKey: key,
      pollMs: 0,
      debounceMs: 20,
      timeoutMs: 20_000,
    });
    try {
      await replica.flush({ timeoutMs: 60_000 });
    } finally {
      await replica.stop();
      await a.store.close();
    }

    const b = new WaymarkSaver(new SqliteCheckpointer({ path: tmp.file('b.db') }));
    await b.setup();
    try {
      // machine B has a thread of its own called "acct|b"
      await b.put({ configurable: { thread_id: 'acct|b' } }, checkpoint({ who: 'B own thread' }), meta, { who: 1 });
      const r = await restoreThread(b.store, 'acct', { url: plane.url, apiKey: key });
      expect(r.executions.map((e) => e.executionId)).toEqual(['acct', 'acct|süb 1/%?']);
      expect((await b.getTuple({ configurable: { thread_id: 'acct' } }))?.checkpoint.channel_values).toEqual({
        who: 'acct root',
      });
      expect(
        (await b.getTuple({ configurable: { thread_id: 'acct', checkpoint_ns: 'süb 1/%?' } }))?.checkpoint
          .channel_values,
      ).toEqual({ who: 'acct sub' });
      expect((await b.getTuple({ configurable: { thread_id: 'acct|b' } }))?.checkpoint.channel_values).toEqual({
        who: 'B own thread',
      });
      expect(await b.store.list('acct|b')).toHaveLength(1);
    } finally {
      await b.store.close();
    }
  });
});
