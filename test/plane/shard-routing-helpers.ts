/**
 * The routes test/plane/shard-routing.test.ts drives, one function per group, and the check of the statements they
 * sent (`checkStatements`): each statement on a project's tables EXPLAINed with its parameters, and where each
 * write's rows landed.
 */
import postgres from 'postgres';
import { expect } from 'vitest';
import { writeLongRun } from '../../bench/lib/long-run.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { uuidv7 } from '../../shared/ids.js';
import { LIMITS } from '../../shared/limits.js';
import type { OutboxEvent } from '../../shared/rows.js';
import { call } from '../helpers/plane.js';
import { pause, step, takeEvents } from '../helpers/rows.js';

export interface Captured {
  route: string;
  sql: string;
  params: unknown[];
  site: string;
}

export interface Checked {
  route: string;
  site: string;
  sql: string;
  /** The partitions the plan touches (partition names). */
  partitions: string[];
  problem: string | null;
  nodeLocal: string[];
}

/** The plane's routes as a client calls them: with a key, the status checked where a route answers one. */
export interface Driver {
  url: string;
  keys: Record<string, string>;
  get(path: string, key?: string, status?: number): Promise<any>;
  post(path: string, key: string, json: unknown): ReturnType<typeof call>;
  ingest(
    key: string,
    writerId: string,
    rows: unknown[],
  ): Promise<{ accepted: number; duplicate: number; rejected: number }>;
}

export function driver(url: string, keys: Record<string, string>): Driver {
  const d: Driver = {
    url,
    keys,
    post: (path, key, json) => call(`${url}${path}`, { key, json }),
    get: async (path, key = keys.read, status = 200) => {
      const r = await call(`${url}${path}`, { key });
      expect(r.status, `${path}: ${JSON.stringify(r.body).slice(0, 300)}`).toBe(status);
      return r.body;
    },
    ingest: async (key, writerId, rows) => {
      const r = await d.post('/v1/ingest', key, { protocol: 1, writerId, rows });
      expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
      return r.body as { accepted: number; duplicate: number; rejected: number };
    },
  };
  return d;
}

/**
 * The runs every route below reads, ingested from `laptop` and two more writers (one of another project); the
 * pauses' checkpoint ids by run, and the row a fork starts from.
 */
