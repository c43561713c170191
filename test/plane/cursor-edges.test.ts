/// <reference lib="dom" />
/**
 * Cursors and query parameters at the edges of what the plane's columns hold,
 * over real HTTP on PGlite and on Postgres. A cursor is base64url JSON; one
 * the plane could not have issued (a time Postgres does not read, a seq past
 * int4, an id past the safe integers, a restore snapshot the run no longer
 * has) is 400 BAD_CURSOR in the API and the inspector's HTML 400 page, never a
 * 500; one it issued still pages every item, and the limits themselves are read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreFromPlane } from '../../client/replica/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { uuidv7 } from '../../shared/ids.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

const pg = await pgReady('cursor edges on postgres');

/** A cursor as the plane encodes one: base64url of JSON. */
const cursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const INT4_MAX = 2 ** 31 - 1;

function edgeSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`cursor edges on ${name}`, () => {
    let plane: TestPlane;
    let reader = '';
    let writer = '';
    let cookie = '';
    const get = (path: string) => call(`${plane.url}${path}`, { key: reader });
    const ingest = async (rows: unknown[], writerId = 'w-edges') =>
      (await call(`${plane.url}/v1/ingest`, { key: writer, json: { protocol: 1, writerId, rows } })).body;
    const page = async (path: string) => {
      const res = await fetch(`${plane.url}${path}`, { redirect: 'manual', headers: { cookie } });
      return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
    };
    /** Every item of a listing, following `nextCursor` one item a page. */
    const walk = async (path: string, key: (item: never) => unknown) => {
      const seen: unknown[] = [];
      let next: string | null = null;
      do {
        const r = await get(`${path}${path.includes('?') ? '&' : '?'}limit=1${next ? `&cursor=${next}` : ''}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        seen.push(...r.body.items.map(key));
        next = r.body.nextCursor;
      } while (next);
      return seen;
    };
    const badCursor = async (path: string) => {
      const r = await get(path);
      expect([r.status, r.body.error?.code], `${path}: ${JSON.stringify(r.body)}`).toEqual([400, 'BAD_CURSOR']);
      return r;
    };

    beforeAll(async () => {
      plane = await startTestPlane(kind());
      writer = await plane.key('edges', ['ingest']);
      reader = await plane.key('edges', ['read', 'approve']);
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 2; i++) await s.put(step('two-rows', i));
        for (let i = 0; i < 3; i++) await s.put(step('three-rows', i));
        await s.recordInterrupt(pause('paused-a'), { reason: 'approve', context: null });
        await s.recordInterrupt(pause('paused-b'), { reason: 'approve', context: null });
      });
      expect(await ingest(rows)).toMatchObject({ rejected: 0 });
      // two refusals: the quarantine has two entries
      const [good] = await eventsOf(async (s) => void (await s.put(step('refused', 0))));
      const bad = { ...(good as object), row: { ...(good as { row: object }).row, seq: -1 } };
      expect(await ingest([bad, { kind: 'nope', id: uuidv7() }])).toMatchObject({ rejected: 2 });
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key: reader, next: '/' }),
      });
      cookie = login.headers.get('set-cookie')!.split(';')[0];
    });
    afterAll(async () => plane?.close());

    it('run list: a cursor time Postgres cannot read (Date.parse accepts "1", "+275760-…", year 0000, Feb 30) or not written as the plane writes it, or an id no run has, is 400 BAD_CURSOR; years 0001 and 9999 are read; an issued cursor pages every run', async () => {
      for (const time of [
        '1',
        '+275760-09-13T00:00:00.000Z',
        '0000-01-01T00:00:00.000Z',
        '-000001-01-01T00:00:00.000Z',
        '2024-02-30T00:00:00.000Z',
        '2024-01-01T00:00:00Z',
        '2024-01-01 00:00:00.000Z',
      ]) {
        await badCursor(`/v1/executions?cursor=${cursor([time, 'z'])}`);
      }
      for (const id of ['a\u0000b', '', 'x'.repeat(201), 7])
        await badCursor(`/v1/executions?cursor=${cursor(['2024-01-01T00:00:00.000Z', id])}`);
      await badCursor(`/v1/executions?cursor=${cursor(['2024-01-01T00:00:00.000Z'])}`);
      const all = await get('/v1/executions?limit=1000');
      const ids = all.body.items.map((e: { executionId: string }) => e.executionId);
      expect(ids).toEqual(expect.arrayContaining(['two-rows', 'three-rows', 'paused-a', 'paused-b']));
      // the limits of the years a cursor may name: everything is before the last instant of 9999, nothing before 0001
      expect(
        (await get(`/v1/executions?limit=1000&cursor=${cursor(['9999-12-31T23:59:59.999Z', 'z'])}`)).body.items.map(
          (e: { executionId: string }) => e.executionId,
        ),
      ).toEqual(ids);
      expect((await get(`/v1/executions?cursor=${cursor(['0001-01-01T00:00:00.000Z', 'z'])}`)).body).toEqual({
        items: [],
        nextCursor: null,
      });
      expect(await walk('/v1/executions', (e: { executionId: string }) => e.executionId)).toEqual(ids);
    });

    it('run list query: updatedSince in year 0000 (no year of Postgres), and writer or q with U+0000, are 400 INVALID_REQUEST naming the parameter', async () => {
      for (const [query, named] of [
        ['updatedSince=0000-01-01T00:00:00Z', 'updatedSince'],
        ['q=%00', 'q'],
        ['writer=w%00', 'writer'],
      ]) {
        const r = await get(`/v1/executions?${query}`);
        expect([r.status, r.body.error?.code], query).toEqual([400, 'INVALID_REQUEST']);
        expect(r.body.error.message).toContain(named);
      }
      expect((await get('/v1/executions?updatedSince=0001-01-01T00:00:00Z')).body.items.length).toBeGreaterThan(0);
      expect(
        (await get('/v1/executions?q=two&writer=test-writer')).body.items.map(
          (e: { executionId: string }) => e.executionId,
        ),
      ).toEqual(['two-rows']);
    });

    it('rows: a seq cursor past int4 (2^31, 1e20) or below 0 is 400 BAD_CURSOR; 2^31-1 is read (an empty page); an issued cursor pages every row', async () => {
      for (const v of [INT4_MAX + 1, 1e20, -1, 0.5, '1'])
        await badCursor(`/v1/executions/two-rows/rows?cursor=${cursor(v)}`);
      expect((await get(`/v1/executions/two-rows/rows?cursor=${cursor(INT4_MAX)}`)).body).toEqual({
        items: [],
        nextCursor: null,
      });
      expect(
        (await get(`/v1/executions/two-rows/rows?cursor=${cursor(0)}`)).body.items.map((r: { seq: number }) => r.seq),
      ).toEqual([1]);
      expect(await walk('/v1/executions/three-rows/rows', (r: { seq: number }) => r.seq)).toEqual([0, 1, 2]);
    });

    it('quarantine and pauses: an id cursor past the safe integers (1e20, 2^53) or below 0 is 400 BAD_CURSOR; the largest safe integer is read (an empty page); an issued cursor pages every item', async () => {
      for (const path of ['/v1/quarantine', '/v1/pauses']) {
        for (const v of [1e20, 2 ** 53, -1, 1.5]) await badCursor(`${path}?cursor=${cursor(v)}`);
        expect((await get(`${path}?cursor=${cursor(Number.MAX_SAFE_INTEGER)}`)).body).toEqual({
          items: [],
          nextCursor: null,
        });
      }
      expect(await walk('/v1/quarantine', (q: { id: number }) => q.id)).toEqual(
        (await get('/v1/quarantine')).body.items.map((q: { id: number }) => q.id),
      );
      expect((await walk('/v1/quarantine', (q: { id: number }) => q.id)).length).toBe(2);
      expect(await walk('/v1/pauses', (p: { executionId: string }) => p.executionId)).toEqual(['paused-a', 'paused-b']);
    });

    it('restore: a cursor past int4, not after < upTo, or naming rows the run does not have is 400 BAD_CURSOR (never 200 with upTo beyond totalRows); an issued cursor pages the snapshot, and the real client restores through it', async () => {
      for (const v of [
        [-1, INT4_MAX + 1],
        [0, INT4_MAX + 1],
        [-1, 1],
        [5, 5],
        [1, 1],
        [1, 0],
        [0.5, 1],
        [0, 1, 2],
        [0, 1],
      ]) {
        await badCursor(`/v1/executions/two-rows/restore?cursor=${cursor(v)}`);
      }
      // well-formed, but beyond the run's two rows, or naming a row id the run's row at upTo does not have: not a snapshot of this run
      const upToId = (await get('/v1/executions/two-rows/restore')).body.rows[1].id as string;
      for (const v of [
        [1, 5, upToId],
        [0, INT4_MAX, upToId],
        [INT4_MAX - 1, INT4_MAX, upToId],
        [0, 1, uuidv7()],
      ]) {
        const r = await badCursor(`/v1/executions/two-rows/restore?cursor=${cursor(v)}`);
        expect(r.body.error.message).toContain('restore again from the first page');
      }
      // the cursor the plane issues for the two rows, one a page
      const last = await get(`/v1/executions/two-rows/restore?cursor=${cursor([0, 1, upToId])}`);
      expect(last.body).toMatchObject({ upTo: 1, totalRows: 2, nextCursor: null });
      expect(last.body.rows.map((r: { seq: number }) => r.seq)).toEqual([1]);
      const first = await get('/v1/executions/three-rows/restore?limit=1');
      expect(first.body).toMatchObject({ upTo: 2, totalRows: 3 });
      const seqs = first.body.rows.map((r: { seq: number }) => r.seq);
      for (let next = first.body.nextCursor; next; ) {
        const p = await get(`/v1/executions/three-rows/restore?limit=1&cursor=${next}`);
        expect(p.body).toMatchObject({ upTo: 2, totalRows: 3 });
        seqs.push(...p.body.rows.map((r: { seq: number }) => r.seq));
        next = p.body.nextCursor;
      }
      expect(seqs).toEqual([0, 1, 2]);
      const store = new SqliteCheckpointer({ path: ':memory:', writerId: 'restorer' });
      try {
        expect(
          await restoreFromPlane(store, 'three-rows', { url: plane.url, apiKey: reader, pageSize: 1 }),
        ).toMatchObject({ totalRows: 3 });
        expect((await store.list('three-rows')).map((r) => r.seq)).toEqual([0, 1, 2]);
      } finally {
        await store.close();
      }
    });

    it('restore with idempotency=paged: an entries cursor with a key the plane could not hold (NUL, over 512 characters, not text) or a bad snapshot is 400 BAD_CURSOR; an issued one pages every entry once, one a page, and the real client restores them', async () => {
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 2; i++) await s.put(step('effects', i));
        // keys whose order differs between byte order and a locale's: each still comes once
        for (const k of ['B', 'a', 'é', 'Z z', '€']) await s.putIdempotent('effects', k, { k });
      });
      expect(await ingest(rows)).toMatchObject({ rejected: 0 });
      const upToId = (await get('/v1/executions/effects/restore')).body.rows[1].id as string;
      for (const v of [
        ['idempotency', 1, upToId, 'a\u0000'],
        ['idempotency', 1, upToId, 'x'.repeat(513)],
        ['idempotency', 1, upToId, 5],
        ['idempotency', INT4_MAX + 1, upToId, 'a'],
        ['idempotency', 1, 'x'.repeat(65), 'a'],
        ['idempotency', 1, upToId],
        ['entries', 1, upToId, 'a'],
      ]) {
        await badCursor(`/v1/executions/effects/restore?idempotency=paged&cursor=${cursor(v)}`);
      }
      for (const v of [
        ['idempotency', 5, upToId, 'a'],
        ['idempotency', 1, uuidv7(), null],
      ]) {
        expect(
          (await badCursor(`/v1/executions/effects/restore?idempotency=paged&cursor=${cursor(v)}`)).body.error.message,
        ).toContain('restore again from the first page');
      }
      // the key limit itself is read
      expect(
        (
          await get(
            `/v1/executions/effects/restore?idempotency=paged&cursor=${cursor(['idempotency', 1, upToId, '€'.repeat(512)])}`,
          )
        ).status,
      ).toBe(200);
      const seqs: number[] = [];
      const keys: string[] = [];
      let next: string | null = null;
      do {
        const r = await get(`/v1/executions/effects/restore?limit=1&idempotency=paged${next ? `&cursor=${next}` : ''}`);
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body.rows.length + r.body.idempotency.length).toBe(1);
        seqs.push(...r.body.rows.map((x: { seq: number }) => x.seq));
        keys.push(...r.body.idempotency.map((x: { key: string }) => x.key));
        next = r.body.nextCursor;
      } while (next);
      expect(seqs).toEqual([0, 1]);
      expect(keys.length).toBe(5);
      expect([...keys].sort()).toEqual(['B', 'Z z', 'a', 'é', '€']);
      const store = new SqliteCheckpointer({ path: ':memory:', writerId: 'restorer' });
      try {
        expect(await restoreFromPlane(store, 'effects', { url: plane.url, apiKey: reader, pageSize: 1 })).toMatchObject(
          { totalRows: 2, idempotencyInserted: 5 },
        );
        expect(await store.getIdempotent('effects', 'é')).toEqual({ hit: true, result: { k: 'é' } });
      } finally {
        await store.close();
      }
    });

    it('restore: a run deleted and started again between pages is refused with 400 BAD_CURSOR on the next page, not served as pages of the new copy', async () => {
      const old = await eventsOf(async (s) => {
        for (let i = 0; i < 3; i++) await s.put(step('redone', i));
      });
      expect(await ingest(old)).toMatchObject({ rejected: 0 });
      const p1 = await get('/v1/executions/redone/restore?limit=1');
      expect(p1.body).toMatchObject({ upTo: 2, totalRows: 3, nextCursor: expect.any(String) });
      const del: OutboxEvent = {
        kind: 'execution_deleted',
        id: uuidv7(),
        executionId: 'redone',
        deletedAt: new Date().toISOString(),
      };
      const again = await eventsOf(async (s) => void (await s.put(step('redone', 0, { nodeOutput: 'new run' }))));
      expect(await ingest([del, ...again])).toMatchObject({ rejected: 0 });
      await badCursor(`/v1/executions/redone/restore?limit=1&cursor=${p1.body.nextCursor}`);
      expect((await get('/v1/executions/redone/restore')).body).toMatchObject({ upTo: 0, totalRows: 1 });
      // started again and grown past the old snapshot: rows at both of the cursor's seqs exist, but they are another copy's
      const p2 = await get('/v1/executions/redone/restore?limit=1');
      const grown = await eventsOf(async (s) => {
        for (let i = 0; i < 4; i++) await s.put(step('redone', i, { nodeOutput: 'third run' }));
      });
      expect(await ingest([{ ...del, id: uuidv7() }, ...grown])).toMatchObject({ rejected: 0 });
      expect(p2.body.nextCursor).toBeNull();
      const p3 = await get('/v1/executions/redone/restore?limit=1');
      expect(p3.body).toMatchObject({ upTo: 3, totalRows: 4 });
      const fourth = await eventsOf(async (s) => {
        for (let i = 0; i < 5; i++) await s.put(step('redone', i, { nodeOutput: 'fourth run' }));
      });
      expect(await ingest([{ ...del, id: uuidv7() }, ...fourth])).toMatchObject({ rejected: 0 });
      await badCursor(`/v1/executions/redone/restore?limit=1&cursor=${p3.body.nextCursor}`);
    });

    it('inspector: a cursor it could not have issued is its HTML 400 page (BAD_CURSOR) on the run list, the quarantine and the approvals, not a JSON 500', async () => {
      for (const path of [
        `/?cursor=${cursor(['1', 'z'])}`,
        `/?cursor=${cursor(['+275760-09-13T00:00:00.000Z', 'z'])}`,
        `/quarantine?cursor=${cursor(1e20)}`,
        `/approvals?cursor=${cursor(1e20)}`,
      ]) {
        const p = await page(path);
        expect([p.status, p.type], path).toEqual([400, expect.stringContaining('text/html')]);
        expect(p.text, path).toContain('BAD_CURSOR');
      }
      for (const path of [
        `/quarantine?cursor=${cursor(Number.MAX_SAFE_INTEGER)}`,
        `/approvals?cursor=${cursor(Number.MAX_SAFE_INTEGER)}`,
      ]) {
        expect((await page(path)).status, path).toBe(200);
      }
    });

    it('inspector: a seq past int4 in a or b is named as no row of the run (as any seq the run lacks, and as the local UI says it), 2^31-1 too; a run id or a filter with U+0000 is no run (404 page, empty list), not a JSON 500', async () => {
      for (const [query, seq] of [
        ['a=0&b=99999999999', 99999999999],
        [`a=0&b=${INT4_MAX + 1}`, INT4_MAX + 1],
        [`a=0&b=${INT4_MAX}`, INT4_MAX],
        [`a=${INT4_MAX + 1}&b=1`, INT4_MAX + 1],
      ] as const) {
        const p = await page(`/runs/two-rows?${query}`);
        expect([p.status, p.type], query).toEqual([200, expect.stringContaining('text/html')]);
        expect(p.text, query).toContain(`seq ${seq} is not a row of this run`);
      }
      expect((await page('/runs/two-rows?a=0&b=1')).text).not.toContain('is not a row of this run');
      // a timeline page at a seq past int4 is a page (the newest, or none after the run's rows), never a JSON 500
      for (const query of [`from=${INT4_MAX + 1}`, `before=${INT4_MAX + 1}`, `from=${INT4_MAX}`, `before=${INT4_MAX}`])
        expect((await page(`/runs/two-rows?${query}`)).status, query).toBe(200);
      const past = await page(`/runs/two-rows?seq=${INT4_MAX + 1}`);
      expect([past.status, past.text.includes(`This run has no row #${INT4_MAX + 1}`)]).toEqual([200, true]);
      // an agent path with U+0000 matches no row, as in a local store
      const nul = await page('/runs/two-rows?agent=a%00b');
      expect([nul.status, nul.text.includes('No rows match the filter here.')]).toEqual([200, true]);
      const missing = await page('/runs/a%00b');
      expect([missing.status, missing.type]).toEqual([404, expect.stringContaining('text/html')]);
      for (const path of ['/?q=%00', '/?writer=w%00']) {
        const p = await page(path);
        expect([p.status, p.type], path).toEqual([200, expect.stringContaining('text/html')]);
        expect(p.text, path).not.toContain('href="/runs/two-rows"');
      }
      expect((await page('/?q=two')).text).toContain('href="/runs/two-rows"');
      // a search is a prefix, not an id: '.' (no run's id) still finds the runs starting with it
      expect(await ingest(await eventsOf(async (s) => void (await s.put(step('.dotted', 0)))))).toMatchObject({
        rejected: 0,
      });
      expect((await page('/?q=.')).text).toContain('href="/runs/.dotted"');
    });
  });
}

edgeSuite('pglite', () => 'pglite');
describe.skipIf(!pg)('on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_cursor_edges');
  });
  afterAll(async () => db?.drop());
  edgeSuite('postgres', () => ({ url: db.url }));
});
