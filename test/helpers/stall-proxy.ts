/**
 * A proxy on 127.0.0.1 in front of a real plane that forwards each request
 * (so the plane commits it) and then misbehaves with the answer, as an
 * unlucky network or a hostile middlebox does: holds it, sends half of it and
 * goes quiet, trickles it a byte at a time, or cuts the connection halfway.
 * Unlike fault-proxy.ts it keeps a stalled connection open for as long as the
 * client does, so a client without a deadline of its own waits forever.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the proxy does with the plane's answer:
 * - `pass`: forwards it;
 * - `hold`: sends nothing until the client hangs up;
 * - `stall-mid-body`: the headers and the first half of the body, then nothing;
 * - `trickle`: the headers, then one byte every `trickleMs` (a 2 KB answer takes minutes);
 * - `cut-mid-body`: the headers and the first half of the body, then the connection is closed.
 */
export type StallMode = 'pass' | 'hold' | 'stall-mid-body' | 'trickle' | 'cut-mid-body';

export interface StalledRequest {
  method: string;
  path: string;
  mode: StallMode;
  /** The plane's status for the forwarded request (it committed whatever it answered 200 to). */
  planeStatus: number;
}

export class StallProxy {
  url = '';
  /** Picks each request's mode; `pass` when null or when it returns undefined. */
  rule: ((req: { method: string; path: string }) => StallMode | undefined) | null = null;
  readonly seen: StalledRequest[] = [];
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  constructor(
    private readonly target: string,
    private readonly trickleMs = 200,
  ) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => req.socket.destroy()));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests whose path starts with `prefix`, in arrival order. */
  to(prefix: string): StalledRequest[] {
    return this.seen.filter((s) => s.path.startsWith(prefix));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const method = req.method ?? 'GET';
    const path = req.url ?? '/';
    const mode = this.rule?.({ method, path }) ?? 'pass';
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
    const upstream = await fetch(`${this.target}${path}`, { method, headers, body: body.length ? body : undefined });
    const payload = Buffer.from(await upstream.arrayBuffer());
    this.seen.push({ method, path, mode, planeStatus: upstream.status });
    if (mode === 'hold') return; // the client's socket stays open, unanswered, until it gives up
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      'content-length': String(payload.length),
    });
    const half = payload.subarray(0, Math.floor(payload.length / 2));
    if (mode === 'pass') res.end(payload);
    else if (mode === 'stall-mid-body') res.write(half);
    else if (mode === 'cut-mid-body') res.write(half, () => req.socket.destroy());
    else {
      let i = 0;
      const t = setInterval(() => {
        if (req.socket.destroyed || i >= payload.length) {
          clearInterval(t);
          this.timers.delete(t);
          if (i >= payload.length) res.end();
          return;
        }
        res.write(payload.subarray(i, ++i));
      }, this.trickleMs);
      this.timers.add(t);
    }
  }

  /** Connections the proxy still holds open to clients. */
  get openSockets(): number {
    return this.sockets.size;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
