/** @jsxImportSource hono/jsx */
/**
 * The inspector's Keys page, for a session made from an admin key: the
 * project's keys (an operator's: every project's), a form to create one and a
 * Revoke link per active key. Creating is Post/Redirect/Get: the post makes the
 * key and answers 303 to a page that shows its secret once (held until then
 * under a single-use token of this session's, in memory: new-key-secrets.ts);
 * a reload of that page, Back, or another tab or session is told the secret
 * is not shown again (revoke the key and make another if it was not copied),
 * and no reload makes a second key. Revoking takes two steps, with no script: the
 * link opens a page that names the key (and says so plainly when it is the key
 * this session is signed in with: revoking it ends the session), whose form
 * revokes; a post without that page's confirmation revokes nothing. The forms
 * carry a CSRF token derived from the session cookie (which a page of another
 * origin cannot read), and a foreign Origin is refused, on top of the
 * SameSite=Strict cookie (the guard of every form, run-form.tsx): a refused
 * post is a page naming CSRF_FAILED and saying nothing changed (403). Any
 * other refusal (no scope chosen, a scope the session may not grant, a key
 * not there or revoked already) is the page again naming its code, answered
 * with the status the API answers that code with (REFUSAL_STATUS).
 */
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie } from 'hono/cookie';
import type { FC } from 'hono/jsx';
import type { HtmlEscapedString } from 'hono/utils/html';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { admin } from '../admin.js';
import { KEY_NAME_MAX, SCOPES, type Principal } from '../auth.js';
import type { PlaneDb } from '../db/open.js';
import type { PlaneEnv } from '../http/env.js';
import { isRefusalCode, REFUSAL_STATUS, type RefusalCode } from '../../shared/refusals.js';
import { csrfOf } from '../../inspector/csrf.js';
import { csrfRefusal, refusalPage } from './run-form.js';
import { Layout, Table, Time } from '../../inspector/layout.js';
import { endSession, SESSION_COOKIE } from './session.js';
import { type NewKey, newKeySecrets } from './new-key-secrets.js';

type KeyRow = Awaited<ReturnType<typeof admin.keys>>[number];
type Page = HtmlEscapedString | Promise<HtmlEscapedString>;

/** Said wherever the key of the session in use is shown. */
const OwnKey: FC = () => (
  <span class="badge s-paused" data-testid="own-key" title="revoking it ends this session">
    this session&rsquo;s key
  </span>
);

export const KeysPage: FC<{
  keys: KeyRow[];
  csrf: string;
  /** the key this session is signed in with */
  own: string;
  operator: boolean;
  projects: string[];
  /** the session's own project, which the create form's project list starts at */
  ownProject?: string;
  /** the key just made, its secret shown on this page only */
  created?: NewKey;
  /** this page once showed a secret that is not shown again: the key's id when it is one of this session's keys */
  gone?: { id: string | null };
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
        <p>
          Shown this once; copy it now. Reloading this page does not show it again, and the plane keeps only its hash.
        </p>
        <pre class="mono" data-testid="secret">
          {p.created.key}
        </pre>
      </section>
    )}
    {p.gone && (
      <p class="error" role="status" data-testid="secret-gone">
        {p.gone.id ? `The secret of key ${p.gone.id}` : "This key's secret"} is not shown again: a new key's secret is
        shown once, right after Create, to the session that created it (and not after a plane restart). If you did not
        copy it,{' '}
        {p.gone.id ? <a href={`/keys/${encodeURIComponent(p.gone.id)}/revoke`}>revoke key {p.gone.id}</a> : 'revoke it'}{' '}
        and create another.
      </p>
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
                <option value={n} selected={n === p.ownProject}>
                  {n}
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Name
          <input type="text" name="name" maxlength={KEY_NAME_MAX} required />
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
          <td>
            {k.name} {k.id === p.own && <OwnKey />}
          </td>
          {p.operator && <td>{k.project}</td>}
          <td>{k.scopes.join(', ')}</td>
          <td>
            <Time iso={k.createdAt} />
          </td>
          <td>
            {k.revokedAt ? (
              <span class="badge s-failed">revoked</span>
            ) : (
              <a class="button decline" href={`/keys/${encodeURIComponent(k.id)}/revoke`} aria-label={`Revoke ${k.id}`}>
                Revoke…
              </a>
            )}
          </td>
        </tr>
      ))}
    </Table>
  </Layout>
);

