/**
 * Tenancy and auth, for every endpoint and every UI page: no key, a revoked
 * key, a wrong-scope key and a valid key of another project are refused, and
 * nothing of the project is read or written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { csrfOf } from '../../inspector/csrf.js';
import { revokeKey } from '../../plane/auth.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { refusalOf } from '../helpers/html.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

describe('tenancy and auth across every endpoint and page', () => {
  let plane: TestPlane;
  const keys: Record<string, string> = {};
  let checkpointId = '';
  let requestId = '';
  let secrets: string[] = [];
  let snapshot = '';

  const counts = async () => {
    const r = (await plane.database.db.execute(sql`
      SELECT (SELECT count(*) FROM checkpoints) AS c, (SELECT count(*) FROM events) AS e, (SELECT count(*) FROM claims) AS cl,
             (SELECT count(*) FROM quarantine) AS q, (SELECT count(*) FROM writers) AS w, (SELECT count(*) FROM idempotency) AS i,
             (SELECT string_agg(state || coalesce(claimed_by, ''), ',') FROM pending_interrupts) AS p,
             (SELECT count(*) FROM decisions) AS d, (SELECT count(*) FROM claims WHERE decision_id IS NOT NULL) AS cd,
             (SELECT count(*) FROM execution_tombstones) AS t, (SELECT string_agg(execution_id || ':' || change_seq, ',') FROM executions) AS ch,
             (SELECT string_agg(request_id || ':' || state || ':' || coalesce(claimed_by, ''), ',') FROM run_requests) AS rr,
             (SELECT count(*) FROM projects) AS pr, (SELECT string_agg(execution_id || ':' || state || ':' || epoch, ',') FROM run_owners) AS o, (SELECT count(*) FROM api_keys) AS k, (SELECT count(*) FROM api_keys WHERE revoked_at IS NULL) AS ka`)) as unknown as {
      rows?: unknown[];
    };
    return JSON.stringify(Array.isArray(r) ? r : r.rows);
  };

  beforeAll(async () => {
    plane = await startTestPlane('pglite');
    keys.owner = await plane.key('victim', ['ingest', 'read']);
    keys.ingestOnly = await plane.key('victim', ['ingest']);
    keys.readOnly = await plane.key('victim', ['read']);
    keys.revoked = await plane.key('victim', ['ingest', 'read', 'admin']);
    await revokeKey(plane.database.db, keys.revoked.slice(3, 19));
    keys.approveOnly = await plane.key('victim', ['approve']);
    keys.operateOnly = await plane.key('victim', ['operate']);
    keys.other = await plane.key('attacker', ['ingest', 'read', 'approve', 'cancel', 'operate']);
    keys.otherAdmin = await plane.key('attacker', ['admin']);
    let stepId = '';
    const rows = await eventsOf(async (s) => {
      stepId = (await s.put(step('victim-run', 0, { nodeInput: { card: '4242-SECRET' } }))).id;
      await s.putIdempotent('victim-run', 'charge', { chargeId: 'ch_SECRET' });
      checkpointId = (
        await s.recordInterrupt(pause('victim-run', 1), { reason: 'approve', context: { ssn: 'SECRET-SSN' } })
      ).checkpoint.id;
    }, 'victim-laptop');
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.owner,
      json: { protocol: 1, writerId: 'victim-laptop', rows: [...rows, { kind: 'bogus', id: 'x', secret: 'SECRET-Q' }] },
    });
    expect(r.body.accepted).toBe(rows.length);
    const decided = await call(`${plane.url}/v1/executions/victim-run/decision`, {
      key: keys.approveOnly,
      json: { checkpointId, approved: true, comment: 'SECRET-DECISION' },
    });
    expect(decided.status).toBe(201);
    const asked = await call(`${plane.url}/v1/executions/victim-run/requests`, {
      key: keys.operateOnly,
      json: { action: 'fork', checkpointId: stepId, reason: 'SECRET-REQUEST' },
    });
    expect(asked.status).toBe(201);
    requestId = asked.body.requestId;
    secrets = [
      'victim-run',
      '4242-SECRET',
      'ch_SECRET',
      'SECRET-SSN',
      'SECRET-Q',
      'victim-laptop',
      checkpointId,
      'SECRET-DECISION',
      decided.body.decisionId,
      'SECRET-REQUEST',
    ];
    snapshot = await counts();
  });
  afterAll(async () => plane?.close());

  const endpoints = (): {
    name: string;
    scope: string | null;
    wrong?: () => string;
    req: (key?: string) => Promise<Awaited<ReturnType<typeof call>>>;
  }[] => [
    {
      name: 'POST /v1/ingest',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/ingest`, {
          key,
          json: {
            protocol: 1,
            writerId: 'intruder',
            rows: [
              {
                kind: 'interrupt_claimed',
                id: '01a2368f-0000-7000-8000-000000000000',
                executionId: 'victim-run',
                checkpointId,
                writerId: 'intruder',
                claimedAt: new Date().toISOString(),
              },
            ],
          },
        }),
    },
    { name: 'GET /v1/executions', scope: 'read', req: (key?: string) => call(`${plane.url}/v1/executions`, { key }) },
    {
      name: 'GET /v1/executions/:id',
      scope: 'read',
      req: (key?: string) => call(`${plane.url}/v1/executions/victim-run`, { key }),
    },
    {
      name: 'GET /v1/executions/:id/rows',
      scope: 'read',
      req: (key?: string) => call(`${plane.url}/v1/executions/victim-run/rows`, { key }),
    },
    {
      name: 'GET /v1/executions/:id/restore',
      scope: 'read',
      req: (key?: string) => call(`${plane.url}/v1/executions/victim-run/restore`, { key }),
    },
    {
      name: 'POST /v1/executions/:id/claim',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/claim`, { key, json: { checkpointId, writerId: 'intruder' } }),
    },
    {
      name: 'POST /v1/executions/:id/claim/release',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/claim/release`, {
          key,
          json: { checkpointId, writerId: 'intruder' },
        }),
    },
    {
      name: 'POST /v1/executions/:id/takeover',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/takeover`, { key, json: { writerId: 'intruder', seq: 0 } }),
    },
    {
      name: 'POST /v1/executions/:id/lease',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/lease`, {
          key,
          json: { writerId: 'intruder', holder: 'intruder#1', ttlMs: 60_000 },
        }),
    },
    {
      name: 'POST /v1/executions/:id/cancel',
      scope: 'cancel',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/cancel`, { key, json: { reason: 'intruder' } }),
    },
    {
      name: 'POST /v1/executions/:id/decision',
      scope: 'approve',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/decision`, {
          key,
          json: { checkpointId, approved: false, comment: 'intruder' },
        }),
    },
    {
      name: 'GET /v1/pauses',
      scope: 'read',
      wrong: () => keys.ingestOnly,
      req: (key?: string) => call(`${plane.url}/v1/pauses`, { key }),
    },
    {
      name: 'GET /v1/decisions',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/decisions`, { key }),
    },
    {
      name: 'GET /v1/changes',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/changes`, { key }),
    },
    {
      // in the victim's project this writer would be sent the victim's run: it has a decision
      name: 'GET /v1/writer-changes',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/writer-changes?writerId=intruder&decided=true`, { key }),
    },
    {
      // named as the victim's writer: in the victim's project it would be sent the victim's decision
      name: 'GET /v1/writer-decisions',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/writer-decisions?writerId=victim-laptop`, { key }),
    },
    {
      name: 'POST /v1/executions/:id/requests',
      scope: 'operate',
      req: (key?: string) =>
        call(`${plane.url}/v1/executions/victim-run/requests`, { key, json: { action: 'retry', reason: 'intruder' } }),
    },
    {
      name: 'GET /v1/requests',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/requests`, { key }),
    },
    {
      name: 'GET /v1/requests/:requestId',
      scope: 'read',
      wrong: () => keys.approveOnly,
      req: (key?: string) => call(`${plane.url}/v1/requests/${requestId}`, { key }),
    },
    {
      name: 'POST /v1/requests/:requestId/claim',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/requests/${requestId}/claim`, { key, json: { writerId: 'intruder' } }),
    },
    {
      name: 'POST /v1/requests/:requestId/outcome',
      scope: 'ingest',
      req: (key?: string) =>
        call(`${plane.url}/v1/requests/${requestId}/outcome`, {
          key,
          json: { writerId: 'intruder', outcome: 'refused', code: 'X', message: 'intruder' },
        }),
    },
    { name: 'GET /v1/whoami', scope: null, req: (key?: string) => call(`${plane.url}/v1/whoami`, { key }) },
    { name: 'GET /v1/quarantine', scope: 'read', req: (key?: string) => call(`${plane.url}/v1/quarantine`, { key }) },
    { name: 'GET /v1/writers', scope: 'read', req: (key?: string) => call(`${plane.url}/v1/writers`, { key }) },
    { name: 'GET /v1/conflicts', scope: 'read', req: (key?: string) => call(`${plane.url}/v1/conflicts`, { key }) },
    {
      name: 'GET /v1/admin/projects',
      scope: 'admin',
      req: (key?: string) => call(`${plane.url}/v1/admin/projects`, { key }),
    },
    {
      name: 'POST /v1/admin/projects',
      scope: 'admin',
      req: (key?: string) => call(`${plane.url}/v1/admin/projects`, { key, json: { name: 'intruder-project' } }),
    },
    { name: 'GET /v1/admin/keys', scope: 'admin', req: (key?: string) => call(`${plane.url}/v1/admin/keys`, { key }) },
    {
      name: 'POST /v1/admin/keys',
      scope: 'admin',
      req: (key?: string) => call(`${plane.url}/v1/admin/keys`, { key, json: { project: 'victim', scopes: ['read'] } }),
    },
    {
      name: 'POST /v1/admin/prune',
      scope: 'admin',
      req: (key?: string) =>
        call(`${plane.url}/v1/admin/prune`, { key, json: { olderThanSeconds: 3600, project: 'victim' } }),
    },
    {
      name: 'POST /v1/admin/keys/:id/revoke',
      scope: 'admin',
      req: (key?: string) =>
        call(`${plane.url}/v1/admin/keys/${keys.owner.slice(3, 19)}/revoke`, { key, method: 'POST' }),
    },
  ];

  it('lists every documented endpoint in this matrix', async () => {
    const doc = (await call(`${plane.url}/openapi.json`)).body as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ':$1')}`),
    );
    const covered = endpoints().map((e) => e.name);
    for (const d of documented) expect(covered).toContain(d);
  });

  it('no key, a malformed key and a revoked key get 401; a wrong scope gets 403', async () => {
    for (const e of endpoints()) {
      for (const key of [undefined, 'Bearer nonsense', keys.revoked]) {
        const r = await e.req(key);
        expect(r.status, `${e.name} with ${key ? 'a bad key' : 'no key'}`).toBe(401);
      }
      if (e.scope === null) {
        // any valid key may ask what it is, and learns only that
        expect((await e.req(keys.readOnly)).body).toMatchObject({ project: 'victim', scopes: ['read'] });
        continue;
      }
      const wrong = e.wrong?.() ?? (e.scope === 'ingest' ? keys.readOnly : keys.ingestOnly);
      expect((await e.req(wrong)).status, `${e.name} with the wrong scope`).toBe(403);
    }
    expect(await counts()).toBe(snapshot);
  });

  it("operator metrics (every project's counters) are not on this listener for any key, admin included", async () => {
    for (const key of [undefined, keys.owner, keys.otherAdmin, keys.other])
      expect((await call(`${plane.url}/metrics`, { key })).status).toBe(404);
  });

  it("another project's valid key reads nothing of this project and changes nothing", async () => {
    for (const e of endpoints()) {
      const r = await e.req(keys.other);
      const text = JSON.stringify(r.body);
      // the id the attacker itself asked for may be echoed in a 404; nothing else of the victim may appear
      const asked = e.name.includes(':id') ? ['victim-run', checkpointId] : [];
      for (const s of secrets.filter((x) => !asked.includes(x))) expect(text, `${e.name} leaked ${s}`).not.toContain(s);
      if (e.name.includes(':id')) expect(r.status, e.name).toBe(e.scope === 'admin' ? 403 : 404);
      // the project-wide listings answer the attacker's own (empty) project
      if (e.name.includes(':requestId')) expect(r.status, e.name).toBe(404);
      if (
        e.name === 'GET /v1/pauses' ||
        e.name === 'GET /v1/decisions' ||
        e.name === 'GET /v1/changes' ||
        e.name === 'GET /v1/writer-changes' ||
        e.name === 'GET /v1/writer-decisions' ||
        e.name === 'GET /v1/requests'
      )
        expect(r.body.items, e.name).toEqual([]);
    }
    // the same two writer feeds asked with the victim project's own key do carry its run: the empty answers above
    // are the project's scoping, not feeds with nothing to serve
    for (const e of endpoints().filter((x) => x.name.startsWith('GET /v1/writer-'))) {
      const own = await e.req(keys.owner);
      expect(
        own.body.items.map((i: { executionId: string }) => i.executionId),
        e.name,
      ).toEqual(['victim-run']);
    }
    // the claim the intruder's ingest carried landed (if at all) in the attacker's project, not the victim's
    expect(await counts()).not.toBe('');
    const mine = await call(`${plane.url}/v1/executions/victim-run`, { key: keys.owner });
    expect(mine.body.pause).toMatchObject({
      state: 'open',
      claimedBy: null,
      decision: { approved: true, metadata: { comment: 'SECRET-DECISION' }, state: 'pending' },
    });
    expect(mine.body.conflicts).toEqual([]);
    // the owner's change feed shows its run where it stands: paused, its pause open, nobody's claim
    const changes = await call(`${plane.url}/v1/changes`, { key: keys.ingestOnly });
    expect(changes.body.items).toEqual([
      expect.objectContaining({
        executionId: 'victim-run',
        deleted: false,
        status: 'paused',
        pauseState: 'open',
        claimedBy: null,
        lastWriterId: 'victim-laptop',
      }),
    ]);
    const w = await call(`${plane.url}/v1/writers`, { key: keys.owner });
    expect(w.body.items.map((x: { writerId: string }) => x.writerId)).toEqual(['victim-laptop']);
  });

  it("another project's admin key sees no project, key or secret of this one, and can neither create a key in it nor revoke one of its keys", async () => {
    const before = await counts();
    const projects = await call(`${plane.url}/v1/admin/projects`, { key: keys.otherAdmin });
    expect(projects.body.items.map((p: { name: string }) => p.name)).toEqual(['attacker']);
    const list = await call(`${plane.url}/v1/admin/keys`, { key: keys.otherAdmin });
    expect(list.status).toBe(200);
    expect(new Set(list.body.items.map((k: { project: string }) => k.project))).toEqual(new Set(['attacker']));
    for (const k of [keys.owner, keys.ingestOnly, keys.readOnly, keys.revoked])
      expect(JSON.stringify(list.body)).not.toContain(k.slice(3, 19));
    const create = await call(`${plane.url}/v1/admin/keys`, {
      key: keys.otherAdmin,
      json: { project: 'victim', scopes: ['read'] },
    });
    expect(create.status).toBe(404);
    expect(create.body.error).toMatchObject({ code: 'UNKNOWN_PROJECT', details: { known: ['attacker'] } });
    const revoke = await call(`${plane.url}/v1/admin/keys/${keys.owner.slice(3, 19)}/revoke`, {
      key: keys.otherAdmin,
      method: 'POST',
    });
    expect(revoke.status).toBe(404);
    expect(revoke.body.error.code).toBe('KEY_NOT_FOUND');
    const project = await call(`${plane.url}/v1/admin/projects`, { key: keys.otherAdmin, json: { name: 'victim2' } });
    expect(project.status).toBe(403);
    const operatorGrant = await call(`${plane.url}/v1/admin/keys`, {
      key: keys.otherAdmin,
      json: { scopes: ['operator'] },
    });
    expect(operatorGrant.status).toBe(403);
    const prune = await call(`${plane.url}/v1/admin/prune`, {
      key: keys.otherAdmin,
      json: { olderThanSeconds: 3600, project: 'victim' },
    });
    expect(prune.status).toBe(404);
    expect(prune.body.error).toMatchObject({ code: 'UNKNOWN_PROJECT', details: { known: ['attacker'] } });
    expect(await counts()).toBe(before);
    expect((await call(`${plane.url}/v1/executions`, { key: keys.owner })).status).toBe(200);
  });

  it('every UI page redirects to login without a session, and a session of another project sees none of this one', async () => {
    const pages = ['/', '/runs/victim-run', '/approvals', '/quarantine', '/writers', `/?q=victim`, '/keys'];
    for (const p of pages) {
      const res = await fetch(`${plane.url}${p}`, { redirect: 'manual' });
      expect(res.status, p).toBe(303);
      expect(res.headers.get('location')).toMatch(/^\/login/);
      const forged = await fetch(`${plane.url}${p}`, {
        redirect: 'manual',
        headers: { cookie: 'wm_session=forged-token' },
      });
      expect(forged.status, p).toBe(303);
    }
    for (const bad of [keys.revoked, keys.ingestOnly]) {
      const login = await fetch(`${plane.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        body: new URLSearchParams({ key: bad, next: '/' }),
      });
      expect(login.status).toBe(401);
      // no session (the page shown again may set its login form's cookie)
      expect(login.headers.get('set-cookie') ?? '').not.toContain('wm_session');
    }
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key: keys.other, next: '//evil.example/' }),
    });
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/');
    const cookie = login.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    const session = cookie.split(';')[0];
    for (const p of pages) {
      const res = await fetch(`${plane.url}${p}`, { redirect: 'manual', headers: { cookie: session } });
      const html = await res.text();
      for (const s of secrets.filter((x) => !p.includes(x))) expect(html, `${p} leaked ${s}`).not.toContain(s);
    }
    expect((await fetch(`${plane.url}/runs/victim-run`, { headers: { cookie: session } })).status).toBe(404);
    // the approve form's target, posted by this other project's approve session with its own valid token: 404, nothing recorded
    const before = (await call(`${plane.url}/v1/decisions`, { key: keys.owner })).body.items.length;
    const forged = await fetch(`${plane.url}/runs/victim-run/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: session },
      body: new URLSearchParams({
        csrf: csrfOf(session.split('=')[1]),
        checkpointId,
        approved: 'false',
        comment: 'attacker',
      }),
    });
    expect(forged.status).toBe(404);
    expect(await forged.text()).toContain('PAUSE_NOT_FOUND');
    expect((await call(`${plane.url}/v1/decisions`, { key: keys.owner })).body.items).toHaveLength(before);
  });

  it("another project's session posting this project's pause to the inbox form, or this project's run to the request and cancel forms, records nothing and is answered as for one that does not exist", async () => {
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key: keys.other, next: '/' }),
    });
    const session = login.headers.get('set-cookie')!.split(';')[0];
    const csrf = csrfOf(session.split('=')[1]);
    const post = async (path: string, fields: Record<string, string>) => {
      const r = await fetch(`${plane.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: session },
        body: new URLSearchParams({ csrf, ...fields }),
      });
      const html = await r.text();
      // what the post named itself (the run id, the pause id) may be said back; nothing else of the victim's
      const named = [path, ...Object.values(fields)].join(' ');
      for (const x of secrets.filter((x) => !named.includes(x))) expect(html, `${path} leaked ${x}`).not.toContain(x);
      return { status: r.status, code: refusalOf(html)?.code, html };
    };
    const before = await counts();
    // a pause key of this project, and one that names no pause anywhere: the same refusal, nothing recorded
    const missingPause = '01900000-0000-7000-8000-000000000000';
    for (const approved of ['true', 'false']) {
      const victim = await post('/approvals', { pause: `${checkpointId}:victim-run`, approved, comment: 'attacker' });
      const none = await post('/approvals', { pause: `${missingPause}:victim-run`, approved });
      expect(victim.status).toBe(none.status);
      expect(victim.html).toContain('PAUSE_NOT_FOUND');
      const one = await post('/approvals', { one: `${approved}:${checkpointId}:victim-run` });
      expect(one.status).toBe(none.status);
      expect(one.html).toContain('PAUSE_NOT_FOUND');
    }
    // this project's run to the run request form (each action) and the cancel form: as for no such run
    for (const fields of [{ action: 'retry' }, { action: 'recover' }, { action: 'fork', seq: '0' }] as Record<
      string,
      string
    >[]) {
      const victim = await post('/runs/victim-run/requests', fields);
      const none = await post('/runs/no-such-run/requests', fields);
      expect(victim.status, fields.action).toBe(404);
      expect([victim.status, victim.code]).toEqual([none.status, none.code]);
      expect(victim.code).toBe('EXECUTION_NOT_FOUND');
    }
    const cancel = await post('/runs/victim-run/cancel', { confirm: 'yes', reason: 'attacker' });
    const cancelNone = await post('/runs/no-such-run/cancel', { confirm: 'yes', reason: 'attacker' });
    expect(cancel.status).toBe(404);
    expect([cancel.status, cancel.code]).toEqual([cancelNone.status, cancelNone.code]);
    expect(cancel.code).toBe('EXECUTION_NOT_FOUND');
    expect(await counts()).toBe(before);
  });

  it('login and logout posted from a page of another site are refused (403, no session made or ended): login CSRF', async () => {
    /** The login page's cookie and its form token, as a browser that loaded the page holds them. */
    const loginPage = async () => {
      const page = await fetch(`${plane.url}/login`);
      const cookie = page.headers.get('set-cookie')!.split(';')[0];
      const token = /name="csrf" value="([^"]+)"/.exec(await page.text())![1];
      return { cookie, token };
    };
    const post = (path: string, headers: Record<string, string>, o: { cookie?: string; csrf?: string } = {}) =>
      fetch(`${plane.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { ...headers, ...(o.cookie ? { cookie: o.cookie } : {}) },
        body: new URLSearchParams({ key: keys.owner, next: '/', ...(o.csrf ? { csrf: o.csrf } : {}) }),
      });
    const own = await loginPage();
    // what a browser sends from a page of another site: Sec-Fetch-Site (no page can set it), a foreign Origin, or
    // Origin null (any page can send it, with its own no-referrer policy or from a sandboxed frame) without the form's token
    const foreign: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
    ];
    for (const headers of foreign) {
      const r = await post('/login', headers);
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.headers.get('set-cookie'), JSON.stringify(headers)).toBeNull();
    }
    // another page's stale or forged token, or the login page's token without its cookie: refused too
    expect((await post('/login', { origin: 'null' }, { csrf: own.token })).status).toBe(403);
    expect((await post('/login', { origin: 'null' }, { cookie: own.cookie, csrf: 'forged' })).status).toBe(403);
    // the plane's own login form (Origin null under its no-referrer policy, with the page's cookie and token), and a script without either header, sign in
    const sessions: string[] = [];
    for (const [headers, o] of [
      [{ 'sec-fetch-site': 'same-origin', origin: 'null' }, own],
      [{ origin: new URL(plane.url).origin }, own],
      [{}, {}],
    ] as const) {
      const r = await post('/login', headers, { cookie: o.cookie, csrf: 'token' in o ? o.token : undefined });
      expect(r.status, JSON.stringify(headers)).toBe(303);
      sessions.push(r.headers.get('set-cookie')!.split(';')[0]);
    }
    // a forced logout from another site ends nothing: the session still reads its pages
    const session = sessions[0];
    for (const headers of foreign) {
      const r = await post('/logout', headers, { cookie: session });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(r.headers.get('set-cookie')).toBeNull();
    }
    expect((await fetch(`${plane.url}/`, { redirect: 'manual', headers: { cookie: session } })).status).toBe(200);
    // the page's own Log out form carries the session's token
    const page = await (await fetch(`${plane.url}/`, { headers: { cookie: session } })).text();
    const logoutToken = /action="\/logout"><input type="hidden" name="csrf" value="([^"]+)"/.exec(page)?.[1];
    expect(logoutToken).toBeDefined();
    expect(
      (
        await post(
          '/logout',
          { 'sec-fetch-site': 'same-origin', origin: 'null' },
          { cookie: session, csrf: logoutToken },
        )
      ).status,
    ).toBe(303);
    expect((await fetch(`${plane.url}/`, { redirect: 'manual', headers: { cookie: session } })).status).toBe(303);
  });

  it('keys are stored hashed: no column holds a secret', async () => {
    const r = (await plane.database.db.execute(sql`SELECT * FROM api_keys`)) as unknown as { rows?: unknown[] };
    const dump = JSON.stringify(Array.isArray(r) ? r : r.rows);
    // a key is wm_<16 hex id>_<43-char secret>; only the id may be stored
    for (const k of Object.values(keys)) expect(dump).not.toContain(k.slice(20));
  });
});
