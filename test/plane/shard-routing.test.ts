/**
 * The plane on a distributed Postgres (Citus), proven with what this machine has: PostgreSQL's own hash
 * partitioning by `project_id`, which follows the rules a distributed table does. Every unique key must include
 * the partition column; a statement is pruned to one partition only when it says `project_id = constant` for each
 * partitioned table it reads (a correlation to another table's `project_id` is not a constant); equal keys land in
 * partitions of the same number in every table, which is colocation.
 *
 * After the migrations, every table of a project (each table with a `project_id` column but the shared ones,
 * `REFERENCE`) is rewritten as `PARTITION BY HASH (project_id)` with 8 partitions: a unique key without
 * `project_id` fails that rewrite, as `create_distributed_table` refuses it. Then the real plane is driven over
 * HTTP through its routes; every statement it sends is captured with its parameters and call site
 * (plane/db/open.ts `StatementTrace`), and each one naming a table of a project is EXPLAINed with its parameters:
 * it must touch exactly one partition, of the same number in every table it joins, and that number must be the
 * route's project's. An INSERT's target partition is chosen per row while it runs, which a plan does not show: a
 * row trigger on every partitioned table logs where each statement's rows landed, and each statement's rows must
 * land in one project's partitions. No statement may need a node-local lock or sequence (an advisory lock,
 * `nextval`, a column default drawing from a sequence): on a distributed engine an advisory lock holds on one node
 * only, and a sequence is drawn on one node (or from per-node ranges), so neither orders commits across shards; the
 * feeds' keys come from per-project clocks (plane/clocks.ts). Each such statement fails the test, named by its call
 * site. The routes, one function per group, and the check of their statements are in shard-routing-helpers.ts.
 */
import { createHook, executionAsyncId } from 'node:async_hooks';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { referenceTables } from '../helpers/distribute.js';
import { partitionByProject, PARTITIONS, publicTables } from '../helpers/partition.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import {
  anotherProjectRoutes,
  type Captured,
  type Checked,
  checkStatements,
  claimRoutes,
  decisionRoutes,
  driver,
  feedRoutes,
  ingestRuns,
  inspectorPages,
  listingRoutes,
  mentionsTenant,
  ownerRoutes,
  quarantineRoutes,
  restoreRoutes,
  retentionRoutes,
  runRequestRoutes,
} from './shard-routing-helpers.js';

const ready = await pgReady('shard routing');

/**
 * The tables every project shares (Citus reference tables, as drizzle/citus/distribute.sql makes them): read by key
 * id or session hash, never partitioned.
 */
const REFERENCE = referenceTables();

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Where each promise was made, while the routes are driven. drizzle sends a statement when its query is awaited,
 * from a job of its own (an awaited thenable), whose stack holds no caller; the promise the `await` made was made
 * in the caller, so its stack names the call site.
 */
const madeAt = new Map<number, { at: { stack?: string }; trigger: number }>();
const promises = createHook({
  init(id, type, trigger) {
    if (type !== 'PROMISE') return;
    const at: { stack?: string } = {};
    Error.captureStackTrace(at);
    madeAt.set(id, { at, trigger });
  },
});

