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
import { PAGE_BYTES } from '../../plane/read.js';
import { call, startTestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';
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
        for (let i = 0; i < 40; i++) await s.put(step('large', i, { nodeOutput: randomBytes(520_000).toString('base64') }));
      });
      for (let i = 0; i < rows.length; i += 4) {
        expect((await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'w', rows: rows.slice(i, i + 4) } })).status).toBe(200);
      }

      for (const route of ['restore', 'rows'] as const) {
        const seqs: number[] = [];
        const pages: number[][] = [];
        let cursor: string | null = null;
        do {
          const r = await call(`${plane.url}/v1/executions/large/${route}?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
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
        expect(await restoreFromPlane(store, 'large', { url: plane.url, apiKey: key })).toMatchObject({ inserted: 40, totalRows: 40 });
        expect((await store.list('large', { limit: 100 })).map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      } finally {
        await store.close();
      }
    } finally {
      await plane.close();
    }
  }, 300_000);
});
