/**
 * Projects and API keys. A key is `wm_<id>_<secret>`: the id is stored, the
 * secret only as a sha256 hash, compared in constant time. Every request is
 * scoped to its key's project.
 *
 * Scopes: `ingest`, `read`, `approve` (record decisions on open pauses: the
 * approvals inbox and the decision endpoint; it never claims or runs a pause),
 * `admin` (everything in the key's own project,
 * its keys included) and `operator` (projects and keys of every project; the
 * bootstrap key made on a plane's first start has it). A project exists only
 * when created explicitly (`createProject`): a key for an unknown name is an
 * UNKNOWN_PROJECT error listing the known ones, so a typo never makes a tenant.
 *
 * A plane process reuses a key's row it read for at most `KEY_CACHE_MS`, so
 * most requests read no key at all; a revocation made through this process is
 * refused from its next request on, one made through another process within
 * `KEY_CACHE_MS` (every plane promises 1 s). A request that outlives its check
 * (a body that takes seconds to arrive, a long poll) reads the row from the
 * database again before it writes or answers (`recheckKey`), never from the
 * cache. Inspector sessions are read per request (plane/ui/session.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, isNull, type SQL } from 'drizzle-orm';
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import { textProblem } from '../shared/json.js';
import { printable } from '../support/terminal.js';
import { shownName } from '../support/validate.js';
import { readableNameProblems } from '../shared/text.js';
import type { PlaneDb } from './db/open.js';
import { HttpError } from './http/errors.js';
import { apiKeys, projects } from './db/schema.js';
import { type CreateKeyOptions, type Principal, type Scope, scopeProblems } from './scopes.js';

export { SCOPES, type CreateKeyOptions, type Principal, type Scope } from './scopes.js';

const KEY_RE = /^wm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
/** A key's id as the plane makes them: any other text names no key (and is never sent to the database). */
const KEY_ID = /^[0-9a-f]{16}$/;
const DUMMY_HASH = createHash('sha256').update('waymark-dummy').digest();

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/**
 * How long (ms) a plane process reuses an active key's row it read: a key revoked through another process is
 * refused here within this, well inside the 1 s every plane promises (docs/OPERATIONS.md, Keys).
 */
export const KEY_CACHE_MS = 500;

type KeyRow = typeof apiKeys.$inferSelect;
/** The active key rows a database handle read (with when the read began), and when this process revoked each key. */
interface KeyCache {
  rows: Map<string, { row: KeyRow; at: number }>;
  revoked: Map<string, number>;
}
const keyCaches = new WeakMap<PlaneDb, KeyCache>();

function keyCache(db: PlaneDb): KeyCache {
  let c = keyCaches.get(db);
  if (!c) keyCaches.set(db, (c = { rows: new Map(), revoked: new Map() }));
  return c;
}

/** A key's row by id: the one read less than KEY_CACHE_MS ago by this database handle, else read now. */
async function keyRow(db: PlaneDb, id: string): Promise<KeyRow | undefined> {
  const c = keyCache(db);
  const at = performance.now();
  const hit = c.rows.get(id);
  if (hit && at - hit.at < KEY_CACHE_MS) return hit.row;
  c.rows.delete(id);
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, id));
  // a read that began before this process revoked the key may have seen it active: not kept
  if (row && !row.revokedAt && !((c.revoked.get(id) ?? -1) >= at)) c.rows.set(id, { row, at });
  return row;
}

const PROJECT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** Project names: 1-63 of letters, digits, `.`, `_`, `-`, starting with a letter or digit. */
export function checkProjectName(name: string): string | null {
  return PROJECT_NAME.test(name)
    ? null
    : `project name '${name}' must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`;
}

/** The longest key name, in characters. */
export const KEY_NAME_MAX = 128;

/**
 * Every problem with a key name (none: an empty list): the readable-name rule
 * of shared/text.ts with KEY_NAME_MAX. A decision a key records names it
 * (decidedBy): a blank name would leave it nobody.
 */
export function keyNameProblems(name: string): string[] {
  return readableNameProblems(name, KEY_NAME_MAX);
}

/** Refuse a key name with problems (INVALID_REQUEST naming each, `details.problems`); nothing is written. */
export function checkKeyName(name: string): void {
  const problems = keyNameProblems(name);
  if (!problems.length) return;
  throw new WaymarkError(ErrorCode.INVALID_REQUEST, `key name ${shownName(name)} ${problems.join(' and ')}`, {
    details: { problems },
  });
}

