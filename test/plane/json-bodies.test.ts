/**
 * The JSON bodies of the control routes (claim, takeover, claim release, the
 * run requests' routes: ask, a fork's claim, an outcome report; and the admin
 * routes that take a body), from a hostile client over real sockets to a real
 * plane on PGlite. Every one is read as ingest reads its batch:
 * application/json only (415), within LIMITS.controlBodyBytes (413), within
 * the body deadline (408, connection closed); then validated strictly, the
 * 400 naming every problem. The inspector's forms that act on runs (retry,
 * recover and fork; cancel; a decision and the inbox's bulk approve) read
 * theirs within the same limit (413). A refused request changes nothing.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { count } from 'drizzle-orm';
import pino from 'pino';
import { createKey } from '../../plane/auth.js';
import { loadConfig } from '../../plane/config.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { apiKeys, claims, decisions, executions, projects, runRequests, runTakeovers } from '../../plane/db/schema.js';
import { csrfOf } from '../../inspector/csrf.js';
import { MIN_RETENTION_SECONDS } from '../../plane/retention.js';
import { startPlane, type RunningPlane } from '../../plane/server.js';
import { LIMITS } from '../../shared/limits.js';
import { call, openTestPlaneDatabase } from '../helpers/plane.js';
import { eventsOf, pause, step } from '../helpers/rows.js';

/** One JSON-bodied route: a body it accepts, and the fields an empty body lacks. */
interface BodyRoute {
  name: string;
  path: string;
  /** Its path in the OpenAPI document (default: `path` with the run's id as `{id}`). */
  doc?: string;
  key: () => string;
  valid: () => Record<string, unknown>;
  required: string[];
  /** The code of a body with problems (default INVALID_REQUEST). */
  invalid?: string;
}

/** One inspector form that acts on a run: the fields of a post it takes (with the session's token). */
interface FormRoute {
  name: string;
  path: string;
  fields: () => Record<string, string>;
}

interface Raw {
  socket: Socket;
  /** Everything the plane sent back so far. */
  answer(): string;
  opened: number;
  /** When the first byte of an answer arrived. */
  answered: Promise<number>;
  closed: Promise<number>;
}

/** A POST over a raw socket: `head` headers (Host and the key, if any, added), then `first` of the body, and nothing more until told. */
function rawPost(
  port: number,
  path: string,
  key: string,
  head: Record<string, string>,
  first: string | Buffer,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    let answeredAt: (t: number) => void = () => {};
    const r: Raw = {
      socket,
      answer: () => answer,
      opened: 0,
      answered: new Promise((a) => (answeredAt = a)),
      closed: new Promise((c) => socket.once('close', () => c(performance.now()))),
    };
    socket.on('data', (d) => {
      if (!answer) answeredAt(performance.now());
      answer += d.toString();
    });
    socket.once('error', reject);
    socket.once('connect', () => {
      const lines = [
        `POST ${path} HTTP/1.1`,
        'Host: 127.0.0.1',
        ...(key ? [`Authorization: Bearer ${key}`] : []),
        ...Object.entries(head).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
      socket.write(first, () => {
        r.opened = performance.now();
        resolve(r);
      });
    });
  });
}

/** `p`'s value, or 'no answer' once `ms` pass first. */
/** The plane's body idle deadline here: short, and not the default, so the configured one is seen to reach every route. */
const IDLE_MS = 2_000;

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'no answer'> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<'no answer'>((r) => (timer = setTimeout(() => r('no answer'), ms)))]).finally(
    () => clearTimeout(timer),
  );
};

