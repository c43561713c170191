/** Bugs the fault campaigns found, each pinned by a test named after it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { Agent, ScriptedModel, tool } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { createPlaneApp } from '../../plane/app.js';
import { createKey } from '../../plane/auth.js';
import { type PlaneDatabase, rowsOf } from '../../plane/db/open.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

describe('regressions found by the fuzz campaign', () => {
  let database: PlaneDatabase;
  let ingest: (rows: unknown[]) => Promise<{ status: number; body: any }>;
  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite');
    const { app } = createPlaneApp({ database });
    const { key } = await createKey(database.db, { createProject: true, project: 'r', scopes: ['ingest'] });
    ingest = async (rows) => {
      const res = await app.request('/v1/ingest', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ protocol: 1, writerId: 'w', rows }),
      });
      return { status: res.status, body: await res.json() };
    };
  });
  afterAll(async () => database?.close());

  it('a lone surrogate or U+0000 in a row was stored locally, then answered 500 by the plane forever (a drain that never drains)', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    for (const bad of ['\ud800', 'a\u0000b']) {
      await expect(store.put(step('s', 0, { nodeInput: { text: bad } }))).rejects.toMatchObject({
        code: 'INVALID_ROW',
      });
      await expect(store.put(step('s', 0, { state: { messages: [{ content: bad }] } }))).rejects.toMatchObject({
        code: 'INVALID_ROW',
      });
      await expect(store.put(step('s', 0, { state: { [bad]: 1 } }))).rejects.toMatchObject({ code: 'INVALID_ROW' });
      await expect(store.putIdempotent('s', `k${bad}`, 1)).rejects.toMatchObject({ code: 'INVALID_ROW' });
    }
    expect((await store.outboxStats()).pendingCount).toBe(0);
    await store.close();
    const [good] = await eventsOf(async (s) => void (await s.put(step('s', 0))));
    const forged = JSON.parse(JSON.stringify(good).replace('"turn:0"', '"turn:0\\ud800"'));
    const withNul = { ...(good as object), row: { ...(good as { row: object }).row, nodeInput: { t: 'a\u0000b' } } };
    const r = await ingest([forged, withNul, good]);
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: { status: string; code?: string }) => x.code ?? x.status)).toEqual([
      'invalid',
      'invalid',
      'accepted',
    ]);
  });

  it('text a model or tool returns with a lone surrogate or U+0000 is stored as U+FFFD instead of failing the run', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const t = tool({ name: 'bin', description: '', parameters: z.object({}), execute: () => 'raw\u0000bytes\ud800' });
    const model = new ScriptedModel(({ turn, toolResults }) =>
      turn === 0
        ? { content: 'x\ud800', toolCalls: [{ name: 'bin', arguments: {} }] }
        : { content: toolResults[0].content },
    );
    const r = await new Agent({ name: 'a', model, tools: [t], checkpointer: store }).run('go');
    expect(r).toMatchObject({ status: 'completed', output: 'raw\uFFFDbytes\uFFFD' });
    await store.close();
  });

  it('a refused checkpoint whose execution id holds a lone surrogate made the plane answer 500', async () => {
    const [good] = await eventsOf(async (s) => void (await s.put(step('surrogate-run', 0))));
    const bad = { ...(good as object), row: { ...(good as { row: object }).row, executionId: 'a\ud800' } };
    const r = await ingest([bad]);
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });
    // nothing recorded under a mangled id: no hole, no run's summary, but the runs this file's batches named
    const holes = rowsOf<{ id: string }>(await database.db.execute(sql`SELECT DISTINCT execution_id AS id FROM holes`));
    const runs = rowsOf<{ id: string }>(await database.db.execute(sql`SELECT execution_id AS id FROM executions`));
    for (const id of [...holes, ...runs].map((r) => r.id)) expect(['s', 'big-seq', 'deep']).toContain(id);
  });

  it('a seq past int4 passed validation and made the plane answer 500', async () => {
    const [good] = await eventsOf(async (s) => void (await s.put(step('big-seq', 0))));
    const bad = { ...(good as object), row: { ...(good as { row: object }).row, seq: 2 ** 31 } };
    const r = await ingest([bad]);
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });
  });

  it('a state value nested 65 deep passed the store but not the wire schema (the plane refused a row the store kept)', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    let deep: unknown = 1;
    for (let i = 0; i < 65; i++) deep = { d: deep };
    await expect(store.put(step('deep', 0, { state: { a: deep as never } }))).rejects.toMatchObject({
      code: 'INVALID_ROW',
    });
    await expect(store.put(step('deep', 0, { state: { messages: [deep as never] } }))).rejects.toMatchObject({
      code: 'INVALID_ROW',
    });
    let ok: unknown = 1;
    for (let i = 0; i < 64; i++) ok = { d: ok };
    const row = await store.put(step('deep', 0, { state: { a: ok as never } }));
    const r = await ingest([{ kind: 'checkpoint', id: row.id, row }]);
    expect(r.body.results[0].status).toBe('accepted');
    await store.close();
  });
});