export class UnknownProject extends WaymarkError {
  constructor(name: string, known: string[]) {
    const hint = checkProjectName(name) ? '' : `; create it with 'waymark plane projects create ${name}'`;
    super(
      ErrorCode.UNKNOWN_PROJECT,
      `no project '${printable(name)}'; known: ${known.length ? known.map(printable).join(', ') : '(none)'}${hint}`,
      {
        details: { project: name, known },
      },
    );
    this.name = 'UnknownProject';
  }
}

export async function listProjects(
  db: PlaneDb,
  only?: string,
): Promise<{ id: string; name: string; createdAt: Date }[]> {
  return db
    .select({ id: projects.id, name: projects.name, createdAt: projects.createdAt })
    .from(projects)
    .where(only ? eq(projects.id, only) : undefined)
    .orderBy(projects.name);
}

/** Create a project by name; PROJECT_EXISTS if it is there already. */
export async function createProject(db: PlaneDb, name: string): Promise<{ id: string; name: string }> {
  const bad = checkProjectName(name);
  if (bad) throw new WaymarkError(ErrorCode.INVALID_REQUEST, bad);
  const id = `prj_${randomBytes(8).toString('hex')}`;
  const r = await db.insert(projects).values({ id, name }).onConflictDoNothing().returning({ id: projects.id });
  if (!r.length)
    throw new WaymarkError(ErrorCode.PROJECT_EXISTS, `project '${name}' exists already`, {
      details: { project: name },
    });
  return { id, name };
}

/**
 * The id of a project by name. `visibleTo` limits what the caller may see (a
 * project admin sees its own project only): a name outside it is unknown, and
 * the error lists only what the caller may see.
 */
export async function projectId(db: PlaneDb, name: string, visibleTo?: string): Promise<string> {
  // text Postgres cannot hold (U+0000, a lone surrogate) names no project, and is never sent to it; any other name is
  // looked up, even one outside today's naming rule (projects made by createKey({ createProject }) or before the rule)
  const [found] = textProblem(name)
    ? []
    : await db.select({ id: projects.id }).from(projects).where(eq(projects.name, name));
  if (found && (!visibleTo || found.id === visibleTo)) return found.id;
  throw new UnknownProject(
    name,
    (await listProjects(db, visibleTo)).map((p) => p.name),
  );
}

/**
 * Create a key; the returned `key` is the only time the secret exists in the
 * clear. The project must exist (UNKNOWN_PROJECT otherwise), unless
 * `createProject` says to make it (tests, benches, the first start).
 */
export async function createKey(
  db: PlaneDb,
  o: CreateKeyOptions,
): Promise<{ key: string; id: string; projectId: string; scopes: Scope[] }> {
  const [problem] = scopeProblems(o.scopes);
  if (problem) throw new WaymarkError(ErrorCode.INVALID_REQUEST, problem);
  if (o.name !== undefined) checkKeyName(o.name);
  if (o.createProject) {
    const [found] = await db.select({ id: projects.id }).from(projects).where(eq(projects.name, o.project));
    if (!found)
      await db
        .insert(projects)
        .values({ id: `prj_${randomBytes(8).toString('hex')}`, name: o.project })
        .onConflictDoNothing();
  }
  const projectId_ = await projectId(db, o.project, o.visibleTo);
  const id = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  await db.insert(apiKeys).values({
    id,
    projectId: projectId_,
    name: o.name ?? 'key',
    hash: sha256(secret).toString('hex'),
    scopes: [...new Set(o.scopes)],
  });
  return { key: `wm_${id}_${secret}`, id, projectId: projectId_, scopes: o.scopes };
}

/** Keys (never their secrets), oldest first; of one project when `projectId` is given. */
export async function listKeys(db: PlaneDb, projectId?: string) {
  return db
    .select({
      id: apiKeys.id,
      name: apiKeys.name,
      project: projects.name,
      scopes: apiKeys.scopes,
      createdAt: apiKeys.createdAt,
      revokedAt: apiKeys.revokedAt,
    })
    .from(apiKeys)
    .innerJoin(projects, eq(projects.id, apiKeys.projectId))
    .where(projectId ? eq(apiKeys.projectId, projectId) : undefined)
    .orderBy(apiKeys.createdAt, apiKeys.id);
}

