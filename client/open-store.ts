/**
 * One opener for both stores, from a spec string: what a CLI flag, an
 * environment variable or a child process's argv carries. The driver of the
 * named backend is loaded only then, so the root entry still loads none.
 */
import type { Checkpointer } from './checkpointer.js';
import type { FaultHook } from './faults.js';
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import {
  booleanProblem,
  functionProblem,
  integerProblem,
  optionNames,
  optionsProblems,
  refuse,
  stringProblem,
} from '../support/validate.js';

/** Options of `openStore`: the Postgres schema and pool, and the options every store takes. */
export interface OpenStoreOptions {
  /** Postgres schema; a `#schema` at the end of the spec or a `?schema=` parameter names it too (this option wins). Default `waymark`. */
  schema?: string;
  /** Postgres pool size. Default the adapter's (10). */
  max?: number;
  /** Refuse a store that does not exist yet instead of creating it (a reader such as the CLI): a SQLite file, a Postgres schema without waymark's tables. STORE_NOT_FOUND. Default false. */
  mustExist?: boolean;
  /** This store's writer id; persisted on first open when absent. */
  writerId?: string;
  /** Named fault points for crash tests (see `waymark/testing`). */
  faults?: FaultHook;
}

const POSTGRES_URL = /^postgres(ql)?:\/\//;

const OPEN_STORE_OPTIONS = optionNames<OpenStoreOptions>({
  schema: stringProblem,
  max: (field, v) => integerProblem(field, v, 1),
  mustExist: booleanProblem,
  writerId: true,
  faults: functionProblem,
});

/**
 * Open the store `spec` names, set up and ready to use:
 *
 * - `postgres://…` or `postgresql://…`, or `postgres:` before such a URL, with
 *   an optional `#schema` at the end or `?schema=` parameter: a
 *   `PostgresCheckpointer` (`setup()` run);
 * - `sqlite:<path>`, or any other string, a path or `:memory:`: a
 *   `SqliteCheckpointer` on that file.
 *
 * An empty spec, or one with a scheme other than these (`mysql://…`), is refused
 * with INVALID_OPTIONS: an unset variable must not open a throwaway database.
 *
 * The Postgres driver (`postgres`) or the SQLite one (`better-sqlite3`) is an
 * optional peer; opening a store whose driver is missing fails with MISSING_PEER.
 */
export async function openStore(spec: string, options: OpenStoreOptions = {}): Promise<Checkpointer> {
  refuse('openStore', optionsProblems(options, OPEN_STORE_OPTIONS), 'nothing was opened');
  if (spec.trim() === '')
    refuse(
      'openStore',
      ['the store spec is empty (a path, sqlite:<path>, :memory: or postgres://…)'],
      'nothing was opened',
    );
  // a store is a path, `sqlite:…`, `:memory:` or a Postgres spec; any other `name:` (a typo such as `sqlit:runs.db`, `mysql://…`)
  // would open a new SQLite file of that name. A one-letter prefix is a Windows drive (C:\runs.db)
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(spec)?.[1];
  if (scheme && !spec.startsWith('sqlite:') && !postgresSpec(spec))
    refuse(
      'openStore',
      [
        `'${scheme}:' is not a store scheme (a path, sqlite:<path>, :memory: or postgres://…; a file whose name holds a colon is ./${spec})`,
      ],
      'nothing was opened',
    );
  const pg = postgresSpec(spec);
  if (pg) {
    const { PostgresCheckpointer } = await import('./postgres/index.js');
    const store = new PostgresCheckpointer({
      url: pg.url,
      schema: options.schema ?? pg.schema,
      max: options.max,
      writerId: options.writerId,
      faults: options.faults,
    });
    try {
      // a reader (the CLI, the local UI) must not create a store in a mistyped database or schema
      if (options.mustExist && !(await store.exists())) {
        throw new WaymarkError(
          ErrorCode.STORE_NOT_FOUND,
          `no store in schema '${store.schema}' of ${redactUrl(pg.url)} (a mistyped URL or --schema?)`,
        );
      }
      await store.setup();
    } catch (e) {
      // a store that cannot be set up is not handed out, so nothing else would close its pool
      await store.close();
      throw e;
    }
    return store;
  }
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  if (options.mustExist && sqliteFileOf(spec) !== null) {
    const { existsSync } = await import('node:fs');
    if (!existsSync(path)) throw new WaymarkError(ErrorCode.STORE_NOT_FOUND, `no store at ${path}`);
  }
  const { SqliteCheckpointer } = await import('./sqlite/index.js');
  return new SqliteCheckpointer({ path, writerId: options.writerId, faults: options.faults });
}

/** The SQLite file a store spec names, or null (a Postgres spec, `:memory:`). */
export function sqliteFileOf(spec: string): string | null {
  if (postgresSpec(spec)) return null;
  const path = spec.startsWith('sqlite:') ? spec.slice('sqlite:'.length) : spec;
  return path === ':memory:' ? null : path;
}

/**
 * A Postgres spec's URL and the schema its `#…` suffix or its `?schema=`
 * parameter names (the convention of Prisma and others; left in the URL, the
 * driver would send it to the server as a setting and fail to connect), or
 * null for a SQLite spec. Both at once, differing, is refused.
 */
function postgresSpec(spec: string): { url: string; schema: string | undefined } | null {
  const rest = POSTGRES_URL.test(spec) ? spec : spec.startsWith('postgres:') ? spec.slice('postgres:'.length) : null;
  if (rest === null) return null;
  const hash = rest.lastIndexOf('#');
  const base = hash >= 0 ? rest.slice(0, hash) : rest;
  const fragment = hash >= 0 ? rest.slice(hash + 1) : undefined;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    return { url: base, schema: fragment };
  }
  const param = url.searchParams.get('schema') ?? undefined;
  if (param === undefined) return { url: base, schema: fragment };
  if (fragment !== undefined && fragment !== param)
    refuse(
      'openStore',
      [`the spec names two schemas, ?schema=${param} and #${fragment} (give one)`],
      'nothing was opened',
    );
  url.searchParams.delete('schema');
  return { url: url.toString(), schema: param };
}

/** `postgres://user:secret@host/db` as said on screen: the password left out. */
export function redactUrl(spec: string): string {
  return spec.replace(/^(postgres(?:ql)?:\/\/[^:/@]*):[^@]*@/, '$1:***@');
}
