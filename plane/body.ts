/**
 * Read a request body within a byte limit and a deadline, inflating gzip with
 * the same limit on the output: a gzip bomb is refused once it passes the
 * limit, without inflating the rest.
 *
 * The deadline has two parts: `idleMs` without a byte (a stalled upload) and
 * `totalMs` for the whole body (a trickle). Either answers 408 BODY_TIMEOUT
 * and closes the connection. A client that hangs up mid-body is not an error
 * of the plane: it surfaces as `ClientAborted`, logged as such.
 *
 * Two ways in: `readJsonBody` for a route that reads its body by hand
 * (ingest), and `jsonBodyWithin`, the middleware of every JSON-bodied openapi
 * route, which reads the body the same way and hands it to the route's
 * validator.
 */
import { createGunzip } from 'node:zlib';
import type { MiddlewareHandler } from 'hono';
import { recheckKey } from './auth.js';
import type { PlaneDb } from './db/open.js';
import type { PlaneEnv } from './http/env.js';
import type { Logger } from 'pino';
import { ErrorCode } from '../shared/errors.js';
import { HttpError } from './http/errors.js';
import { type BodyDeadline, BodyReadError, readBodyCapped } from '../support/body-read.js';

/** A body refused; a timed-out body is still in the socket: answer, then close the connection rather than drain it. */
export class BodyError extends HttpError {
  constructor(status: 400 | 408 | 413 | 415, code: ErrorCode, message: string) {
    super(status, code, message, status === 408 ? { headers: { Connection: 'close' } } : {});
  }
}

/** The client closed the connection before its body arrived (ECONNRESET, "aborted"): logged, not an error of the plane. */
export class ClientAborted extends HttpError {
  constructor(cause: unknown) {
    super(499, ErrorCode.CLIENT_ABORTED, 'the client closed the connection before its request body arrived', { cause });
  }
  override report(log: Logger | undefined): void {
    log?.info({ cause: (this.cause as Error)?.message }, 'client aborted');
  }
}

/** The body's bytes (support/body-read.ts), its refusal as the answer to send. */
async function readCapped(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
  deadline: BodyDeadline,
): Promise<Buffer> {
  try {
    return await readBodyCapped(stream, limit, deadline);
  } catch (e) {
    if (!(e instanceof BodyReadError)) throw e;
    if (e.reason === 'aborted') throw new ClientAborted(e.cause);
    throw e.reason === 'too_large'
      ? new BodyError(413, ErrorCode.TOO_LARGE, e.message)
      : new BodyError(408, ErrorCode.BODY_TIMEOUT, e.message);
  }
}

function gunzipCapped(buf: Buffer, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const z = createGunzip();
    const out: Buffer[] = [];
    let n = 0;
    let settled = false;
    const fail = (e: Error) => {
      if (settled) return;
      settled = true;
      z.destroy();
      reject(e);
    };
    z.on('data', (d: Buffer) => {
      n += d.length;
      if (n > limit) fail(new BodyError(413, ErrorCode.TOO_LARGE, `request body inflates past ${limit} bytes`));
      else out.push(d);
    });
    z.on('error', (e) => fail(new BodyError(400, ErrorCode.BAD_GZIP, `body is not valid gzip: ${e.message}`)));
    z.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(out));
    });
    z.end(buf);
  });
}

/** The decoded text of a JSON request body (gzip inflated), or a BodyError with the status to answer. */
async function readJsonText(req: Request, limit: number, deadline: BodyDeadline): Promise<string> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new BodyError(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'send application/json');
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip')
    throw new BodyError(415, ErrorCode.UNSUPPORTED_ENCODING, 'content-encoding must be gzip or identity');
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit)
    throw new BodyError(413, ErrorCode.TOO_LARGE, `request body is over ${limit} bytes`);
  let buf = await readCapped(req.body, limit, deadline);
  if (encoding === 'gzip') buf = await gunzipCapped(buf, limit);
  return buf.toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new BodyError(400, ErrorCode.BAD_JSON, `body is not JSON: ${(e as Error).message}`);
  }
}

/** The decoded JSON body of a request, or a BodyError with the status to answer. */
export async function readJsonBody(req: Request, limit: number, deadline: BodyDeadline): Promise<unknown> {
  return parseJson(await readJsonText(req, limit, deadline));
}

/** Whether a request says a body follows: a non-zero Content-Length, or Transfer-Encoding (chunked). HTTP/1.1 has no other way. */
function declaresBody(req: Request): boolean {
  const length = req.headers.get('content-length');
  return req.headers.has('transfer-encoding') || (length !== null && length.trim() !== '0');
}

/**
 * The middleware of a JSON-bodied openapi route, after its scope check (no
 * byte is read for a client without a key). The body is read as
 * `readJsonBody` reads it (415 not JSON, 413 over `limit`, 408 past the
 * deadline, 400 BAD_JSON), then handed to the route's validator
 * (@hono/zod-openapi's, with `jsonBody`'s `required: true`), which answers
 * 400 INVALID_REQUEST naming every issue. The validator never touches the
 * socket: as Hono's own bodyLimit does, the request is replaced by one that
 * carries the text read here.
 *
 * Once the body arrived, the key is read again (`recheckKey`): a key revoked
 * while it was arriving gets 401 and the route never runs.
 *
 * No body at all (no Content-Type, nothing declared) and an empty JSON body
 * are validated as `{}`, so the 400 names every missing field; a body without
 * a JSON Content-Type is 415 before a byte of it is read.
 */
export function jsonBodyWithin(db: PlaneDb, limit: number, deadline: BodyDeadline): MiddlewareHandler<PlaneEnv> {
  return async (c, next) => {
    const raw = c.req.raw;
    // nothing sent: the validator takes a request without a Content-Type as `{}`, reading nothing
    if (raw.headers.get('content-type') === null && !declaresBody(raw)) return next();
    const text = await readJsonText(raw, limit, deadline);
    // the body may have taken seconds: a key revoked meanwhile changes nothing
    await recheckKey(db, c.get('principal'));
    const body = text.trim() === '' ? '{}' : text;
    parseJson(body);
    const headers = new Headers(raw.headers);
    headers.delete('content-encoding'); // inflated already
    headers.delete('content-length');
    c.req.raw = new Request(raw.url, { method: raw.method, headers, body, signal: raw.signal });
    await next();
  };
}
