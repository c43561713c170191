/**
 * A TCP proxy in front of Postgres that cuts one connection at a chosen
 * statement: `before` the statement reaches the server (it never runs), or
 * `after` the server finished it (an autocommitted statement, or a COMMIT,
 * has committed) and before its answer reaches the client, which sees only
 * the lost connection. Every other byte passes. For the store's lost-commit
 * paths, on the real engine.
 */
import net, { type AddressInfo } from 'node:net';

export interface Cut {
  /** The statement text to cut at (a simple query's, or the prepared statement a Bind runs). */
  match: RegExp;
  when: 'before' | 'after';
  /** Let this many matching statements pass first (default 0). */
  skip?: number;
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

export class PgCutProxy {
  url = '';
  /** How many connections were cut. */
  cuts = 0;
  private armed: Cut | null = null;
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  /** `target`: the database URL the proxy stands in front of (its url is the same with the proxy's port). */
  constructor(private readonly target: string) {}

  async start(): Promise<this> {
    const t = new URL(this.target);
    this.server = net.createServer((client) => this.pipe(client, t.hostname, Number(t.port || 5432)));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    const u = new URL(this.target);
    u.hostname = '127.0.0.1';
    u.port = String((this.server.address() as AddressInfo).port);
    this.url = u.toString();
    return this;
  }

  /** Cut the next statement that matches, once. */
  arm(cut: Cut): void {
    this.armed = cut;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  private pipe(client: net.Socket, host: string, port: number): void {
    const upstream = net.connect(port, host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {});
    }
    const cut = () => {
      this.cuts++;
      client.destroy();
      upstream.destroy();
    };
    let fromClient = Buffer.alloc(0);
    let fromServer = Buffer.alloc(0);
    let startup = true; // the client's first messages have no type byte
    let sslAnswer = 0; // single-byte answers the server owes to SSL/GSS requests
    let watching = false; // after a matched statement was passed: hold its answer from CommandComplete, cut at ReadyForQuery
    let holding = false;
    const statements = new Map<string, string>(); // the connection's prepared statements, by name

    client.on('data', (chunk: Buffer) => {
      fromClient = Buffer.concat([fromClient, chunk]);
      for (;;) {
        if (startup) {
          if (fromClient.length < 8) return;
          const len = fromClient.readInt32BE(0);
          if (fromClient.length < len) return;
          const code = fromClient.readInt32BE(4);
          if (code === SSL_REQUEST || code === GSS_REQUEST) sslAnswer++;
          else startup = false;
          upstream.write(fromClient.subarray(0, len));
          fromClient = fromClient.subarray(len);
          continue;
        }
        if (fromClient.length < 5) return;
        const len = fromClient.readInt32BE(1) + 1;
        if (fromClient.length < len) return;
        const message = fromClient.subarray(0, len);
        fromClient = fromClient.subarray(len);
        const text = statementOf(message, statements);
        if (this.armed && text !== null && this.armed.match.test(text)) {
          const { when, skip = 0 } = this.armed;
          if (skip > 0) this.armed = { ...this.armed, skip: skip - 1 };
          else {
            this.armed = null;
            if (when === 'before') return cut();
            watching = true;
          }
        }
        upstream.write(message);
      }
    });

    upstream.on('data', (chunk: Buffer) => {
      fromServer = Buffer.concat([fromServer, chunk]);
      for (;;) {
        if (sslAnswer > 0) {
          if (fromServer.length < 1) return;
          sslAnswer--;
          client.write(fromServer.subarray(0, 1));
          fromServer = fromServer.subarray(1);
          continue;
        }
        if (fromServer.length < 5) return;
        const len = fromServer.readInt32BE(1) + 1;
        if (fromServer.length < len) return;
        const message = fromServer.subarray(0, len);
        fromServer = fromServer.subarray(len);
        const type = String.fromCharCode(message[0]);
        if (watching && type === 'C') holding = true;
        if (holding && type === 'Z') return cut();
        if (!holding) client.write(message);
      }
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}

/**
 * The statement a message runs: a simple Query's ('Q') text, or a Bind's
 * ('B') prepared statement's text (postgres.js prepares a statement once per
 * connection, so a Parse is seen only the first time). A Parse records its
 * statement in `statements`; any other message runs nothing.
 */
function statementOf(message: Buffer, statements: Map<string, string>): string | null {
  const type = String.fromCharCode(message[0]);
  const body = message.subarray(5);
  const cString = (from: number) => body.subarray(from, body.indexOf(0, from)).toString();
  if (type === 'Q') return cString(0);
  if (type === 'P') {
    const name = cString(0);
    statements.set(name, cString(name.length + 1));
  }
  if (type === 'B') {
    const portal = cString(0);
    return statements.get(cString(portal.length + 1)) ?? null;
  }
  return null;
}
