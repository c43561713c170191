/**
 * The scope a route needs, declared with the route. `scoped(db, scope)`
 * spreads into `createRoute({...})` both the middleware that checks the
 * presented key and the OpenAPI `security` that documents it.
 */
import type { MiddlewareHandler } from 'hono';
import { ErrorCode } from '../../shared/errors.js';
import { authenticate, bearer, refusedKeyMessage, type Scope } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import type { PlaneEnv } from './env.js';
import { HttpError, refusal } from './errors.js';

/** OpenAPI security of every keyed route: a bearer API key. */
export const security = [{ bearer: [] as string[] }];

/** A valid key (401 otherwise), with `scope` (or one of several) or admin when one is named (403 otherwise); sets `principal`. */
export function requireScope(db: PlaneDb, scope: Scope | readonly Scope[] | null): MiddlewareHandler<PlaneEnv> {
  const any: readonly Scope[] = scope === null ? [] : typeof scope === 'string' ? [scope] : scope;
  return async (c, next) => {
    const key = bearer(c.req.header('authorization'));
    const p = await authenticate(db, key);
    if (!p) throw new HttpError(401, ErrorCode.UNAUTHORIZED, await refusedKeyMessage(db, key));
    if (any.length && !any.some((s) => p.scopes.includes(s)) && !p.scopes.includes('admin')) {
      throw refusal(ErrorCode.FORBIDDEN, `this key lacks the ${any.map((s) => `'${s}'`).join(' or the ')} scope`);
    }
    c.set('principal', p);
    await next();
  };
}

/**
 * A route's scope, for `createRoute`: the check and its documentation
 * together. `then` runs after the check, so a client without a valid key
 * never gets a byte of its body read (`jsonBodyWithin`, plane/body.ts).
 */
export function scoped(db: PlaneDb, scope: Scope | readonly Scope[] | null, ...then: MiddlewareHandler<PlaneEnv>[]) {
  return { security, middleware: [requireScope(db, scope), ...then] };
}
