/**
 * A key revoked while a request it made is still in flight: an upload whose
 * body is still arriving writes nothing, and a long poll still waiting answers
 * nothing, as the key's next request would (401 UNAUTHORIZED). On PGlite,
 * through the plane's own app (`createPlaneApp`): a body is a stream the test
 * feeds, whose rest is sent only once the route reads it (past the key's
 * check), the key revoked at that moment; a poll is revoked once the plane
 * counts it waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey, revokeKey } from '../../plane/auth.js';
import { createPlaneApp } from '../../plane/app.js';
import { decisionOf, feedWaiters } from '../../plane/decisions.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { waitersOf } from '../../plane/long-poll.js';
import { eventsOf, pause, step } from '../helpers/rows.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { until } from '../helpers/until.js';

describe('a key revoked while its request is in flight (PGlite)', () => {
  let database: PlaneDatabase;
  let app: ReturnType<typeof createPlaneApp>['app'];
  let projectId = '';
  const keys: Record<string, { id: string; key: string }> = {};

  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite');
    app = createPlaneApp({ database }).app;
    for (const name of [
      'writer',
      'late',
      'queued',
      'approver',
      'lateApprover',
      'lateClaimer',
      'poller',
      'changePoller',
    ]) {
      const k = await createKey(database.db, {
        createProject: true,
        project: 'p',
        scopes: ['ingest', 'read', 'approve'],
      });
      keys[name] = { id: k.id, key: k.key };
      projectId = k.projectId;
    }
  });
  afterAll(async () => database?.close());

  /**
   * POST `json` with `key`, its body a stream that sends nothing until the
   * route reads it; then `onRead` runs (the key already checked), and the body follows.
   */
  const streamed = (path: string, key: string, json: unknown, onRead: () => Promise<void>) => {
    const bytes = new TextEncoder().encode(JSON.stringify(json));
    let read = false;
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(ctl) {
          if (read) return;
          read = true;
          await onRead();
          ctl.enqueue(bytes);
          ctl.close();
        },
      },
      { highWaterMark: 0 },
    );
    return app.request(path, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
  };
  const get = (path: string, key: string) => app.request(path, { headers: { authorization: `Bearer ${key}` } });

  it('an ingest whose body was still arriving when its key was revoked is refused (401) and stores nothing; the same upload with a live key is stored', async () => {
    const rows = await eventsOf(async (s) => void (await s.put(step('late-upload', 0))), 'w-late');
    const refused = await streamed('/v1/ingest', keys.late.key, { protocol: 1, writerId: 'w-late', rows }, async () => {
      expect(await revokeKey(database.db, keys.late.id)).toBe(true);
    });
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    expect((await get('/v1/executions/late-upload', keys.writer.key)).status).toBe(404);

    const stored = await streamed(
      '/v1/ingest',
      keys.writer.key,
      { protocol: 1, writerId: 'w-late', rows },
      async () => {},
    );
    expect(stored.status).toBe(200);
    expect(await stored.json()).toMatchObject({ accepted: 1 });
  });

  it('an ingest waiting for an admission slot when its key was revoked is refused (401) once admitted, and stores nothing', async () => {
    // a plane of one slot, its slot held by a batch paused after its commit (the fault hook), until released
    let hold: () => void = () => {};
    let held = false;
    const one = createPlaneApp({
      database,
      maxInflightIngest: 1,
      faults: (point) =>
        point === 'plane.ingest.afterCommit' && !held
          ? new Promise<void>((r) => {
              held = true;
              hold = r;
            })
          : undefined,
    });
    const post = (key: string, rows: unknown[], writerId: string) =>
      one.app.request('/v1/ingest', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ protocol: 1, writerId, rows }),
      });
    const first = post(
      keys.writer.key,
      await eventsOf(async (s) => void (await s.put(step('holds-the-slot', 0))), 'w-1'),
      'w-1',
    );
    await until('the first batch holds the slot', () => held);
    const queued = post(
      keys.queued.key,
      await eventsOf(async (s) => void (await s.put(step('queued-batch', 0))), 'w-2'),
      'w-2',
    );
    // the operator's gauge of batches waiting for a slot
    await until(
      'the second batch waits for the slot',
      async () => ((await one.metrics.ingestWaiting.get()).values[0]?.value ?? 0) === 1,
    );
    expect(await revokeKey(database.db, keys.queued.id)).toBe(true);
    hold();
    expect((await first).status).toBe(200);
    const refused = await queued;
    expect(refused.status).toBe(401);
    expect((await get('/v1/executions/queued-batch', keys.writer.key)).status).toBe(404);
  });

  it('a decision whose body was still arriving when its key was revoked is refused (401) and records nothing; the pause takes a decision from a live key', async () => {
    let checkpointId = '';
    const rows = await eventsOf(async (s) => {
      await s.put(step('late-decision', 0));
      checkpointId = (await s.recordInterrupt(pause('late-decision', 1), { reason: 'approve', context: null }))
        .checkpoint.id;
    }, 'w-dec');
    expect(
      (await streamed('/v1/ingest', keys.writer.key, { protocol: 1, writerId: 'w-dec', rows }, async () => {})).status,
    ).toBe(200);
    const decide = { checkpointId, approved: true, comment: 'fine by me' };
    const refused = await streamed('/v1/executions/late-decision/decision', keys.lateApprover.key, decide, async () => {
      expect(await revokeKey(database.db, keys.lateApprover.id)).toBe(true);
    });
    expect(refused.status).toBe(401);
    expect(await decisionOf(database.db, projectId, 'late-decision', checkpointId)).toBeNull();
    expect(
      (await streamed('/v1/executions/late-decision/decision', keys.approver.key, decide, async () => {})).status,
    ).toBe(201);
  });

  it('a claim whose body was still arriving when its key was revoked is refused (401) and claims nothing; the pause is claimed by a live key', async () => {
    let checkpointId = '';
    const rows = await eventsOf(async (s) => {
      checkpointId = (await s.recordInterrupt(pause('late-claim'), { reason: 'approve', context: null })).checkpoint.id;
    }, 'w-claim');
    expect(
      (await streamed('/v1/ingest', keys.writer.key, { protocol: 1, writerId: 'w-claim', rows }, async () => {}))
        .status,
    ).toBe(200);
    const refused = await streamed(
      '/v1/executions/late-claim/claim',
      keys.lateClaimer.key,
      { checkpointId, writerId: 'w-late' },
      async () => {
        expect(await revokeKey(database.db, keys.lateClaimer.id)).toBe(true);
      },
    );
    expect(refused.status).toBe(401);
    const run = (await (await get('/v1/executions/late-claim', keys.writer.key)).json()) as {
      pause: { state: string; claimedBy: string | null };
    };
    expect(run.pause).toMatchObject({ state: 'open', claimedBy: null });
    expect(
      (
        await streamed(
          '/v1/executions/late-claim/claim',
          keys.writer.key,
          { checkpointId, writerId: 'w-live' },
          async () => {},
        )
      ).status,
    ).toBe(200);
  });

  it('a long poll of the decision feed whose key is revoked while it waits answers 401, not the decision recorded meanwhile', async () => {
    let checkpointId = '';
    const rows = await eventsOf(async (s) => {
      checkpointId = (await s.recordInterrupt(pause('poll-decision'), { reason: 'approve', context: { card: '4242' } }))
        .checkpoint.id;
    }, 'w-poll');
    expect(
      (await streamed('/v1/ingest', keys.writer.key, { protocol: 1, writerId: 'w-poll', rows }, async () => {})).status,
    ).toBe(200);
    const head = (await (await get('/v1/decisions', keys.writer.key)).json()) as { nextCursor: string };
    const poll = get(`/v1/decisions?after=${head.nextCursor}&wait=20`, keys.poller.key);
    await until('the poll waits', () => feedWaiters(database.db).polls === 1);
    expect(await revokeKey(database.db, keys.poller.id)).toBe(true);
    const decide = { checkpointId, approved: false, comment: 'confidential' };
    expect(
      (await streamed('/v1/executions/poll-decision/decision', keys.approver.key, decide, async () => {})).status,
    ).toBe(201);
    const answer = await poll;
    expect(answer.status).toBe(401);
    expect(await answer.text()).not.toContain('confidential');
  });

  it('a long poll of the change feed whose key is revoked while it waits answers 401, not the change made meanwhile', async () => {
    const head = (await (await get('/v1/changes', keys.writer.key)).json()) as { nextCursor: string };
    const poll = get(`/v1/changes?after=${head.nextCursor}&wait=20`, keys.changePoller.key);
    await until('the poll waits', () => waitersOf(database.db, 'changes').polls === 1);
    expect(await revokeKey(database.db, keys.changePoller.id)).toBe(true);
    const rows = await eventsOf(async (s) => void (await s.put(step('changed-meanwhile', 0))), 'w-change');
    expect(
      (await streamed('/v1/ingest', keys.writer.key, { protocol: 1, writerId: 'w-change', rows }, async () => {}))
        .status,
    ).toBe(200);
    const answer = await poll;
    expect(answer.status).toBe(401);
    expect(await answer.text()).not.toContain('changed-meanwhile');
  });
});