describe('JSON bodies of the control routes (plane on PGlite, real sockets)', () => {
  let plane: RunningPlane;
  let database: PlaneDatabase;
  let operator = '';
  let writer = '';
  let approver = '';
  let checkpointId = '';
  let operate = '';
  /** A fork request of jb-run, recorded for the claim and outcome routes. */
  let requestId = '';
  /** An inspector session (read, operate, cancel, approve) and its forms' token. */
  let cookie = '';
  let csrf = '';
  const sockets: Socket[] = [];

  const routes: BodyRoute[] = [
    {
      name: 'claim',
      path: '/v1/executions/jb-pause/claim',
      key: () => writer,
      valid: () => ({ checkpointId, writerId: 'w-b' }),
      required: ['checkpointId', 'writerId'],
    },
    {
      name: 'claim release',
      path: '/v1/executions/jb-pause/claim/release',
      key: () => writer,
      valid: () => ({ checkpointId, writerId: 'w-b' }),
      required: ['checkpointId', 'writerId'],
    },
    {
      name: 'takeover',
      path: '/v1/executions/jb-run/takeover',
      key: () => writer,
      valid: () => ({ writerId: 'w-b', seq: 0 }),
      required: ['writerId', 'seq'],
    },
    {
      name: 'run request',
      path: '/v1/executions/jb-failed/requests',
      key: () => operate,
      valid: () => ({ action: 'retry', reason: 'upstream is back' }),
      required: ['action'],
      invalid: 'INVALID_RUN_REQUEST',
    },
    {
      name: 'run request claim',
      path: '/v1/requests/{request}/claim',
      doc: '/v1/requests/{requestId}/claim',
      key: () => writer,
      valid: () => ({ writerId: 'w-b' }),
      required: ['writerId'],
    },
    {
      name: 'run request outcome',
      path: '/v1/requests/{request}/outcome',
      doc: '/v1/requests/{requestId}/outcome',
      key: () => writer,
      valid: () => ({ writerId: 'w-b', outcome: 'refused', code: 'TOOL_NOT_FOUND', message: 'no such tool here' }),
      required: ['writerId', 'outcome'],
    },
    {
      name: 'admin projects',
      path: '/v1/admin/projects',
      key: () => operator,
      valid: () => ({ name: 'jb-new' }),
      required: ['name'],
    },
    {
      name: 'admin keys',
      path: '/v1/admin/keys',
      key: () => operator,
      valid: () => ({ project: 'jb', name: 'jb-key', scopes: ['read'] }),
      required: ['scopes'],
    },
    {
      name: 'admin prune',
      path: '/v1/admin/prune',
      key: () => operator,
      valid: () => ({ olderThanSeconds: MIN_RETENTION_SECONDS }),
      required: ['olderThanSeconds'],
    },
  ];

  /** The inspector's forms that act on a run, each read within LIMITS.controlBodyBytes before the session is looked at. */
  const forms: FormRoute[] = [
    { name: 'retry/recover/fork form', path: '/runs/jb-failed/requests', fields: () => ({ csrf, action: 'retry' }) },
    { name: 'cancel form', path: '/runs/jb-run/cancel', fields: () => ({ csrf, confirm: 'yes' }) },
    {
      name: 'decision form',
      path: '/runs/jb-pause/decision',
      fields: () => ({ csrf, checkpointId, approved: 'true' }),
    },
    {
      name: 'bulk approve form',
      path: '/approvals',
      fields: () => ({ csrf, pause: `${checkpointId}:jb-pause`, approved: 'true' }),
    },
  ];

  /** A route's path, with the recorded request's id. */
  const pathOf = (r: { path: string }) => r.path.replace('{request}', requestId);

  /**
   * What a refused request must leave as it was: row counts, the pause still open, the runs' statuses (none
   * cancelled), the run still its writer's, the run requests as they were (none recorded, claimed or settled).
   */
  const state = async () => {
    const db = database.db;
    const n = async (
      t: typeof projects | typeof apiKeys | typeof claims | typeof runTakeovers | typeof executions | typeof decisions,
    ) => (await db.select({ n: count() }).from(t))[0].n;
    const run = await call(`${plane.url}/v1/executions/jb-pause`, { key: writer });
    return {
      projects: await n(projects),
      apiKeys: await n(apiKeys),
      claims: await n(claims),
      runTakeovers: await n(runTakeovers),
      executions: await n(executions),
      decisions: await n(decisions),
      statuses: await db
        .select({ id: executions.executionId, status: executions.status })
        .from(executions)
        .orderBy(executions.executionId),
      requests: await db
        .select({ state: runRequests.state, claimedBy: runRequests.claimedBy, settledBy: runRequests.settledBy })
        .from(runRequests)
        .orderBy(runRequests.seq),
      pause: run.body.pause?.state,
    };
  };

  const post = (r: BodyRoute, init: { headers?: Record<string, string>; body?: string | Uint8Array<ArrayBuffer> }) =>
    fetch(`${plane.url}${pathOf(r)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${r.key()}`, ...init.headers },
      body: init.body,
    }).then(async (res) => ({
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as { error: { code: string; message: string } },
    }));

  beforeAll(async () => {
    database = await openTestPlaneDatabase('pglite');
    // a body deadline of its own (the plane's configured one reaches every route that reads a body); a takeover
    // delay of 1 ms, so a takeover that got through would win, and a refused one is seen to change nothing
    plane = await startPlane(
      loadConfig({}, { host: '127.0.0.1', port: 0, dataDir: 'memory://', takeoverAfterMs: 1, bodyIdleMs: IDLE_MS }),
      { database, logger: pino({ level: 'silent' }) },
    );
    operator = (await createKey(database.db, { createProject: true, project: 'ops', scopes: ['admin', 'operator'] }))
      .key;
    writer = (await createKey(database.db, { createProject: true, project: 'jb', scopes: ['ingest', 'read'] })).key;
    approver = (await createKey(database.db, { project: 'jb', scopes: ['approve'] })).key;
    operate = (await createKey(database.db, { project: 'jb', scopes: ['operate'] })).key;
    let runRow = '';
    const rows = await eventsOf(async (s) => {
      await s.put(step('jb-pause', 0));
      checkpointId = (await s.recordInterrupt(pause('jb-pause', 1), { reason: 'r', context: null })).checkpoint.id;
      runRow = (await s.put(step('jb-run', 0))).id;
      // a failed run, for a retry
      await s.put(step('jb-failed', 0));
      await s.put({
        ...step('jb-failed', 1),
        nodeId: 'run_end',
        step: 'run_end',
        status: 'failed',
        nodeOutput: { error: { code: 'MODEL_ERROR', message: 'upstream 500' } },
      });
    }, 'w-a');
    expect(
      (await call(`${plane.url}/v1/ingest`, { key: writer, json: { protocol: 1, writerId: 'w-a', rows } })).body,
    ).toMatchObject({ accepted: rows.length });
    const fork = await call(`${plane.url}/v1/executions/jb-run/requests`, {
      key: operate,
      json: { action: 'fork', checkpointId: runRow },
    });
    expect(fork.status).toBe(201);
    requestId = fork.body.requestId;
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({
        key: (await createKey(database.db, { project: 'jb', scopes: ['read', 'operate', 'cancel', 'approve'] })).key,
        next: '/',
      }),
    });
    expect(login.status).toBe(303);
    cookie = login.headers.get('set-cookie')!.split(';')[0];
    csrf = csrfOf(cookie.split('=')[1]);
  });
  afterEach(() => {
    for (const s of sockets.splice(0)) s.destroy();
  });
  afterAll(async () => {
    await plane?.close();
    await database?.close();
  });

  it('a body not sent as application/json (another Content-Type, or none) is 415 UNSUPPORTED_MEDIA_TYPE on every JSON-bodied route, and changes nothing', async () => {
    const before = await state();
    for (const r of routes) {
      const json = JSON.stringify(r.valid());
      for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
        const a = await post(r, { headers: { 'content-type': type }, body: json });
        expect([r.name, type, a.status, a.body.error.code]).toEqual([r.name, type, 415, 'UNSUPPORTED_MEDIA_TYPE']);
      }
      // a byte body: fetch sends it with no Content-Type
      const untyped = await post(r, { body: new TextEncoder().encode(json) });
      expect([r.name, untyped.status, untyped.body.error.code]).toEqual([r.name, 415, 'UNSUPPORTED_MEDIA_TYPE']);
    }
    expect(await state()).toEqual(before);
  });

  it("a POST without a body, or with an empty JSON body, is 400 INVALID_REQUEST (a run request's INVALID_RUN_REQUEST) naming every missing field, and changes nothing", async () => {
    const before = await state();
    for (const r of routes) {
      for (const headers of [{}, { 'content-type': 'application/json' }] as Record<string, string>[]) {
        const a = await post(r, { headers });
        expect([r.name, headers, a.status, a.body.error.code]).toEqual([
          r.name,
          headers,
          400,
          r.invalid ?? 'INVALID_REQUEST',
        ]);
        for (const field of r.required) expect(a.body.error.message, r.name).toContain(`${field}: `);
      }
    }
    expect(await state()).toEqual(before);
  });

  it('a body that stalls is answered 408 BODY_TIMEOUT at the body deadline and its connection closed, on every JSON-bodied route; nothing changes', async () => {
    const before = await state();
    const idleMs = IDLE_MS;
    // Content-Length 100, five bytes sent, then nothing: all the routes at once, and the decision route (its body read the same way)
    const stalling = [...routes, { name: 'decision', path: '/v1/executions/jb-pause/decision', key: () => approver }];
    const stalled = await Promise.all(
      stalling.map((r) =>
        rawPost(
          plane.port,
          pathOf(r),
          r.key(),
          { 'Content-Type': 'application/json', 'Content-Length': '100' },
          '{"wri',
        ),
      ),
    );
    sockets.push(...stalled.map((s) => s.socket));
    const closedAt = await Promise.all(stalled.map((s) => within(s.closed, idleMs + 30_000)));
    stalled.forEach((s, i) => {
      const name = stalling[i].name;
      expect(closedAt[i], `${name}: the connection was never closed`).not.toBe('no answer');
      expect(s.answer(), name).toMatch(/^HTTP\/1\.1 408 /);
      expect(s.answer(), name).toMatch(/\r\nconnection: close\r\n/i);
      expect(s.answer(), name).toContain('BODY_TIMEOUT');
      const ms = (closedAt[i] as number) - s.opened;
      expect(ms, name).toBeGreaterThanOrEqual(idleMs - 100);
      expect(ms, name).toBeLessThan(idleMs + 10_000);
    });
    expect(await state()).toEqual(before);
  }, 90_000);

  it('a body declared over LIMITS.controlBodyBytes is 413 TOO_LARGE before it is read; one that grows past it (chunked, or gzip inflating) is cut at the limit; nothing changes', async () => {
    const before = await state();
    for (const r of routes) {
      // 50 MB declared, 1 KiB sent: answered at once, the rest never asked for. "At once" is in the answer, not in
      // ms: a plane that waited for the rest would answer 408 BODY_TIMEOUT at its 2 s body deadline, not 413; the
      // 30 s only bounds a hang
      const big = await rawPost(
        plane.port,
        pathOf(r),
        r.key(),
        { 'Content-Type': 'application/json', 'Content-Length': String(50_000_000) },
        `{"pad":"${'a'.repeat(1024)}`,
      );
      sockets.push(big.socket);
      expect(await within(big.answered, 30_000), `${r.name}: declared`).not.toBe('no answer');
      expect(big.answer(), r.name).toMatch(/^HTTP\/1\.1 413 /);
      expect(big.answer(), r.name).toContain('TOO_LARGE');

      // chunked: a little past the limit sent, and never finished
      const pad = 'a'.repeat(LIMITS.controlBodyBytes + 16 * 1024);
      const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
      const chunked = await rawPost(
        plane.port,
        pathOf(r),
        r.key(),
        { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
        chunk('{"pad":"') + chunk(pad),
      );
      sockets.push(chunked.socket);
      expect(await within(chunked.answered, 30_000), `${r.name}: chunked`).not.toBe('no answer');
      expect(chunked.answer(), r.name).toMatch(/^HTTP\/1\.1 413 /);
      expect(chunked.answer(), r.name).toContain('TOO_LARGE');

      // 1 KiB of gzip inflating to 1 MiB
      const bomb = gzipSync(JSON.stringify({ ...r.valid(), pad: 'a'.repeat(1024 * 1024) }));
      const inflated = await post(r, {
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: new Uint8Array(bomb),
      });
      expect([r.name, inflated.status, inflated.body.error.code]).toEqual([r.name, 413, 'TOO_LARGE']);
    }
    expect(await state()).toEqual(before);
  }, 180_000);

  it("the inspector's forms that act on a run (retry/recover/fork, cancel, a decision, bulk approve): a body over LIMITS.controlBodyBytes is 413 TOO_LARGE, declared or chunked, its connection closed; nothing changes", async () => {
    const before = await state();
    const form = 'application/x-www-form-urlencoded';
    for (const f of forms) {
      // a real post of the form (this session's token), its reason padded past the limit
      const fields = `${new URLSearchParams(f.fields())}&reason=`;
      // declared: answered at once, the rest never asked for (a plane that waited for it would answer 408 at its
      // body deadline, not 413; the 30 s only bounds a hang)
      const declared = await rawPost(
        plane.port,
        f.path,
        '',
        { Cookie: cookie, 'Content-Type': form, 'Content-Length': String(LIMITS.controlBodyBytes + 1) },
        fields,
      );
      sockets.push(declared.socket);
      expect(await within(declared.answered, 30_000), `${f.name}: declared`).not.toBe('no answer');
      expect(declared.answer(), f.name).toMatch(/^HTTP\/1\.1 413 /);
      expect(declared.answer(), f.name).toContain(`TOO_LARGE: a form is at most ${LIMITS.controlBodyBytes} bytes`);
      expect(declared.answer(), f.name).toMatch(/\r\nconnection: close\r\n/i);

      // chunked, no length to refuse it by: a little past the limit sent, and never finished
      const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
      const chunked = await rawPost(
        plane.port,
        f.path,
        '',
        { Cookie: cookie, 'Content-Type': form, 'Transfer-Encoding': 'chunked' },
        chunk(fields) + chunk('a'.repeat(LIMITS.controlBodyBytes + 16 * 1024)),
      );
      sockets.push(chunked.socket);
      expect(await within(chunked.answered, 30_000), `${f.name}: chunked`).not.toBe('no answer');
      expect(chunked.answer(), f.name).toMatch(/^HTTP\/1\.1 413 /);
      expect(chunked.answer(), f.name).toContain('TOO_LARGE');
    }
    expect(await state()).toEqual(before);
  }, 120_000);

  it('unknown fields are refused and the 400 names every problem, path and message; nothing changes', async () => {
    const before = await state();
    const projects = await call(`${plane.url}/v1/admin/projects`, { key: operator, json: { name: 'jb-x', extra: 1 } });
    expect(projects.status).toBe(400);
    expect(projects.body.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('"extra"') });

    const keys = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'nope', scopes: ['read', 'bogus'], extra: 1 },
    });
    expect(keys.status).toBe(400);
    expect(keys.body.error.code).toBe('INVALID_REQUEST');
    // every problem at once: the unknown field, the unknown scope, the unknown project
    expect(keys.body.error.details.problems).toEqual([
      'extra: not a field of a key request (known: project, name, scopes)',
      expect.stringMatching(/^scopes: unknown scope\(s\): bogus /),
      expect.stringMatching(/^project: no project 'nope'/),
    ]);

    const prune = await call(`${plane.url}/v1/admin/prune`, {
      key: operator,
      json: { olderThanSeconds: 1, dryrun: true },
    });
    expect(prune.status).toBe(400);
    expect(prune.body.error.message).toContain('olderThanSeconds: ');
    expect(prune.body.error.message).toContain('"dryrun"');

    const claim = await call(`${plane.url}/v1/executions/jb-pause/claim`, {
      key: writer,
      json: { checkpointId: 'nope', writerId: 'w-b', extra: 1 },
    });
    expect(claim.status).toBe(400);
    expect(claim.body.error.message).toContain('checkpointId: ');
    expect(claim.body.error.message).toContain('"extra"');

    const takeover = await call(`${plane.url}/v1/executions/jb-run/takeover`, {
      key: writer,
      json: { writerId: 'w-b', seq: -1, extra: 1 },
    });
    expect(takeover.status).toBe(400);
    expect(takeover.body.error.message).toContain('seq: ');
    expect(takeover.body.error.message).toContain('"extra"');

    const ask = await call(`${plane.url}/v1/executions/jb-failed/requests`, {
      key: operate,
      json: { action: 'retry', extra: 1 },
    });
    expect(ask.status).toBe(400);
    expect(ask.body.error.code).toBe('INVALID_RUN_REQUEST');
    expect(ask.body.error.details.problems).toEqual(["unknown field 'extra'"]);

    const forkClaim = await call(`${plane.url}/v1/requests/${requestId}/claim`, {
      key: writer,
      json: { writerId: '', extra: 1 },
    });
    expect(forkClaim.status).toBe(400);
    expect(forkClaim.body.error.message).toContain('writerId: ');
    expect(forkClaim.body.error.message).toContain('"extra"');

    const outcome = await call(`${plane.url}/v1/requests/${requestId}/outcome`, {
      key: writer,
      json: { writerId: 'w-b', outcome: 'done', extra: 1 },
    });
    expect(outcome.status).toBe(400);
    expect(outcome.body.error.code).toBe('INVALID_REQUEST');
    expect(outcome.body.error.details.problems).toEqual([expect.stringMatching(/^outcome: /), "unknown field 'extra'"]);

    expect(await state()).toEqual(before);
    expect(
      (await call(`${plane.url}/v1/admin/projects`, { key: operator })).body.items.map((p: { name: string }) => p.name),
    ).not.toContain('jb-x');
  });

  it('the decision route (its body validated by @hono/zod-openapi): a body not sent as JSON is 415, not a 500, and no body is 400 naming every missing field', async () => {
    const approver = await createKey(database.db, { project: 'jb', scopes: ['approve'] });
    const decision: BodyRoute = {
      name: 'decision',
      path: '/v1/executions/jb-pause/decision',
      key: () => approver.key,
      valid: () => ({ checkpointId, approved: true }),
      required: [],
    };
    const before = await state();
    const typed = await post(decision, {
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify(decision.valid()),
    });
    expect([typed.status, typed.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const untyped = await post(decision, { body: new TextEncoder().encode(JSON.stringify(decision.valid())) });
    expect([untyped.status, untyped.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const empty = await post(decision, {});
    expect(empty.status).toBe(400);
    expect(empty.body.error.message).toContain('checkpointId');
    expect(empty.body.error.message).toContain('approved');
    expect(await state()).toEqual(before);
  });

  it('a query parameter given more than once is 400 INVALID_REQUEST saying so, not a coerced NaN', async () => {
    for (const path of [
      '/v1/quarantine?limit=1&limit=2',
      '/v1/executions?limit=1&limit=2',
      '/v1/decisions?wait=0&wait=1',
      '/v1/changes?limit=5&limit=5',
    ]) {
      const r = await call(`${plane.url}${path}`, { key: writer });
      expect([path, r.status, r.body.error?.code]).toEqual([path, 400, 'INVALID_REQUEST']);
      expect(r.body.error.message, path).toMatch(/^(limit|wait): given more than once$/);
    }
    expect((await call(`${plane.url}/v1/quarantine?limit=1`, { key: writer })).status).toBe(200);
  });

  it('the OpenAPI document marks each of these bodies required and lists the 408, 413 and 415 answers', async () => {
    const doc = (await call(`${plane.url}/openapi.json`)).body as {
      paths: Record<string, { post: { requestBody?: { required?: boolean }; responses: Record<string, unknown> } }>;
    };
    for (const r of routes) {
      const op = doc.paths[r.doc ?? r.path.replace(/jb-(pause|run|failed)/, '{id}')].post;
      expect([r.name, op.requestBody?.required]).toEqual([r.name, true]);
      expect(Object.keys(op.responses), r.name).toEqual(expect.arrayContaining(['408', '413', '415']));
    }
  });

  it('after every refusal, each route still takes a good body (gzip too): the pause is claimed and released, the run taken over, the project made, a retry asked, the fork claimed and settled; each form acts', async () => {
    const at = (name: string) => routes.find((r) => r.name === name)!;
    const ok = async (name: string, o: { gzip?: boolean } = {}) => {
      const r = at(name);
      return call(`${plane.url}${pathOf(r)}`, { key: r.key(), json: r.valid(), gzip: o.gzip });
    };
    expect(await state()).toMatchObject({ pause: 'open', runTakeovers: 0 });
    expect((await ok('claim')).body).toMatchObject({ writerId: 'w-b', checkpointId });
    expect((await ok('claim release', { gzip: true })).body).toEqual({ released: true });
    expect((await ok('takeover')).body).toMatchObject({ writerId: 'w-b', takenFrom: 'w-a' });
    expect((await ok('admin projects', { gzip: true })).status).toBe(201);
    expect((await ok('admin keys')).body).toMatchObject({ project: 'jb', name: 'jb-key', scopes: ['read'] });
    expect((await ok('admin prune')).body).toMatchObject({ dryRun: false, items: [] });
    const asked = await ok('run request', { gzip: true });
    expect([asked.status, asked.body.state, asked.body.action]).toEqual([201, 'open', 'retry']);
    expect((await ok('run request claim')).body).toMatchObject({ outcome: 'won', request: { claimedBy: 'w-b' } });
    expect((await ok('run request outcome')).body).toMatchObject({ state: 'refused', code: 'TOOL_NOT_FOUND' });

    // the forms, each within the limit: a fork asked, the pause approved from the inbox, the run cancelled
    const post = (path: string, fields: Record<string, string>) =>
      fetch(`${plane.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie },
        body: new URLSearchParams(fields),
      });
    expect((await post('/runs/jb-failed/requests', { csrf, action: 'fork', seq: '0' })).status).toBe(303);
    const bulk = await post('/approvals', { csrf, pause: `${checkpointId}:jb-pause`, approved: 'true' });
    expect([bulk.status, await bulk.text()]).toEqual([200, expect.stringContaining('1 decision recorded')]);
    expect((await post('/runs/jb-run/cancel', { csrf, confirm: 'yes' })).status).toBe(303);
    expect((await state()).statuses).toContainEqual({ id: 'jb-run', status: 'cancelled' });
    expect((await state()).requests.map((r) => r.state)).toEqual(['refused', 'open', 'open']);
  });
});
