/**
 * `waymark plane keys …` and `waymark plane projects …`: through the running
 * plane whenever there is one, so a PGlite data dir is never opened by a
 * second process (its writes would be lost, a revocation with them).
 *
 * Where the commands go:
 * 1. `--plane URL`: that plane, with `--key` or the data dir's admin-key file.
 * 2. No database URL given, and a live plane holds the data dir (a PGlite
 *    or a Postgres plane: both hold their data dir's lock): that plane (its
 *    URL is in the lock file), with `--key` or the data dir's admin-key file.
 *    Another command holds it: DATA_DIR_LOCKED, naming it.
 * 3. Otherwise (no plane holds the PGlite dir, or `--database-url`: Postgres,
 *    which many processes share safely and whose planes read keys on every
 *    request): the database directly, with the bootstrap key's powers. A
 *    data dir with an admin key and no PGlite database is a Postgres plane's:
 *    with no URL and no plane on it, NO_PLANE_DATA says what to pass.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ErrorCode, isErrorCode, WaymarkError } from '../shared/errors.js';
import { admin } from './admin.js';
import type { Principal, Scope } from './auth.js';
import type { PlaneConfig } from './config.js';
import { DataDirLocked, lockHolder } from './db/lock.js';
import { isInMemory, openPlaneDatabase } from './db/open.js';
import { adminKeyPath } from './server.js';
import { pruneRuns, type PruneResult } from './retention.js';
import { localTime, table } from '../support/format.js';

type Project = { id: string; name: string; createdAt?: string };
type Key = { id: string; name: string; project: string; scopes: string[]; createdAt: string; revokedAt: string | null };

/** The admin operations, over HTTP or on the database. */
interface AdminTarget {
  /** How the commands reach the plane, for the user: `the plane at URL` or `the database …`. */
  via: string;
  projects(): Promise<Project[]>;
  createProject(name: string): Promise<Project>;
  keys(): Promise<Key[]>;
  createKey(o: { project: string; name?: string; scopes: Scope[] }): Promise<Key & { key: string }>;
  revoke(id: string): Promise<unknown>;
  prune(o: { olderThanSeconds: number; project?: string; dryRun?: boolean }): Promise<PruneResult>;
  close(): Promise<void>;
}

/**
 * `dataDirGiven`: the data dir was named (flag or WAYMARK_PLANE_DIR). Only
 * then may a command start a database where there is none: the default
 * (./.waymark/plane) run from another directory than the plane's is a mistake.
 */
export async function adminTarget(
  config: Readonly<PlaneConfig>,
  o: { plane?: string; key?: string; command: string; dataDirGiven?: boolean },
): Promise<AdminTarget> {
  const file = adminKeyPath(config.dataDir);
  const keyFor = (url: string) => {
    if (o.key) return o.key;
    if (existsSync(file)) return readFileSync(file, 'utf8').trim();
    throw new WaymarkError(
      ErrorCode.ADMIN_KEY_REQUIRED,
      `the plane at ${url} needs an admin key: pass --key wm_… (no admin-key file at ${file})`,
    );
  };
  if (o.plane) return http(o.plane.replace(/\/+$/, ''), keyFor(o.plane));
  if (!config.databaseUrl) {
    // a serving plane holds its data dir on either backend (Postgres too): its URL is in the lock file
    const holder = lockHolder(config.dataDir);
    if (holder?.url) return http(holder.url, keyFor(holder.url));
    if (holder) throw new DataDirLocked(config.dataDir, holder);
    const dir = resolve(config.dataDir);
    const pglite = existsSync(join(dir, 'PG_VERSION'));
    // an admin key and no PGlite database: a Postgres plane's data dir (that plane is not running);
    // never make a PGlite database there, even when the dir is named
    if (!isInMemory(config.dataDir) && !pglite && existsSync(file)) {
      throw new WaymarkError(
        ErrorCode.NO_PLANE_DATA,
        `no plane is running on the data dir ${dir}, and it holds no PGlite database (its admin-key file is a Postgres plane's): ` +
          `start that plane and run this again, or pass its database with --database-url URL (or WAYMARK_DATABASE_URL), or a running plane with --plane URL --key ADMIN_KEY`,
        { details: { dataDir: dir } },
      );
    }
    // never make an empty database by accident (a command run from another directory than the plane's)
    if (!o.dataDirGiven && !isInMemory(config.dataDir) && !pglite) {
      throw new WaymarkError(
        ErrorCode.NO_PLANE_DATA,
        `${existsSync(dir) ? `the data dir ${dir} holds no plane database (no PGlite database, no admin key) and no plane is running on it` : `no plane data dir at ${dir}`}: ` +
          `run this where the plane runs, or pass --data-dir DIR (the plane's; a new one is made only when named), or --database-url URL for a Postgres plane, or --plane URL --key ADMIN_KEY`,
        { details: { dataDir: dir } },
      );
    }
  }
  const database = await openPlaneDatabase(
    config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir, command: o.command },
  );
  const db = database.db;
  // no plane is serving this database for us to ask: act with the bootstrap key's powers, the same operations the endpoints run
  const root: Principal = { projectId: '', keyId: '', scopes: ['admin', 'operator'] };
  return {
    via: config.databaseUrl
      ? 'the Postgres database directly'
      : `the data dir ${database.lock?.dir ?? config.dataDir} directly (no plane holds it)`,
    projects: () => admin.projects(db, root),
    createProject: (name) => admin.createProject(db, root, name),
    keys: () => admin.keys(db, root),
    createKey: (k) => admin.createKey(db, root, k),
    revoke: (id) => admin.revoke(db, root, id),
    prune: (o) => pruneRuns(db, root, o),
    close: () => database.close(),
  };
}

