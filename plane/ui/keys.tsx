/** @jsxImportSource hono/jsx */
/**
 * The inspector's Keys page, for a session made from an admin key: the
 * project's keys (an operator's: every project's), a form to create one (the
 * secret is shown in that answer only, never stored or shown again) and a
 * revoke button per active key. The forms carry a CSRF token derived from the
 * session cookie (which a page of another origin cannot read), and a foreign
 * Origin is refused, on top of the SameSite=Strict cookie.
 */
import { FRAME, planeFrame } from '../../inspector/frame.js';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { FC } from 'hono/jsx';
import { WaymarkError } from '../../shared/errors.js';
import { admin } from '../admin.js';
import { SCOPES, type Principal, type Scope } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import type { PlaneEnv } from '../http/env.js';
import { csrfOf, csrfOk as formCsrfOk } from '../../inspector/csrf.js';
import { Layout, Table } from '../../inspector/layout.js';
import { SESSION_COOKIE, sessionToken } from './session.js';

type KeyRow = Awaited<ReturnType<typeof admin.keys>>[number];

export const KeysPage: FC<{
  keys: KeyRow[];
  csrf: string;
  operator: boolean;
  projects: string[];
  created?: { id: string; key: string; project: string };
  error?: string;
}> = (p) => (
  <Layout title="Keys">
    <h1>Keys</h1>
    <p class="muted">
      API keys of {p.operator ? 'every project (this session has the operator scope)' : 'this project'}. A revoked key
      is refused by every plane process from its next request on.
    </p>
    {p.error && (
      <p class="error" role="alert">
        {p.error}
      </p>
    )}
    {p.created && (
      <section class="card" data-testid="new-key">
        <h2>New key {p.created.id}</h2>
        <p>Shown this once; copy it now. The plane keeps only its hash.</p>
        <pre class="mono" data-testid="secret">
          {p.created.key}
        </pre>
      </section>
    )}
    <section class="card">
      <h2>Create a key</h2>
      <form method="post" action="/keys" class="filters">
        <input type="hidden" name="csrf" value={p.csrf} />
        {p.operator && (
          <label>
            Project
            <select name="project">
              {p.projects.map((n) => (
                <option value={n}>{n}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Name
          <input type="text" name="name" maxlength={200} required />
        </label>
        {SCOPES.filter((s) => s !== 'operator' || p.operator).map((s) => (
          <label>
            <input type="checkbox" name="scopes" value={s} /> {s}
          </label>
        ))}
        <button type="submit">Create</button>
      </form>
    </section>
    <Table columns={['Id', 'Name', p.operator && 'Project', 'Scopes', 'Created', 'State']}>
      {p.keys.map((k) => (
        <tr data-key={k.id}>
          <td class="mono">{k.id}</td>
          <td>{k.name}</td>
          {p.operator && <td>{k.project}</td>}
          <td>{k.scopes.join(', ')}</td>
          <td title={k.createdAt}>{k.createdAt.slice(0, 19).replace('T', ' ')}</td>
          <td>
            {k.revokedAt ? (
              <span class="badge s-failed">revoked</span>
            ) : (
              <form method="post" action={`/keys/${encodeURIComponent(k.id)}/revoke`}>
                <input type="hidden" name="csrf" value={p.csrf} />
                <button type="submit" aria-label={`Revoke ${k.id}`}>
                  Revoke
                </button>
              </form>
            )}
          </td>
        </tr>
      ))}
    </Table>
  </Layout>
);

export function mountKeysPage(app: Hono<PlaneEnv>, db: PlaneDb, viewer: MiddlewareHandler<PlaneEnv>): void {
  const adminOnly: MiddlewareHandler<PlaneEnv> = async (c, next) => {
    const p = c.get('principal');
    if (!p.scopes.includes('admin') || !getCookie(c, SESSION_COOKIE)) {
      return c.html(
        <FRAME.Provider value={planeFrame(p.scopes, sessionToken(c))}>
          <Layout title="Keys">
            <h1>Keys</h1>
            <p>Managing keys takes a session made from a key with the admin scope.</p>
          </Layout>
        </FRAME.Provider>,
        403,
      );
    }
    await next();
  };
  // the token and the Origin check of inspector/csrf.ts, keyed by the session cookie
  const csrfOk = async (c: Context<PlaneEnv>, form: Record<string, unknown>) =>
    formCsrfOk({
      site: c.req.header('sec-fetch-site'),
      origin: c.req.header('origin'),
      url: c.req.url,
      token: form.csrf,
      secret: getCookie(c, SESSION_COOKIE) ?? '',
    });
  const render = async (
    c: Context<PlaneEnv>,
    extra: { created?: { id: string; key: string; project: string }; error?: string } = {},
    status = 200,
  ) => {
    const p: Principal = c.get('principal');
    c.header('cache-control', 'no-store');
    return c.html(
      <KeysPage
        keys={await admin.keys(db, p)}
        csrf={csrfOf(getCookie(c, SESSION_COOKIE) ?? '')}
        operator={p.scopes.includes('operator')}
        projects={(await admin.projects(db, p)).map((x) => x.name)}
        {...extra}
      />,
      status as 200,
    );
  };
  const refuseCsrf = (c: Context<PlaneEnv>) => c.text('CSRF check failed: reload the Keys page and try again', 403);

  app.get('/keys', viewer, adminOnly, (c) => render(c));
  app.post('/keys', viewer, adminOnly, async (c) => {
    const form = await c.req.parseBody({ all: true });
    if (!(await csrfOk(c, form))) return refuseCsrf(c);
    const scopes = ([] as unknown[])
      .concat(form.scopes ?? [])
      .filter((s): s is Scope => typeof s === 'string' && (SCOPES as readonly string[]).includes(s));
    const problems = [
      ...(scopes.length ? [] : ['choose at least one scope']),
      ...(typeof form.name === 'string' && form.name.trim() ? [] : ['give the key a name']),
    ];
    if (problems.length) return render(c, { error: problems.join('; ') }, 400);
    try {
      const k = await admin.createKey(db, c.get('principal'), {
        project: typeof form.project === 'string' && form.project ? form.project : undefined,
        name: String(form.name).trim(),
        scopes,
      });
      return render(c, { created: { id: k.id, key: k.key, project: k.project } }, 201);
    } catch (e) {
      if (e instanceof WaymarkError) return render(c, { error: `${e.code}: ${e.message}` }, 400);
      throw e;
    }
  });
  app.post('/keys/:id/revoke', viewer, adminOnly, async (c) => {
    const form = await c.req.parseBody();
    if (!(await csrfOk(c, form))) return refuseCsrf(c);
    try {
      await admin.revoke(db, c.get('principal'), c.req.param('id'));
    } catch (e) {
      if (e instanceof WaymarkError) return render(c, { error: `${e.code}: ${e.message}` }, 404);
      throw e;
    }
    return c.redirect('/keys', 303);
  });
}