export async function ingestRuns(
  d: Driver,
  laptop: SqliteCheckpointer,
): Promise<{ paused: Record<string, string>; forkFrom: string }> {
  // a long run with a pause it was resumed from, a delegated worker and idempotency entries
  await writeLongRun(laptop, 'long-1', 40);
  const forkFrom = (await laptop.put(step('fork-src', 0))).id;
  await laptop.put({ ...step('fork-src', 1), nodeId: 'run_end', step: 'run_end' as const });
  await laptop.put(step('done-1', 0));
  await laptop.put({ ...step('done-1', 1), nodeId: 'run_end', step: 'run_end' as const });
  await laptop.put(step('failed-1', 0));
  await laptop.put({
    ...step('failed-1', 1),
    nodeId: 'run_end',
    step: 'run_end' as const,
    status: 'failed' as const,
    nodeOutput: { error: { code: 'MODEL_ERROR', message: 'upstream 500' } },
  });
  const paused: Record<string, string> = {};
  for (const id of ['paused-1', 'paused-2', 'paused-3', 'cancel-1']) {
    await laptop.put(step(id, 0));
    paused[id] = (await laptop.recordInterrupt(pause(id, 1), { reason: 'approve', context: null })).checkpoint.id;
  }
  await laptop.put(step('stale-1', 0));
  await laptop.put(step('stale-1', 1));
  const events = await takeEvents(laptop);
  for (let i = 0; i < events.length; i += 200) {
    const r = await d.ingest(d.keys.ingest, 'laptop-a', events.slice(i, i + 200));
    expect(r.rejected).toBe(0);
  }
  // the same batch again: duplicates
  expect((await d.ingest(d.keys.ingest, 'laptop-a', events.slice(0, 20))).duplicate).toBe(20);
  // refused rows: a row too large (a hole in its run), an id sent again with another payload, a seq taken by another row
  const hole = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-h' });
  try {
    for (let i = 0; i < 3; i++) await hole.put(step('hole-1', i));
    const rows = await takeEvents(hole);
    const large = rows[1] as Extract<OutboxEvent, { kind: 'checkpoint' }>;
    rows[1] = { ...large, row: { ...large.row, nodeInput: 'x'.repeat(LIMITS.rowBytes) } };
    expect((await d.ingest(d.keys.ingest, 'laptop-h', rows)).rejected).toBe(1);
    const changed = structuredClone(rows[0]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
    changed.row.nodeId = 'turn:99';
    const other = structuredClone(rows[2]) as Extract<OutboxEvent, { kind: 'checkpoint' }>;
    other.id = other.row.id = uuidv7();
    expect((await d.ingest(d.keys.ingest, 'laptop-h', [changed, other])).rejected).toBe(2);
  } finally {
    await hole.close();
  }
  const beta = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-b' });
  try {
    await beta.put(step('beta-1', 0));
    await beta.recordInterrupt(pause('beta-1', 1), { reason: 'r', context: null });
    expect((await d.ingest(d.keys.beta, 'laptop-b', await takeEvents(beta))).rejected).toBe(0);
  } finally {
    await beta.close();
  }
  return { paused, forkFrom };
}

export async function restoreRoutes(d: Driver): Promise<void> {
  const first = await d.get('/v1/executions/long-1/restore?limit=10');
  await d.get(`/v1/executions/long-1/restore?limit=10&cursor=${first.nextCursor}`);
  await d.get('/v1/executions/paused-1/restore');
  // a store's restore names its writer: the run's changes reach that writer's feed
  await d.get('/v1/executions/long-1/restore?limit=10&writerId=laptop-c');
  await d.get('/v1/executions/hole-1/restore', d.keys.read, 409);
}

export async function listingRoutes(d: Driver): Promise<void> {
  await d.get('/v1/whoami');
  await d.get('/v1/executions');
  const page = await d.get('/v1/executions?limit=3');
  await d.get(`/v1/executions?limit=3&cursor=${page.nextCursor}`);
  await d.get('/v1/executions?status=paused');
  await d.get('/v1/executions?q=long&writer=laptop-a');
  await d.get(`/v1/executions?updatedSince=${new Date(Date.now() - 3_600_000).toISOString()}`);
  await d.get('/v1/executions/long-1');
  await d.get('/v1/executions/hole-1');
  await d.get('/v1/executions/long-1/rows?limit=10');
  await d.get('/v1/writers');
}

export async function claimRoutes(d: Driver, paused: Record<string, string>): Promise<void> {
  const url = '/v1/executions/paused-1/claim';
  expect((await d.post(url, d.keys.ingest, { checkpointId: paused['paused-1'], writerId: 'laptop-a' })).status).toBe(
    200,
  );
  expect((await d.post(url, d.keys.ingest, { checkpointId: paused['paused-1'], writerId: 'laptop-c' })).status).toBe(
    409,
  );
  // a claim made offline by another writer, reported later: a claim conflict
  const offline: OutboxEvent = {
    kind: 'interrupt_claimed',
    id: uuidv7(),
    executionId: 'paused-1',
    checkpointId: paused['paused-1'],
    writerId: 'laptop-c',
    claimedAt: new Date().toISOString(),
  };
  expect((await d.ingest(d.keys.ingest, 'laptop-c', [offline])).accepted).toBe(1);
  await d.get('/v1/conflicts');
  await d.get('/v1/executions/paused-1');
  const body = { checkpointId: paused['paused-3'], writerId: 'laptop-a' };
  expect((await d.post('/v1/executions/paused-3/claim', d.keys.ingest, body)).status).toBe(200);
  expect((await d.post('/v1/executions/paused-3/claim/release', d.keys.ingest, body)).body).toEqual({
    released: true,
  });
}

export async function ownerRoutes(d: Driver): Promise<void> {
  const lease = { writerId: 'laptop-a', holder: 'laptop-a#1', ttlMs: 60_000 };
  expect((await d.post('/v1/executions/stale-1/lease', d.keys.ingest, lease)).status).toBe(200);
  const released = await d.post('/v1/executions/stale-1/lease', d.keys.ingest, { ...lease, release: true });
  expect(released.body).toMatchObject({ released: true });
  const taken = await d.post('/v1/executions/stale-1/takeover', d.keys.ingest, { writerId: 'laptop-z', seq: 1 });
  expect(taken.status, JSON.stringify(taken.body)).toBe(200);
  const cancel = await d.post('/v1/executions/cancel-1/cancel', d.keys.approve, { reason: 'withdrawn' });
  expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
}

export async function decisionRoutes(d: Driver, paused: Record<string, string>): Promise<void> {
  const r = await d.post('/v1/executions/paused-2/decision', d.keys.approve, {
    checkpointId: paused['paused-2'],
    approved: true,
    comment: 'fine',
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  await d.get('/v1/pauses');
}

export async function feedRoutes(d: Driver): Promise<void> {
  const changes = await d.get('/v1/changes?limit=5');
  await d.get(`/v1/changes?after=${changes.nextCursor}`);
  await d.get('/v1/changes?after=0', d.keys.ingest);
  await d.get('/v1/writer-changes?writerId=laptop-a&limit=5', d.keys.ingest);
  await d.get('/v1/writer-changes?writerId=laptop-c&after=0&decided=true');
  // a writer's long polls past the feeds' ends: their watchers read which writers the project's changes and
  // decisions concern (plane/writer-wakes.ts) at their first recheck, a second in
  const end = await d.get('/v1/writer-changes?writerId=laptop-nobody&after=0');
  await d.get(`/v1/writer-changes?writerId=laptop-nobody&after=${end.nextCursor}&wait=2`);
  await d.get('/v1/decisions?after=0');
  await d.get('/v1/writer-decisions?writerId=laptop-a&after=0', d.keys.ingest);
  const decided = await d.get('/v1/writer-decisions?writerId=laptop-nobody&after=0');
  await d.get(`/v1/writer-decisions?writerId=laptop-nobody&after=${decided.nextCursor}&wait=2`);
}

export async function quarantineRoutes(d: Driver): Promise<void> {
  const q = await d.get('/v1/quarantine?limit=1');
  await d.get(`/v1/quarantine?limit=1&cursor=${q.nextCursor}`);
  await d.get('/v1/quarantine?executionId=hole-1');
}

export async function runRequestRoutes(d: Driver, forkFrom: string): Promise<void> {
  const retry = await d.post('/v1/executions/failed-1/requests', d.keys.operate, { action: 'retry' });
  expect(retry.status, JSON.stringify(retry.body)).toBe(201);
  const fork = await d.post('/v1/executions/fork-src/requests', d.keys.operate, {
    action: 'fork',
    checkpointId: forkFrom,
  });
  expect(fork.status, JSON.stringify(fork.body)).toBe(201);
  await d.get('/v1/requests?state=open', d.keys.ingest);
  await d.get('/v1/requests?state=open&writerId=laptop-a', d.keys.ingest);
  await d.get(`/v1/requests/${fork.body.requestId}`, d.keys.ingest);
  const claim = await d.post(`/v1/requests/${fork.body.requestId}/claim`, d.keys.ingest, { writerId: 'laptop-a' });
  expect(claim.status, JSON.stringify(claim.body)).toBe(200);
  const outcome = await d.post(`/v1/requests/${retry.body.requestId}/outcome`, d.keys.ingest, {
    writerId: 'laptop-a',
    outcome: 'applied',
    runStatus: 'completed',
  });
  expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);
}

/** `pg`: a connection of the test's own, to age a run (not a statement of the route). */
export async function retentionRoutes(d: Driver, pg: postgres.Sql): Promise<void> {
  // done-1 finished two days ago (set apart from the plane: not a statement of the route)
  await pg`UPDATE executions SET updated_at = now() - interval '2 days' WHERE execution_id = 'done-1'`;
  const body = { olderThanSeconds: 86_400 };
  const dry = await d.post('/v1/admin/prune', d.keys.admin, { ...body, dryRun: true });
  expect(dry.body.items.map((i: { executionId: string }) => i.executionId)).toEqual(['done-1']);
  const pruned = await d.post('/v1/admin/prune', d.keys.admin, body);
  expect(pruned.body.items.map((i: { executionId: string }) => i.executionId)).toEqual(['done-1']);
}

/** The inspector's pages, in a session of an operate key (so a run page also reads the actions a request waits for). */
export async function inspectorPages(d: Driver): Promise<void> {
  const login = await fetch(`${d.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ key: d.keys.operate, next: '/' }),
  });
  expect(login.status).toBe(303);
  const cookie = login.headers.get('set-cookie')!.split(';')[0];
  for (const path of [
    '/',
    '/?status=failed&error=MODEL_ERROR',
    '/?agent=desk',
    '/?attention=1',
    '/?status=paused',
    '/runs/long-1',
    '/runs/paused-1',
    '/runs/hole-1',
    '/runs/stale-1',
    '/runs/long-1/rows/3',
    '/runs/long-1/state?b=5',
    '/approvals',
    '/quarantine',
    '/writers',
  ]) {
    const res = await fetch(`${d.url}${path}`, { headers: { cookie } });
    await res.text();
    expect(res.status, path).toBe(200);
  }
}

/** Another project's key reads its own runs, and not the first project's. */
export async function anotherProjectRoutes(d: Driver): Promise<void> {
  await d.get('/v1/executions', d.keys.beta);
  await d.get('/v1/executions/beta-1', d.keys.beta);
  await d.get('/v1/executions/long-1', d.keys.beta, 404);
  await d.get('/v1/quarantine', d.keys.beta);
  await d.get('/v1/pauses', d.keys.beta);
}

/** How the tables of a project were partitioned, for checkStatements. */
export interface Layout {
  url: string;
  pg: postgres.Sql;
  /** The tables of a project. */
  tenant: string[];
  /** Those the rewrite as partitioned refused. */
  refusedTables: { table: string; error: string }[];
  /** partition name → its table and number */
  partitions: Map<string, { table: string; n: number }>;
  /** a sequence's name → the column it is the default of (table.column) */
  serials: Map<string, string>;
  /** each project's partition number, by its id */
  home: Map<string, number>;
}

/** Whether a statement names a table of a project. */
export const mentionsTenant = (tenant: string[]) => new RegExp(`(?<![\\w.])"?(${tenant.join('|')})"?(?![\\w])`);

/**
 * Each captured statement checked by its plan with its own parameters (the partitions it touches, against its
 * project's, and the node-local locks and sequences it needs), and where the rows of each write landed (`spread`:
 * the writes whose rows landed in more than one project's partitions).
 */
export async function checkStatements(
  captured: Captured[],
  layout: Layout,
): Promise<{ checked: Checked[]; writes: number; spread: { query: string; parts: string[]; projects: number }[] }> {
  const { pg, tenant, refusedTables, partitions, serials, home } = layout;
  // what each statement touches, by its plan with its own parameters
  const explainer = postgres(layout.url, { max: 1, onnotice: () => {}, fetch_types: false });
  const checked: Checked[] = [];
  const mentions = mentionsTenant(tenant);
  const byTable = (parts: string[]) =>
    [...new Set(parts.map((p) => partitions.get(p)!.table))]
      .map((t) => `${t} ×${parts.filter((p) => partitions.get(p)!.table === t).length}`)
      .join(', ');
  try {
    for (const s of captured) {
      const nodeLocal: string[] = [];
      if (/pg_(try_)?advisory/i.test(s.sql)) nodeLocal.push(`${s.site}: advisory lock`);
      for (const m of s.sql.matchAll(/nextval\(pg_get_serial_sequence\('(\w+)', '(\w+)'\)\)/g))
        nodeLocal.push(`${s.site}: sequence ${m[1]}.${m[2]}`);
      if (/nextval\((?!pg_get_serial_sequence)/i.test(s.sql)) nodeLocal.push(`${s.site}: a sequence`);
      if (!mentions.test(s.sql)) {
        checked.push({ route: s.route, site: s.site, sql: s.sql, partitions: [], problem: null, nodeLocal });
        continue;
      }
      let plan: Record<string, unknown>;
      try {
        const [row] = await explainer.unsafe(`EXPLAIN (VERBOSE, FORMAT JSON) ${s.sql}`, s.params as never[]);
        plan = (row['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0].Plan;
      } catch (e) {
        checked.push({
          route: s.route,
          site: s.site,
          sql: s.sql,
          partitions: [],
          problem: `EXPLAIN failed: ${(e as Error).message}`,
          nodeLocal,
        });
        continue;
      }
      // a column default drawing from a sequence: in the plan, not in the statement
      for (const m of JSON.stringify(plan).matchAll(/nextval\('([\w.]+)'::regclass\)/g))
        nodeLocal.push(`${s.site}: sequence ${serials.get(m[1].replace(/^public\./, '')) ?? m[1]}`);
      const relations = relationsOf(plan);
      const parts = [...new Set(relations.filter((r) => partitions.has(r)))].sort();
      const numbers = new Set(parts.map((p) => partitions.get(p)!.n));
      const insert = /^\s*insert\b/i.test(s.sql);
      const unpartitioned = [...new Set(relations)].filter((r) => refusedTables.some((x) => x.table === r));
      // the project the statement is for: the one its parameters name
      const named = [...new Set(s.params.filter((p): p is string => typeof p === 'string' && home.has(p)))];
      let problem: string | null = null;
      if (unpartitioned.length) problem = `reads ${unpartitioned.join(', ')}, which could not be partitioned`;
      else if (named.length !== 1) problem = `its parameters name ${named.length} projects, not one`;
      else if (numbers.size > 1) problem = `touches ${parts.length} partitions (${byTable(parts)}), not one`;
      // an INSERT's rows go where their project_id says, which its plan does not show (checked by where they landed)
      else if (!insert && numbers.size === 0) problem = 'touches no partition';
      else if (numbers.size === 1 && [...numbers][0] !== home.get(named[0]))
        problem = `touches ${parts.join(', ')}, not the partitions of its project (number ${home.get(named[0])})`;
      checked.push({ route: s.route, site: s.site, sql: s.sql, partitions: parts, problem, nodeLocal });
    }
  } finally {
    await explainer.end({ timeout: 2 });
  }

  // where the rows of each write landed: one project's partitions per statement
  const writes = (
    await pg<{ query: string; parts: string; projects: number }[]>`
      SELECT query, string_agg(DISTINCT part, ' ') AS parts, count(DISTINCT project_id)::int AS projects
      FROM routing.writes GROUP BY pid, at, query`
  ).map((w) => ({ ...w, parts: w.parts.split(' ') }));
  const spread = writes.filter(
    (w) => w.projects !== 1 || new Set(w.parts.map((p) => partitions.get(p)?.n ?? p)).size !== 1,
  );

  return { checked, writes: writes.length, spread };
}

/** Every relation name a plan node (and the nodes under it) reads or writes. */
function relationsOf(plan: Record<string, unknown>, out: string[] = []): string[] {
  if (typeof plan['Relation Name'] === 'string') out.push(plan['Relation Name']);
  for (const sub of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) relationsOf(sub, out);
  return out;
}
