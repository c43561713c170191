/**
 * docs/GUIDE.md's claim that every subpath type-checks in a strict consumer
 * (`skipLibCheck: false`) holds for @types/node from the oldest major waymark
 * supports (20, `engines`) to the newest on the registry, not only for the
 * version pinned in devDependencies (test/package/pack.test.ts checks that
 * one). `EventEmitter<T>['emit']` changed shape in @types/node 25, and
 * `Replica`'s listener-isolating `emit` override must be valid against both
 * shapes while still checking a ReplicaEvents name's arguments.
 *
 * dist/ is the one test/global-setup.ts built for this run, packed without
 * running prepack again. The tarball and the peers' types are installed once
 * into a temp consumer; each case installs its @types/node there, never into
 * the repository.
 *
 * NETWORK: the pinned majors (20, 24, 25, 26) install from the npm cache when
 * it has them, else from the registry; WAYMARK_TEST_NODE_TYPES_LATEST=1 also
 * resolves `@types/node@latest` against the registry.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { devSpec, RESOLUTIONS, SUBPATHS, TYPE_PEERS, writeStrictTsconfig } from '../helpers/consumer.js';
import { scratchDir } from '../helpers/tmp.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const NPM_TIMEOUT_MS = 240_000;
const TSC_TIMEOUT_MS = 180_000;
const tmp = scratchDir('waymark-node-types-');
const app = tmp.file('consumer');

function npm(args: string[], cwd: string, cache: '--prefer-offline' | '--prefer-online' = '--prefer-offline'): void {
  const r = spawnSync('npm', [...args, '--no-audit', '--no-fund', cache, '--ignore-scripts'], {
    cwd,
    encoding: 'utf8',
    timeout: NPM_TIMEOUT_MS,
  });
  expect(r.status, `npm ${args.join(' ')}: ${r.error ?? ''}${r.stderr}`).toBe(0);
}

/** Every subpath, plus what a consumer does with a Replica's events: typed listeners, and emit arguments checked. */
const CONSUMER = `${SUBPATHS.map((s, i) => `import * as m${i} from '${s}';`).join('\n')}
import type { DrainState, Replica } from 'waymark';
export const all = [${SUBPATHS.map((_, i) => `m${i}`).join(', ')}];
export function watch(r: Replica): void {
  r.on('state', (s) => {
    const state: DrainState = s;
    void state;
  });
  r.once('ack', ({ synced, quarantined }) => void (synced + quarantined));
  r.emit('drained');
  // @ts-expect-error a ReplicaEvents name with the wrong arguments
  r.emit('state', 42);
}
`;

beforeAll(() => {
  const out = tmp.file('pack');
  mkdirSync(out, { recursive: true });
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: NPM_TIMEOUT_MS,
    }),
  ) as { filename: string }[];
  mkdirSync(app, { recursive: true });
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', type: 'module', private: true }),
  );
  // the peers every subpath's types name, at the versions the repo is tested with
  npm(['install', join(out, packed[0].filename), ...TYPE_PEERS.map(devSpec)], app);
  writeFileSync(join(app, 'index.ts'), CONSUMER);
  for (const [moduleResolution, module] of RESOLUTIONS) writeStrictTsconfig(app, moduleResolution, module);
}, 2 * NPM_TIMEOUT_MS);
afterAll(() => tmp.cleanup());

describe('a strict consumer type-checks every subpath across @types/node majors (needs the npm registry or its cache)', () => {
  // the oldest major waymark supports, the last one before EventEmitter's emit changed shape, and the newest known
  // when this was written; WAYMARK_TEST_NODE_TYPES_LATEST=1 adds whatever the registry has now
  const ranges = ['20', '24', '25', '26', ...(process.env.WAYMARK_TEST_NODE_TYPES_LATEST === '1' ? ['latest'] : [])];
  for (const range of ranges) {
    const cache = range === 'latest' ? '--prefer-online' : '--prefer-offline';
    it(
      `@types/node@${range}: no errors with skipLibCheck false, moduleResolution node16 and bundler`,
      () => {
        npm(['install', `@types/node@${range}`], app, cache);
        const version = JSON.parse(readFileSync(join(app, 'node_modules/@types/node/package.json'), 'utf8'))
          .version as string;
        for (const [moduleResolution] of RESOLUTIONS) {
          const tsc = spawnSync(process.execPath, [TSC, '-p', `tsconfig.${moduleResolution}.json`], {
            cwd: app,
            encoding: 'utf8',
            timeout: TSC_TIMEOUT_MS,
          });
          expect(`${tsc.stdout}${tsc.stderr}`, `@types/node ${version}, moduleResolution ${moduleResolution}`).toBe('');
          expect(tsc.status).toBe(0);
        }
      },
      NPM_TIMEOUT_MS + 2 * TSC_TIMEOUT_MS,
    );
  }
});