/** The step before a revoke: which key, what revoking does, and (the session's own key) that it ends this session. */
export const RevokeKeyPage: FC<{ k: KeyRow; own: boolean; csrf: string; operator: boolean; unconfirmed?: boolean }> = (
  p,
) => (
  <Layout title={`Revoke key ${p.k.id}`}>
    <h1>
      Revoke key <span class="mono">{p.k.id}</span>?
    </h1>
    <Table columns={['Name', p.operator && 'Project', 'Scopes', 'Created']}>
      <tr>
        <td>{p.k.name}</td>
        {p.operator && <td>{p.k.project}</td>}
        <td>{p.k.scopes.join(', ')}</td>
        <td>
          <Time iso={p.k.createdAt} />
        </td>
      </tr>
    </Table>
    {p.unconfirmed && (
      <p class="error" role="alert" data-testid="unconfirmed">
        Nothing was revoked: a revoke is confirmed on this page.
      </p>
    )}
    {p.own && (
      <p class="error" role="alert" data-testid="own-key-warning">
        This is the key this session is signed in with: revoking it ends this session, and you sign in again with
        another key.
      </p>
    )}
    <p>
      Every plane process refuses the key from its next request on, and every session made from it ends. A revoked key
      cannot be restored: a machine that used it needs a new key.
    </p>
    <form method="post" action={`/keys/${encodeURIComponent(p.k.id)}/revoke`} class="decide" data-testid="revoke-form">
      <input type="hidden" name="csrf" value={p.csrf} />
      <input type="hidden" name="confirm" value="yes" />
      <div class="buttons">
        <button type="submit" class="decline">
          {p.own ? 'Revoke it and log out' : `Revoke ${p.k.id}`}
        </button>
        <a href="/keys">Keep it</a>
      </div>
    </form>
  </Layout>
);

/** Where a refusal page of the Keys page's forms leads. */
const KEYS_LINKS = [{ href: '/keys', text: 'Back to Keys' }];

