/**
 * A plane data dir a new database cannot be made in (PGlite's initdb or the
 * migrations fail there) is refused with DATA_DIR_INIT_FAILED, naming the
 * folder and why.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { openPlaneDatabase } from '../../plane/db/open.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-data-dir-init-');
afterAll(() => tmp.cleanup());

it('a folder a new database cannot be made in is refused with DATA_DIR_INIT_FAILED naming it and why', async () => {
  const dir = tmp.file('not-a-database');
  mkdirSync(dir);
  // a file where Postgres keeps a folder
  writeFileSync(`${dir}/global`, 'not a folder');
  const refused = await openPlaneDatabase({ dataDir: dir }).then(
    () => null,
    (e: { code?: string; message: string; details?: Record<string, unknown> }) => e,
  );
  expect(refused?.code).toBe('DATA_DIR_INIT_FAILED');
  expect(refused?.message).toContain(`could not make the plane's database in ${dir} (`);
  expect(refused?.details?.dataDir).toBe(dir);
  expect(String(refused?.details?.stderr)).not.toBe('');
}, 120_000);
