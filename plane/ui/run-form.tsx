/** @jsxImportSource hono/jsx */
/**
 * The one guard of every form of the plane's inspector that acts on a run
 * (cancel.tsx's Cancel run, requests.tsx's Retry, Recover and Fork): who may
 * see the form (a session of a key with the scope, or `admin`), and, on the
 * post, the session's CSRF token with Origin/Sec-Fetch-Site (inspector/csrf.ts)
 * and the scope checked again. A refusal is a page naming the stable code and
 * saying nothing changed.
 */
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { FC } from 'hono/jsx';
import type { Scope } from '../scopes.js';
import type { PlaneEnv } from '../http/env.js';
import { CSRF_REFUSAL, csrfOf, csrfOk } from '../../inspector/csrf.js';
import { Layout } from '../../inspector/layout.js';
import { ErrorCode } from '../../shared/errors.js';
import { SESSION_COOKIE } from './session.js';

/** Whether this request's session may use a form needing `scope` (or admin), and its form's token; else why not (`refused`). */
export function sessionMay(
  c: Context<PlaneEnv>,
  scope: Scope,
  refused: string,
): { csrf: string } | { refused: string } {
  const p = c.get('principal');
  const session = getCookie(c, SESSION_COOKIE);
  if (!(p.scopes.includes(scope) || p.scopes.includes('admin')) || !session) return { refused };
  return { csrf: csrfOf(session) };
}

/** A form post carries this session's CSRF token, from this origin (inspector/csrf.ts `csrfOk` with the session cookie). */
export function sessionCsrfOk(c: Context<PlaneEnv>, token: unknown): boolean {
  return csrfOk({
    site: c.req.header('sec-fetch-site'),
    origin: c.req.header('origin'),
    url: c.req.url,
    token,
    secret: getCookie(c, SESSION_COOKIE) ?? '',
  });
}

/**
 * A form post's guard: CSRF_FAILED without this session's token or from
 * another origin, FORBIDDEN when `may` refuses the session; null: let through.
 */
export function formRefusal(
  c: Context<PlaneEnv>,
  form: Record<string, unknown>,
  may: { csrf: string } | { refused: string },
): { code: string; message: string } | null {
  if (!sessionCsrfOk(c, form.csrf)) return CSRF_REFUSAL;
  if ('refused' in may) return { code: ErrorCode.FORBIDDEN, message: may.refused };
  return null;
}

/** An action on a run that was not taken: the stable code and why, and that nothing changed. */
export const RunActionRefusedPage: FC<{ title: string; code: string; message: string; executionId: string | null }> = (
  p,
) => (
  <Layout title={p.title}>
    <h1>{p.title}</h1>
    <p class="error" role="alert" data-testid="refusal">
      <code data-testid="refusal-code">{p.code}</code>: {p.message}
    </p>
    <p>Nothing was changed.</p>
    <p>
      {p.executionId && (
        <>
          <a href={`/runs/${encodeURIComponent(p.executionId)}`}>Back to the run</a> ·{' '}
        </>
      )}
      <a href="/">Runs</a>
    </p>
  </Layout>
);
