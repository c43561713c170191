/**
 * Read a request body within a byte limit, inflating gzip with the same limit
 * on the output: a gzip bomb is refused once it passes the limit, without
 * inflating the rest.
 */
import { createGunzip } from 'node:zlib';

export class BodyError extends Error {
  constructor(readonly status: 400 | 413 | 415, readonly code: string, message: string) {
    super(message);
  }
}

async function readCapped(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let n = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.byteLength;
    if (n > limit) {
      await reader.cancel().catch(() => {});
      throw new BodyError(413, 'TOO_LARGE', `request body is over ${limit} bytes`);
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
      if (n > limit) fail(new BodyError(413, 'TOO_LARGE', `request body inflates past ${limit} bytes`));
      else out.push(d);
    });
    z.on('error', (e) => fail(new BodyError(400, 'BAD_GZIP', `body is not valid gzip: ${e.message}`)));
    z.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(out));
    });
    z.end(buf);
  });
}

/** The decoded JSON body of a request, or a BodyError with the status to answer. */
export async function readJsonBody(req: Request, limit: number): Promise<unknown> {
  const type = (req.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') throw new BodyError(415, 'UNSUPPORTED_MEDIA_TYPE', 'send application/json');
  const encoding = (req.headers.get('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== 'gzip') throw new BodyError(415, 'UNSUPPORTED_ENCODING', 'content-encoding must be gzip or identity');
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (Number.isFinite(declared) && declared > limit) throw new BodyError(413, 'TOO_LARGE', `request body is over ${limit} bytes`);
  let buf = await readCapped(req.body, limit);
  if (encoding === 'gzip') buf = await gunzipCapped(buf, limit);
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw new BodyError(400, 'BAD_JSON', `body is not JSON: ${(e as Error).message}`);
  }
}
