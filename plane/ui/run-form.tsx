/** @jsxImportSource hono/jsx */
/**
 * The one guard of every form of the plane's inspector that acts on a run
 * (cancel.tsx's Cancel run, requests.tsx's Retry, Recover and Fork; keys.tsx's
 * forms take its CSRF check, `csrfRefusal`): who may see the form (a session of a key with the scope, or `admin`), and, on the
 * post, the session's CSRF token with Origin/Sec-Fetch-Site (inspector/csrf.ts)
 * and the scope checked again. A refusal (the Keys page's forms' too, and a
 * login or logout posted from another site: routes.tsx) is a page naming the
 * stable code and saying nothing changed, answered with its code's status
 * (REFUSAL_STATUS, as the API answers it): `refusalPage`.
 */
import type { Context } from 'hono';
import { getCookie } from 'hono/cookie';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { Scope } from '../scopes.js';
import type { PlaneEnv } from '../http/env.js';
import { CSRF_REFUSAL, csrfOf, csrfOk } from '../../inspector/csrf.js';
import { ActionRefusedPage } from '../../inspector/refused-page.js';
import { ErrorCode } from '../../shared/errors.js';
import { type Refusal, refusal } from '../http/errors.js';
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

/** A form post's CSRF guard: CSRF_FAILED without this session's token or from another origin; null: let through. */
export function csrfRefusal(c: Context<PlaneEnv>, form: Record<string, unknown>): Refusal | null {
  return sessionCsrfOk(c, form.csrf) ? null : refusal(CSRF_REFUSAL.code, CSRF_REFUSAL.message);
}

/**
 * A form post's guard: CSRF_FAILED without this session's token or from
 * another origin, FORBIDDEN when `may` refuses the session; null: let through.
 */
export function formRefusal(
  c: Context<PlaneEnv>,
  form: Record<string, unknown>,
  may: { csrf: string } | { refused: string },
): Refusal | null {
  return csrfRefusal(c, form) ?? ('refused' in may ? refusal(ErrorCode.FORBIDDEN, may.refused) : null);
}

/** The links of a refusal page of an action on a run: back to the run (when it is one here), and the runs. */
export const runLinks = (executionId: string | null): { href: string; text: string }[] => [
  ...(executionId ? [{ href: `/runs/${encodeURIComponent(executionId)}`, text: 'Back to the run' }] : []),
  { href: '/', text: 'Runs' },
];

type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/**
 * The answer to a form post that was refused, the one for every form of the plane's inspector: the refusal page
 * (ActionRefusedPage, titled `title`, "Nothing changed" unless given, framed by `wrap` when given) with the
 * refusal's status, never stored by a cache (it answers one post).
 */
export function refusalPage(
  c: Context<PlaneEnv>,
  r: Refusal,
  links: { href: string; text: string }[],
  o: { title?: string; nav?: boolean; wrap?: (page: Page, c: Context<PlaneEnv>) => Page } = {},
): Response | Promise<Response> {
  const page = (
    <ActionRefusedPage
      title={o.title ?? 'Nothing changed'}
      nav={o.nav}
      code={r.code}
      message={r.message}
      links={links}
    />
  );
  c.header('cache-control', 'no-store');
  return c.html(o.wrap ? o.wrap(page, c) : page, r.status);
}
