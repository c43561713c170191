/** @jsxImportSource hono/jsx */
/**
 * The inspector, a route module mounted on the plane app at `/`. Login exchanges a read key
 * for an HttpOnly SameSite=Strict session cookie; `dev` (loopback only) skips
 * login and shows the first project. One static script (local times, /ui/local-time.js);
 * the CSP allows no inline script, and every page works without it.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { secureHeaders } from 'hono/secure-headers';
import { asc } from 'drizzle-orm';
import { authenticate, type Principal } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import { projects } from '../db/schema.js';
import type { PlaneEnv } from '../http/env.js';
import {
  CursorError,
  describeHoles,
  forkLinks,
  getExecution,
  listClaimConflicts,
  listExecutions,
  listHoles,
  listIdempotency,
  listQuarantine,
  listRows,
  listTakeovers,
  listWriters,
  pauseState,
  runUsage,
  stateAt,
  usageByRun,
} from '../read.js';
import { ErrorCode, hasCode } from '../../shared/errors.js';
import { diffStates } from './diff.js';
import { LoginPage } from './login-page.js';
import { NotFoundPage } from './not-found-page.js';
import { QuarantinePage } from './quarantine-page.js';
import { RunPage } from './run-page.js';
import { RunsPage, SINCE_WINDOWS, type RunsFilters } from './runs-page.js';
import { WritersPage } from './writers-page.js';
import { LOCAL_TIME_JS } from './local-time.js';
import { createSession, endSession, SESSION_COOKIE, sessionPrincipal } from './session.js';
import { STYLE } from './style.js';
import { mountKeysPage } from './keys.js';

export interface InspectorOptions {
  /** Skip login and show the first project (only honoured when the plane binds to loopback). */
  dev?: boolean;
}

const safeNext = (n: unknown) => (typeof n === 'string' && n.startsWith('/') && !n.startsWith('//') && !n.startsWith('/\\') ? n : '/');

