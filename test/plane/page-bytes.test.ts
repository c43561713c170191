/**
 * A page of an execution's rows (the restore bundle, the rows listing) is
 * bounded by bytes as well as by `limit`: 1000 rows of up to 1 MB each would
 * be a gigabyte in the plane's memory for one request. Pages of large rows
 * are cut at PAGE_BYTES (a page always holds a row: one is at most 1 MB), and paging through them still
 * brings every row once, in order.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { restoreFromPlane } from '../../client/replica/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { projectId } from '../../plane/auth.js';
import { PAGE_BYTES } from '../../plane/reads/rows.js';
import { idempotencyListing } from '../../plane/restore.js';
import { call, startTestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';
import { uuidv7 } from '../../shared/ids.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-page-bytes-');
afterAll(() => tmp.cleanup());

describe('row pages are bounded by bytes', () => {
  it('the restore bundle and the rows listing cut a page of large rows at PAGE_BYTES; paging brings every row once, in order', async () => {
    const plane = await startTestPlane('pglite');
    try {
      const key = await plane.key('p', ['ingest', 'read']);
      // 40 rows of ~694 KB (incompressible): 28 MB in all, 12 to a page
      const rows = await eventsOf(async (s) => {
        for (let i = 0; i < 40; i++)
          await s.put(step('large', i, { nodeOutput: randomBytes(520_000).toString('base64') }));
      });
      for (let i = 0; i < rows.length; i += 4) {
        expect(
          (
            await call(`${plane.url}/v1/ingest`, {
              key,
              json: { protocol: 1, writerId: 'w', rows: rows.slice(i, i + 4) },
            })
          ).status,
        ).toBe(200);
      }

      for (const route of ['restore', 'rows'] as const) {
        const seqs: number[] = [];
        const pages: number[][] = [];
        let cursor: string | null = null;
        do {
          const r = await call(
            `${plane.url}/v1/executions/large/${route}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            { key },
          );
          expect(r.status).toBe(200);
          const page = (route === 'restore' ? r.body.rows : r.body.items) as { seq: number }[];
          expect(page.length, route).toBeGreaterThan(0);
          pages.push(page.map((row) => Buffer.byteLength(JSON.stringify(row))));
          seqs.push(...page.map((row) => row.seq));
          cursor = r.body.nextCursor;
        } while (cursor);
        expect(seqs, route).toEqual(Array.from({ length: 40 }, (_, i) => i));
        expect(pages.length, `${route}: pages`).toBeGreaterThanOrEqual(4);
        const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
        for (const [i, page] of pages.entries()) {
          expect(sum(page), route).toBeLessThanOrEqual(PAGE_BYTES);
          // full: the next row would not have fitted (the plane counts jsonb's text, a few bytes a row more than this)
          if (i < pages.length - 1) expect(sum(page) + pages[i + 1][0], route).toBeGreaterThan(PAGE_BYTES - 4096);
        }
      }

      // the client's restore pages through the same way
      const store = new SqliteCheckpointer({ path: tmp.file('restored.db') });
      try {
        expect(await restoreFromPlane(store, 'large', { url: plane.url, apiKey: key })).toMatchObject({
          inserted: 40,
          totalRows: 40,
        });
        expect((await store.list('large', { limit: 100 })).map((r) => r.seq)).toEqual(
          Array.from({ length: 40 }, (_, i) => i),
        );
      } finally {
        await store.close();
      }
    } finally {
      await plane.close();
    }
  }, 300_000);

  it('idempotency=paged: the entries follow the rows in pages of PAGE_BYTES, each once (multibyte keys up to the key limit in the cursor); a client not asking gets them all on the first page; restore gathers them from every page', async () => {
    const plane = await startTestPlane('pglite');
    try {
      const key = await plane.key('p', ['ingest', 'read']);
      const ingest = async (rows: unknown[]) =>
        expect(
          (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows } })).body,
        ).toMatchObject({ rejected: 0 });
      // two large rows, then 30 effects of ~694 KB (incompressible) under multibyte keys, some at the 512-character limit
      const keyOf = (i: number) =>
        i % 3 === 0 ? `€${String(i).padStart(2, '0')}`.padEnd(512, 'ü') : `charge:€${String(i).padStart(2, '0')}`;
      const entry = (i: number, k = keyOf(i)): OutboxEvent => ({
        kind: 'idempotency',
        id: uuidv7(),
        row: {
          executionId: 'effects',
          key: k,
          result: { receipt: randomBytes(520_000).toString('base64') },
          createdAt: new Date().toISOString(),
        },
      });
      await ingest(
        await eventsOf(async (s) => {
          for (let i = 0; i < 2; i++)
            await s.put(step('effects', i, { nodeOutput: randomBytes(520_000).toString('base64') }));
        }),
      );
      for (let i = 0; i < 30; i += 3) await ingest([entry(i), entry(i + 1), entry(i + 2)]);
      const all = Array.from({ length: 30 }, (_, i) => keyOf(i));

      const walk = async (onPage?: (n: number) => Promise<void>) => {
        const keys: string[] = [];
        const seqs: number[] = [];
        const sizes: number[] = [];
        let cursor: string | null = null;
        do {
          const r = await call(
            `${plane.url}/v1/executions/effects/restore?limit=1000&idempotency=paged${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            { key },
          );
          expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
          const { rows, idempotency } = r.body as { rows: { seq: number }[]; idempotency: { key: string }[] };
          expect(rows.length + idempotency.length).toBeGreaterThan(0);
          sizes.push([...rows, ...idempotency].reduce((n, x) => n + Buffer.byteLength(JSON.stringify(x)), 0));
          seqs.push(...rows.map((x) => x.seq));
          keys.push(...idempotency.map((x) => x.key));
          cursor = r.body.nextCursor;
          await onPage?.(sizes.length);
        } while (cursor);
        return { keys, seqs, sizes };
      };
      const paged = await walk();
      expect(paged.seqs).toEqual([0, 1]);
      expect([...paged.keys].sort()).toEqual([...all].sort());
      expect(paged.sizes.length).toBeGreaterThanOrEqual(3);
      for (const size of paged.sizes) expect(size).toBeLessThanOrEqual(PAGE_BYTES);
      // the first page's rows leave room for entries: they come on it too, read in its snapshot
      expect(paged.sizes[0]).toBeGreaterThan(PAGE_BYTES - 800_000);

      // a client that does not ask (before 2026-12): every entry on the first page, none later
      const old = await call(`${plane.url}/v1/executions/effects/restore?limit=1`, { key });
      expect(old.body.idempotency).toHaveLength(30);
      expect(
        (
          await call(
            `${plane.url}/v1/executions/effects/restore?limit=1&cursor=${encodeURIComponent(old.body.nextCursor)}`,
            { key },
          )
        ).body.idempotency,
      ).toEqual([]);

      // entries recorded while a restore pages through them are never lost from it: every entry of the first page's
      // time arrives once; one recorded since after the cursor comes too (an effect that ran)
      const late = await walk(async (n) => {
        if (n === 1) await ingest([entry(90, 'ÿ late, after every key'), entry(91, ' early, before every key')]);
      });
      expect(late.keys.filter((k) => all.includes(k)).sort()).toEqual([...all].sort());
      expect(late.keys).toContain('ÿ late, after every key');
      expect(new Set(late.keys).size).toBe(late.keys.length);

      // the inspector's run page lists them the same way: by key, within PAGE_BYTES a page
      const project = await projectId(plane.database.db, 'p');
      const listed: string[] = [];
      for (let cursor: string | undefined, pages = 0; ; pages++) {
        const page = await idempotencyListing(plane.database.db, project, 'effects', { cursor, limit: 1000 });
        expect(Buffer.byteLength(JSON.stringify(page.items))).toBeLessThanOrEqual(PAGE_BYTES);
        listed.push(...page.items.map((e) => e.key));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
        expect(pages).toBeLessThan(20);
      }
      expect([...listed].sort()).toEqual([...all, 'ÿ late, after every key', ' early, before every key'].sort());

      const store = new SqliteCheckpointer({ path: tmp.file('effects.db') });
      try {
        expect(await restoreFromPlane(store, 'effects', { url: plane.url, apiKey: key })).toMatchObject({
          inserted: 2,
          idempotencyInserted: 32,
        });
        expect((await store.listIdempotent('effects')).map((e) => e.key).sort()).toEqual(
          [...all, 'ÿ late, after every key', ' early, before every key'].sort(),
        );
      } finally {
        await store.close();
      }

      // the run deleted and started again between pages of its entries: the next page is refused, not another copy's entries
      const first = await call(`${plane.url}/v1/executions/effects/restore?limit=1000&idempotency=paged`, { key });
      await ingest([
        { kind: 'execution_deleted', id: uuidv7(), executionId: 'effects', deletedAt: new Date().toISOString() },
        ...(await eventsOf(async (s) => {
          for (let i = 0; i < 2; i++) await s.put(step('effects', i));
        })),
      ]);
      const next = await call(
        `${plane.url}/v1/executions/effects/restore?limit=1000&idempotency=paged&cursor=${encodeURIComponent(first.body.nextCursor)}`,
        { key },
      );
      expect([next.status, next.body.error?.code]).toEqual([400, 'BAD_CURSOR']);
    } finally {
      await plane.close();
    }
  }, 300_000);
});
