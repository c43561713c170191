/**
 * Fuzzed input (fast-check): generated ingest bodies and rows against a real
 * plane (PGlite, through the whole HTTP stack via app.request), and generated
 * checkpoint inputs against the local stores. Never a 5xx, never an invalid
 * row stored, every row-level refusal quarantined with a reason.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { gunzipSync, gzipSync } from 'node:zlib';
import { sql } from 'drizzle-orm';
import { createPlaneApp } from '../../plane/app.js';
import { createKey } from '../../plane/auth.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { Checkpoint, type OutboxEvent } from '../../shared/rows.js';
import { LIMITS } from '../../shared/limits.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

const SEED = Number(process.env.WAYMARK_FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.WAYMARK_FUZZ_RUNS ?? 1000);

/** JSON-ish values including the nasty ones: prototype keys, deep nesting, long and odd strings. */
const nasty: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue(),
    fc.string({ unit: 'binary', maxLength: 64 }),
    fc.constantFrom(
      '__proto__',
      'constructor',
      '\u0000',
      '\uD800',
      '',
      ' ',
      '"><img src=x onerror=alert(1)>',
      'x'.repeat(5000),
    ),
    fc.constantFrom(Number.MAX_SAFE_INTEGER, -0, 1e308, -1, 2 ** 31, 0.5),
    fc.dictionary(
      fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'kind', 'row', 'seq', 'a'),
      tie('value'),
      { maxKeys: 4 },
    ),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.nat(300).map((d) => {
      let v: unknown = 'deep';
      for (let i = 0; i < d; i++) v = { d: v };
      return v;
    }),
  ),
})).value;

