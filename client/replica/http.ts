/**
 * The replica's HTTP client (the drain, the plane calls, the decision feed):
 * undici keep-alive Pool, or an injected Dispatcher (tests). Also the one home
 * of the rule for a request met by a kept-alive connection the plane had
 * closed (sendAgainIfStale below), which the change feed's node:http client
 * follows too.
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
import type { Socket } from 'node:net';
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

/** How many times sendAgainIfStale sends a request again: each connection of a pool may be as old as the first. */
const STALE_RESENDS = 2;

/** The errors a connection closed under a request gives: node's, and undici's "other side closed". */
const CLOSED_CODES: ReadonlySet<unknown> = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

/** What a client knows of the connection a request failed on. */
export interface ConnectionEnd {
  /** The error's code. */
  code: unknown;
  /** Bytes the connection had read when the request was put on it: more than 0 on a reused one (an earlier answer); undefined when not known. */
  readBefore: number | undefined;
  /** Bytes it had read when it failed (more than `readBefore`: this request's answer had begun). */
  readAtEnd: number | undefined;
}

/** Whether a request failed on a reused connection closed before any byte of its answer (sendAgainIfStale's rule). */
export function closedBeforeAnswer(end: ConnectionEnd): boolean {
  return (
    CLOSED_CODES.has(end.code) && end.readBefore !== undefined && end.readBefore > 0 && end.readAtEnd === end.readBefore
  );
}

/** One send's failure that `closedBeforeAnswer` matched; `error` is what the client threw. */
export class StaleConnection extends Error {
  constructor(readonly error: unknown) {
    super((error as Error)?.message ?? String(error));
  }
}

/**
 * A request that met a kept-alive connection the plane had closed, before any answer: sent once more on another
 * connection. This is the one home of that rule, for both HTTP clients of the replica (PlaneHttp's undici pool, and
 * the change feed's node:http agent, whose held poll must not keep the process alive).
 *
 * Why: the plane closes a kept-alive connection left idle past its keep-alive timeout. A process that did not see
 * the close (its event loop blocked by a synchronous child or a long computation; the process stopped: a suspended
 * laptop, SIGSTOP), or whose request crossed the close on the wire, writes its next request on the dead connection,
 * and the request fails before any answer: ECONNRESET, EPIPE, or undici's "other side closed" (UND_ERR_SOCKET). The
 * plane was there; the connection was old.
 *
 * The rule: such a failure on a REUSED connection (one that carried an earlier answer), BEFORE ANY BYTE of this
 * request's answer arrived, is sent again, at most twice (each connection of a pool may be as old). The same failure
 * on a new connection is not: that is a plane that is down, or a proxy with no plane behind it, and it surfaces as the
 * network error it is (the drain's round, `waymark sync status`). Nor is a request whose answer had begun.
 *
 * Who may ask (`sendAgainIfStale`): only a call the plane may receive twice to the same effect as once, for a
 * connection that closed before the answer does not say the plane did not act on the request. And only where a
 * spurious failure costs something a second send avoids:
 * - a lease renewal (the same holder asking again): read as "plane unreachable", the renewal that confirms a lease
 *   before a side effect lets the effect start offline, though the plane was there to say the run was taken over;
 * - the feeds' reads (GET /v1/changes, GET /v1/decisions and the decision feed's GET /v1/whoami): a failed round waits
 *   a backoff and reports the plane unreachable when it is not.
 * Not the drain's ingest (its rounds are retried on their own backoff, and a reset they meet is what sync status
 * reports), nor claims, takeovers, cancels or a run request's claim and report: each caller tells a network failure
 * apart and decides itself whether to ask again.
 *
 * Send, and send again (at most STALE_RESENDS times) while a send fails with StaleConnection. Any other error, the
 * last stale one, or one after `signal` aborted is thrown as the client threw it.
 */
export async function sendAgainIfStale<T>(send: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let resent = 0; ; resent++) {
    try {
      return await send();
    } catch (e) {
      if (!(e instanceof StaleConnection)) throw e;
      if (resent >= STALE_RESENDS || signal?.aborted) throw e.error;
    }
  }
}

/** A connection of the pool by its local address (undici's SocketError names it so), and what it had read then. */
interface ConnectionSeen {
  key: string;
  bytesRead: number;
}

