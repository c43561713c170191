/**
 * Optional peer dependencies: a feature that needs some checks for all of
 * them before loading the code that imports them, so a missing peer says what
 * to install (MISSING_PEER, every missing one in one `npm install` command)
 * instead of Node's ERR_MODULE_NOT_FOUND from inside `dist/`.
 *
 * The versions are a table here rather than read from the installed
 * package.json: the same code then runs from the sources (tests), from `dist/`
 * and from a bundle, with no file to find at run time. test/support/peer.test.ts
 * holds the table to package.json's peerDependencies.
 *
 * `drizzle-orm` is checked here but not declared in peerDependencies: npm puts a
 * declared peer's own optional peers in waymark's peer set, and drizzle-orm's
 * `postgres >=3` (resolved to the newest) then clashes with waymark's pinned
 * `postgres`, failing every install of waymark with ERESOLVE. Installed beside
 * waymark by the printed command, it resolves.
 */
import { createRequire } from 'node:module';
import { ErrorCode, WaymarkError } from '../shared/errors.js';

/** Every optional peer a feature checks for, with the version its install command names. */
export const PEER_VERSIONS = {
  'better-sqlite3': '12.11.1',
  postgres: '3.4.9',
  vitest: '4.1.12',
  '@electric-sql/pglite': '0.5.17',
  'drizzle-orm': '0.45.4',
  '@hono/zod-openapi': '1.6.3',
  pino: '10.4.0',
  'prom-client': '15.1.3',
  hono: '4.13.19',
  '@hono/node-server': '2.1.9',
} as const;

export type Peer = keyof typeof PEER_VERSIONS;

/** What `waymark plane` and `waymark/plane` load: the database, the HTTP app, logs and metrics. */
export const PLANE_PEERS: readonly Peer[] = [
  '@electric-sql/pglite',
  'drizzle-orm',
  '@hono/zod-openapi',
  'pino',
  'prom-client',
  'hono',
  '@hono/node-server',
];

/** What `waymark ui` loads: the inspector's pages (hono/jsx) and their server. */
export const UI_PEERS: readonly Peer[] = ['hono', '@hono/node-server'];

/** The one command that installs `peers`, at the versions waymark is tested with. */
export function installCommand(peers: readonly Peer[]): string {
  return `npm install ${peers.map((p) => `${p}@${PEER_VERSIONS[p]}`).join(' ')}`;
}

/**
 * Resolves when every peer in `peers` loads; else throws MISSING_PEER naming
 * every missing one and the one command that installs them. `feature` is what
 * needs them, as the user named it (`waymark/sqlite`, `waymark plane`).
 */
export async function requirePeers(feature: string, peers: readonly Peer[]): Promise<void> {
  const missing: Peer[] = [];
  let cause: unknown = null;
  let other: unknown = null;
  for (const name of peers) {
    try {
      await import(name);
    } catch (e) {
      const err = e as { code?: string; message?: string };
      if (err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes(`'${name}'`)) {
        missing.push(name);
        cause ??= e;
      }
      // a peer that fails to load because another one is missing (@hono/zod-openapi without hono) is told by that one
      else other ??= e;
    }
  }
  if (missing.length === 0) {
    if (other !== null) throw other;
    return;
  }
  throw missingPeers(feature, missing, cause);
}

const nodeRequire = createRequire(import.meta.url);

/**
 * Loads `name`, a CommonJS peer, with `require` and returns it; throws
 * MISSING_PEER as `requirePeers` does when it is not installed. For a feature
 * that needs the package at once (`waymark/sqlite`, better-sqlite3): an
 * `import` of a CommonJS package has Node read and scan its sources for their
 * export names before running them, a cost `require` does not pay.
 */
export function requirePeer<T>(feature: string, name: Peer): T {
  try {
    return nodeRequire(name) as T;
  } catch (e) {
    const err = e as { code?: string; message?: string };
    // the package itself, not a module it requires in turn, is missing
    if (err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(`'${name}'`))
      throw missingPeers(feature, [name], e);
    throw e;
  }
}

/** MISSING_PEER for `feature`, naming every package of `missing` and the one command that installs them. */
function missingPeers(feature: string, missing: Peer[], cause: unknown): WaymarkError {
  const command = installCommand(missing);
  const what =
    missing.length === 1
      ? `the '${missing[0]}' package, an optional peer dependency of waymark that is not installed`
      : `packages that are optional peer dependencies of waymark and are not installed: ${missing.map((p) => `'${p}'`).join(', ')}`;
  return new WaymarkError(
    ErrorCode.MISSING_PEER,
    `${feature} needs ${what}: install ${missing.length === 1 ? 'it' : 'them'} with '${command}'`,
    {
      cause,
      details: { peers: missing.map((p) => ({ peer: p, version: PEER_VERSIONS[p] })), command },
    },
  );
}