export function inspectorRoutes(db: PlaneDb, o: InspectorOptions = {}): Hono<PlaneEnv> {
  const app = new Hono<PlaneEnv>();
  const headers = secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      styleSrc: ["'self'"],
      // one static script of our own (local times); no inline scripts
      scriptSrc: ["'self'"],
      imgSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    referrerPolicy: 'no-referrer',
  });
  for (const path of ['/', '/login', '/logout', '/runs/*', '/quarantine', '/writers', '/keys', '/keys/*', '/ui/*']) app.use(path, headers);

  app.get('/ui/local-time.js', (c) => {
    c.header('content-type', 'text/javascript; charset=utf-8');
    c.header('cache-control', 'public, max-age=300');
    return c.body(LOCAL_TIME_JS);
  });
  app.get('/ui/style.css', (c) => {
    c.header('content-type', 'text/css; charset=utf-8');
    c.header('cache-control', 'public, max-age=300');
    return c.body(STYLE);
  });

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

  app.get('/login', (c) => c.html(<LoginPage next={safeNext(c.req.query('next'))} />));
  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const next = safeNext(form.next);
    const p = await authenticate(db, typeof form.key === 'string' ? form.key.trim() : undefined);
    if (!p || !(p.scopes.includes('read') || p.scopes.includes('admin'))) {
      return c.html(<LoginPage next={next} error="That key is not valid for reading (it needs the read scope)." />, 401);
    }
    const s = await createSession(db, p);
    setCookie(c, SESSION_COOKIE, s.token, { httpOnly: true, sameSite: 'Strict', path: '/', maxAge: s.maxAgeSec, secure: new URL(c.req.url).protocol === 'https:' });
    return c.redirect(next, 303);
  });
  app.post('/logout', async (c) => {
    await endSession(db, getCookie(c, SESSION_COOKIE));
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });

  const handleCursor = async (c: Context, fn: () => Promise<Response>) => {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof CursorError) return c.text('bad cursor', 400);
      throw e;
    }
  };

  app.get('/', viewer, (c) =>
    handleCursor(c, async () => {
      const q = c.req.query();
      const filters: RunsFilters = {
        status: ['running', 'paused', 'completed', 'failed', 'cancelled'].includes(q.status ?? '') ? q.status : undefined,
        writer: q.writer || undefined,
        q: q.q || undefined,
        since: q.since && q.since in SINCE_WINDOWS ? q.since : undefined,
      };
      const live = q.live === '1';
      const updatedSince = filters.since ? new Date(Date.now() - SINCE_WINDOWS[filters.since]).toISOString() : undefined;
      const page = await listExecutions(db, c.get('principal').projectId, { status: filters.status, writer: filters.writer, q: filters.q, updatedSince, cursor: q.cursor || undefined, limit: 50 });
      const query = (cursor: string | null, on = live) => {
        const u = new URLSearchParams(Object.entries({ ...filters, ...(cursor ? { cursor } : {}), ...(on ? { live: '1' } : {}) }).filter(([, v]) => v) as [string, string][]);
        return `/?${u}`;
      };
      const usage = await usageByRun(
        db,
        c.get('principal').projectId,
        page.items.map((i) => i.executionId),
      );
      return c.html(
        <RunsPage items={page.items.map((i) => ({ ...i, usage: usage.get(i.executionId) ?? null }))} next={page.nextCursor} first={!q.cursor} live={live} filters={filters} query={query} />,
      );
    }),
  );

  app.get('/runs/:id', viewer, (c) =>
    handleCursor(c, async () => {
      const projectId = c.get('principal').projectId;
      const id = c.req.param('id');
      const execution = await getExecution(db, projectId, id);
      if (!execution) return c.html(<NotFoundPage what={`No run '${id}' in this project (it may not have synced yet, or it was deleted).`} />, 404);
      const cursor = c.req.query('cursor') || undefined;
      const rows = await listRows(db, projectId, id, { cursor, limit: 200 });
      const last = execution.lastSeq;
      const num = (v: string | undefined, d: number) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : d);
      const b = num(c.req.query('b'), last);
      const a = num(c.req.query('a'), Math.max(0, b - 1));
      let result = null;
      let error: string | undefined;
      const holes = await listHoles(db, projectId, id);
      // a stored run is always shown: a row whose chain does not decode here (a hole before it) is named, never a 500
      const decoded = async (seq: number) => {
        try {
          return await stateAt(db, projectId, id, seq);
        } catch (e) {
          if (!hasCode(e, ErrorCode.CORRUPT_ROW)) throw e;
          error ??= `seq ${seq} cannot be decoded from this plane's copy${holes.length ? ` (incomplete: ${describeHoles(holes)})` : ''}: ${(e as Error).message}`;
          return undefined;
        }
      };
      const sa = await decoded(a);
      const sb = await decoded(b);
      if (sa && sb) result = diffStates(sa, sb);
      else if (sa === null || sb === null) error = `seq ${sa === null ? a : b} is not a row of this run`;
      const pageQuery = (cur: string | null) => `/runs/${encodeURIComponent(id)}${cur ? `?cursor=${encodeURIComponent(cur)}` : ''}`;
      const quarantined = (await listQuarantine(db, projectId, { executionId: id, limit: 100 })).items;
      return c.html(
        <RunPage
          execution={execution}
          holes={holes}
          rows={rows.items}
          next={rows.nextCursor}
          pageQuery={pageQuery}
          pause={await pauseState(db, projectId, id)}
          idempotency={await listIdempotency(db, projectId, id)}
          usage={await runUsage(db, projectId, id)}
          conflicts={await listClaimConflicts(db, projectId, id)}
          takeovers={await listTakeovers(db, projectId, id)}
          quarantined={quarantined}
          diff={{ a, b, result, error }}
          state={sb ?? null}
          live={c.req.query('live') === '1'}
          paged={cursor !== undefined}
          {...(await forkLinks(db, projectId, id))}
        />,
      );
    }),
  );

  app.get('/quarantine', viewer, (c) =>
    handleCursor(c, async () => {
      const page = await listQuarantine(db, c.get('principal').projectId, { cursor: c.req.query('cursor') || undefined, limit: 50 });
      return c.html(<QuarantinePage items={page.items} next={page.nextCursor} />);
    }),
  );

  app.get('/writers', viewer, async (c) => c.html(<WritersPage items={await listWriters(db, c.get('principal').projectId)} />));
  mountKeysPage(app, db, viewer);
  return app;
}
