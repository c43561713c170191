/** @jsxImportSource hono/jsx */
/**
 * The inspector, a route module mounted on the plane app at `/`. Login exchanges a read (or approve, or
 * cancel) key for an HttpOnly SameSite=Strict session cookie; `dev` (loopback only) skips
 * login and shows the first project. The read pages themselves (inspector/pages.tsx) are
 * fed by the plane's `InspectorSource` (plane-source.ts) for the session's
 * project; `waymark ui` mounts the same pages over a local store. Static
 * scripts of our own only (local times; live updates on a `?live=1` page); the
 * CSP allows no inline script, and every page works without them.
 */
import { randomBytes } from 'node:crypto';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import type { Child } from 'hono/jsx';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { asc } from 'drizzle-orm';
import { authenticate, keyName, type Principal } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import { projects } from '../db/schema.js';
import type { PlaneEnv } from '../http/env.js';
import { httpErrorOf, refusal } from '../http/errors.js';
import { ErrorCode } from '../../shared/errors.js';
import { listWriters, writerNames } from '../reads/writers.js';
import { countPauses } from '../decisions.js';
import { LoginPage } from './login-page.js';
import { inspectorHeaders, mountAssets, mountPages } from '../../inspector/pages.js';
import { planeSource } from './plane-source.js';
import { WritersPage } from './writers-page.js';
import { createSession, endSession, SESSION_COOKIE, sessionPrincipal, sessionToken } from './session.js';
import { mountKeysPage } from './keys.js';
import { mountCancel, withCancel } from './cancel.js';
import { mountRequests, REQUESTS_BEFORE } from './requests.js';
import { refusalPage, sessionCsrfOk, sessionMay } from './run-form.js';
import { csrfOf, originOk, siteOk, tokenOk } from '../../inspector/csrf.js';
import { FRAME, type Frame, PENDING_COUNT_CAP, planeFrame } from '../../inspector/frame.js';
import { loopbackHostOnly } from '../../inspector/host.js';
import { formBodyWithin } from '../../inspector/form-body.js';
import { type BodyDeadline, DEFAULT_BODY_DEADLINE } from '../../support/body-read.js';
import { LIMITS } from '../../shared/limits.js';
import type { Prices } from '../../support/prices.js';

export interface InspectorOptions {
  /**
   * Skip login and show the first project (only honoured when the plane binds to loopback). Its pages then
   * answer only to a loopback Host naming the plane's port: a page of another site rebinding its DNS name to
   * 127.0.0.1 would otherwise read them, with no login to stop it.
   */
  dev?: boolean;
  /** How long a form's body may take (the plane's body deadline; default DEFAULT_BODY_DEADLINE). */
  bodyDeadline?: BodyDeadline;
  /** Model prices, checked and frozen by the plane's config (resolvePrices): the run list's Cost column and each run's cost (absent: none shown). */
  prices?: Readonly<Prices>;
  /** How long a key made on the Keys page keeps its secret for the page that shows it once (default NEW_KEY_SHOWN_FOR_MS). */
  newKeyShownForMs?: number;
}

/**
 * The frame of a page of a session: the nav its principal's scopes may use (Keys only for an admin session), the
 * page's own link marked, the inbox's count on the approvals link and the writers' names (their keys'), read for
 * each page as it loads.
 */
async function frameOf(db: PlaneDb, c: Context<PlaneEnv>): Promise<Frame> {
  const projectId = c.get('principal').projectId;
  return {
    ...planeFrame(c.get('principal').scopes, sessionToken(c)),
    path: c.req.path,
    pendingApprovals: await countPauses(db, projectId, PENDING_COUNT_CAP),
    writerNames: await writerNames(db, projectId),
  };
}
/** The login form's secret: a cookie the login page sets (SameSite=Strict, so a page of another site never sends it). */
const LOGIN_COOKIE = 'wm_login';

/**
 * Where a login goes on: a path of this plane, or `/`. The value is resolved as a browser resolves a
 * Location (which drops tabs and newlines and reads `\` as `/`, so `/<TAB>/evil.example` is another
 * site) and what is kept is that URL's path, query and fragment, never one that starts `//`.
 */
