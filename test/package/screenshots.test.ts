/**
 * The guide's pictures are the whole set: every page route of both UIs has a shot in tools/screenshot-pages.ts,
 * and each shot's four pictures (1280 and 390 px, light and dark) are in docs/img and linked from the guide.
 * Taking them is `npm run screenshots`; this checks what it took still covers what the UIs serve.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { localUiApp } from '../../client/ui/serve.js';
import type { PlaneDatabase } from '../../plane/db/open.js';
import { inspectorRoutes } from '../../plane/ui/routes.js';
import { file, SCHEMES, SHOTS, uncoveredRoutes, WIDTHS } from '../../tools/screenshot-pages.js';
import { openTestPlaneDatabase } from '../helpers/plane.js';
import { ROOT } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

describe('the guide pictures every page of both UIs', () => {
  const tmp = scratchDir();
  let store: SqliteCheckpointer;
  let database: PlaneDatabase;

  beforeAll(async () => {
    store = new SqliteCheckpointer({ path: tmp.file('runs.db'), writerId: 'laptop' });
    database = await openTestPlaneDatabase('pglite');
  });
  afterAll(async () => {
    await store?.close();
    await database?.close();
    tmp.cleanup();
  });

  it('has a shot of every page route the plane inspector and waymark ui serve', () => {
    expect(uncoveredRoutes(inspectorRoutes(database.db).routes, localUiApp(store).routes)).toEqual([]);
  });

  it('keeps each shot at both widths in both schemes in docs/img, linked from the guide', () => {
    const guide = readFileSync(join(ROOT, 'docs', 'GUIDE.md'), 'utf8');
    const pictures = SHOTS.flatMap((s) => WIDTHS.flatMap((w) => SCHEMES.map((c) => file(s, w, c))));
    expect(pictures.length).toBe(SHOTS.length * 4);
    expect(pictures.filter((p) => !existsSync(join(ROOT, 'docs', 'img', p)))).toEqual([]);
    expect(pictures.filter((p) => !guide.includes(`(img/${p})`))).toEqual([]);
  });
});
