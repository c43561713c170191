/**
 * The inspector's CSRF check, shared by every form that changes something
 * (the Keys page, the approve/decline form; on the plane and under
 * `waymark ui`). A form carries a token derived from a secret a page of
 * another origin cannot read: the plane's session cookie (HttpOnly,
 * SameSite=Strict), or the local UI's per-process secret (only in pages it
 * serves, which another origin cannot read). On top of the token, a foreign
 * Origin is refused. The inspector sends Referrer-Policy: no-referrer, under
 * which browsers send `Origin: null` on their own form posts: `null` and an
 * absent Origin are left to the token. And a browser's Sec-Fetch-Site, which
 * no page can set, must say the post came from this origin: a form a page of
 * another site (or another origin of this site, or a sandboxed frame, whose
 * Origin is `null`) posts is refused even if that page learnt the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorCode } from '../shared/errors.js';

/** The form token of a secret (a session token, a process secret). */
export const csrfOf = (secret: string) => createHash('sha256').update(`waymark-csrf:${secret}`).digest('base64url');

/** The request's Origin header is absent, `null` or this server's own origin. */
export function originOk(origin: string | undefined, requestUrl: string): boolean {
  return !origin || origin === 'null' || origin === new URL(requestUrl).origin;
}

/** Sec-Fetch-Site is absent (not a browser, or an old one), `same-origin`, or `none` (the person's own navigation). */
export function siteOk(site: string | undefined): boolean {
  return site === undefined || site === 'same-origin' || site === 'none';
}

/** The form's token matches the secret's (constant time); an empty secret never matches. */
export function tokenOk(given: unknown, secret: string): boolean {
  if (!secret) return false;
  const want = Buffer.from(csrfOf(secret));
  const got = Buffer.from(typeof given === 'string' ? given : '');
  return got.length === want.length && timingSafeEqual(got, want);
}

/** Every check, for a form post: the fetch site and the origin first, then the token. */
export const csrfOk = (o: {
  site: string | undefined;
  origin: string | undefined;
  url: string;
  token: unknown;
  secret: string;
}) => siteOk(o.site) && originOk(o.origin, o.url) && tokenOk(o.token, o.secret);

/** What every form post that fails csrfOk is told: the one refusal, with its stable code; nothing was changed. */
export const CSRF_REFUSAL = {
  code: ErrorCode.CSRF_FAILED,
  message:
    'the form did not carry this session’s CSRF token (or came from another origin): reload the page and try again',
} as const;
