/**
 * The plane inspector's run requests and its forms' refusals, over real HTTP
 * to a real plane on PGlite, without a browser:
 * - a run's page shows every request of the run, a page at a time, newest
 *   first by recording order, with a link to the older ones (which keeps the
 *   page's other parameters); a request waiting on an older page still holds
 *   its form back; a cursor the plane did not issue is 400 BAD_CURSOR;
 * - the Retry/Recover/Fork form is checked by the API's own rule: the same
 *   problems for the same body, under the same code;
 * - the Cancel form is checked by the API's own rule too, under its code;
 * - a form's refusal is answered with the status the API answers its code with;
 * - the Keys page's forms answer a refusal with the status the API answers
 *   its code with, and a failed CSRF check with a page naming CSRF_FAILED;
 *   they change nothing; a login or logout posted from another site is that
 *   refusal page too;
 * - the one inline `<style>` of a page (the local UI's and the plane's login)
 *   hashes to the `style-src` of its Content-Security-Policy, so a browser
 *   applies it.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi } from '../../client/ui/serve.js';
import { csrfOf } from '../../inspector/csrf.js';
import { cancelReasonAt } from '../../plane/cancel.js';
import { rowsOf } from '../../plane/db/open.js';
import { RUN_REQUESTS_PAGE } from '../../plane/requests.js';
import { LIMITS } from '../../shared/limits.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { htmlText, refusalOf } from '../helpers/html.js';
import { step, takeEvents } from '../helpers/rows.js';

describe("the plane inspector's run requests and form refusals (HTTP, no browser)", () => {
  let plane: TestPlane;
  let laptop: SqliteCheckpointer;
  const keys: Record<string, string> = {};
  /** Sessions: an operator's (read, operate, cancel), a reader's, an admin's; and each one's form token. */
  const sessions: Record<string, { cookie: string; csrf: string }> = {};

  const login = async (key: string) => {
    const r = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key, next: '/' }),
    });
    expect(r.status).toBe(303);
    const cookie = r.headers.get('set-cookie')!.split(';')[0];
    return { cookie, csrf: csrfOf(cookie.split('=')[1]) };
  };
  const page = async (path: string, who = sessions.operator) => {
    const r = await fetch(`${plane.url}${path}`, { headers: { cookie: who.cookie } });
    return { status: r.status, type: r.headers.get('content-type') ?? '', html: await r.text() };
  };
  const form = async (path: string, fields: Record<string, string>, who = sessions.operator) => {
    const r = await fetch(`${plane.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: who.cookie },
      body: new URLSearchParams(fields),
    });
    return { status: r.status, type: r.headers.get('content-type') ?? '', html: await r.text() };
  };
  const api = (path: string, json: unknown, key = keys.operator) => call(`${plane.url}${path}`, { key, json });
  /** The run's request seqs at the plane, newest first. */
  const seqsOf = async (id: string) =>
    rowsOf<{ seq: number }>(
      await plane.database.db.execute(
        sql`SELECT seq::int AS seq FROM run_requests WHERE execution_id = ${id} ORDER BY seq DESC`,
      ),
    ).map((r) => r.seq);
  const requestCount = async () =>
    rowsOf<{ n: number }>(await plane.database.db.execute(sql`SELECT count(*)::int AS n FROM run_requests`))[0].n;
  /** A run on the laptop, synced: two model calls, then failed, completed or left running; its rows' ids. */
  const run = async (id: string, end: 'running' | 'failed' | 'completed') => {
    const ids = [(await laptop.put(step(id, 0))).id, (await laptop.put(step(id, 1))).id];
    if (end !== 'running')
      await laptop.put({
        ...step(id, 2),
        nodeId: 'run_end',
        step: 'run_end',
        status: end,
        ...(end === 'failed' ? { nodeOutput: { error: { code: 'MODEL_ERROR', message: 'upstream 500' } } } : {}),
      });
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
    });
    expect(r.body.rejected).toBe(0);
    return ids;
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.operator = await plane.key('acme', ['read', 'operate', 'cancel']);
    keys.reader = await plane.key('acme', ['read']);
    keys.admin = await plane.key('acme', ['admin']);
    laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });
    sessions.operator = await login(keys.operator);
    sessions.reader = await login(keys.reader);
    sessions.admin = await login(keys.admin);
  }, 60_000);
  afterAll(async () => {
    await laptop?.close();
    await plane?.close();
  });

  it("a run with more requests than a page shows every one across pages, newest first by seq; an open fork on an older page still holds the Fork form back; the older link keeps the page's parameters", async () => {
    const ids = await run('many', 'failed');
    // the oldest request: a fork, left open (no worker takes it)
    expect((await api('/v1/executions/many/requests', { action: 'fork', checkpointId: ids[0] })).status).toBe(201);
    // then more retries than a page holds, each refused by the application before the next is asked
    for (let i = 0; i < RUN_REQUESTS_PAGE + 5; i++) {
      const r = await api('/v1/executions/many/requests', { action: 'retry', reason: `try ${i}` });
      expect(r.status).toBe(201);
      const settled = await api(
        `/v1/requests/${r.body.requestId}/outcome`,
        { writerId: 'laptop-b', outcome: 'refused', code: 'TOOL_NOT_FOUND', message: 'no tool' },
        keys.ingest,
      );
      expect(settled.body.state).toBe('refused');
    }
    const all = await seqsOf('many');
    expect(all).toHaveLength(RUN_REQUESTS_PAGE + 6);

    const shown: number[] = [];
    let path: string | null = '/runs/many?b=1';
    let pages = 0;
    while (path) {
      const p = await page(path);
      expect(p.status).toBe(200);
      const seqs = [...p.html.matchAll(/data-testid="request" [^>]*data-seq="(\d+)"/g)].map((m) => Number(m[1]));
      expect(seqs.length).toBeGreaterThan(0);
      shown.push(...seqs);
      if (pages === 0) {
        expect(seqs).toHaveLength(RUN_REQUESTS_PAGE);
        expect(p.html).not.toContain('data-testid="requests-older-page"');
        // the open fork is not on this page, yet it waits: no second Fork form, and the page says why
        expect(p.html).not.toContain('data-testid="fork-form"');
        expect(htmlText(p.html)).toMatch(/data-testid="requests-waiting">Fork: a request is waiting/);
        // every retry was settled: the Retry form is offered
        expect(p.html).toContain('data-testid="retry-form"');
      } else {
        expect(p.html).toContain('data-testid="requests-older-page"');
        expect(p.html).not.toContain('data-testid="fork-form"');
        // the timeline's links keep the requests' page
        const diff = /<a href="([^"]*)">diff with previous<\/a>/.exec(p.html);
        expect(htmlText(diff![1])).toContain(`requests_before=`);
      }
      const older = /<a href="([^"]*)" data-testid="requests-older">/.exec(p.html);
      path = older ? htmlText(older[1]).replace(/#.*$/, '') : null;
      if (path) expect(path).toContain('b=1');
      pages++;
    }
    expect(pages).toBe(2);
    expect(shown).toEqual(all);

    // a cursor this plane did not issue: 400 naming it, not a 500 and not the newest page
    const bad = await page('/runs/many?requests_before=not-a-cursor');
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('BAD_CURSOR');
  }, 120_000);

  it("the request form is checked by the API's own rule: the same problems for the same body, INVALID_RUN_REQUEST; nothing is recorded", async () => {
    await run('form-failed', 'failed');
    const before = await requestCount();
    const csrf = sessions.operator.csrf;
    const same = async (fields: Record<string, string>, body: Record<string, unknown>) => {
      const f = await form('/runs/form-failed/requests', { csrf, ...fields });
      const a = await api('/v1/executions/form-failed/requests', body);
      expect([f.status, a.status]).toEqual([400, 400]);
      expect(refusalOf(f.html)).toEqual({
        code: 'INVALID_RUN_REQUEST',
        message: `nothing was recorded: ${a.body.error.details.problems.join('; ')}`,
      });
      expect(a.body.error.code).toBe('INVALID_RUN_REQUEST');
      return refusalOf(f.html)!.message;
    };
    expect(await same({ action: 'explode', colour: 'red' }, { action: 'explode', colour: 'red' })).toContain(
      "unknown field 'colour'",
    );
    expect(
      await same(
        { action: 'retry', reason: 'x'.repeat(LIMITS.reasonLength + 1) },
        {
          action: 'retry',
          reason: 'x'.repeat(LIMITS.reasonLength + 1),
        },
      ),
    ).toContain('reason: ');
    // a reason the database cannot store: refused by the rule, never a 500
    expect(await same({ action: 'retry', reason: 'a\u0000b' }, { action: 'retry', reason: 'a\u0000b' })).toBe(
      'nothing was recorded: reason: a string holds U+0000',
    );
    // the form names a fork's row by its # (`seq`), the body by its id (`checkpointId`): the same rule, its own name
    const noRow = await form('/runs/form-failed/requests', { csrf, action: 'fork' });
    expect(refusalOf(noRow.html)).toEqual({
      code: 'INVALID_RUN_REQUEST',
      message: 'nothing was recorded: seq: required for a fork (the row the new run branches from)',
    });
    const retryRow = await form('/runs/form-failed/requests', { csrf, action: 'retry', seq: '1' });
    expect(refusalOf(retryRow.html)?.message).toBe(
      "nothing was recorded: seq: only a fork names a row (a retry acts on the run's newest row)",
    );
    const notNumber = await form('/runs/form-failed/requests', { csrf, action: 'fork', seq: 'one' });
    expect(refusalOf(notNumber.html)?.message).toBe(
      "nothing was recorded: seq: the row's # in the timeline, a whole number",
    );
    expect(await requestCount()).toBe(before);
    // a good one is recorded, its row resolved from its #
    expect((await form('/runs/form-failed/requests', { csrf, action: 'fork', seq: '1' })).status).toBe(303);
    expect(await requestCount()).toBe(before + 1);
  });

  it("the Cancel form is checked by the API's own rule: the same problems for the same body, INVALID_REQUEST; nothing is cancelled", async () => {
    await run('cancel-form', 'running');
    const csrf = sessions.operator.csrf;
    const same = async (body: Record<string, string>) => {
      const f = await form('/runs/cancel-form/cancel', { csrf, confirm: 'yes', ...body });
      const a = await api('/v1/executions/cancel-form/cancel', body);
      expect([f.status, a.status]).toEqual([400, 400]);
      expect(a.body.error.code).toBe('INVALID_REQUEST');
      expect(refusalOf(f.html)).toEqual({ code: 'INVALID_REQUEST', message: a.body.error.message });
      expect(a.body.error.message).toBe(`the run was not cancelled: ${a.body.error.details.problems.join('; ')}`);
      return a.body.error.details.problems;
    };
    expect(await same({ colour: 'red' })).toEqual(["unknown field 'colour'"]);
    expect(await same({ reason: 'x'.repeat(LIMITS.reasonLength + 1), colour: 'red' })).toEqual([
      `reason: at most ${LIMITS.reasonLength} characters`,
      "unknown field 'colour'",
    ]);
    // a reason the database cannot store: refused by the same rule, never a 500
    expect(await same({ reason: 'a\u0000b' })).toEqual(['reason: a string holds U+0000']);
    const surrogate = await api('/v1/executions/cancel-form/cancel', { reason: 'a\ud800b' });
    expect([surrogate.status, surrogate.body.error.details?.problems]).toEqual([
      400,
      ['reason: a string holds a lone surrogate (not well-formed Unicode)'],
    ]);
    // the box to tick is the form's own (the API has no need of it), named with the body's problems
    const unticked = await form('/runs/cancel-form/cancel', { csrf, colour: 'red' });
    expect(refusalOf(unticked.html)).toEqual({
      code: 'INVALID_REQUEST',
      message:
        "the run was not cancelled: confirm: tick “I understand…” to cancel the run (one click on the button alone cancels nothing); unknown field 'colour'",
    });
    expect((await call(`${plane.url}/v1/executions/cancel-form`, { key: keys.reader })).body.execution.status).toBe(
      'running',
    );
  });

  it('a cancel records its reason trimmed, a blank one as no reason, by the API as by the Cancel form', async () => {
    const [{ id: acme }] = rowsOf<{ id: string }>(
      await plane.database.db.execute(sql`SELECT id FROM projects WHERE name = 'acme'`),
    );
    const cases: [string, string, string | null][] = [
      ['blank-api', '   ', null],
      ['blank-form', '   ', null],
      ['padded-api', '  customer withdrew \n', 'customer withdrew'],
      ['padded-form', '  customer withdrew \n', 'customer withdrew'],
    ];
    for (const [id, reason, recorded] of cases) {
      await run(id, 'running');
      const r = id.endsWith('api')
        ? (await api(`/v1/executions/${id}/cancel`, { reason })).status
        : (await form(`/runs/${id}/cancel`, { csrf: sessions.operator.csrf, confirm: 'yes', reason })).status;
      expect([id, r]).toEqual([id, id.endsWith('api') ? 200 : 303]);
      expect([id, await cancelReasonAt(plane.database.db, acme, id)]).toEqual([id, recorded]);
    }
  });

  it("a form's refusal is answered with the status the API answers its code with (requests, cancel); nothing changes", async () => {
    await run('live', 'running');
    await run('done', 'completed');
    const before = await requestCount();
    const csrf = sessions.operator.csrf;
    const pairs: [string, Promise<{ status: number; html: string }>, Promise<{ status: number; body: any }>][] = [
      [
        'RUN_NOT_FAILED',
        form('/runs/live/requests', { csrf, action: 'retry' }),
        api('/v1/executions/live/requests', { action: 'retry' }),
      ],
      [
        'RUN_NOT_STALE',
        form('/runs/live/requests', { csrf, action: 'recover' }),
        api('/v1/executions/live/requests', { action: 'recover' }),
      ],
      [
        'EXECUTION_NOT_FOUND',
        form('/runs/nowhere/requests', { csrf, action: 'retry' }),
        api('/v1/executions/nowhere/requests', { action: 'retry' }),
      ],
      [
        'INVALID_RUN_REQUEST',
        form('/runs/live/requests', { csrf, action: 'undo' }),
        api('/v1/executions/live/requests', { action: 'undo' }),
      ],
      [
        'FORBIDDEN',
        form('/runs/live/requests', { csrf: sessions.reader.csrf, action: 'retry' }, sessions.reader),
        api('/v1/executions/live/requests', { action: 'retry' }, keys.reader),
      ],
      ['ALREADY_FINISHED', form('/runs/done/cancel', { csrf, confirm: 'yes' }), api('/v1/executions/done/cancel', {})],
      [
        'EXECUTION_NOT_FOUND',
        form('/runs/nowhere/cancel', { csrf, confirm: 'yes' }),
        api('/v1/executions/nowhere/cancel', {}),
      ],
    ];
    for (const [code, f, a] of pairs) {
      const [page, answer] = await Promise.all([f, a]);
      expect([code, refusalOf(page.html)?.code, answer.body.error.code]).toEqual([code, code, code]);
      expect([code, page.status]).toEqual([code, answer.status]);
      expect(page.html).toContain('Nothing was changed.');
    }
    expect(await requestCount()).toBe(before);
    expect((await call(`${plane.url}/v1/executions/live`, { key: keys.reader })).body.execution.status).toBe('running');
  });

  it("the Keys page's refusals (create, revoke) are answered with the status the API answers their code with; nothing changes", async () => {
    const admin = sessions.admin;
    const made = await call(`${plane.url}/v1/admin/keys`, {
      key: keys.admin,
      json: { name: 'revoked early', scopes: ['read'] },
    });
    expect(made.status).toBe(201);
    expect(
      (await call(`${plane.url}/v1/admin/keys/${made.body.id}/revoke`, { key: keys.admin, json: {} })).status,
    ).toBe(200);
    const keysNow = async () =>
      (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items.map(
        (k: { id: string; revokedAt: string | null }) => [k.id, k.revokedAt],
      );
    const before = await keysNow();
    const nowhere = 'ffffffffffffffff';
    const pairs: [string, Promise<{ status: number; html: string }>, Promise<{ status: number; body: any }>][] = [
      [
        'FORBIDDEN',
        form('/keys', { csrf: admin.csrf, name: 'an operator', scopes: 'operator' }, admin),
        api('/v1/admin/keys', { name: 'an operator', scopes: ['operator'] }, keys.admin),
      ],
      [
        'UNKNOWN_PROJECT',
        form('/keys', { csrf: admin.csrf, project: 'nowhere', name: 'elsewhere', scopes: 'read' }, admin),
        api('/v1/admin/keys', { project: 'nowhere', name: 'elsewhere', scopes: ['read'] }, keys.admin),
      ],
      [
        'INVALID_REQUEST',
        form('/keys', { csrf: admin.csrf, name: 'bell\u0007', scopes: 'read' }, admin),
        api('/v1/admin/keys', { name: 'bell\u0007', scopes: ['read'] }, keys.admin),
      ],
      [
        'KEY_NOT_FOUND',
        form(`/keys/${nowhere}/revoke`, { csrf: admin.csrf, confirm: 'yes' }, admin),
        api(`/v1/admin/keys/${nowhere}/revoke`, {}, keys.admin),
      ],
      [
        'KEY_REVOKED',
        form(`/keys/${made.body.id}/revoke`, { csrf: admin.csrf, confirm: 'yes' }, admin),
        api(`/v1/admin/keys/${made.body.id}/revoke`, {}, keys.admin),
      ],
    ];
    for (const [code, f, a] of pairs) {
      const [page, answer] = await Promise.all([f, a]);
      expect([code, answer.body.error.code]).toEqual([code, code]);
      // the Keys page again, its forms to try again, naming the code
      expect([code, /<p class="error" role="alert">([A-Z_]+):/.exec(page.html)?.[1]]).toEqual([code, code]);
      expect(page.html).toContain('action="/keys"');
      expect([code, page.status]).toEqual([code, answer.status]);
    }
    // no scope ticked, a name left blank: the problems of the API's own rule, in its words
    const [blank, blankApi] = await Promise.all([
      form('/keys', { csrf: admin.csrf, name: '  ' }, admin),
      api('/v1/admin/keys', { name: '', scopes: [] }, keys.admin),
    ]);
    expect([blank.status, blankApi.status]).toEqual([400, 400]);
    expect(htmlText(/<p class="error" role="alert">([^<]*)<\/p>/.exec(blank.html)?.[1] ?? '')).toBe(
      `INVALID_REQUEST: ${blankApi.body.error.message}`,
    );
    expect(await keysNow()).toEqual(before);
  });

  it('the Keys page answers a failed CSRF check with a page naming CSRF_FAILED (403), in the frame; nothing changes', async () => {
    const keysNow = async () =>
      (await call(`${plane.url}/v1/admin/keys`, { key: keys.admin })).body.items.map(
        (k: { id: string; revokedAt: string | null }) => [k.id, k.revokedAt],
      );
    const before = await keysNow();
    const readerId = keys.reader.split('_')[1];
    const admin = sessions.admin;
    for (const [path, fields, headers] of [
      ['/keys', { csrf: 'forged', name: 'made by a forged post', scopes: 'admin' }, {}],
      ['/keys', { name: 'made without a token', scopes: 'admin' }, {}],
      [`/keys/${readerId}/revoke`, { csrf: 'forged', confirm: 'yes' }, {}],
      [`/keys/${readerId}/revoke`, { csrf: admin.csrf, confirm: 'yes' }, { origin: 'http://evil.example' }],
    ] as [string, Record<string, string>, Record<string, string>][]) {
      const r = await fetch(`${plane.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: admin.cookie, ...headers },
        body: new URLSearchParams(fields),
      });
      const html = await r.text();
      expect([path, r.status, r.headers.get('content-type')]).toEqual([path, 403, 'text/html; charset=UTF-8']);
      expect(refusalOf(html)).toEqual({
        code: 'CSRF_FAILED',
        message: expect.stringContaining('CSRF token'),
      });
      expect(html).toContain('Nothing was changed.');
      expect(html).toContain('<a href="/keys">Back to Keys</a>');
      // the plane's frame, as every page of a session's
      expect(html).toContain('href="/approvals"');
    }
    expect(await keysNow()).toEqual(before);
  });

  it('a login or logout posted from a page of another site is answered with the refusal page naming CSRF_FAILED (403); no session is made or ended', async () => {
    const own = await login(keys.reader);
    for (const [path, fields, cookie, back] of [
      ['/login', { key: keys.reader, next: '/' }, '', '<a href="/login">Log in</a>'],
      ['/logout', { csrf: own.csrf }, own.cookie, '<a href="/">Runs</a>'],
    ] as const) {
      for (const headers of [
        { 'sec-fetch-site': 'cross-site' },
        { origin: 'http://evil.example' },
        { origin: 'null' },
      ] as Record<string, string>[]) {
        const r = await fetch(`${plane.url}${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { ...headers, ...(cookie ? { cookie } : {}) },
          body: new URLSearchParams(path === '/logout' && 'origin' in headers ? { csrf: 'forged' } : fields),
        });
        const html = await r.text();
        const at = `${path} ${JSON.stringify(headers)}`;
        expect([at, r.status, r.headers.get('content-type'), r.headers.get('set-cookie')]).toEqual([
          at,
          403,
          'text/html; charset=UTF-8',
          null,
        ]);
        expect([at, refusalOf(html)?.code]).toEqual([at, 'CSRF_FAILED']);
        expect(refusalOf(html)?.message).toContain('a page of another site');
        expect(html).toContain('Nothing was changed.');
        expect(html).toContain(back);
      }
    }
    // the session lives on
    expect((await page('/', own)).status).toBe(200);
  });

  it("a page's one inline <style> hashes to its CSP style-src, on the local UI and the plane (else a browser drops every style)", async () => {
    const ui = await serveLocalUi(laptop, { port: 0 });
    try {
      for (const url of [`${ui.url}/`, `${plane.url}/login`]) {
        const r = await fetch(url);
        expect(r.status, url).toBe(200);
        const html = await r.text();
        const styles = [...html.matchAll(/<style[^>]*>([\s\S]*?)<\/style>/g)].map((m) => m[1]);
        expect(styles, url).toHaveLength(1);
        const csp = r.headers.get('content-security-policy') ?? '';
        const styleSrc = /(?:^|;)\s*style-src ([^;]*)/.exec(csp)?.[1].trim().split(/\s+/);
        const hash = createHash('sha256').update(styles[0], 'utf8').digest('base64');
        expect(styleSrc, `${url}: ${csp}`).toEqual([`'sha256-${hash}'`]);
        expect(html, url).not.toMatch(/ style="/);
      }
    } finally {
      await ui.close();
    }
  });
});
