/**
 * A fault-injecting HTTP proxy on 127.0.0.1 in front of a real plane. Each
 * request takes the next fault from the queue (or from `rule`), else passes.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';

export type Fault =
  | 'pass'
  | 'reset'
  | 'hang'
  | 'drop-after-commit'
  | 'truncate'
  | 'trickle'
  | { status: number; retryAfter?: string; code?: string; message?: string; html?: string };

/** What `rule` may also answer: forward the request, but hold the plane's answer until `holdAnswer` settles (an answer served a while before it arrives). */
export interface HeldAnswer {
  holdAnswer: Promise<unknown>;
}

/** What `rule` may also answer: forward the request only once `holdRequest` settles (a request sent, not yet arrived). */
export interface HeldRequest {
  holdRequest: Promise<unknown>;
}

export interface SeenRequest {
  path: string;
  fault: Fault | HeldAnswer | HeldRequest;
  rows: number;
  ids: string[];
  at: number;
}

export class FaultProxy {
  url = '';
  queue: Fault[] = [];
  rule: ((req: { path: string; ids: string[] }) => Fault | HeldAnswer | HeldRequest | undefined) | null = null;
  seen: SeenRequest[] = [];
  private server: Server | null = null;
  readonly sockets = new Set<Socket>();
  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let ids: string[] = [];
    try {
      const text = req.headers['content-encoding'] === 'gzip' ? gunzipSync(body).toString() : body.toString();
      ids = ((JSON.parse(text) as { rows?: { id?: string }[] }).rows ?? []).map((r) => String(r?.id));
    } catch {
      /* not an ingest body */
    }
    const fault = this.rule?.({ path: req.url ?? '', ids }) ?? this.queue.shift() ?? 'pass';
    this.seen.push({ path: req.url ?? '', fault, rows: ids.length, ids, at: Date.now() });
    if (fault === 'reset') {
      req.socket.destroy();
      return;
    }
    if (fault === 'hang') return;
    if (typeof fault === 'object' && 'holdRequest' in fault) await fault.holdRequest;
    if (typeof fault === 'object' && 'status' in fault && fault.html !== undefined) {
      // what a proxy in front of the plane answers itself (nginx, a load balancer): HTML, not the plane's JSON
      res.writeHead(fault.status, { 'content-type': 'text/html' });
      res.end(fault.html);
      return;
    }
    if (typeof fault === 'object' && 'status' in fault) {
      res.writeHead(fault.status, {
        'content-type': 'application/json',
        ...(fault.retryAfter ? { 'retry-after': fault.retryAfter } : {}),
      });
      res.end(
        JSON.stringify({
          error: { code: fault.code ?? 'INJECTED', message: fault.message ?? `injected ${fault.status}` },
        }),
      );
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (typeof v === 'string' && k !== 'host' && k !== 'connection' && k !== 'content-length') headers[k] = v;
    let upstream: Response;
    let payload: Buffer;
    try {
      upstream = await fetch(`${this.target}${req.url}`, {
        method: req.method,
        headers,
        body: body.length ? body : undefined,
      });
      payload = Buffer.from(await upstream.arrayBuffer());
    } catch {
      // the plane went away under a forwarded request (a held long poll when a test closes its plane): as a proxy does, drop the client's connection
      req.socket.destroy();
      return;
    }
    if (fault === 'drop-after-commit') {
      req.socket.destroy();
      return;
    }
    if (typeof fault === 'object' && 'holdAnswer' in fault) await fault.holdAnswer;
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
      'content-length': String(payload.length),
    });
    if (fault === 'truncate') {
      res.write(payload.subarray(0, Math.floor(payload.length / 2)));
      setTimeout(() => req.socket.destroy(), 10);
      return;
    }
    if (fault === 'trickle') {
      for (let i = 0; i < payload.length; i += 64) {
        res.write(payload.subarray(i, i + 64));
        await new Promise((r) => setTimeout(r, 5));
      }
      res.end();
      return;
    }
    res.end(payload);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
