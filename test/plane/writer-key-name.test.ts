/**
 * A writer is named by its API key's name, which is another person's text: the API answers it as stored, and the
 * inspector shows its characters a terminal acts on (a reordering mark) as escapes.
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKey } from '../../plane/auth.js';
import { apiKeys } from '../../plane/db/schema.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { eventsOf, step } from '../helpers/rows.js';

// the keys table holds any text: the admin API's check of names is not the table's
const NAME = 'ops \u202egnp.exe';
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  const made = await createKey(plane.database.db, { createProject: true, project: 'p', scopes: ['ingest', 'read'] });
  key = made.key;
  await plane.database.db.update(apiKeys).set({ name: NAME }).where(eq(apiKeys.id, made.id));
  const rows = await eventsOf(async (s) => {
    await s.put(step('named-run', 0));
  }, 'laptop-k');
  expect(
    (await call(`${plane.url}/v1/ingest`, { key, json: { protocol: 1, writerId: 'laptop-k', rows } })).body.rejected,
  ).toBe(0);
});
afterAll(async () => {
  await plane?.close();
});

it("the writers API answers a key's name as stored; the writers page shows its reordering mark as an escape", async () => {
  const items = (await call(`${plane.url}/v1/writers`, { key })).body.items as { writerId: string; keyName: string }[];
  expect(items.find((w) => w.writerId === 'laptop-k')?.keyName).toBe(NAME);

  const login = await fetch(`${plane.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ key, next: '/' }),
  });
  const cookie = login.headers.get('set-cookie')!.split(';')[0];
  const html = await (await fetch(`${plane.url}/writers`, { headers: { cookie } })).text();
  expect(html).toContain('ops \\u202egnp.exe <span class="mono">(laptop-k)</span>');
  expect(html).not.toContain('\u202e');
});