/** Revoke an active key (of one project when `projectId` is given); false when there is no such active key. */
export async function revokeKey(db: PlaneDb, id: string, projectId?: string): Promise<boolean> {
  if (!KEY_ID.test(id)) return false;
  const where: SQL[] = [eq(apiKeys.id, id), isNull(apiKeys.revokedAt)];
  if (projectId) where.push(eq(apiKeys.projectId, projectId));
  const r = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(...where))
    .returning({ id: apiKeys.id });
  // refused by this process from its next request on; a read still in flight keeps nothing (keyRow)
  const c = keyCache(db);
  const now = performance.now();
  c.rows.delete(id);
  c.revoked.set(id, now);
  for (const [k, at] of c.revoked) if (now - at > KEY_CACHE_MS) c.revoked.delete(k);
  return r.length === 1;
}

/** A key's state for one caller: missing (or in another project), revoked, or active. */
export async function keyState(db: PlaneDb, id: string, projectId?: string): Promise<'missing' | 'revoked' | 'active'> {
  if (!KEY_ID.test(id)) return 'missing';
  const [row] = await db
    .select({ projectId: apiKeys.projectId, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.id, id));
  if (!row || (projectId && row.projectId !== projectId)) return 'missing';
  return row.revokedAt ? 'revoked' : 'active';
}

/**
 * The principal a bearer key stands for, or null (unknown, malformed, revoked or wrong secret). The key's row may
 * be one this database handle read less than KEY_CACHE_MS ago; the secret is compared on every call.
 */
export async function authenticate(db: PlaneDb, key: string | undefined): Promise<Principal | null> {
  const m = key ? KEY_RE.exec(key) : null;
  const presented = sha256(m?.[2] ?? 'malformed');
  if (!m) {
    timingSafeEqual(presented, DUMMY_HASH);
    return null;
  }
  const row = await keyRow(db, m[1]);
  const stored = row ? Buffer.from(row.hash, 'hex') : DUMMY_HASH;
  const ok = stored.length === presented.length && timingSafeEqual(stored, presented);
  if (!row || !ok || row.revokedAt) return null;
  return { projectId: row.projectId, keyId: row.id, scopes: row.scopes as Scope[] };
}

/**
 * Why `authenticate` refused `key`, for its 401: a key whose secret matches
 * a revoked key is told so (only its holder can present that secret), any
 * other gets the same sentence whether its id exists or not.
 */
export async function refusedKeyMessage(db: PlaneDb, key: string | undefined): Promise<string> {
  const m = key ? KEY_RE.exec(key) : null;
  const [row] = m ? await db.select().from(apiKeys).where(eq(apiKeys.id, m[1])) : [];
  const presented = sha256(m?.[2] ?? 'malformed');
  const stored = row ? Buffer.from(row.hash, 'hex') : DUMMY_HASH;
  const ok = stored.length === presented.length && timingSafeEqual(stored, presented);
  if (row?.revokedAt && ok)
    return `this API key (${row.id}) was revoked at ${row.revokedAt.toISOString()}: use another key of the project (an admin makes one: waymark plane keys create)`;
  return 'a valid API key is required (Authorization: Bearer wm_…)';
}

/**
 * Refuse a request whose key was revoked after its scope was checked: an
 * upload still arriving, or a long poll still waiting, when the revocation
 * committed. Called after the body arrived and before the write, and before a
 * long poll answers; 401 as the key's next request would get.
 */
export async function recheckKey(db: PlaneDb, p: Principal): Promise<void> {
  if ((await keyState(db, p.keyId)) === 'active') return;
  throw new HttpError(401, ErrorCode.UNAUTHORIZED, 'this API key was revoked while the request was in flight');
}

export function bearer(header: string | undefined): string | undefined {
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return m?.[1];
}

/**
 * A key's name (who decided, on a decision recorded with it): its id when the
 * key is gone or its name is blank, its control characters escaped (names made
 * before names were checked may hold either; a decision's `decidedBy` cannot).
 */
export async function keyName(db: PlaneDb, keyId: string): Promise<string> {
  const [k] = await db.select({ name: apiKeys.name }).from(apiKeys).where(eq(apiKeys.id, keyId));
  return k?.name.trim() ? printable(k.name) : keyId;
}

/** A project's name by id (null when it no longer exists). */
export async function projectName(db: PlaneDb, projectId: string): Promise<string | null> {
  const [p] = await db.select({ name: projects.name }).from(projects).where(eq(projects.id, projectId));
  return p?.name ?? null;
}
