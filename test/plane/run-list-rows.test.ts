/**
 * The run list reads rows of its runs by key (plane/reads/rows-at.ts): when each run started and last wrote (its
 * first and newest rows' createdAt) and a failed run's error (its end marker's). Each run gets its own rows,
 * whatever its id holds and whether its newest row is its first; and the page's rows are read in statements whose
 * text is the same for a page of four runs and a page of five (one set of keys, not a condition per run).
 * Over real HTTP on PGlite and on Postgres.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatementTrace } from '../../plane/db/open.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { eventsOf, step } from '../helpers/rows.js';

const pg = await pgReady('run list rows on postgres');

/** createdAt of run `r`'s row `seq`, by its writer's clock: a different time for every row. */
const at = (r: number, seq: number) => new Date(Date.UTC(2026, 0, 1 + r, seq)).toISOString();

/** Runs with ids a key set must carry as they are, each ending as said (`rows`: its count of rows before the end). */
const RUNS = [
  { id: 'plain', rows: 3, end: 'completed' },
  { id: 'one-row', rows: 1, end: null },
  { id: `quo"te\\back'slash`, rows: 2, end: 'failed' },
  { id: 'ünï-🦆 {"seq":0}', rows: 1, end: 'failed' },
  { id: 'still-running', rows: 4, end: null },
] as const;

function listSuite(name: string, kind: () => 'pglite' | { url: string }) {
  describe(`run list rows on ${name}`, () => {
    let plane: TestPlane;
    let reader = '';
    let traced: string[] | null = null;
    const trace: StatementTrace = { logQuery: (query) => traced?.push(query) };
    /** The text of each statement one GET sends that reads rows (checkpoints), and the answer. */
    const listed = async (limit: number) => {
      traced = [];
      const r = await call(`${plane.url}/v1/executions?limit=${limit}`, { key: reader });
      const statements = traced.filter((q) => /\bcheckpoints\b/.test(q));
      traced = null;
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return { items: r.body.items as Record<string, unknown>[], statements };
    };

    beforeAll(async () => {
      plane = await startTestPlane(kind(), { trace });
      const writer = await plane.key('list-rows', ['ingest']);
      reader = await plane.key('list-rows', ['read']);
      const rows = await eventsOf(async (s) => {
        for (const [r, run] of RUNS.entries()) {
          for (let seq = 0; seq < run.rows; seq++) await s.put(step(run.id, seq, { createdAt: at(r, seq) }));
          if (run.end)
            await s.put({
              ...step(run.id, run.rows, { createdAt: at(r, run.rows) }),
              nodeId: 'run_end',
              step: 'run_end',
              status: run.end,
              nodeOutput:
                run.end === 'failed' ? { error: { code: `GAVE_UP_${r}`, message: `run ${r} gave up` } } : null,
            });
        }
      });
      const res = await call(`${plane.url}/v1/ingest`, {
        key: writer,
        json: { protocol: 1, writerId: 'w-list', rows },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    });
    afterAll(async () => {
      await plane?.close();
    });

    it('each run is listed with the times of its own first and newest rows and its own end error', async () => {
      const { items } = await listed(RUNS.length);
      const byId = new Map(items.map((i) => [i.executionId, i]));
      expect([...byId.keys()].sort()).toEqual(RUNS.map((r) => r.id).sort());
      for (const [r, run] of RUNS.entries()) {
        const newest = run.rows - (run.end ? 0 : 1);
        expect(byId.get(run.id), run.id).toMatchObject({
          lastSeq: newest,
          startedAt: at(r, 0),
          lastWriteAt: at(r, newest),
          error: run.end === 'failed' ? { code: `GAVE_UP_${r}`, message: `run ${r} gave up` } : null,
        });
      }
    });

    it("a page's rows are read by statements whose text does not grow with the page", async () => {
      // any page of all runs but one holds a failed run, whose end marker is read too
      const fewer = await listed(RUNS.length - 1);
      const all = await listed(RUNS.length);
      expect(fewer.items).toHaveLength(RUNS.length - 1);
      expect(all.statements.length).toBeGreaterThan(0);
      expect(all.statements).toEqual(fewer.statements);
    });
  });
}

listSuite('pglite', () => 'pglite');

describe.runIf(pg)('on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_run_list_rows');
  });
  afterAll(async () => {
    await db?.drop();
  });
  listSuite('postgres', () => ({ url: db.url }));
});
