/**
 * Read a request body's stream within a byte limit and a deadline: what the
 * plane's JSON routes (plane/body.ts) and every inspector form (the plane's and
 * `waymark ui`'s, inspector/form-body.ts) read a body with, so no request can
 * make a server hold more than `limit` bytes of it or wait on it for ever.
 *
 * The deadline has two parts: `idleMs` without a byte (a stalled upload) and
 * `totalMs` for the whole body (a trickle). Web streams have no byte cap or
 * per-read deadline of their own, and Hono's `bodyLimit` has no deadline: hence
 * this loop.
 */

/** How long a body may take: without a byte, and in all. */
export interface BodyDeadline {
  idleMs: number;
  totalMs: number;
}

/** A server's body deadline when none is configured (the defaults of WAYMARK_BODY_IDLE_MS and WAYMARK_BODY_TOTAL_MS). */
export const DEFAULT_BODY_DEADLINE: BodyDeadline = Object.freeze({ idleMs: 10_000, totalMs: 120_000 });

/** Why a body was not read: over the limit, past a deadline, or the client hung up (`cause`: the read's error). */
export class BodyReadError extends Error {
  constructor(
    readonly reason: 'too_large' | 'timeout' | 'aborted',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'BodyReadError';
  }
}

/** The next chunk, or a timeout once `ms` pass first; a failed read is the client hanging up. */
async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number, what: string) {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new BodyReadError('timeout', what)), Math.max(0, ms));
  });
  try {
    return await Promise.race([
      reader.read().catch((e: unknown) =>
        Promise.reject(
          new BodyReadError('aborted', 'the client closed the connection before its request body arrived', {
            cause: e,
          }),
        ),
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The bytes of `stream`, or a BodyReadError: over `limit` (the rest is not read), past the deadline, or the client gone. */
export async function readBodyCapped(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
  deadline: BodyDeadline,
): Promise<Buffer> {
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
      throw new BodyReadError('too_large', `request body is over ${limit} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}
