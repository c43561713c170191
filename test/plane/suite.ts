/** The plane over real HTTP, run on PGlite and on real Postgres. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { uuidv7 } from '../../shared/ids.js';
import { eventBytes, LIMITS } from '../../shared/limits.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { revokeKey } from '../../plane/auth.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, pause, step, takeEvents } from '../helpers/rows.js';

export function runPlaneSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`plane over HTTP: ${name}`, () => {
    let plane: TestPlane;
    let admin: string;
    let ingestKey: string;
    let readKey: string;
    let otherProject: string;
    const ingest = (rows: unknown[], o: { key?: string; writerId?: string; gzip?: boolean; backlog?: unknown } = {}) =>
      call(`${plane.url}/v1/ingest`, {
        key: o.key ?? ingestKey,
        gzip: o.gzip,
        json: { protocol: 1, writerId: o.writerId ?? 'w1', rows, ...(o.backlog ? { backlog: o.backlog } : {}) },
      });
    const get = (path: string, key = readKey) => call(`${plane.url}${path}`, { key });

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      admin = await plane.key('alpha', ['admin']);
      ingestKey = await plane.key('alpha', ['ingest']);
      readKey = await plane.key('alpha', ['read']);
      otherProject = await plane.key('beta', ['ingest', 'read']);
    });
    afterAll(async () => plane?.close());

    it('serves health, readiness and an OpenAPI document without a key; no operator metrics on this listener, not even to an admin key', async () => {
      expect((await call(`${plane.url}/healthz`)).body).toEqual({ ok: true });
      expect((await call(`${plane.url}/readyz`)).body).toMatchObject({ ok: true, migrations: 'applied' });
      const doc = await call(`${plane.url}/openapi.json`);
      expect(Object.keys(doc.body.paths)).toEqual(
        expect.arrayContaining(['/v1/ingest', '/v1/executions/{id}/restore', '/v1/executions/{id}/claim']),
      );
      for (const key of [undefined, readKey, admin])
        expect((await call(`${plane.url}/metrics`, { key })).status).toBe(404);
    });

    it('refuses no key, a malformed or unknown key, a revoked key (401) and a wrong scope (403)', async () => {
      const rows = await eventsOf(async (s) => void (await s.put(step('auth-1', 0))));
      expect((await call(`${plane.url}/v1/executions`)).status).toBe(401);
      expect((await get('/v1/executions', 'wm_nope')).status).toBe(401);
      expect((await get('/v1/executions', `wm_${'0'.repeat(16)}_${'A'.repeat(43)}`)).status).toBe(401);
      const tmp = await plane.key('alpha', ['read']);
      expect((await get('/v1/executions', tmp)).status).toBe(200);
      await revokeKey(plane.database.db, tmp.slice(3, 19));
      expect((await get('/v1/executions', tmp)).status).toBe(401);
      expect((await ingest(rows, { key: readKey })).status).toBe(403);
      expect((await get('/v1/executions', ingestKey)).status).toBe(403);
      const body = (await call(`${plane.url}/v1/executions`)).body;
      expect(body).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    });

    it('accepts rows after commit, answers duplicates, and refuses a changed payload as a conflict', async () => {
      const rows = await eventsOf(async (s) => {
        await s.put(step('ing-1', 0));
        await s.put(step('ing-1', 1));
      });
      const a = await ingest(rows, { backlog: { rows: 5, bytes: 1234, oldestPendingAt: new Date().toISOString() } });
      expect(a.status).toBe(200);
      expect(a.body).toMatchObject({ accepted: 2, duplicate: 0, rejected: 0 });
      expect(a.body.results.map((r: { id: string }) => r.id)).toEqual(rows.map((r) => r.id));
      const again = await ingest(rows, { gzip: true });
      expect(again.body).toMatchObject({ accepted: 0, duplicate: 2, rejected: 0 });
      const changed = structuredClone(rows[1]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
      changed.row.nodeId = 'turn:99';
      const c = await ingest([changed]);
      expect(c.body.results[0]).toMatchObject({ status: 'rejected', code: 'conflict' });
      const other = structuredClone(rows[1]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
      other.id = other.row.id = uuidv7();
      const sc = await ingest([other]);
      expect(sc.body.results[0]).toMatchObject({ status: 'rejected', code: 'seq_conflict' });
      const stored = await get('/v1/executions/ing-1/rows');
      expect(stored.body.items).toEqual(rows.map((r) => (r as { row: unknown }).row));
      const q = await get('/v1/quarantine?executionId=ing-1');
      expect(q.body.items.map((i: { code: string }) => i.code)).toEqual(['conflict', 'seq_conflict']);
      expect(q.body.items[0]).toMatchObject({ writerId: 'w1', rowId: rows[1].id, executionId: 'ing-1' });
      expect(JSON.parse(q.body.items[0].payload).row.nodeId).toBe('turn:99');
      const w = await get('/v1/writers');
      expect(w.body.items.find((x: { writerId: string }) => x.writerId === 'w1')).toMatchObject({
        backlogRows: 5,
        backlogBytes: 1234,
      });
    });

    it('refuses bad rows one by one, quarantines them with a reason, stores none of them, never answers 5xx', async () => {
      const [good] = await eventsOf(async (s) => void (await s.put(step('bad-1', 0))));
      const bad: unknown[] = [
        { kind: 'checkpoint', id: 'x' },
        { kind: 'nope', id: uuidv7() },
        JSON.parse(`{"kind":"checkpoint","id":"${good.id}","row":{"__proto__":{"polluted":true}}}`),
        { ...(good as object), row: { ...(good as { row: object }).row, seq: -1 } },
        { ...(good as object), row: { ...(good as { row: object }).row, nodeInput: 'x'.repeat(LIMITS.rowBytes) } },
        (() => {
          let deep: unknown = 1;
          for (let i = 0; i < 200; i++) deep = { d: deep };
          return { ...(good as object), row: { ...(good as { row: object }).row, nodeInput: deep } };
        })(),
        { ...(good as object), row: { ...(good as { row: object }).row, executionId: 'e\u0000vil' } },
        // no URL path names these (clients normalise them away): a run under them could never be read, claimed or restored
        { ...(good as object), row: { ...(good as { row: object }).row, executionId: '..' } },
        null,
        42,
      ];
      const r = await ingest([...bad, good, good]);
      expect(r.status).toBe(200);
      const codes = r.body.results.map((x: { status: string; code?: string }) => x.code ?? x.status);
      expect(codes).toEqual([
        'invalid',
        'invalid',
        'invalid',
        'invalid',
        'too_large',
        'invalid',
        'invalid',
        'invalid',
        'invalid',
        'invalid',
        'accepted',
        'duplicate',
      ]);
      expect(r.body.results[7].reason).toContain("must not be '.' or '..'");
      // a row's reason names each of its problems, not the first only
      expect(r.body.results[0].reason).toMatch(/^id: .*; row: /);
      expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
      const rows = await get('/v1/executions/bad-1/rows');
      expect(rows.body.items).toEqual([(good as { row: unknown }).row]);
      const q = await get('/v1/quarantine?limit=1000');
      const big = q.body.items.find((i: { code: string }) => i.code === 'too_large');
      expect(big.truncated).toBe(true);
      expect(big.payload.length).toBe(LIMITS.quarantinePayloadBytes);
      // the limit is in bytes: a refused row of CJK text (3 bytes a character) keeps 16 KiB of it, cut between characters
      const [small] = await eventsOf(async (s) => void (await s.put(step('cjk-1', 0))));
      const cjk = {
        ...(small as object),
        row: { ...(small as { row: object }).row, nodeInput: '漢字'.repeat(200_000) },
      };
      expect((await ingest([cjk])).body.results[0].code).toBe('too_large');
      const kept = (await get('/v1/quarantine?limit=1000')).body.items.find(
        (i: { executionId: string }) => i.executionId === 'cjk-1',
      );
      expect(kept.truncated).toBe(true);
      expect(Buffer.byteLength(kept.payload)).toBeLessThanOrEqual(LIMITS.quarantinePayloadBytes);
      expect(Buffer.byteLength(kept.payload)).toBeGreaterThan(LIMITS.quarantinePayloadBytes - 3);
      expect(kept.payload.isWellFormed()).toBe(true);
      for (const i of q.body.items) expect(i.reason.length).toBeGreaterThan(3);
    });

    it('a batch sent again after its answer was lost adds no second quarantine record; another writer or another reason still adds one', async () => {
      const [good] = await eventsOf(async (s) => void (await s.put(step('requar-1', 0))));
      const bad = { ...(good as object), row: { ...(good as { row: object }).row, seq: -7 } };
      const first = await ingest([bad, good], { writerId: 'wq' });
      expect(first.body.results.map((x: { status: string }) => x.status)).toEqual(['rejected', 'accepted']);
      // the same batch again, twice, and the bad row twice within one batch: each answer still names the refusal
      for (const rows of [
        [bad, good],
        [bad, bad, good],
      ]) {
        const again = await ingest(rows, { writerId: 'wq' });
        expect(again.body.results.filter((x: { status: string }) => x.status === 'rejected')).toHaveLength(
          rows.length - 1,
        );
      }
      const records = async () =>
        (await get('/v1/quarantine?executionId=requar-1&limit=1000')).body.items as {
          writerId: string;
          code: string;
        }[];
      expect((await records()).map((i) => [i.writerId, i.code])).toEqual([['wq', 'invalid']]);
      // the same text from another writer is that writer's record; the same id with other text is another refusal
      await ingest([bad], { writerId: 'wq2' });
      const changed = { ...(good as object), row: { ...(good as { row: object }).row, seq: -8 } };
      await ingest([changed], { writerId: 'wq' });
      expect((await records()).map((i) => [i.writerId, i.code])).toEqual([
        ['wq', 'invalid'],
        ['wq2', 'invalid'],
        ['wq', 'invalid'],
      ]);
    });

    it('row size defect: multibyte rows are measured as the store measures them, UTF-8 bytes as sent (one under and at the limit accepted, one over too_large)', async () => {
      // `n` UTF-8 bytes of emoji (4 bytes, 2 UTF-16 units) and CJK (3 bytes, 1 unit), ASCII for the remainder
      const fill = (n: number) => {
        const emoji = '\u{1F600}'.repeat(1000);
        const cjk = '\u6F22'.repeat(Math.floor((n - 4000) / 3));
        return emoji + cjk + 'x'.repeat(n - 4000 - 3 * cjk.length);
      };
      const sized = (id: string, nodeOutput: string) => step(id, 0, { state: {}, nodeOutput });
      const [probe] = await eventsOf(async (s) => void (await s.put(sized('mb-probe', ''))));
      const room = LIMITS.rowBytes - eventBytes(probe);
      const rows = await eventsOf(async (s) => {
        for (const [id, n] of [
          ['mb-under', room - 1],
          ['mb-atlim', room],
          ['mb-overr', room],
        ] as const)
          await s.put(sized(id, fill(n)));
      });
      // the store refuses a row one byte over, so that one is made by hand
      const over = rows[2] as Extract<OutboxEvent, { kind: 'checkpoint' }>;
      over.row.nodeOutput = `${over.row.nodeOutput as string}x`;
      expect(rows.map(eventBytes)).toEqual([LIMITS.rowBytes - 1, LIMITS.rowBytes, LIMITS.rowBytes + 1]);
      const r = await ingest(rows);
      expect(r.status).toBe(200);
      expect(r.body.results.map((x: { status: string; code?: string }) => x.code ?? x.status)).toEqual([
        'accepted',
        'accepted',
        'too_large',
      ]);
      expect(r.body.results[2].reason).toContain(`${LIMITS.rowBytes + 1} bytes`);
    });

    it('answers whole-request errors with the documented status', async () => {
      const [good] = await eventsOf(async (s) => void (await s.put(step('env-1', 0))));
      const u = `${plane.url}/v1/ingest`;
      expect((await call(u, { key: ingestKey, raw: '{"protocol":1,' })).status).toBe(400);
      expect((await call(u, { key: ingestKey, json: { writerId: 'w', rows: [good] } })).body.error.code).toBe(
        'PROTOCOL',
      );
      expect((await call(u, { key: ingestKey, json: { protocol: 1, writerId: 'w', rows: [] } })).status).toBe(400);
      expect(
        (await call(u, { key: ingestKey, json: { protocol: 1, writerId: 'w', rows: [good], extra: 1 } })).status,
      ).toBe(400);
      // every problem of the envelope is named, the protocol's first in the code
      const many = await call(u, { key: ingestKey, json: { protocol: 2, writerId: '', rows: [], extra: 1 } });
      expect([many.status, many.body.error.code]).toEqual([400, 'PROTOCOL']);
      for (const named of ['protocol:', 'writerId:', 'rows:', 'extra'])
        expect(many.body.error.message, named).toContain(named);
      expect(
        (
          await call(u, {
            key: ingestKey,
            raw: JSON.stringify({ protocol: 1, writerId: 'w', rows: [good] }),
            headers: { 'content-type': 'text/plain' },
          })
        ).status,
      ).toBe(415);
      expect(
        (
          await call(u, {
            key: ingestKey,
            json: { protocol: 1, writerId: 'w', rows: [good] },
            headers: { 'content-encoding': 'br' },
          })
        ).status,
      ).toBe(415);
      expect((await call(u, { key: ingestKey, raw: 'x'.repeat(LIMITS.batchBytes + 10) })).status).toBe(413);
      expect(
        (
          await call(u, {
            key: ingestKey,
            json: { protocol: 1, writerId: 'w', rows: Array(LIMITS.batchRows + 1).fill(good) },
          })
        ).status,
      ).toBe(413);
      const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
      expect(bomb.length).toBeLessThan(LIMITS.batchBytes);
      const b = await call(u, { key: ingestKey, raw: bomb, headers: { 'content-encoding': 'gzip' } });
      expect(b.status).toBe(413);
      const gz = gzipSync(JSON.stringify({ protocol: 1, writerId: 'w', rows: [good] }));
      expect(
        (await call(u, { key: ingestKey, raw: gz.subarray(0, gz.length - 8), headers: { 'content-encoding': 'gzip' } }))
          .status,
      ).toBe(400);
      expect((await call(u, { key: ingestKey, raw: gz, headers: { 'content-encoding': 'gzip' } })).status).toBe(200);
    });

    it('lists executions with filters and cursors; pages 1,200 rows; 404 for unknown, empty page for past-the-end', async () => {
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 1200; i++) await s.put(step('big-1', i, { state: { turn: i } }));
        await s.recordInterrupt(pause('paused-1'), { reason: 'approval', context: { amount: 5 } });
        await s.put(step('done-1', 0));
        await s.put({ ...step('done-1', 1), nodeId: 'run_end', step: 'run_end' });
      });
      for (let i = 0; i < rows.length; i += 500) expect((await ingest(rows.slice(i, i + 500))).body.rejected).toBe(0);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const page: { body: { items: { seq: number }[]; nextCursor: string | null } } = await get(
          `/v1/executions/big-1/rows?limit=250${cursor ? `&cursor=${cursor}` : ''}`,
        );
        seen.push(...page.body.items.map((r) => r.seq));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(seen).toEqual([...Array(1200).keys()]);
      expect((await get('/v1/executions/nope/rows')).status).toBe(404);
      expect((await get('/v1/executions/nope')).status).toBe(404);
      expect((await get('/v1/executions/nope/restore')).status).toBe(404);
      const past = await get(`/v1/executions/done-1/rows?cursor=${Buffer.from('5').toString('base64url')}`);
      expect(past).toMatchObject({ status: 200, body: { items: [], nextCursor: null } });
      expect((await get('/v1/executions/done-1/rows?cursor=garbage')).status).toBe(400);
      const paused = await get('/v1/executions?status=paused');
      expect(paused.body.items.map((e: { executionId: string }) => e.executionId)).toEqual(['paused-1']);
      expect(
        (await get('/v1/executions?status=completed')).body.items.map((e: { executionId: string }) => e.executionId),
      ).toContain('done-1');
      const all: string[] = [];
      cursor = null;
      do {
        const page: { body: { items: { executionId: string }[]; nextCursor: string | null } } = await get(
          `/v1/executions?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        all.push(...page.body.items.map((e) => e.executionId));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(new Set(all).size).toBe(all.length);
      expect(all).toEqual(expect.arrayContaining(['big-1', 'paused-1', 'done-1']));
      expect((await get('/v1/executions?writer=nobody')).body.items).toEqual([]);
      expect(
        (await get(`/v1/executions?updatedSince=${new Date(Date.now() + 3600_000).toISOString()}`)).body.items,
      ).toEqual([]);
      expect((await get('/v1/executions?q=big')).body.items.map((e: { executionId: string }) => e.executionId)).toEqual(
        ['big-1'],
      );
      expect((await get('/v1/executions?status=bogus')).status).toBe(400);
    });

    it("run list agent column: an execution's agent is the agent path of its first row, also when that row arrives after later ones", async () => {
      const rows = await eventsOf(async (s) => {
        await s.put(step('agent-1', 0, { agentPath: 'agent:boss' }));
        await s.put(step('agent-1', 1, { agentPath: 'agent:boss/agent:worker' }));
      });
      expect((await ingest([rows[1]])).body.accepted).toBe(1);
      expect((await get('/v1/executions/agent-1')).body.execution.agent).toBe('agent:boss/agent:worker');
      expect((await ingest([rows[0]])).body.accepted).toBe(1);
      expect((await get('/v1/executions/agent-1')).body.execution.agent).toBe('agent:boss');
      expect((await get('/v1/executions?q=agent-1')).body.items).toEqual([
        expect.objectContaining({ executionId: 'agent-1', agent: 'agent:boss' }),
      ]);
    });

    it('restore serves every row, the open pause and the idempotency entries', async () => {
      const rows = await eventsOf(async (s) => {
        await s.put(step('rest-1', 0));
        await s.putIdempotent('rest-1', 'charge:1042', { chargeId: 'ch_1' });
        await s.putIdempotent('rest-1', 'lookup', null);
        await s.recordInterrupt(pause('rest-1'), { reason: 'approval', context: { amount: 5000 } });
      });
      await ingest(rows);
      const r = await get('/v1/executions/rest-1/restore?limit=1');
      expect(r.body).toMatchObject({ totalRows: 2, pending: { reason: 'approval', context: { amount: 5000 } } });
      expect(r.body.rows.length).toBe(1);
      expect(r.body.idempotency.map((e: { key: string; result: unknown }) => [e.key, e.result])).toEqual([
        ['charge:1042', { chargeId: 'ch_1' }],
        ['lookup', null],
      ]);
      const r2 = await get(`/v1/executions/rest-1/restore?limit=1&cursor=${r.body.nextCursor}`);
      expect(r2.body.rows[0].step).toBe('hitl_pause');
      expect(r2.body.nextCursor).toBeNull();
    });

    it('ingest order defect: execution_deleted then the rows of a run started again under the same id, in one batch, leaves the new run', async () => {
      const run = (id: string) => async (s: Parameters<Parameters<typeof eventsOf>[0]>[0]) => {
        await s.put(step(id, 0));
        await s.put(step(id, 1, { nodeOutput: 'new run' }));
        await s.recordInterrupt(pause(id, 1), { reason: 'approval', context: { run: 'new' } });
      };
      for (const [id, oldInSameBatch] of [
        ['again-1', false],
        ['again-2', true],
      ] as const) {
        let old: OutboxEvent[] = [];
        const later = await eventsOf(async (s) => {
          for (let i = 0; i < 3; i++) await s.put(step(id, i, { nodeOutput: 'old run' }));
          old = await takeEvents(s);
          await s.deleteExecution(id);
          await run(id)(s);
        });
        expect(later[0].kind).toBe('execution_deleted');
        const batch = oldInSameBatch ? [...old, ...later] : later;
        if (!oldInSameBatch) expect((await ingest(old)).body.accepted).toBe(old.length);
        const r = await ingest(batch);
        expect(r.body, JSON.stringify(r.body.results)).toMatchObject({ accepted: batch.length, rejected: 0 });
        const newRows = later.filter((e) => e.kind === 'checkpoint').map((e) => (e as { row: unknown }).row);
        expect((await get(`/v1/executions/${id}/rows`)).body.items).toEqual(newRows);
        expect((await get(`/v1/executions/${id}`)).body.execution).toMatchObject({
          status: 'paused',
          rowCount: 3,
          lastSeq: 2,
        });
        const restore = await get(`/v1/executions/${id}/restore`);
        expect(restore.body).toMatchObject({ totalRows: 3, pending: { context: { run: 'new' } } });
        expect(restore.body.rows).toEqual(newRows);
        expect((await get(`/v1/quarantine?executionId=${id}`)).body.items).toEqual([]);
        if (oldInSameBatch) continue;
        // a retry of the batch a client sends (its answer was lost) changes nothing; a client never sends a
        // deleted run's rows after the deletion (deleteExecution drops them from its outbox)
        expect((await ingest(batch)).body).toMatchObject({ accepted: 0, duplicate: batch.length, rejected: 0 });
        expect((await get(`/v1/executions/${id}/rows`)).body.items).toEqual(newRows);
      }
    });

    it('a seq that never reached the plane (rows 0 and 2, or a run whose first rows are missing) makes the run incomplete: listed, named on its page, its restore refused with 409 naming the seqs; once they arrive it is complete and restores', async () => {
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 5; i++) await s.put(step('gap-1', i));
      }, 'w-gap');
      expect((await ingest([rows[0], rows[2], rows[4]], { writerId: 'w-gap' })).body.accepted).toBe(3);
      const e = await get('/v1/executions/gap-1');
      expect(e.body.execution).toMatchObject({ complete: false, holeCount: 0, rowCount: 3, lastSeq: 4 });
      expect(e.body.holes).toEqual([
        expect.objectContaining({
          seq: 1,
          code: 'missing',
          reason: 'row 1 never reached this plane (row 2 did)',
          writerId: 'w-gap',
          rowId: null,
        }),
        expect.objectContaining({ seq: 3, code: 'missing', reason: 'row 3 never reached this plane (row 4 did)' }),
      ]);
      expect((await get('/v1/executions?q=gap-')).body.items).toEqual([
        expect.objectContaining({ executionId: 'gap-1', complete: false }),
      ]);
      const restore = await get('/v1/executions/gap-1/restore');
      expect(restore.status).toBe(409);
      expect(restore.body.error).toMatchObject({ code: 'RUN_INCOMPLETE', details: { missingSeqs: [1, 3] } });
      expect(restore.body.error.message).toContain('seq 1 (missing: row 1 never reached this plane (row 2 did))');
      // a run whose first rows never came: the seqs before its first held row
      const late = await eventsOf(async (s) => {
        for (let i = 0; i < 4; i++) await s.put(step('gap-2', i));
      });
      await ingest([late[3]], { writerId: 'w-gap' });
      expect((await get('/v1/executions/gap-2')).body.holes).toEqual([
        expect.objectContaining({ seq: 0, code: 'missing', reason: 'rows 0-2 never reached this plane (row 3 did)' }),
      ]);
      // the missing rows arrive (a resend, a slow outbox): whole again, and it restores
      await ingest([rows[1], rows[3]], { writerId: 'w-gap' });
      const whole = await get('/v1/executions/gap-1');
      expect(whole.body.execution).toMatchObject({ complete: true, rowCount: 5 });
      expect(whole.body.holes).toEqual([]);
      expect((await get('/v1/executions/gap-1/restore')).body).toMatchObject({ totalRows: 5, upTo: 4 });
    });

    it('broken chain defect: a refused row leaves a hole; the plane says the run is incomplete everywhere, refuses its restore with 409 naming the seq, and its pages never answer 500', async () => {
      // growing messages: rows 1.. are deltas on the row before, so a missing row breaks the chain after it
      const grown = (id: string, i: number) =>
        step(id, i, {
          state: { messages: Array.from({ length: i + 1 }, (_, k) => ({ role: 'user', content: `m${k}` })) },
        });
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 4; i++) await s.put(grown('hole-1', i));
      });
      expect((rows[2] as Extract<OutboxEvent, { kind: 'checkpoint' }>).row.state).toMatchObject({
        kind: 'delta',
        prev: rows[1].id,
      });
      const big = structuredClone(rows[1]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
      big.row.nodeOutput = 'x'.repeat(LIMITS.rowBytes);
      const r = await ingest([rows[0], big, rows[2], rows[3]], { writerId: 'w-holes' });
      expect(r.body.results.map((x: { status: string; code?: string }) => x.code ?? x.status)).toEqual([
        'accepted',
        'too_large',
        'accepted',
        'accepted',
      ]);
      const e = await get('/v1/executions/hole-1');
      expect(e.body.execution).toMatchObject({ complete: false, holeCount: 1, rowCount: 3 });
      expect(e.body.holes).toEqual([
        expect.objectContaining({ seq: 1, code: 'too_large', writerId: 'w-holes', rowId: big.id }),
      ]);
      expect(e.body.holes[0].reason).toContain('bytes');
      const listed = (await get('/v1/executions?q=hole-')).body.items;
      expect(listed).toEqual([expect.objectContaining({ executionId: 'hole-1', complete: false, holeCount: 1 })]);
      for (const path of [
        '/v1/executions/hole-1/restore',
        `/v1/executions/hole-1/restore?cursor=${Buffer.from('[0,3]').toString('base64url')}`,
      ]) {
        const restore = await get(path);
        expect(restore.status).toBe(409);
        expect(restore.body.error).toMatchObject({
          code: 'RUN_INCOMPLETE',
          details: { executionId: 'hole-1', missingSeqs: [1] },
        });
        expect(restore.body.error.message).toMatch(/seq 1 \(too_large: row is \d+ bytes/);
      }
      expect(
        (await get('/v1/writers')).body.items.find((w: { writerId: string }) => w.writerId === 'w-holes'),
      ).toMatchObject({ incompleteRuns: ['hole-1'] });
      // a seq conflict (another row already at that seq) is a hole too, and the rest of that branch is refused (the
      // plane keeps one branch); a re-sent copy of a stored id is not a hole
      const other = await eventsOf(async (s) => {
        for (let i = 0; i < 2; i++) await s.put(step('hole-2', i, { nodeOutput: 'theirs' }));
      });
      const mine = await eventsOf(async (s) => {
        for (let i = 0; i < 3; i++) await s.put(step('hole-2', i));
      });
      await ingest(other);
      expect(
        (await ingest(mine)).body.results.map((x: { status: string; code?: string }) => x.code ?? x.status),
      ).toEqual(['seq_conflict', 'seq_conflict', 'taken_over']);
      // (both branches under one writer id: the plane's own row after seq 0 is that writer's, so seq 0 counts as a gap)
      expect(
        (await get('/v1/executions/hole-2')).body.holes.map((h: { seq: number; code: string }) => [h.seq, h.code]),
      ).toEqual([[0, 'seq_conflict']]);
      const forged = structuredClone(other[1]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
      forged.row.nodeId = 'forged';
      expect((await ingest([forged])).body.results[0]).toMatchObject({ code: 'conflict' });
      expect((await get('/v1/executions/hole-2')).body.execution.holeCount).toBe(1);
      // every row refused: no summary to show, but restore still says why rather than 404
      const [only] = await eventsOf(async (s) => void (await s.put(step('hole-3', 0))));
      (only as Extract<OutboxEvent, { kind: 'checkpoint' }>).row.nodeOutput = 'x'.repeat(LIMITS.rowBytes);
      expect((await ingest([only])).body.results[0]).toMatchObject({ code: 'too_large' });
      expect((await get('/v1/executions/hole-3')).status).toBe(404);
      expect((await get('/v1/executions/hole-3/restore')).body.error).toMatchObject({
        code: 'RUN_INCOMPLETE',
        details: { missingSeqs: [0] },
      });

      // the inspector shows it, plain HTTP with a real session: never a 500
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key: readKey, next: '/' }),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const page = async (path: string) => {
        const res = await fetch(`${plane.url}${path}`, { headers: { cookie } });
        return { status: res.status, text: await res.text() };
      };
      for (const path of ['/runs/hole-1', '/runs/hole-1?a=0&b=2', '/runs/hole-1?a=2&b=3', '/runs/hole-2']) {
        const p = await page(path);
        expect(p.status, path).toBe(200);
        expect(p.text).toContain('data-testid="incomplete"');
        expect(p.text).toContain('data-testid="holes"');
      }
      const runPage = (await page('/runs/hole-1')).text;
      // the hole links to where it falls in the timeline
      expect(runPage).toContain('<a href="/runs/hole-1?seq=1#seq-1">seq 1</a>: <span class="mono">too_large</span>');
      expect(runPage).toContain('seq 2 cannot be decoded from this plane&#39;s copy (incomplete: seq 1 (too_large');
      expect((await page('/?q=hole-1')).text).toContain('data-testid="incomplete"');
      expect((await page('/writers')).text).toMatch(
        /data-testid="incomplete-runs"[^>]*><a class="mono" href="\/runs\/hole-1">hole-1<\/a>/,
      );

      // a deletion takes the holes with it: the run started again is whole
      const del: OutboxEvent = {
        kind: 'execution_deleted',
        id: uuidv7(),
        executionId: 'hole-1',
        deletedAt: new Date().toISOString(),
      };
      const again = await eventsOf(async (s) => void (await s.put(step('hole-1', 0))));
      expect((await ingest([del, ...again], { writerId: 'w-holes' })).body.rejected).toBe(0);
      expect((await get('/v1/executions/hole-1')).body).toMatchObject({
        execution: { complete: true, holeCount: 0 },
        holes: [],
      });
      expect((await get('/v1/executions/hole-1/restore')).status).toBe(200);
      expect(
        (await get('/v1/writers')).body.items.find((w: { writerId: string }) => w.writerId === 'w-holes')
          .incompleteRuns,
      ).toEqual([]);
    });

    it("an offline double resume left the run incomplete for good defect: another writer's branch is refused where it meets the plane's rows, and so is every later row of that branch: the plane's copy stays one branch, complete and restorable", async () => {
      // A's branch reaches seq 2; B continued the same run on its own branch to seq 3 (both resumed offline)
      const a = await eventsOf(async (s) => {
        for (let i = 0; i < 3; i++) await s.put(step('branch-1', i, { nodeOutput: 'a' }));
      }, 'w-branch-a');
      const b = await eventsOf(async (s) => {
        for (let i = 0; i < 4; i++) await s.put(step('branch-1', i, { nodeOutput: 'b' }));
      }, 'w-branch-b');
      expect((await ingest(a, { writerId: 'w-branch-a' })).body.accepted).toBe(3);
      const codes = (r: { body: { results: { status: string; code?: string }[] } }) =>
        r.body.results.map((x) => x.code ?? x.status);
      // B's rows meet A's at their seqs (seq_conflict), and B is fenced out of the run
      expect(codes(await ingest(b.slice(0, 2), { writerId: 'w-branch-b' }))).toEqual(['seq_conflict', 'seq_conflict']);
      const whole = async () => {
        // the plane's copy is A's branch, whole: complete, restorable, no writer told its run is incomplete here
        expect((await get('/v1/executions/branch-1')).body).toMatchObject({
          execution: { complete: true, holeCount: 0, rowCount: 3 },
          holes: [],
        });
        expect((await get('/v1/executions?q=branch-1')).body.items).toEqual([
          expect.objectContaining({ executionId: 'branch-1', complete: true }),
        ]);
        const restore = await get('/v1/executions/branch-1/restore');
        expect(restore.status).toBe(200);
        expect(restore.body.rows.map((r: { id: string }) => r.id)).toEqual(a.map((e) => e.id));
        expect(
          (await get('/v1/writers')).body.items.find((w: { writerId: string }) => w.writerId === 'w-branch-b')
            ?.incompleteRuns ?? [],
        ).toEqual([]);
      };
      await whole();
      // B's later rows, one at a free seq, follow B's refused rows: refused (taken_over), the copy never mixes two branches
      expect(codes(await ingest(b.slice(2), { writerId: 'w-branch-b' }))).toEqual(['taken_over', 'taken_over']);
      await whole();
      // the refusals are on record (quarantine)
      const q = (await get('/v1/quarantine?executionId=branch-1')).body.items;
      expect(q.map((i: { code: string; writerId: string }) => [i.code, i.writerId])).toEqual([
        ['seq_conflict', 'w-branch-b'],
        ['seq_conflict', 'w-branch-b'],
        ['taken_over', 'w-branch-b'],
        ['taken_over', 'w-branch-b'],
      ]);
    });

    it('restore pages defect: pages are bounded by the seq the first page fixed, whatever is ingested meanwhile; the pause comes with that bound', async () => {
      let first: OutboxEvent[] = [];
      const later = await eventsOf(async (s) => {
        for (let i = 0; i < 3; i++) await s.put(step('snap-1', i));
        const { checkpoint } = await s.recordInterrupt(pause('snap-1', 3), { reason: 'approval', context: { n: 1 } });
        first = await takeEvents(s);
        await s.claimInterrupt({ executionId: 'snap-1', checkpointId: checkpoint.id }, { next: step('snap-1', 4) });
        await s.put(step('snap-1', 5));
      });
      expect((await ingest(first)).body.rejected).toBe(0);
      const p1 = await get('/v1/executions/snap-1/restore?limit=2');
      expect(p1.body).toMatchObject({ upTo: 3, totalRows: 4, pending: { context: { n: 1 } } });
      expect((await ingest(later)).body.rejected).toBe(0);
      const p2 = await get(`/v1/executions/snap-1/restore?limit=2&cursor=${p1.body.nextCursor}`);
      expect(p2.body).toMatchObject({ upTo: 3, totalRows: 4, nextCursor: null, pending: null, idempotency: [] });
      expect([...p1.body.rows, ...p2.body.rows].map((r: { seq: number }) => r.seq)).toEqual([0, 1, 2, 3]);
      expect((await get('/v1/executions/snap-1/restore')).body).toMatchObject({ upTo: 5, totalRows: 6, pending: null });
      expect((await get('/v1/executions/snap-1/restore?cursor=garbage')).status).toBe(400);
    });

    it('one writer wins a claim; another gets 409 naming the winner; an offline claim is flagged as a conflict', async () => {
      let checkpointId = '';
      let stepId = '';
      const rows = await eventsOf(async (s) => {
        stepId = (await s.put(step('claim-1', 0))).id;
        checkpointId = (await s.recordInterrupt(pause('claim-1', 1), { reason: 'r', context: null })).checkpoint.id;
      });
      await ingest(rows);
      const claimUrl = `${plane.url}/v1/executions/claim-1/claim`;
      // a checkpoint of the run that is not its pause is not claimable: 404, and the pause is still open to the first real claim
      const notPause = await call(claimUrl, { key: ingestKey, json: { checkpointId: stepId, writerId: 'laptop-b' } });
      expect(notPause.status).toBe(404);
      expect(notPause.body.error.code).toBe('PAUSE_NOT_FOUND');
      const a = await call(claimUrl, { key: ingestKey, json: { checkpointId, writerId: 'laptop-a' } });
      expect(a.status).toBe(200);
      const b = await call(claimUrl, { key: ingestKey, json: { checkpointId, writerId: 'laptop-b' } });
      expect(b.status).toBe(409);
      expect(b.body.error).toMatchObject({ code: 'ALREADY_CLAIMED', details: { writerId: 'laptop-a' } });
      expect((await call(claimUrl, { key: ingestKey, json: { checkpointId, writerId: 'laptop-a' } })).status).toBe(200);
      expect(
        (await call(claimUrl, { key: ingestKey, json: { checkpointId: uuidv7(), writerId: 'laptop-a' } })).status,
      ).toBe(404);
      expect((await get('/v1/executions/claim-1/restore')).body.pending).toBeNull();
      const offline: OutboxEvent = {
        kind: 'interrupt_claimed',
        id: uuidv7(),
        executionId: 'claim-1',
        checkpointId,
        writerId: 'laptop-b',
        claimedAt: new Date().toISOString(),
      };
      expect((await ingest([offline], { writerId: 'laptop-b' })).body.accepted).toBe(1);
      const conflicts = await get('/v1/conflicts');
      expect(conflicts.body.items).toEqual([
        expect.objectContaining({
          executionId: 'claim-1',
          winnerWriterId: 'laptop-a',
          loserWriterId: 'laptop-b',
          source: 'ingest',
        }),
      ]);
      expect((await get('/v1/executions/claim-1')).body).toMatchObject({
        pause: { state: 'claimed', claimedBy: 'laptop-a' },
        conflicts: [expect.objectContaining({ loserWriterId: 'laptop-b' })],
      });
    });

    it("a pause event naming another run's checkpoint is refused (invalid, quarantined) and changes nothing of that run: its pause stays open and claimable", async () => {
      let victim = '';
      await ingest(
        await eventsOf(async (s) => {
          await s.put(step('victim-1', 0));
          victim = (await s.recordInterrupt(pause('victim-1', 1), { reason: 'approve', context: null })).checkpoint.id;
        }),
      );
      // a run of this project, paused too, whose events a confused or hostile writer sends with the victim's checkpoint id
      const own = await eventsOf(async (s) => {
        await s.recordInterrupt(pause('other-1'), { reason: 'r', context: null });
      });
      await ingest(own);
      const opened = own.find((e) => e.kind === 'interrupt_opened') as Extract<
        OutboxEvent,
        { kind: 'interrupt_opened' }
      >;
      const at = new Date().toISOString();
      const wrong: OutboxEvent[] = [
        {
          kind: 'interrupt_claimed',
          id: uuidv7(),
          executionId: 'other-1',
          checkpointId: victim,
          writerId: 'wz',
          claimedAt: at,
        },
        {
          kind: 'interrupt_closed',
          id: uuidv7(),
          executionId: 'other-1',
          checkpointId: victim,
          writerId: 'wz',
          closedAt: at,
        },
        { kind: 'interrupt_opened', id: uuidv7(), row: { ...opened.row, checkpointId: victim } },
        // a pause the plane knows only by its claim (its rows not synced yet) is guarded too
        {
          kind: 'interrupt_claimed',
          id: uuidv7(),
          executionId: 'other-1',
          checkpointId: victim,
          writerId: 'wz',
          claimedAt: at,
        },
      ];
      const r = await ingest(wrong, { writerId: 'wz' });
      expect(r.body.accepted).toBe(0);
      expect(r.body.results.map((x: { status: string; code?: string }) => `${x.status}:${x.code}`)).toEqual(
        wrong.map(() => 'rejected:invalid'),
      );
      for (const x of r.body.results)
        expect(x.reason).toContain(`checkpoint ${victim} belongs to execution 'victim-1', not 'other-1'`);
      const q = await get('/v1/quarantine');
      expect(q.body.items.filter((i: { rowId: string }) => wrong.some((w) => w.id === i.rowId))).toHaveLength(
        wrong.length,
      );
      // the victim's pause: still open, unclaimed, no conflict; its own writer claims it
      expect((await get('/v1/executions/victim-1')).body).toMatchObject({
        execution: { status: 'paused' },
        pause: { state: 'open', claimedBy: null },
        conflicts: [],
      });
      expect((await get('/v1/executions/other-1')).body.pause).toMatchObject({ state: 'open', claimedBy: null });
      const claim = await call(`${plane.url}/v1/executions/victim-1/claim`, {
        key: ingestKey,
        json: { checkpointId: victim, writerId: 'laptop-a' },
      });
      expect(claim.status).toBe(200);
      // once claimed through the API (a claims row), a claimed event naming it under another run is refused the same way
      const late = await ingest(
        [
          {
            kind: 'interrupt_claimed',
            id: uuidv7(),
            executionId: 'other-1',
            checkpointId: victim,
            writerId: 'wz',
            claimedAt: at,
          },
        ],
        { writerId: 'wz' },
      );
      expect(late.body.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });

      // a pause the plane knows only by its pause row (its checkpoint not synced, or refused), and one known only by a claim
      const byPause = await eventsOf(
        async (s) => void (await s.recordInterrupt(pause('victim-2'), { reason: 'approve', context: null })),
      );
      const pauseOnly = byPause.find((e) => e.kind === 'interrupt_opened') as Extract<
        OutboxEvent,
        { kind: 'interrupt_opened' }
      >;
      expect((await ingest([pauseOnly])).body.accepted).toBe(1);
      const claimOnly = uuidv7();
      expect(
        (
          await ingest(
            [
              {
                kind: 'interrupt_claimed',
                id: uuidv7(),
                executionId: 'victim-3',
                checkpointId: claimOnly,
                writerId: 'w3',
                claimedAt: at,
              },
            ],
            { writerId: 'w3' },
          )
        ).body.accepted,
      ).toBe(1);
      for (const [checkpointId, owner] of [
        [pauseOnly.row.checkpointId, 'victim-2'],
        [claimOnly, 'victim-3'],
      ]) {
        const r = await ingest(
          [
            {
              kind: 'interrupt_closed',
              id: uuidv7(),
              executionId: 'other-1',
              checkpointId,
              writerId: 'wz',
              closedAt: at,
            },
          ],
          { writerId: 'wz' },
        );
        expect(r.body.results[0]).toMatchObject({ status: 'rejected', code: 'invalid' });
        expect(r.body.results[0].reason).toContain(`belongs to execution '${owner}', not 'other-1'`);
      }
      expect(
        (await get('/v1/pauses?limit=1000')).body.items.map((i: { executionId: string }) => i.executionId),
      ).toContain('victim-2');
    });

    it('a claim applying a decision is refused (409 ALREADY_DECIDED naming the first) while the pause holds another, earlier decision here; nothing claimed; the first applies, and a claim naming no decision (a resume from code) still may', async () => {
      const approver = await plane.key('alpha', ['approve']);
      const claimWith = (id: string, checkpointId: string, decisionId?: string) =>
        call(`${plane.url}/v1/executions/${id}/claim`, {
          key: ingestKey,
          json: { checkpointId, writerId: 'laptop-x', ...(decisionId ? { decisionId } : {}) },
        });
      const paused: Record<string, string> = {};
      const rows = await eventsOf(async (s) => {
        for (const id of ['first-1', 'first-2']) {
          await s.put(step(id, 0));
          paused[id] = (await s.recordInterrupt(pause(id), { reason: 'approval', context: null })).checkpoint.id;
        }
      }, 'laptop-x');
      expect((await ingest(rows, { writerId: 'laptop-x' })).body.rejected).toBe(0);
      const decided: Record<string, string> = {};
      for (const id of ['first-1', 'first-2']) {
        const r = await call(`${plane.url}/v1/executions/${id}/decision`, {
          key: approver,
          json: { checkpointId: paused[id], approved: false, comment: 'no' },
        });
        expect(r.status).toBe(201);
        decided[id] = r.body.decisionId;
      }
      const refused = await claimWith('first-1', paused['first-1'], uuidv7());
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatchObject({
        code: 'ALREADY_DECIDED',
        details: { decision: { decisionId: decided['first-1'], approved: false, state: 'pending' } },
      });
      expect((await get('/v1/executions/first-1')).body.pause).toMatchObject({ state: 'open', claimedBy: null });
      expect((await claimWith('first-1', paused['first-1'], decided['first-1'])).status).toBe(200);
      expect((await get('/v1/executions/first-1')).body.pause.decision).toMatchObject({
        decisionId: decided['first-1'],
        state: 'claimed',
      });
      expect((await claimWith('first-2', paused['first-2'])).status).toBe(200);
      expect((await get('/v1/executions/first-2')).body.pause.decision).toMatchObject({
        decisionId: decided['first-2'],
        state: 'superseded',
      });
    });

    it('cancel: a cancelled paused run is cancelled on the plane (status, list filter, badge), its pause closed (restore has none) and never claimable again', async () => {
      let checkpointId = '';
      const rows = await eventsOf(async (s) => {
        await s.put(step('cancel-1', 0));
        checkpointId = (await s.recordInterrupt(pause('cancel-1'), { reason: 'approval', context: null })).checkpoint
          .id;
        await s.cancel('cancel-1', { reason: 'customer withdrew' });
      }, 'laptop-c');
      expect(rows.map((e) => e.kind)).toEqual([
        'checkpoint',
        'checkpoint',
        'interrupt_opened',
        'interrupt_closed',
        'checkpoint',
      ]);
      const r = await ingest(rows, { writerId: 'laptop-c' });
      expect(r.body.accepted, JSON.stringify(r.body)).toBe(5);
      const ex = await get('/v1/executions/cancel-1');
      expect(ex.body.execution).toMatchObject({ status: 'cancelled', lastStep: 'run_end', rowCount: 3 });
      expect(ex.body.pause ?? null).toBeNull();
      expect((await get('/v1/executions/cancel-1/restore')).body.pending).toBeNull();
      const listed = await get('/v1/executions?status=cancelled');
      expect(listed.body.items.map((e: { executionId: string }) => e.executionId)).toContain('cancel-1');
      expect(
        (await get('/v1/executions?status=paused')).body.items.map((e: { executionId: string }) => e.executionId),
      ).not.toContain('cancel-1');
      // another machine that restored the run before the cancel cannot claim its pause at the plane
      const claim = await call(`${plane.url}/v1/executions/cancel-1/claim`, {
        key: ingestKey,
        json: { checkpointId, writerId: 'laptop-d' },
      });
      expect(claim.status).toBe(409);
      expect(claim.body.error).toMatchObject({ code: 'ALREADY_CLAIMED', details: { writerId: 'laptop-c' } });
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key: readKey, next: '/' }),
      });
      const cookie = login.headers.get('set-cookie')!.split(';')[0];
      const html = async (path: string) => (await fetch(`${plane.url}${path}`, { headers: { cookie } })).text();
      expect(await html('/runs/cancel-1')).toContain('class="badge s-cancelled"');
      expect(await html('/?status=cancelled')).toContain('cancel-1');
    });

    it("a valid key of another project reads and writes nothing of this project's", async () => {
      const rows = await eventsOf(async (s) => {
        await s.put(step('secret-1', 0));
        await s.recordInterrupt(pause('secret-1', 1), { reason: 'r', context: { card: '4242' } });
      });
      await ingest(rows);
      const cp = (rows.find((r) => r.kind === 'checkpoint' && r.row.step === 'hitl_pause') as { id: string }).id;
      const b = (path: string) => call(`${plane.url}${path}`, { key: otherProject });
      expect((await b('/v1/executions')).body.items.map((e: { executionId: string }) => e.executionId)).not.toContain(
        'secret-1',
      );
      for (const p of ['/v1/executions/secret-1', '/v1/executions/secret-1/rows', '/v1/executions/secret-1/restore']) {
        expect((await b(p)).status).toBe(404);
      }
      expect((await b('/v1/quarantine')).body.items).toEqual([]);
      expect((await b('/v1/writers')).body.items).toEqual([]);
      expect((await b('/v1/conflicts')).body.items).toEqual([]);
      expect(
        (
          await call(`${plane.url}/v1/executions/secret-1/claim`, {
            key: otherProject,
            json: { checkpointId: cp, writerId: 'intruder' },
          })
        ).status,
      ).toBe(404);
      // the same ids ingested under project beta land in beta only
      const r = await call(`${plane.url}/v1/ingest`, {
        key: otherProject,
        json: { protocol: 1, writerId: 'intruder', rows },
      });
      expect(r.body.accepted).toBe(rows.length);
      const mine = await get('/v1/executions/secret-1');
      expect(mine.body.pause).toMatchObject({ state: 'open', claimedBy: null });
      expect((await get('/v1/writers')).body.items.map((w: { writerId: string }) => w.writerId)).not.toContain(
        'intruder',
      );
    });
  });
}
