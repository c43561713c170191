/**
 * Every SQL statement a PGlite plane runs while a trace is on, with its time and its count of result rows: what a
 * page costs the plane's database, as a list. It wraps the PGlite instance under a drizzle plane database
 * (`db.$client`): `query` and `exec`, and the `query` and `exec` of each transaction's handle. Nothing is changed
 * but timing is taken; `stop()` puts the instance's own methods back.
 */

/**
 * One statement the plane sent: its text, how long it took (ms, from the call to its answer), the process's CPU time
 * meanwhile (ms: the statement's, as a request's statements run one after another) and its count of result rows.
 */
export interface TracedStatement {
  sql: string;
  ms: number;
  cpuMs: number;
  rows: number;
}

export interface SqlTrace {
  /** What was sent since the trace began (or since `clear()`), in order. */
  readonly statements: TracedStatement[];
  clear(): void;
  stop(): void;
}

type Runner = (sql: string, ...rest: unknown[]) => Promise<unknown>;
interface PgliteLike {
  query: Runner;
  exec: Runner;
  transaction: (fn: (tx: PgliteLike) => Promise<unknown>) => Promise<unknown>;
}

const rowCount = (r: unknown): number => {
  if (Array.isArray(r)) return r.reduce((n: number, x) => n + rowCount(x), 0);
  const rows = (r as { rows?: unknown[] } | null)?.rows;
  return Array.isArray(rows) ? rows.length : 0;
};

/** Trace the statements of a plane database on PGlite (`database.db` of `openPlaneDatabase` without a URL). */
export function traceSql(db: unknown): SqlTrace {
  const client = (db as { $client?: PgliteLike }).$client;
  if (!client || typeof client.transaction !== 'function' || typeof client.exec !== 'function')
    throw new Error('traceSql: not a drizzle database on PGlite (no $client with query, exec and transaction)');
  const statements: TracedStatement[] = [];
  const timed =
    (run: Runner): Runner =>
    async (sql, ...rest) => {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      const r = await run(sql, ...rest);
      const c = process.cpuUsage(c0);
      statements.push({ sql, ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, rows: rowCount(r) });
      return r;
    };
  const own = { query: client.query, exec: client.exec, transaction: client.transaction };
  client.query = timed(own.query.bind(client));
  client.exec = timed(own.exec.bind(client));
  client.transaction = (fn) =>
    own.transaction.call(client, (tx) =>
      fn({ ...tx, query: timed(tx.query.bind(tx)), exec: timed(tx.exec.bind(tx)) } as PgliteLike),
    );
  return {
    statements,
    clear: () => {
      statements.length = 0;
    },
    stop: () => {
      // PGlite's methods are its class's: the wrappers set on the instance are removed, not left shadowing them
      for (const k of Object.keys(own) as (keyof typeof own)[]) delete (client as Partial<PgliteLike>)[k];
    },
  };
}
