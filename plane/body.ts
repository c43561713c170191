/**
 * Read a request body within a byte limit and a deadline, inflating gzip with
 * the same limit on the output: a gzip bomb is refused once it passes the
 * limit, without inflating the rest.
 *
 * The deadline has two parts: `idleMs` without a byte (a stalled upload) and
 * `totalMs` for the whole body (a trickle). Either answers 408 BODY_TIMEOUT
 * and closes the connection. A client that hangs up mid-body is not an error
 * of the plane: it surfaces as `ClientAborted`, logged as such.
 */
import { createGunzip } from 'node:zlib';
import type { Logger } from 'pino';
import { ErrorCode } from '../shared/errors.js';
import { HttpError } from './http/errors.js';

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

/** How long a body may take: without a byte, and in all. */
export interface BodyDeadline {
  idleMs: number;
  totalMs: number;
}

/** The next chunk, or BODY_TIMEOUT once `ms` pass first; a failed read is the client hanging up. */
async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number, what: string) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyError(408, ErrorCode.BODY_TIMEOUT, what)), Math.max(0, ms));
  });
  try {
    return await Promise.race([reader.read().catch((e: unknown) => Promise.reject(new ClientAborted(e))), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function readCapped(stream: ReadableStream<Uint8Array> | null, limit: number, deadline: BodyDeadline): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let n = 0;
  const reader = stream.getReader();
  const end = performance.now() + deadline.totalMs;
  for (;;) {
    const left = end - performance.now();
    const { done, value } =
      left < deadline.idleMs
        ? await nextChunk(reader, left, `request body not complete within ${deadline.totalMs} ms`)
        : await nextChunk(reader, deadline.idleMs, `no request body bytes for ${deadline.idleMs} ms`);
    if (done) break;
    n += value.byteLength;
    if (n > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyError(413, ErrorCode.TOO_LARGE, `request body is over ${limit} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
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

/** The decoded JSON body of a request, or a BodyError with the status to answer. */
export async function readJsonBody(req: Request, limit: number, deadline: BodyDeadline): Promise<unknown> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new BodyError(415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'send application/json');
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') throw new BodyError(415, ErrorCode.UNSUPPORTED_ENCODING, 'content-encoding must be gzip or identity');
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw new BodyError(413, ErrorCode.TOO_LARGE, `request body is over ${limit} bytes`);
  let buf = await readCapped(req.body, limit, deadline);
  if (encoding === 'gzip') buf = await gunzipCapped(buf, limit);
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new BodyError(400, ErrorCode.BAD_JSON, `body is not JSON: ${(e as Error).message}`);
  }
}
