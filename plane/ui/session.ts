/**
 * Inspector sessions. A read-scoped API key is exchanged once for a random
 * token in an HttpOnly, SameSite=Strict cookie; the token is stored hashed and
 * dies with its key (revocation) or after 12 hours.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import type { PlaneDb } from '../db/open.js';
import { apiKeys, sessions } from '../db/schema.js';
import type { Principal } from '../auth.js';
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import { csrfOf } from '../../inspector/csrf.js';

export const SESSION_COOKIE = 'wm_session';

/** The form token of the request's session (the Log out form's), or null without a session. */
export const sessionToken = (c: Context): string | null => {
  const s = getCookie(c, SESSION_COOKIE);
  return s === undefined ? null : csrfOf(s);
};
const TTL_MS = 12 * 3600_000;
const hash = (t: string) => createHash('sha256').update(t).digest('hex');

export async function createSession(db: PlaneDb, p: Principal): Promise<{ token: string; maxAgeSec: number }> {
  const token = randomBytes(32).toString('base64url');
  await db.delete(sessions).where(lt(sessions.expiresAt, new Date()));
  await db
    .insert(sessions)
    .values({ hash: hash(token), keyId: p.keyId, projectId: p.projectId, expiresAt: new Date(Date.now() + TTL_MS) });
  return { token, maxAgeSec: TTL_MS / 1000 };
}

export async function sessionPrincipal(db: PlaneDb, token: string | undefined): Promise<Principal | null> {
  if (!token || token.length > 100) return null;
  const [row] = await db
    .select({ projectId: sessions.projectId, keyId: sessions.keyId, scopes: apiKeys.scopes })
    .from(sessions)
    .innerJoin(apiKeys, eq(apiKeys.id, sessions.keyId))
    .where(and(eq(sessions.hash, hash(token)), gt(sessions.expiresAt, new Date()), isNull(apiKeys.revokedAt)));
  return row ? { projectId: row.projectId, keyId: row.keyId, scopes: row.scopes as Principal['scopes'] } : null;
}

export async function endSession(db: PlaneDb, token: string | undefined): Promise<void> {
  if (token) await db.delete(sessions).where(eq(sessions.hash, hash(token)));
}