function http(url: string, key: string): AdminTarget {
  const req = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    let res: Response;
    try {
      res = await fetch(`${url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (e) {
      throw new WaymarkError(ErrorCode.PLANE_ERROR, `cannot reach the plane at ${url}: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const text = await res.text();
    let json: { error?: { code: string; message: string; details?: Record<string, unknown> } } & Record<
      string,
      unknown
    >;
    try {
      json = JSON.parse(text);
    } catch {
      throw new WaymarkError(
        ErrorCode.PLANE_ERROR,
        `the plane at ${url} answered ${res.status} with no JSON: ${text.slice(0, 200)}`,
      );
    }
    if (!res.ok) {
      const e = json.error ?? { code: ErrorCode.PLANE_ERROR, message: `HTTP ${res.status}` };
      // a plane of another version may answer a code this one does not know: it is kept in the message
      const code = isErrorCode(e.code) ? e.code : ErrorCode.PLANE_ERROR;
      throw new WaymarkError(
        code,
        code === e.code ? e.message : `${e.code}: ${e.message}`,
        e.details ? { details: e.details } : undefined,
      );
    }
    return json as T;
  };
  return {
    via: `the plane at ${url}`,
    projects: async () => (await req<{ items: Project[] }>('GET', '/v1/admin/projects')).items,
    createProject: (name) => req('POST', '/v1/admin/projects', { name }),
    keys: async () => (await req<{ items: Key[] }>('GET', '/v1/admin/keys')).items,
    createKey: (k) => req('POST', '/v1/admin/keys', k),
    revoke: (id) => req('POST', `/v1/admin/keys/${encodeURIComponent(id)}/revoke`),
    prune: (o) => req('POST', '/v1/admin/prune', o),
    close: async () => {},
  };
}

/**
 * `waymark plane keys list`: a table with a header, times as the rest of the CLI prints them (never a key itself).
 * A name stored before key names were checked (or a plane of another version's answer) is printed with its control characters escaped, never raw.
 */
export function printKeys(keys: readonly Key[], out: (line: string) => void): void {
  // table() escapes each cell (a name stored before names were checked prints escaped)
  const rows = keys.map((k) => [
    k.id,
    k.project,
    k.scopes.join(','),
    k.name,
    k.revokedAt ? `revoked ${localTime(k.revokedAt)}` : 'active',
  ]);
  if (rows.length === 0) out('no keys');
  else table([['ID', 'PROJECT', 'SCOPES', 'NAME', 'STATE'], ...rows], out);
}
