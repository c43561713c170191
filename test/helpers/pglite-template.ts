/**
 * The migrated PGlite data dir that test planes start from. Migrating a fresh
 * PGlite was most of a test plane's start (10-30 s on a loaded 2-core
 * machine, once per test file). test/global-setup.ts makes the dump once and
 * keeps it in the OS temp dir, named by a hash of everything it is made of
 * (the migrations, the opener, PGlite's and drizzle-orm's versions): a later
 * run with the same inputs reuses it. A plane that loads it still runs the
 * migrator, which finds nothing to do.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A freshly migrated in-memory PGlite, dumped (an uncompressed tarball). */
export async function makePgliteTemplate(): Promise<Blob> {
  // loaded only to make one: a run that finds the file loads no PGlite in the main process
  const { openPlaneDatabase } = await import('../../plane/db/open.js');
  const d = await openPlaneDatabase({ dataDir: 'memory://' });
  const client = (d.db as unknown as { $client: { dumpDataDir(c?: string): Promise<Blob> } }).$client;
  const blob = await client.dumpDataDir('none');
  await d.close();
  return blob;
}

/** The hash of what a template is made of. */
function templateKey(): string {
  const h = createHash('sha256');
  const files = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));
  for (const f of [...files(join(ROOT, 'drizzle')), join(ROOT, 'plane/db/open.ts')])
    h.update(f.slice(ROOT.length)).update(readFileSync(f));
  for (const pkg of ['@electric-sql/pglite', 'drizzle-orm'])
    h.update(JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version);
  return h.digest('hex').slice(0, 16);
}

/** The template's file for the current inputs, made if missing (written aside, then renamed: runs at once never read half a file). */
export async function pgliteTemplateFile(): Promise<string> {
  const file = join(tmpdir(), `waymark-pglite-template-${templateKey()}.tar`);
  if (existsSync(file)) return file;
  const blob = await makePgliteTemplate();
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, Buffer.from(await blob.arrayBuffer()));
  renameSync(aside, file);
  return file;
}
