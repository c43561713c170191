/**
 * The inspector's forms (sign in, sign out, keys, a pause's decision) read
 * their body as the plane's JSON routes do: a form type only, at most
 * `limit` bytes, within the body deadline (support/body-read.ts). Hono's
 * `parseBody` reads whatever arrives, for as long as it takes: a request to
 * the sign-in page, which needs no key, could make the server hold gigabytes.
 * Refusals are short text for the person at the browser; a timed-out or
 * too-large body is still in the socket, so the connection is closed.
 */
import type { MiddlewareHandler } from 'hono';
import { BodyReadError, type BodyDeadline, readBodyCapped } from '../support/body-read.js';

const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data'];

/** Middleware for a form's POST: reads the body within `limit` and `deadline`, then hands the route a request carrying it. */
export function formBodyWithin(limit: number, deadline: BodyDeadline): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== 'POST') return next();
    const raw = c.req.raw;
    const type = (raw.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    const close = { connection: 'close' };
    if (!FORM_TYPES.includes(type))
      return c.text(`UNSUPPORTED_MEDIA_TYPE: send a form (${FORM_TYPES.join(' or ')})`, 415, close);
    const declared = Number(raw.headers.get('content-length') ?? Number.NaN);
    if (Number.isFinite(declared) && declared > limit)
      return c.text(`TOO_LARGE: a form is at most ${limit} bytes`, 413, close);
    let body: Buffer;
    try {
      body = await readBodyCapped(raw.body, limit, deadline);
    } catch (e) {
      if (!(e instanceof BodyReadError)) throw e;
      // the client is gone: nobody reads an answer
      if (e.reason === 'aborted') return c.body(null, 400, close);
      return e.reason === 'too_large'
        ? c.text(`TOO_LARGE: a form is at most ${limit} bytes`, 413, close)
        : c.text(`BODY_TIMEOUT: ${e.message}`, 408, close);
    }
    const headers = new Headers(raw.headers);
    headers.delete('content-length');
    headers.delete('transfer-encoding');
    c.req.raw = new Request(raw.url, { method: raw.method, headers, body: new Uint8Array(body), signal: raw.signal });
    await next();
  };
}
