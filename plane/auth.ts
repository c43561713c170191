/**
 * Projects and API keys. A key is `wm_<id>_<secret>`: the id is stored, the
 * secret only as a sha256 hash, compared in constant time. Every request is
 * scoped to its key's project.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import type { PlaneDb } from './db/open.js';
import { apiKeys, projects } from './db/schema.js';

export const SCOPES = ['ingest', 'read', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export interface Principal {
  projectId: string;
  keyId: string;
  scopes: Scope[];
}

const KEY_RE = /^wm_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;
const DUMMY_HASH = createHash('sha256').update('waymark-dummy').digest();

const sha256 = (s: string) => createHash('sha256').update(s).digest();

export async function findOrCreateProject(db: PlaneDb, name: string): Promise<string> {
  const [found] = await db.select({ id: projects.id }).from(projects).where(eq(projects.name, name));
  if (found) return found.id;
  const id = `prj_${randomBytes(8).toString('hex')}`;
  await db.insert(projects).values({ id, name }).onConflictDoNothing();
  const [row] = await db.select({ id: projects.id }).from(projects).where(eq(projects.name, name));
  return row.id;
}

/** Create a key; the returned `key` is the only time the secret exists in the clear. */
export async function createKey(
  db: PlaneDb,
  o: { project: string; name?: string; scopes: Scope[] },
): Promise<{ key: string; id: string; projectId: string; scopes: Scope[] }> {
  for (const s of o.scopes) if (!SCOPES.includes(s)) throw new Error(`unknown scope '${s}'`);
  if (!o.scopes.length) throw new Error('a key needs at least one scope');
  const projectId = await findOrCreateProject(db, o.project);
  const id = randomBytes(8).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  await db.insert(apiKeys).values({
    id,
    projectId,
    name: o.name ?? 'key',
    hash: sha256(secret).toString('hex'),
    scopes: [...new Set(o.scopes)],
  });
  return { key: `wm_${id}_${secret}`, id, projectId, scopes: o.scopes };
}

export async function listKeys(db: PlaneDb) {
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
    .orderBy(apiKeys.createdAt);
}

export async function revokeKey(db: PlaneDb, id: string): Promise<boolean> {
  const r = await db
    .update(apiKeys)
    .set({ revokedAt: new Date() })
    .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id });
  return r.length === 1;
}

/** The principal a bearer key stands for, or null (unknown, malformed, revoked or wrong secret). */
export async function authenticate(db: PlaneDb, key: string | undefined): Promise<Principal | null> {
  const m = key ? KEY_RE.exec(key) : null;
  const presented = sha256(m?.[2] ?? 'malformed');
  if (!m) {
    timingSafeEqual(presented, DUMMY_HASH);
    return null;
  }
  const [row] = await db.select().from(apiKeys).where(eq(apiKeys.id, m[1]));
  const stored = row ? Buffer.from(row.hash, 'hex') : DUMMY_HASH;
  const ok = stored.length === presented.length && timingSafeEqual(stored, presented);
  if (!row || !ok || row.revokedAt) return null;
  return { projectId: row.projectId, keyId: row.id, scopes: row.scopes as Scope[] };
}

export function bearer(header: string | undefined): string | undefined {
  const m = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  return m?.[1];
}

/** A project's name by id (null when it no longer exists). */
export async function projectName(db: PlaneDb, projectId: string): Promise<string | null> {
  const [p] = await db.select({ name: projects.name }).from(projects).where(eq(projects.id, projectId));
  return p?.name ?? null;
}