/** The first function of plane/ or inspector/ in a stack, by name (else, an anonymous one, by file and line). */
function siteIn(stack: string): { named: string | null; anonymous: string | null } {
  let anonymous: string | null = null;
  for (const line of stack.split('\n')) {
    const m = /^\s*at (?:async )?(?:(.+?) \()?(?:file:\/\/)?(\/[^():]+):(\d+):\d+\)?$/.exec(line);
    if (!m) continue;
    const rel = relative(ROOT, m[2]);
    if (!/^(plane|inspector)\//.test(rel) || rel === 'plane/db/open.ts') continue;
    if (m[1] && m[1] !== '<anonymous>') return { named: `${rel} ${m[1].replace(/^(Object|Module)\./, '')}`, anonymous };
    anonymous ??= `${rel}:${m[3]}`;
  }
  return { named: null, anonymous };
}

/**
 * The call site of the statement being sent: the first named function of the plane on its own stack, else on the
 * stacks of the promises it runs for (an anonymous callback, a transaction's body, is named by the function that
 * runs the transaction).
 */
function callSite(): string {
  const own = siteIn(new Error().stack ?? '');
  if (own.named) return own.named;
  let anonymous = own.anonymous;
  let id = executionAsyncId();
  for (let hops = 0; hops < 40; hops++) {
    const made = madeAt.get(id);
    if (!made) break;
    const site = siteIn(made.at.stack ?? '');
    if (site.named) return site.named;
    anonymous ??= site.anonymous;
    id = made.trigger;
  }
  return anonymous ?? 'unknown';
}

describe.skipIf(!ready)('the plane on tables hash-partitioned by project_id (what Citus routes by)', () => {
  let db: TestDatabase;
  let pg: postgres.Sql;
  let plane: TestPlane;
  let route = 'start';
  const captured: Captured[] = [];
  const routes: string[] = [];
  let tenant: string[] = [];
  const refusedTables: { table: string; error: string }[] = [];
  /** partition name → its table and number */
  const partitions = new Map<string, { table: string; n: number }>();
  /** a sequence's name → the column it is the default of (table.column) */
  const serials = new Map<string, string>();
  const keys: Record<string, string> = {};

  /** Rewrite `table` as hash-partitioned by project_id (test/helpers/partition.ts), logging where its writes land. */
  async function partition(table: string): Promise<void> {
    const sequences = await partitionByProject(pg, table, (tx, t) =>
      tx.unsafe(
        `CREATE TRIGGER routing_writes AFTER INSERT OR UPDATE OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION routing.log_write()`,
      ),
    );
    for (let n = 0; n < PARTITIONS; n++) partitions.set(`${table}_p${n}`, { table, n });
    for (const s of sequences) serials.set(s.seq.replace(/^public\./, ''), `${table}.${s.column}`);
  }

  /** The number of the partitions a project's rows go to (the same in every partitioned table). */
  async function partitionOf(projectId: string): Promise<number> {
    const [{ n }] = await pg<{ n: number }[]>`
      SELECT r AS n FROM generate_series(0, ${PARTITIONS - 1}) r
      WHERE satisfies_hash_partition(${[...partitions.values()][0].table}::regclass, ${PARTITIONS}, r, ${projectId}::text)`;
    return n;
  }

  beforeAll(async () => {
    db = await createTestDatabase('waymark_shard');
    // the schema as the plane makes it: its migrations
    await (await openPlaneDatabase({ databaseUrl: db.url, max: 1 })).close();
    pg = postgres(db.url, { max: 1, onnotice: () => {}, fetch_types: false });
    await pg.unsafe(`
      CREATE SCHEMA routing;
      CREATE TABLE routing.writes (pid int, at timestamptz, query text, part text, project_id text);
      CREATE FUNCTION routing.log_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO routing.writes VALUES (pg_backend_pid(), statement_timestamp(), current_query(), TG_TABLE_NAME,
          CASE WHEN TG_OP = 'DELETE' THEN OLD.project_id ELSE NEW.project_id END);
        RETURN NULL;
      END $$;`);
    const tables = await publicTables(pg);
    tenant = tables.filter((t) => !REFERENCE.includes(t.table)).map((t) => t.table);
    expect(
      tenant.filter((t) => !tables.find((x) => x.table === t)!.projectId),
      'tables neither shared (REFERENCE) nor of one project (no project_id column)',
    ).toEqual([]);
    for (const table of tenant) {
      try {
        await partition(table);
      } catch (e) {
        refusedTables.push({ table, error: (e as Error).message });
      }
    }
    plane = await startTestPlane(
      { url: db.url },
      {
        // a run whose writer was not heard from for 1 ms may be taken over: the takeover route is driven at once
        takeoverAfterMs: 1,
        trace: { logQuery: (sql, params) => captured.push({ route, sql, params, site: callSite() }) },
      },
    );
  }, 120_000);
  afterAll(async () => {
    await plane?.close();
    await pg?.end({ timeout: 2 });
    await db?.drop();
  });

  /** Run `fn` as the route named `name`: the statements sent meanwhile are this route's, each with its call site. */
  async function as(name: string, fn: () => Promise<void>): Promise<void> {
    route = name;
    routes.push(name);
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 40;
    promises.enable();
    try {
      await fn();
    } finally {
      promises.disable();
      madeAt.clear();
      Error.stackTraceLimit = limit;
      route = 'between routes';
    }
  }

  it('partitions every table of a project by project_id: each of its unique keys includes project_id', () => {
    // the plane has at least 16 tables of a project: none of them may go unchecked
    expect(tenant.length).toBeGreaterThanOrEqual(16);
    expect(refusedTables, refusedTables.map((r) => `${r.table}: ${r.error}`).join('\n')).toEqual([]);
  });

  it('routes every statement of every route to one partition of one project', async () => {
    await as('keys', async () => {
      for (const [name, project, scopes] of [
        ['ingest', 'alpha', ['ingest']],
        ['read', 'alpha', ['read']],
        ['approve', 'alpha', ['approve', 'cancel']],
        ['operate', 'alpha', ['operate']],
        ['admin', 'alpha', ['admin']],
        ['beta', 'beta', ['ingest', 'read']],
      ] as const)
        keys[name] = await plane.key(project, [...scopes]);
    });
    const d = driver(plane.url, keys);
    const laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });
    try {
      let runs = { paused: {} as Record<string, string>, forkFrom: '' };
      await as('ingest', async () => {
        runs = await ingestRuns(d, laptop);
      });
      await as('restore', () => restoreRoutes(d));
      await as('listings', () => listingRoutes(d));
      await as('claims', () => claimRoutes(d, runs.paused));
      await as('owner changes', () => ownerRoutes(d));
      await as('decisions', () => decisionRoutes(d, runs.paused));
      await as('feeds', () => feedRoutes(d));
      await as('quarantine', () => quarantineRoutes(d));
      await as('run requests', () => runRequestRoutes(d, runs.forkFrom));
      await as('retention', () => retentionRoutes(d, pg));
      await as('inspector', () => inspectorPages(d));
      await as('another project', () => anotherProjectRoutes(d));
    } finally {
      await laptop.close();
    }

    // each project's partition number, by its id
    const home = new Map<string, number>();
    for (const r of await pg<{ id: string }[]>`SELECT id FROM projects`) home.set(r.id, await partitionOf(r.id));
    const { checked, writes, spread } = await checkStatements(captured, {
      url: db.url,
      pg,
      tenant,
      refusedTables,
      partitions,
      serials,
      home,
    });
    const mentions = mentionsTenant(tenant);

    const lines = routes.map((r) => {
      const of = checked.filter((c) => c.route === r);
      const tenantOnes = of.filter((c) => mentions.test(c.sql));
      return `  ${r.padEnd(16)} ${String(of.length).padStart(4)} sent, ${String(tenantOnes.length).padStart(4)} on a project's tables EXPLAINed and checked, ${String(of.filter((c) => c.nodeLocal.length).length).padStart(3)} need a node-local lock or sequence`;
    });
    console.log(
      `statements per route (tables of a project in ${PARTITIONS} hash partitions; the rows of ${writes} writes checked where they landed):\n${lines.join('\n')}`,
    );

    // each problem once, with the routes it was seen on
    const problems = new Map<string, { c: Checked; routes: Set<string>; n: number }>();
    for (const c of checked.filter((x) => x.problem)) {
      const key = `${c.site}\n${c.problem}\n${c.sql}`;
      const p = problems.get(key) ?? { c, routes: new Set<string>(), n: 0 };
      p.routes.add(c.route);
      p.n++;
      problems.set(key, p);
    }
    const shown = [...problems.values()].map(
      ({ c, routes: on, n }) =>
        `${c.site}: ${c.problem} (${n}× on ${[...on].join(', ')})\n    ${c.sql.replace(/\s+/g, ' ').trim().slice(0, 300)}`,
    );
    expect(shown, `statements not routed to one partition of one project:\n${shown.join('\n')}`).toEqual([]);
    expect(
      spread.length,
      `writes whose rows landed in more than one project's partitions:\n${spread.map((w) => `${w.parts.join(', ')} (${w.projects} projects): ${w.query.replace(/\s+/g, ' ').slice(0, 300)}`).join('\n')}`,
    ).toBe(0);
    // a run page in a session offered the forms reads the actions a request waits for: that statement is checked too
    expect(checked.filter((c) => c.route === 'inspector').map((c) => c.site)).toContain(
      'plane/requests.ts waitingActions',
    );
    // a writer's feed pages, the restore that records its writer and the watchers of writers' polls are checked too
    expect(checked.map((c) => c.site)).toEqual(
      expect.arrayContaining([
        'plane/writer-changes.ts writerChangeFeed',
        'plane/writer-changes.ts recordRestorer',
        'plane/writer-changes.ts concerned',
        'plane/writer-decisions.ts writerDecisionFeed',
        'plane/writer-decisions.ts concerned',
      ]),
    );
    // every route was driven and sent statements the check saw
    for (const r of routes.filter((x) => x !== 'keys'))
      expect(checked.filter((c) => c.route === r && mentions.test(c.sql)).length, r).toBeGreaterThan(0);

    // the feeds' keys are drawn from the project's clocks on every route that writes one: the check saw them
    expect(checked.map((c) => c.site)).toEqual(expect.arrayContaining(['plane/clocks.ts drawKeys']));
    const nodeLocal = [...new Set(checked.flatMap((c) => c.nodeLocal))].sort();
    expect(nodeLocal, 'statements that need a node-local lock or sequence, by call site').toEqual([]);
  }, 300_000);
});
