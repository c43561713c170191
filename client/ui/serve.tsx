/** @jsxImportSource hono/jsx */
/**
 * `waymark ui`: the inspector's pages (inspector/pages.tsx, the plane's too)
 * served over a local store, read live through `localSource` (no copy, no
 * plane). No login: it binds to loopback unless `allowRemote` says otherwise,
 * and on loopback it answers only requests whose Host names loopback, so a web
 * page of another site that rebinds its DNS name to 127.0.0.1 cannot read the
 * store through a visitor's browser (and the port Host names must be the one
 * it listens on: inspector/host.ts). It reads (GET and HEAD), with the
 * plane's CSP and secure headers, and takes two POSTs: the approve/decline
 * form of a paused run and the inbox's (one decision per pause ticked;
 * inspector/approvals.tsx), which record decisions in the store under `user` (source `local`; the application's worker applies
 * it). That form carries a CSRF token made from a secret of this process
 * (random at start, only in the pages it serves), and a post from another
 * Origin, or one a browser says another origin sent (Sec-Fetch-Site), is
 * refused, on top of the Host check.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { osUser } from '../runtime/decide.js';
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import { type Prices, resolvePrices } from '../../support/prices.js';
import { refuse } from '../../support/validate.js';
import type { Checkpointer } from '../checkpointer.js';
import { FRAME, type Frame, localFrame, PENDING_COUNT_CAP } from '../../inspector/frame.js';
import { NotFoundPage } from '../../inspector/not-found-page.js';
import { csrfOf, csrfOk } from '../../inspector/csrf.js';
import { inspectorHeaders, mountAssets, mountPages } from '../../inspector/pages.js';
import { localSource } from './local-source.js';
import { isLoopback } from './loopback.js';
import { loopbackHostOnly } from '../../inspector/host.js';
import { formBodyWithin } from '../../inspector/form-body.js';
import { DEFAULT_BODY_DEADLINE } from '../../support/body-read.js';
import { capped } from '../../support/count.js';
import { LIMITS } from '../../shared/limits.js';

export { isLoopback };

export interface LocalUiOptions {
  /** Interface to bind (default 127.0.0.1). A non-loopback one needs `allowRemote`. */
  host?: string;
  /** Port (default 0: a free one). */
  port?: number;
  /** Allow a non-loopback host: anyone who reaches it reads the store and can answer its pauses, with no login. */
  allowRemote?: boolean;
  /** Said in the page header: which store this is (default: its writer id). */
  label?: string;
  /** The name decisions made in this UI are recorded under (default: the OS user's name). */
  user?: string;
  /**
   * Model prices per million tokens (support/prices.ts): the run list gets a Cost column and a run's page its cost.
   * Checked when served: every problem named (INVALID_OPTIONS). Absent: no cost is shown.
   */
  prices?: Prices;
}

export interface LocalUi {
  url: string;
  port: number;
  /** Stop serving (the store stays open: its opener closes it). */
  close(): Promise<void>;
}

/** The inspector app over `store` (what `serveLocalUi` serves; a test may call its `fetch`). */
export function localUiApp(
  store: Checkpointer,
  // prices: resolved (checked and frozen) by serveLocalUi
  o: { label?: string; checkHost?: boolean; user?: string; prices?: Readonly<Prices> } = {},
): Hono {
  const app = new Hono();
  const user = o.user ?? osUser();
  const frame = localFrame(o.label ?? store.writerId, user);
  // the forms' CSRF secret: this process's, never written anywhere
  const secret = randomBytes(32).toString('base64url');
  app.use('*', inspectorHeaders());
  if (o.checkHost) app.use('*', loopbackHostOnly('this inspector'));
  app.use('*', async (c, next) => {
    const decide =
      c.req.method === 'POST' && (/^\/runs\/[^/]+\/decision$/.test(c.req.path) || c.req.path === '/approvals');
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && !decide) {
      return c.text(
        'this inspector only reads (and takes the approve/decline forms of paused runs): GET only here',
        405,
        { allow: 'GET, HEAD' },
      );
    }
    await next();
  });
  // the decision forms' bodies within a control body's size and the default body deadline
  for (const path of ['/runs/*', '/approvals'])
    app.use(path, formBodyWithin(LIMITS.controlBodyBytes, DEFAULT_BODY_DEADLINE));
  mountAssets(app);
  const source = localSource(store);
  // this store's own writer is "this store"; a row another machine wrote (a restored run) shows its short id
  const writerNames = new Map([[store.writerId, 'this store']]);
  /** The frame of a page as it loads: its own nav link marked, the inbox's count (the store's open pauses). */
  const frameOf = async (path: string): Promise<Frame> => {
    const open = await store.listPendingInterrupts({ limit: PENDING_COUNT_CAP + 1 });
    return {
      ...frame,
      path,
      pendingApprovals: capped(open.length, PENDING_COUNT_CAP),
      writerNames,
    };
  };
  const Framed = async ({ path, children }: { path: string; children?: Child }) => (
    <FRAME.Provider value={await frameOf(path)}>{children}</FRAME.Provider>
  );
  mountPages(app, {
    viewer: async (_c, next) => next(),
    source: () => source,
    wrap: (page, c) => <Framed path={c.req.path}>{page}</Framed>,
    missingRun: (id) => `No run '${id}' in this store.`,
    copyName: 'this store',
    sync: true,
    prices: o.prices ?? null,
    approvals: {
      decider: async () => ({ by: user }),
      csrf: () => csrfOf(secret),
      csrfOk: (c, token) =>
        csrfOk({ site: c.req.header('sec-fetch-site'), origin: c.req.header('origin'), url: c.req.url, token, secret }),
    },
  });
  app.notFound((c) =>
    c.html(
      <FRAME.Provider value={frame}>
        <NotFoundPage what={`Nothing at ${c.req.path}.`} />
      </FRAME.Provider>,
      404,
    ),
  );
  return app;
}

/** Serve the inspector over `store` until `close()`. */
export async function serveLocalUi(store: Checkpointer, o: LocalUiOptions = {}): Promise<LocalUi> {
  const host = o.host ?? '127.0.0.1';
  const loopback = isLoopback(host);
  if (!loopback && !o.allowRemote)
    refuse(
      'serveLocalUi',
      [
        `host '${host}' is not a loopback address (the local inspector has no login: it binds elsewhere only with allowRemote)`,
      ],
      'nothing was served',
    );
  const prices = o.prices !== undefined ? resolvePrices(o.prices) : null;
  if (prices && 'problems' in prices) refuse('serveLocalUi', prices.problems, 'nothing was served');
  const app = localUiApp(store, {
    label: o.label,
    checkHost: loopback,
    user: o.user,
    prices: prices && 'prices' in prices ? prices.prices : undefined,
  });
  const server = await new Promise<ServerType>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: o.port ?? 0, hostname: host }, () => resolve(s));
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
