/**
 * The admin endpoints (projects and keys through the running plane), on
 * PGlite and on Postgres. Cross-project access is in test/faults/tenancy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';

const pg = await pgReady('admin endpoints on postgres');

function adminSuite(kind: () => 'pglite' | { url: string }) {
  let plane: TestPlane;
  let operator = '';
  let acmeAdmin = '';
  beforeAll(async () => {
    plane = await startTestPlane(kind());
    operator = await plane.key('ops', ['admin', 'operator']);
  });
  afterAll(async () => plane?.close());

  it('an operator creates a project; a project admin makes, lists and revokes keys of its own project; the secret is in the create answer only', async () => {
    const p = await call(`${plane.url}/v1/admin/projects`, { key: operator, json: { name: 'acme' } });
    expect(p.status).toBe(201);
    expect(p.body).toMatchObject({ name: 'acme', id: expect.stringMatching(/^prj_/) });
    expect(
      (await call(`${plane.url}/v1/admin/projects`, { key: operator, json: { name: 'acme' } })).body.error.code,
    ).toBe('PROJECT_EXISTS');
    const made = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'acme', name: 'acme admin', scopes: ['admin'] },
    });
    expect(made.status).toBe(201);
    acmeAdmin = made.body.key;
    expect(acmeAdmin).toMatch(/^wm_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);

    // the project admin's key defaults to its own project
    const laptop = await call(`${plane.url}/v1/admin/keys`, {
      key: acmeAdmin,
      json: { name: 'laptop', scopes: ['ingest', 'read'] },
    });
    expect(laptop.status).toBe(201);
    expect(laptop.body).toMatchObject({ project: 'acme', name: 'laptop', scopes: ['ingest', 'read'], revokedAt: null });
    expect((await call(`${plane.url}/v1/executions`, { key: laptop.body.key })).status).toBe(200);

    const list = await call(`${plane.url}/v1/admin/keys`, { key: acmeAdmin });
    expect(list.body.items.map((k: { name: string }) => k.name)).toEqual(['acme admin', 'laptop']);
    expect(JSON.stringify(list.body)).not.toContain(laptop.body.key.slice(20));
    expect(
      (await call(`${plane.url}/v1/admin/keys`, { key: operator })).body.items
        .map((k: { project: string }) => k.project)
        .sort(),
    ).toEqual(['acme', 'acme', 'local', 'ops']);

    const revoked = await call(`${plane.url}/v1/admin/keys/${laptop.body.id}/revoke`, {
      key: acmeAdmin,
      method: 'POST',
    });
    expect(revoked).toMatchObject({ status: 200, body: { id: laptop.body.id, revoked: true } });
    // its holder is told the key was revoked, and when; a wrong secret for the same id is not
    const refused = await call(`${plane.url}/v1/executions`, { key: laptop.body.key });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('UNAUTHORIZED');
    expect(refused.body.error.message).toMatch(
      new RegExp(`^this API key \\(${laptop.body.id}\\) was revoked at \\d{4}-\\d\\d-\\d\\dT.*: use another key`),
    );
    const forged = `wm_${laptop.body.id}_${'A'.repeat(43)}`;
    expect((await call(`${plane.url}/v1/executions`, { key: forged })).body.error.message).toBe(
      'a valid API key is required (Authorization: Bearer wm_…)',
    );
    const twice = await call(`${plane.url}/v1/admin/keys/${laptop.body.id}/revoke`, { key: acmeAdmin, method: 'POST' });
    expect(twice).toMatchObject({ status: 409, body: { error: { code: 'KEY_REVOKED' } } });
    expect(
      (await call(`${plane.url}/v1/admin/keys/ffffffffffffffff/revoke`, { key: acmeAdmin, method: 'POST' })).body.error
        .code,
    ).toBe('KEY_NOT_FOUND');
  });

  it('terminal injection defect (endpoint): a key name with control characters or over 128 characters is 400 INVALID_REQUEST naming every problem, and makes no key', async () => {
    const count = async () => (await call(`${plane.url}/v1/admin/keys`, { key: operator })).body.items.length;
    const before = await count();
    const r = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'ops', name: `evil\x1b[31m\n${'x'.repeat(130)}`, scopes: ['read'] },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: {
        problems: [
          'name: is 140 characters long, more than 128',
          expect.stringContaining('name: holds characters a terminal acts on ("\\u001b", "\\u000a")'),
        ],
      },
    });
    expect(r.body.error.message).not.toMatch(/[\u0000-\u001f]/);
    expect(await count()).toBe(before);
    const ok = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'ops', name: 'x'.repeat(128), scopes: ['read'] },
    });
    expect(ok.status).toBe(201);
    expect(
      (await call(`${plane.url}/v1/admin/keys/${ok.body.id}/revoke`, { key: operator, method: 'POST' })).status,
    ).toBe(200);
  });

  it('typo tenant defect (endpoint): a key for an unknown project is 404 UNKNOWN_PROJECT listing the known ones, and makes no project', async () => {
    const r = await call(`${plane.url}/v1/admin/keys`, { key: operator, json: { project: 'acmee', scopes: ['read'] } });
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({
      code: 'UNKNOWN_PROJECT',
      details: { project: 'acmee', known: ['acme', 'local', 'ops'] },
    });
    expect(
      (await call(`${plane.url}/v1/admin/projects`, { key: operator })).body.items.map((p: { name: string }) => p.name),
    ).toEqual(['acme', 'local', 'ops']);
  });

  it('the admin endpoints are in the OpenAPI document, with bearer security', async () => {
    const doc = (await call(`${plane.url}/openapi.json`)).body as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    const ops = Object.entries(doc.paths).flatMap(([p, o]) =>
      Object.entries(o).map(([m, op]) => [`${m.toUpperCase()} ${p}`, op] as const),
    );
    const admin = ops.filter(([name]) => name.includes('/v1/admin/'));
    expect(admin.map(([name]) => name).sort()).toEqual([
      'GET /v1/admin/keys',
      'GET /v1/admin/projects',
      'POST /v1/admin/keys',
      'POST /v1/admin/keys/{id}/revoke',
      'POST /v1/admin/projects',
      'POST /v1/admin/prune',
    ]);
    for (const [, op] of admin) expect(op.security).toEqual([{ bearer: [] }]);
  });

  it('a bad request names every problem and changes nothing', async () => {
    const keys = async () => (await call(`${plane.url}/v1/admin/keys`, { key: operator })).body.items.length;
    const before = await keys();
    const r = await call(`${plane.url}/v1/admin/keys`, { key: operator, json: { project: 7, scopes: 'read' } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('INVALID_REQUEST');
    expect(r.body.error.message).toMatch(/project: .*; scopes: /);
    // an unknown scope, a bad name and a project no name can be (U+0000, which Postgres text cannot hold): all three named, not a 500
    const all = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'a\u0000b', name: 'x\u0001', scopes: ['root', 'read'] },
    });
    expect(all.status, JSON.stringify(all.body)).toBe(400);
    expect(all.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: {
        problems: [
          expect.stringMatching(/^scopes: unknown scope\(s\): root \(known: /),
          expect.stringContaining('name: holds characters a terminal acts on ("\\u0001")'),
          expect.stringContaining("project: no project 'a\\u0000b'"),
        ],
      },
    });
    const empty = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'ops', name: ' ', scopes: [] },
    });
    expect(empty.body.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { problems: ['scopes: a key needs at least one scope', 'name: is blank'] },
    });
    expect(
      (await call(`${plane.url}/v1/admin/keys`, { key: operator, json: { project: 'a\u0000b', scopes: ['read'] } }))
        .body.error,
    ).toMatchObject({ code: 'UNKNOWN_PROJECT' });
    for (const id of ['%00', 'a%00b', 'FFFFFFFFFFFFFFFF', 'x'.repeat(64)]) {
      expect(
        (await call(`${plane.url}/v1/admin/keys/${id}/revoke`, { key: operator, method: 'POST' })).body.error,
        id,
      ).toMatchObject({ code: 'KEY_NOT_FOUND' });
    }
    expect(await keys()).toBe(before);
    const bad = await call(`${plane.url}/v1/admin/projects`, { key: operator, json: { name: '../etc' } });
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'INVALID_REQUEST' } } });
    expect((await call(`${plane.url}/v1/admin/projects`, { key: operator })).body.items).toHaveLength(3);
  });

  it('a project named outside the naming rule (made by createKey({ createProject }), or before the rule) is still found: its admin makes keys', async () => {
    const { key: admin } = await createKey(plane.database.db, {
      createProject: true,
      project: 'My Shop',
      name: 'shop admin',
      scopes: ['admin'],
    });
    const made = await call(`${plane.url}/v1/admin/keys`, {
      key: admin,
      json: { name: 'approver', scopes: ['approve'] },
    });
    expect([made.status, made.body.project]).toEqual([201, 'My Shop']);
    const other = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'My Shop', name: 'reader', scopes: ['read'] },
    });
    expect([other.status, other.body.project]).toEqual([201, 'My Shop']);
    // a name no project can have is unknown, without the hint to create it (the rule would refuse it)
    const nul = await call(`${plane.url}/v1/admin/keys`, {
      key: operator,
      json: { project: 'a\u0000b', scopes: ['read'] },
    });
    expect(nul.body.error.code).toBe('UNKNOWN_PROJECT');
    expect(nul.body.error.message).not.toContain('projects create');
    expect(
      (await call(`${plane.url}/v1/admin/keys`, { key: operator, json: { project: 'nope', scopes: ['read'] } })).body
        .error.message,
    ).toContain("create it with 'waymark plane projects create nope'");
  });
}

describe('admin endpoints on pglite', () => adminSuite(() => 'pglite'));

describe.skipIf(!pg)('admin endpoints on postgres', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('waymark_admin');
  });
  afterAll(async () => db?.drop());
  adminSuite(() => ({ url: db.url }));
});
