/**
 * The drain's HTTP client: undici keep-alive Pool, or an injected Dispatcher (tests).
 *
 * Every request is bounded by its `timeoutMs`, however the plane (or whatever
 * answers for it) behaves: the answer's headers must arrive within it (undici's
 * headersTimeout, which also runs while an upload is not being read), its body
 * may not go quiet for longer (undici's bodyTimeout), and the whole body must
 * have arrived within `timeoutMs` of the headers. The last one is ours: undici's
 * body timeout restarts at every chunk, so an answer trickled a byte at a time
 * would otherwise hold a drain round (and `stop()`, which waits for it), a
 * restore or a claim forever. So a request takes at most about twice
 * `timeoutMs` (plus the time to send its own body), and then throws.
 */
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import type { Dispatcher } from 'undici';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';

// loaded when a client is made, not with the root entry: undici's import is ~150 ms of CPU that a process never draining need not pay
const require = createRequire(import.meta.url);

export interface PlaneResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export class PlaneHttp {
  private readonly origin: string;
  private readonly basePath: string;
  private readonly dispatcher: Dispatcher;
  private readonly owned: boolean;
  constructor(url: string, options: { dispatcher?: Dispatcher; connections?: number } = {}) {
    const u = new URL(url);
    this.origin = u.origin;
    this.basePath = u.pathname.replace(/\/$/, '');
    this.owned = !options.dispatcher;
    if (options.dispatcher) this.dispatcher = options.dispatcher;
    else {
      // a plain binding: TypeScript 7 emitted `new (require('undici')).Pool(…)` as `new require('undici').Pool(…)`, which throws
      const { Pool } = require('undici') as typeof import('undici');
      this.dispatcher = new Pool(this.origin, { connections: options.connections ?? 2, keepAliveTimeout: 10_000 });
    }
  }

  async request(
    method: 'GET' | 'POST',
    path: string,
    o: { apiKey: string; json?: unknown; timeoutMs: number; gzipOver?: number; signal?: AbortSignal },
  ): Promise<PlaneResponse> {
    const headers: Record<string, string> = { authorization: `Bearer ${o.apiKey}`, accept: 'application/json' };
    let body: Buffer | undefined;
    if (o.json !== undefined) {
      body = Buffer.from(JSON.stringify(o.json));
      headers['content-type'] = 'application/json';
      if (body.length > (o.gzipOver ?? 16 * 1024)) {
        // level 1: JSON rows still shrink ~5×, at a fraction of the default level's CPU
        body = gzipSync(body, { level: 1 });
        headers['content-encoding'] = 'gzip';
      }
    }
    const res = await this.dispatcher.request({
      origin: this.origin,
      path: `${this.basePath}${path}`,
      method,
      headers,
      body,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const text = await bodyWithin(res.body, o.timeoutMs, `${method} ${path}`);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* keep the text */
    }
    return { status: res.statusCode, headers: res.headers, body: parsed };
  }

  async close(): Promise<void> {
    if (this.owned) await this.dispatcher.close();
  }

  /** True once an owned pool is closed (an injected dispatcher is the caller's to close). */
  get closed(): boolean {
    return !this.owned || (this.dispatcher as unknown as { closed?: boolean }).closed === true;
  }
}

/**
 * The text of an answer's body, or PLANE_ERROR once `ms` pass after its
 * headers without the whole of it (the body is destroyed, so its connection
 * is closed rather than reused).
 */
async function bodyWithin(body: Dispatcher.ResponseData['body'], ms: number, what: string): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = new WaymarkError(
        ErrorCode.PLANE_ERROR,
        `timeout: the answer to ${what} did not arrive within ${ms} ms of its headers (a stalled or trickling answer)`,
        {
          details: { timeoutMs: ms },
        },
      );
      body.destroy(e);
      reject(e);
    }, ms);
  });
  try {
    return await Promise.race([body.text(), late]);
  } finally {
    clearTimeout(timer);
  }
}
