/**
 * The Host check of an inspector without a login (`waymark ui` on loopback,
 * the plane's `--dev`): such a server is safe only because nothing but this
 * machine reaches it, which a web page defeats by DNS rebinding (its own name
 * re-pointed at 127.0.0.1, so the visitor's browser reads the pages as that
 * site's). The browser still sends the page's name in Host, so a request
 * answers only when Host names loopback, and the port it names is the one the
 * request came in on (when the server knows it).
 */
import type { MiddlewareHandler } from 'hono';

/** Whether a host name or address is loopback (127.0.0.0/8, ::1, `localhost`): what `waymark ui` binds to without `--allow-remote`. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** A Host header's name and port (null: none given), brackets kept on an IPv6 address. */
export function splitHost(header: string): { name: string; port: string | null } {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(header);
  return m ? { name: m[1], port: m[2] ?? null } : { name: header, port: null };
}

/** The local port the request arrived on, where the server is @hono/node-server (null elsewhere: a test's `app.fetch`). */
const arrivedOn = (env: unknown): number | null => {
  const port = (env as { incoming?: { socket?: { localPort?: number } } } | undefined)?.incoming?.socket?.localPort;
  return typeof port === 'number' ? port : null;
};

/**
 * Refuses (403, text) a request whose Host header is not a loopback name, or
 * names another port than the one it arrived on (no port: 80). The Host header
 * itself decides: the request URL may come from an absolute-form target.
 */
export const loopbackHostOnly =
  (what: string): MiddlewareHandler =>
  async (c, next) => {
    const header = c.req.header('host') ?? '';
    const { name, port } = splitHost(header);
    const local = arrivedOn(c.env);
    if (!isLoopback(name) || (local !== null && Number(port ?? 80) !== local)) {
      return c.text(
        `FORBIDDEN: ${what} answers only to a loopback host name with its own port (127.0.0.1:${local ?? 'PORT'}, localhost), not '${header || '(no Host header)'}'`,
        403,
      );
    }
    await next();
  };