/** Mount `/keys` and its forms (after `viewer`); `wrap` frames the pages as every other page of the plane's. */
export function mountKeysPage(
  app: Hono<PlaneEnv>,
  db: PlaneDb,
  viewer: MiddlewareHandler<PlaneEnv>,
  wrap: (page: Page, c: Context<PlaneEnv>) => Page,
  o: { newKeyShownForMs?: number } = {},
): void {
  const secrets = newKeySecrets(o.newKeyShownForMs);
  const adminOnly: MiddlewareHandler<PlaneEnv> = async (c, next) => {
    const p = c.get('principal');
    if (!p.scopes.includes('admin') || !getCookie(c, SESSION_COOKIE)) {
      return c.html(
        wrap(
          <Layout title="Keys">
            <h1>Keys</h1>
            <p>Managing keys takes a session made from a key with the admin scope.</p>
          </Layout>,
          c,
        ),
        403,
      );
    }
    await next();
  };
  const render = async (
    c: Context<PlaneEnv>,
    extra: { created?: NewKey; gone?: { id: string | null }; error?: string } = {},
    status = 200,
  ) => {
    const p: Principal = c.get('principal');
    c.header('cache-control', 'no-store');
    const projects = await admin.projects(db, p);
    return c.html(
      wrap(
        <KeysPage
          keys={await admin.keys(db, p)}
          csrf={csrfOf(getCookie(c, SESSION_COOKIE) ?? '')}
          own={p.keyId}
          operator={p.scopes.includes('operator')}
          projects={projects.map((x) => x.name)}
          ownProject={projects.find((x) => x.id === p.projectId)?.name}
          {...extra}
        />,
        c,
      ),
      status as 200,
    );
  };
  /**
   * The Keys page naming a refusal of its forms (the admin operation's, or the page's own) with its code, answered
   * with the status the API answers that code with (REFUSAL_STATUS): the forms stay to try again.
   */
  const keysPageWithError = (c: Context<PlaneEnv>, code: RefusalCode, message: string) =>
    render(c, { error: `${code}: ${message}` }, REFUSAL_STATUS[code]);
  /** The confirmation page of revoking `id`, or the Keys page naming why there is none (not a key here, revoked already). */
  const confirmRevoke = async (c: Context<PlaneEnv>, id: string, unconfirmed = false) => {
    const p: Principal = c.get('principal');
    const k = (await admin.keys(db, p)).find((x) => x.id === id);
    if (!k) return keysPageWithError(c, ErrorCode.KEY_NOT_FOUND, `no key ${id} in this project`);
    if (k.revokedAt) return keysPageWithError(c, ErrorCode.KEY_REVOKED, `key ${id} is revoked already`);
    c.header('cache-control', 'no-store');
    return c.html(
      wrap(
        <RevokeKeyPage
          k={k}
          own={k.id === p.keyId}
          csrf={csrfOf(getCookie(c, SESSION_COOKIE) ?? '')}
          operator={p.scopes.includes('operator')}
          unconfirmed={unconfirmed}
        />,
        c,
      ),
      unconfirmed ? 400 : 200,
    );
  };
  app.get('/keys', viewer, adminOnly, (c) => render(c));
  app.post('/keys', viewer, adminOnly, async (c) => {
    const form = await c.req.parseBody({ all: true });
    const guarded = csrfRefusal(c, form);
    if (guarded) return refusalPage(c, guarded, KEYS_LINKS, { wrap });
    // the form's fields, judged by the admin operation's rule (keyRequestProblems) as the API's body is: a scope
    // not ticked, a name left empty are named there, with every other problem
    const scopes = ([] as unknown[]).concat(form.scopes ?? []).filter((s): s is string => typeof s === 'string');
    try {
      const k = await admin.createKey(db, c.get('principal'), {
        project: typeof form.project === 'string' && form.project ? form.project : undefined,
        name: typeof form.name === 'string' ? form.name.trim() : '',
        scopes,
      });
      // Post/Redirect/Get: the answer is a page to GET, so a reload asks for that page again and makes no key
      const token = secrets.hold(getCookie(c, SESSION_COOKIE) ?? '', { id: k.id, key: k.key, project: k.project });
      c.header('cache-control', 'no-store');
      return c.redirect(`/keys/${encodeURIComponent(k.id)}/new/${token}`, 303);
    } catch (e) {
      if (e instanceof WaymarkError && isRefusalCode(e.code)) return keysPageWithError(c, e.code, e.message);
      throw e;
    }
  });
  // the one page that shows a new key's secret: to this session, once; then (and to anyone else) that it is gone
  app.get('/keys/:id/new/:token', viewer, adminOnly, async (c) => {
    const id = c.req.param('id');
    const shown = secrets.take(getCookie(c, SESSION_COOKIE) ?? '', c.req.param('token'), id);
    if (shown) return render(c, { created: shown });
    // the id is named only when it is a key this session may see: the URL's text is never echoed
    const known = (await admin.keys(db, c.get('principal'))).some((k) => k.id === id);
    return render(c, { gone: { id: known ? id : null } });
  });
  // a GET changes nothing: it is the confirmation step
  app.get('/keys/:id/revoke', viewer, adminOnly, (c) => confirmRevoke(c, c.req.param('id')));
  app.post('/keys/:id/revoke', viewer, adminOnly, async (c) => {
    const form = await c.req.parseBody();
    const guarded = csrfRefusal(c, form);
    if (guarded) return refusalPage(c, guarded, KEYS_LINKS, { wrap });
    const id = c.req.param('id');
    // only the confirmation page's form revokes: a post without it (one click elsewhere) is shown that page
    if (form.confirm !== 'yes') return confirmRevoke(c, id, true);
    try {
      await admin.revoke(db, c.get('principal'), id);
    } catch (e) {
      if (e instanceof WaymarkError && isRefusalCode(e.code)) return keysPageWithError(c, e.code, e.message);
      throw e;
    }
    if (id === c.get('principal').keyId) {
      // this session's key: the session dies with it; its cookie goes too, and the next page asks for a key
      await endSession(db, getCookie(c, SESSION_COOKIE));
      deleteCookie(c, SESSION_COOKIE, { path: '/' });
      return c.redirect('/login?next=%2Fkeys', 303);
    }
    return c.redirect('/keys', 303);
  });
}