export const safeNext = (n: unknown): string => {
  if (typeof n !== 'string' || !n.startsWith('/')) return '/';
  const base = 'http://plane.invalid';
  let u: URL;
  try {
    u = new URL(n, base);
  } catch {
    return '/';
  }
  const path = `${u.pathname}${u.search}${u.hash}`;
  return u.origin === base && path.startsWith('/') && !path.startsWith('//') && !path.startsWith('/\\') ? path : '/';
};

export function inspectorRoutes(db: PlaneDb, o: InspectorOptions = {}): Hono<PlaneEnv> {
  const app = new Hono<PlaneEnv>();
  const headers = inspectorHeaders();
  const hostOnly = loopbackHostOnly('this plane in --dev (no login)');
  // --dev has no login: every path is answered only to a loopback Host on this port (DNS rebinding), a page added later too
  if (o.dev) app.use('*', hostOnly);
  for (const path of [
    '/',
    '/login',
    '/logout',
    '/runs/*',
    '/approvals',
    '/quarantine',
    '/writers',
    '/keys',
    '/keys/*',
    '/ui/*',
  ])
    app.use(path, headers);
  // every form's body (sign-in needs no key) within a control body's size and the body deadline
  const forms = formBodyWithin(LIMITS.controlBodyBytes, o.bodyDeadline ?? DEFAULT_BODY_DEADLINE);
  for (const path of ['/login', '/logout', '/runs/*', '/approvals', '/keys', '/keys/*']) app.use(path, forms);
  mountAssets(app);

  const viewer: MiddlewareHandler<PlaneEnv> = async (c, next) => {
    let p: Principal | null = null;
    if (o.dev) {
      const [first] = await db.select({ id: projects.id }).from(projects).orderBy(asc(projects.createdAt)).limit(1);
      if (first) p = { projectId: first.id, keyId: 'dev', scopes: ['read'] };
    } else {
      p = await sessionPrincipal(db, getCookie(c, SESSION_COOKIE));
    }
    if (!p) return c.redirect(`/login?next=${encodeURIComponent(c.req.path + (new URL(c.req.url).search || ''))}`, 303);
    c.set('principal', p);
    await next();
  };

  /**
   * A page of another site must not post login or logout (login CSRF: the victim signed in under the
   * attacker's key; a forced logout). A browser's post carries Origin: a foreign one is refused; `null`
   * (what the inspector's own pages send under no-referrer, and what any page can send too) must come with
   * the form's token, of the login page's cookie (set on GET /login, SameSite=Strict) or of the session.
   * Sec-Fetch-Site, which no page can set, refuses another site outright. A client that sends neither
   * header (curl, a script) is not a browser tricked by a page, and signs in with its key alone. A refusal
   * is the forms' refusal page (run-form.tsx) naming CSRF_FAILED, with its status (403), and a link `back`.
   */
  const ownForm =
    (
      secret: (c: Context<PlaneEnv>) => string | undefined,
      back: { href: string; text: string },
    ): MiddlewareHandler<PlaneEnv> =>
    async (c, next) => {
      const site = c.req.header('sec-fetch-site');
      const origin = c.req.header('origin');
      // Origin null is the one a page of another site can also send; this plane's own origin no other page can
      const form = origin === 'null' ? await c.req.parseBody() : null;
      if (!siteOk(site) || !originOk(origin, c.req.url) || (form && !tokenOk(form.csrf, secret(c) ?? ''))) {
        const r = refusal(
          ErrorCode.CSRF_FAILED,
          'this form was posted from a page of another site (or the page was too old: load it again)',
        );
        return refusalPage(c, r, [back], { nav: false });
      }
      await next();
    };

  /** The login form's token: of the login cookie the browser has, else of a new one set now. */
  const loginToken = (c: Context<PlaneEnv>) => {
    let secret = getCookie(c, LOGIN_COOKIE);
    if (!secret) {
      secret = randomBytes(32).toString('base64url');
      setCookie(c, LOGIN_COOKIE, secret, {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/login',
        maxAge: 3600,
        secure: new URL(c.req.url).protocol === 'https:',
      });
    }
    return csrfOf(secret);
  };
  app.get('/login', (c) => c.html(<LoginPage next={safeNext(c.req.query('next'))} csrf={loginToken(c)} />));
  app.post(
    '/login',
    ownForm((c) => getCookie(c, LOGIN_COOKIE), { href: '/login', text: 'Log in' }),
    async (c) => {
      const form = await c.req.parseBody();
      const next = safeNext(form.next);
      const p = await authenticate(db, typeof form.key === 'string' ? form.key.trim() : undefined);
      if (!p)
        return c.html(
          <LoginPage next={next} csrf={loginToken(c)} error="That key is unknown or revoked (or mistyped)." />,
          401,
        );
      // approve, cancel and operate act on what the pages show: a key with any of them opens them too
      if (
        !(
          p.scopes.includes('read') ||
          p.scopes.includes('admin') ||
          p.scopes.includes('approve') ||
          p.scopes.includes('cancel') ||
          p.scopes.includes('operate')
        )
      ) {
        return c.html(
          <LoginPage
            next={next}
            csrf={loginToken(c)}
            error="That key is valid but cannot open the inspector: it needs the read or the approve scope (or the cancel or the operate scope)."
          />,
          401,
        );
      }
      const s = await createSession(db, p);
      setCookie(c, SESSION_COOKIE, s.token, {
        httpOnly: true,
        sameSite: 'Strict',
        path: '/',
        maxAge: s.maxAgeSec,
        secure: new URL(c.req.url).protocol === 'https:',
      });
      return c.redirect(next, 303);
    },
  );
  app.post(
    '/logout',
    ownForm((c) => getCookie(c, SESSION_COOKIE), { href: '/', text: 'Runs' }),
    async (c) => {
      await endSession(db, getCookie(c, SESSION_COOKIE));
      deleteCookie(c, SESSION_COOKIE, { path: '/' });
      return c.redirect('/login', 303);
    },
  );

  /** Every page in the session's frame. */
  const Framed = async ({ c, children }: { c: Context<PlaneEnv>; children?: Child }) => (
    <FRAME.Provider value={await frameOf(db, c)}>{children}</FRAME.Provider>
  );
  const framed = (page: Parameters<typeof withCancel>[1], c: Context<PlaneEnv>) => <Framed c={c}>{page}</Framed>;
  mountPages(app, {
    viewer,
    source: (c) => planeSource(db, c.get('principal').projectId),
    // a run's page gets the Cancel form (a cancel-scoped session) or, cancelled, why and by whom (cancel.tsx)
    wrap: (page, c) => framed(withCancel(db, page, c), c),
    missingRun: (id) => `No run '${id}' in this project (it may not have synced yet, or it was deleted).`,
    copyName: "this plane's copy",
    // the requests' page (requests.tsx) is kept when another part of the run's page is paged
    runPageParams: [REQUESTS_BEFORE],
    // the rest of a run's page failed after its summary was sent: logged as the app's own errors are
    onStreamError: (e, c) => httpErrorOf(e).report(c.get('log')),
    prices: o.prices ?? null,
    approvals: {
      // a session made from a key with the approve scope (or admin, which the API lets decide too) decides, under the key's name
      async decider(c) {
        const may = sessionMay(
          c,
          'approve',
          "This session's key has no approve scope: it sees pauses and decisions but cannot approve or decline (log in with a key that has the approve or the admin scope).",
        );
        return 'refused' in may ? may : { by: await keyName(db, c.get('principal').keyId) };
      },
      csrf: (c) => csrfOf(getCookie(c, SESSION_COOKIE) ?? ''),
      csrfOk: sessionCsrfOk,
    },
  });

  app.get('/writers', viewer, async (c) =>
    c.html(framed(<WritersPage items={await listWriters(db, c.get('principal').projectId)} />, c)),
  );
  mountKeysPage(app, db, viewer, framed, { newKeyShownForMs: o.newKeyShownForMs });
  mountCancel(app, db, viewer, framed);
  mountRequests(app, db, viewer, framed);
  return app;
}