/** Mutate one path of a valid event: wrong types, nasty values, removed fields. */
function mutate(event: OutboxEvent, path: string[], value: unknown, remove: boolean): unknown {
  const copy = JSON.parse(JSON.stringify(event)) as Record<string, unknown>;
  let cur: Record<string, unknown> = copy;
  for (let i = 0; i < path.length - 1; i++) {
    const next = cur[path[i]];
    if (!next || typeof next !== 'object') return copy;
    cur = next as Record<string, unknown>;
  }
  const last = path[path.length - 1];
  if (remove) delete cur[last];
  else Object.defineProperty(cur, last, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

const PATHS = [
  ['id'],
  ['kind'],
  ['row'],
  ['row', 'id'],
  ['row', 'executionId'],
  ['row', 'seq'],
  ['row', 'nodeId'],
  ['row', 'turn'],
  ['row', 'step'],
  ['row', 'status'],
  ['row', 'agentPath'],
  ['row', 'parentId'],
  ['row', 'state'],
  ['row', 'state', 'kind'],
  ['row', 'state', 'state'],
  ['row', 'nodeInput'],
  ['row', 'createdAt'],
  ['row', 'writerId'],
  ['row', '__proto__'],
  ['row', 'extra'],
  ['extra'],
];

describe(`fuzzed ingest bodies (seed ${SEED}, ${RUNS} × 4 generators)`, () => {
  let database: PlaneDatabase;
  let app: ReturnType<typeof createPlaneApp>['app'];
  let key = '';
  let valid: OutboxEvent[] = [];
  const counts = { bodies: 0, rowsRefused: 0, records: new Set<string>(), statuses: new Map<number, number>() };
  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite');
    app = createPlaneApp({ database }).app;
    key = (await createKey(database.db, { createProject: true, project: 'fuzz', scopes: ['ingest'] })).key;
    valid = await eventsOf(async (s) => {
      for (let i = 0; i < 6; i++) await s.put(step('fuzz-run', i, { nodeInput: { i } }));
      const { pending } = await s.recordInterrupt(pause('fuzz-run', 6), { reason: 'r', context: { a: 1 } });
      await s.putIdempotent('fuzz-run', 'k', { v: 1 });
      await s.claimInterrupt(pending);
    });
  });
  afterAll(async () => {
    console.log(
      `[fuzz] seed ${SEED}: ${counts.bodies} bodies, ${counts.rowsRefused} rows refused; statuses ${JSON.stringify(Object.fromEntries(counts.statuses))}`,
    );
    await database?.close();
  });

  const post = async (body: BodyInit, headers: Record<string, string> = {}) => {
    const res = await app.request('/v1/ingest', {
      method: 'POST',
      body,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    });
    counts.bodies++;
    counts.statuses.set(res.status, (counts.statuses.get(res.status) ?? 0) + 1);
    expect(res.status, await res.clone().text()).toBeLessThan(500);
    if (res.status === 200) {
      const answer = (await res.clone().json()) as { results: { status: string; code?: string }[] };
      counts.rowsRefused += answer.results.filter((r) => r.status === 'rejected').length;
      // the quarantine keeps one record per writer, reason code and refused text (a batch sent again adds none)
      const bytes = typeof body === 'string' ? Buffer.from(body) : Buffer.from(body as Uint8Array);
      const sent = JSON.parse(
        (headers['content-encoding'] === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8'),
      ) as { writerId: string; rows: unknown[] };
      for (const [i, r] of answer.results.entries())
        if (r.status === 'rejected')
          counts.records.add(`${sent.writerId}\u0000${r.code}\u0000${JSON.stringify(sent.rows[i])}`);
    }
    return res;
  };

  it('mutated rows: refused one by one with a reason, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(100), fc.constantFrom(...PATHS), nasty, fc.boolean()), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (muts, dup) => {
          const rows: unknown[] = muts.map(([i, path, value, remove]) =>
            mutate(valid[i % valid.length], path, value, remove),
          );
          if (dup) rows.push(rows[0]);
          const res = await post(JSON.stringify({ protocol: 1, writerId: 'fuzzer', rows }));
          if (res.status === 200) {
            const body = (await res.json()) as { results: { status: string; reason?: string }[] };
            expect(body.results.length).toBe(rows.length);
            for (const r of body.results) if (r.status === 'rejected') expect(r.reason?.length ?? 0).toBeGreaterThan(3);
          } else {
            expect([400, 413]).toContain(res.status);
          }
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
  }, 600_000);

  it('arbitrary bodies, content types and encodings: a documented status, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          nasty.map((v) => ({ body: JSON.stringify(v) ?? 'null', headers: {} })),
          fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ body: s, headers: {} })),
          nasty.map((v) => ({ body: JSON.stringify({ protocol: 1, writerId: 'w', rows: [v] }), headers: {} })),
          fc.tuple(nasty, fc.nat(40)).map(([v, cut]) => {
            const gz = gzipSync(JSON.stringify({ protocol: 1, writerId: 'w', rows: [v] }));
            return { body: gz.subarray(0, Math.max(0, gz.length - cut)), headers: { 'content-encoding': 'gzip' } };
          }),
          fc
            .constantFrom(
              'text/plain',
              'application/xml',
              'multipart/form-data',
              '',
              'application/json; charset=latin1',
            )
            .map((t) => ({
              body: JSON.stringify({ protocol: 1, writerId: 'w', rows: valid.slice(0, 1) }),
              headers: { 'content-type': t },
            })),
          fc.constantFrom('br', 'deflate', 'gzip, gzip', 'identity').map((e) => ({
            body: JSON.stringify({ protocol: 1, writerId: 'w', rows: valid.slice(0, 1) }),
            headers: { 'content-encoding': e },
          })),
          fc
            .record({ protocol: nasty, writerId: nasty, backlog: nasty, rows: nasty })
            .map((v) => ({ body: JSON.stringify(v), headers: {} })),
        ),
        async ({ body, headers }) => {
          await post(body as BodyInit, headers);
        },
      ),
      { numRuns: RUNS, seed: SEED + 1 },
    );
  }, 600_000);

  it('gzip bombs are cut off at the byte limit', async () => {
    for (const mb of [16, 64]) {
      const bomb = gzipSync(Buffer.alloc(mb * 1024 * 1024, 0x5b));
      const res = await post(bomb, { 'content-encoding': 'gzip' });
      expect(res.status).toBe(413);
    }
  });

  it('nothing invalid was stored, and every refusal is in quarantine with a reason', async () => {
    const rows = (await database.db.execute(sql`SELECT row FROM checkpoints`)) as unknown as {
      rows?: { row: unknown }[];
    };
    const list = (Array.isArray(rows) ? rows : rows.rows!) as { row: unknown }[];
    expect(list.length).toBeGreaterThan(0);
    for (const r of list) expect(Checkpoint.safeParse(r.row).success).toBe(true);
    const q = (await database.db.execute(
      sql`SELECT count(*)::int AS n, min(length(reason))::int AS shortest FROM quarantine`,
    )) as unknown as { rows?: { n: number; shortest: number }[] };
    const [{ n, shortest }] = (Array.isArray(q) ? q : q.rows!) as { n: number; shortest: number }[];
    expect(n).toBe(counts.records.size);
    expect(shortest).toBeGreaterThan(3);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe(`fuzzed checkpoint inputs against the local store (seed ${SEED})`, () => {
  it('the store refuses invalid rows with INVALID_ROW and writes nothing else', async () => {
    const store = new SqliteCheckpointer({ path: ':memory:' });
    const base = step('local-fuzz', 0);
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...(Object.keys(base) as (keyof typeof base)[]), 'id', 'parentId', 'interruptReason'),
        nasty,
        async (field, value) => {
          const input = { ...base, [field]: value } as never;
          const before = (await store.outboxStats()).pendingCount;
          try {
            await store.put(input);
          } catch (e) {
            expect((e as { code?: string }).code, (e as Error).message).toBe('INVALID_ROW');
            expect((await store.outboxStats()).pendingCount).toBe(before);
            refused++;
          }
        },
      ),
      { numRuns: RUNS, seed: SEED + 2 },
    );
    for (const id of (await store.listExecutions()).map((e) => e.executionId)) {
      for (const r of await store.list(id)) {
        const parsed = Checkpoint.safeParse(r);
        expect(
          parsed.success,
          parsed.success
            ? ''
            : `${JSON.stringify(parsed.error.issues[0]).slice(0, 300)} in ${JSON.stringify(r).slice(0, 300)}`,
        ).toBe(true);
        expect(Buffer.byteLength(JSON.stringify(r))).toBeLessThanOrEqual(LIMITS.rowBytes + 1024);
      }
    }
    expect(refused).toBeGreaterThan(0);
    await store.close();
  }, 300_000);
});