const localKey = (s: { localAddress?: string; localPort?: number }): string => `${s.localAddress}:${s.localPort}`;

export class PlaneHttp {
  private readonly origin: string;
  private readonly basePath: string;
  private readonly dispatcher: Dispatcher;
  private readonly owned: boolean;
  /** The pool's open connections by local address: what each had read when a request starts tells a reused one. */
  private readonly connections = new Map<string, Socket>();
  /** A connection's own error (ECONNRESET, EPIPE: undici passes it on as is) and the connection it ended. */
  private readonly ended = new WeakMap<object, ConnectionSeen>();

  /** `dispatcher`: requests go through it (tests); a request on it is never sent again (its connections are not seen). */
  constructor(url: string, options: { dispatcher?: Dispatcher; connections?: number } = {}) {
    const u = new URL(url);
    this.origin = u.origin;
    this.basePath = u.pathname.replace(/\/$/, '');
    this.owned = !options.dispatcher;
    if (options.dispatcher) this.dispatcher = options.dispatcher;
    else {
      // a plain binding: TypeScript 7 emitted `new (require('undici')).Pool(…)` as `new require('undici').Pool(…)`, which throws
      const { Pool, buildConnector } = require('undici') as typeof import('undici');
      const connector = buildConnector({});
      this.dispatcher = new Pool(this.origin, {
        connections: options.connections ?? 2,
        keepAliveTimeout: 10_000,
        connect: (o, done) =>
          connector(o, (...args) => {
            if (args[1]) this.watch(args[1]);
            done(...args);
          }),
      });
    }
  }

  /** Keep a new connection of the pool in view until it closes. */
  private watch(socket: Socket): void {
    const key = localKey(socket);
    this.connections.set(key, socket);
    socket.on('error', (e) => this.ended.set(e, { key, bytesRead: socket.bytesRead }));
    socket.once('close', () => {
      if (this.connections.get(key) === socket) this.connections.delete(key);
    });
  }

  /**
   * One request; its answer's body parsed as JSON (or kept as text). `sendAgainIfStale`: the call is one the rule
   * of sendAgainIfStale lets be sent again when a reused connection closed before any byte of its answer.
   */
  async request(
    method: 'GET' | 'POST',
    path: string,
    o: {
      apiKey: string;
      json?: unknown;
      timeoutMs: number;
      gzipOver?: number;
      signal?: AbortSignal;
      sendAgainIfStale?: boolean;
    },
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
    const send = async (): Promise<Dispatcher.ResponseData> => {
      // what each open connection had read before this request (the one it goes on, if reused, is among them):
      // taken only for a call that may be sent again
      const before = o.sendAgainIfStale
        ? new Map([...this.connections].map(([key, s]) => [key, s.bytesRead]))
        : undefined;
      try {
        return await this.dispatcher.request({
          origin: this.origin,
          path: `${this.basePath}${path}`,
          method,
          headers,
          body,
          headersTimeout: o.timeoutMs,
          bodyTimeout: o.timeoutMs,
          ...(o.signal ? { signal: o.signal } : {}),
        });
      } catch (e) {
        if (before && closedBeforeAnswer(this.endOf(e, before))) throw new StaleConnection(e);
        throw e;
      }
    };
    // only the answer's head is awaited here: a failure once it arrived (a cut body) is never sent again
    const res = o.sendAgainIfStale ? await sendAgainIfStale(send, o.signal) : await send();
    const text = await bodyWithin(res.body, o.timeoutMs, `${method} ${path}`);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* keep the text */
    }
    return { status: res.statusCode, headers: res.headers, body: parsed };
  }

  /** The connection a request failed on, as undici's SocketError names it or as its own error ended it. */
  private endOf(e: unknown, before: Map<string, number>): ConnectionEnd {
    const info = (e as { socket?: { localAddress?: string; localPort?: number; bytesRead?: number } } | null)?.socket;
    const seen: ConnectionSeen | undefined =
      info && typeof info.bytesRead === 'number'
        ? { key: localKey(info), bytesRead: info.bytesRead }
        : e && typeof e === 'object'
          ? this.ended.get(e)
          : undefined;
    return {
      code: (e as { code?: unknown } | null)?.code,
      readBefore: seen ? before.get(seen.key) : undefined,
      readAtEnd: seen?.bytesRead,
    };
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
