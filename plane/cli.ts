/**
 * `waymark plane …`
 *
 *   waymark plane [--database-url URL] [--data-dir DIR] [--host H] [--port N] [--metrics-port N]
 *   waymark plane projects create NAME | list
 *   waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]
 *   waymark plane keys list
 *   waymark plane keys revoke KEY_ID
 *     (projects and keys: [--plane URL] [--key ADMIN_KEY]; see admin-cli.ts for where they go)
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SCOPES, type Scope } from './auth.js';
import { adminTarget } from './admin-cli.js';
import { loadConfig, type PlaneConfig } from './config.js';
import { startPlane, adminKeyPath } from './server.js';

const USAGE = `usage:
  waymark plane [--data-dir DIR | --database-url URL] [--host H] [--port N] [--metrics-port N]
  waymark plane projects create NAME
  waymark plane projects list
  waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]
  waymark plane keys list
  waymark plane keys revoke KEY_ID
  (projects and keys go through the running plane: --plane URL --key ADMIN_KEY, by default the
   plane holding --data-dir and its admin-key file; the database directly only when no plane holds it)`;

export async function planeMain(argv: string[], out: (l: string) => void = console.log, err: (l: string) => void = out === console.log ? console.error : out): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      'database-url': { type: 'string' },
      'data-dir': { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'metrics-port': { type: 'string' },
      project: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      plane: { type: 'string' },
      key: { type: 'string' },
      dev: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help || positionals[0] === 'help') {
    out(USAGE);
    return 0;
  }
  const config = loadConfig(process.env, {
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values.port ? { port: Number(values.port) } : {}),
    ...(values['metrics-port'] ? { metricsPort: port('--metrics-port', values['metrics-port']) } : {}),
    ...(values.dev ? { dev: true } : {}),
  });
  if (positionals[0] === 'keys' || positionals[0] === 'projects') {
    try {
      return await adminCommand(config, positionals, values, out, err);
    } catch (e) {
      const code = (e as { code?: string }).code;
      err(`waymark: ${code ? `${code}: ` : ''}${(e as Error).message}`);
      return 1;
    }
  }
  if (positionals.length) {
    err(USAGE);
    return 2;
  }
  let plane: Awaited<ReturnType<typeof startPlane>>;
  try {
    plane = await startPlane(config);
  } catch (e) {
    if ((e as { code?: string }).code !== 'DATA_DIR_LOCKED') throw e;
    err(`waymark: DATA_DIR_LOCKED: ${(e as Error).message}`);
    return 1;
  }
  out(`waymark plane listening on ${plane.url} (database: ${plane.database.kind}${plane.database.kind === 'pglite' ? ` at ${config.dataDir}` : ''})`);
  out(`inspector: ${plane.url}/   openapi: ${plane.url}/openapi.json`);
  if (plane.metricsUrl) out(`operator metrics: ${plane.metricsUrl}/metrics (not served on the main listener)`);
  if (plane.adminKeyFile) out(`first start: created project 'local' and an admin key, written to ${plane.adminKeyFile} (mode 0600)`);
  else if (plane.adminKey) out(`in-memory database: created project 'local' and an admin key, shown this once and written nowhere: ${plane.adminKey}`);
  else if (existsSync(adminKeyPath(config.dataDir))) out(`admin key: ${adminKeyPath(config.dataDir)}`);
  else {
    out(
      `admin key: none at ${adminKeyPath(config.dataDir)}: the database was set up by a plane with another data dir (its admin-key file has the key), ` +
        `or make one there with 'waymark plane keys create --project local --scopes admin,operator' (without a plane on this data dir, or --plane URL --key KEY)`,
    );
  }
  const stop = async () => {
    await plane.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return new Promise<number>(() => {});
}

/** A TCP port from a flag, or an error naming the flag (the environment's ports are checked in config.ts). */
function port(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${flag} must be a port number 0..65535, got '${v}'`);
  return n;
}

async function adminCommand(
  config: Readonly<PlaneConfig>,
  positionals: string[],
  values: { project?: string; scopes?: string; name?: string; plane?: string; key?: string; 'data-dir'?: string },
  out: (l: string) => void,
  err: (l: string) => void,
): Promise<number> {
  const [what, verb, arg] = positionals;
  let scopes: Scope[] = [];
  if (what === 'keys' && verb === 'create') {
    if (!values.project || !values.scopes) {
      err('usage: waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]');
      return 2;
    }
    scopes = values.scopes.split(',').map((s) => s.trim()) as Scope[];
    const bad = scopes.filter((s) => !SCOPES.includes(s));
    if (bad.length) {
      err(`unknown scope(s): ${bad.join(', ')} (known: ${SCOPES.join(', ')})`);
      return 2;
    }
  } else if (!((what === 'keys' && verb === 'list') || (what === 'keys' && verb === 'revoke' && arg) || (what === 'projects' && verb === 'list') || (what === 'projects' && verb === 'create' && arg))) {
    err(USAGE);
    return 2;
  }
  const target = await adminTarget(config, {
    plane: values.plane,
    key: values.key,
    command: `waymark plane ${what} ${verb}`,
    dataDirGiven: Boolean(values['data-dir'] || process.env.WAYMARK_PLANE_DIR),
  });
  try {
    if (what === 'projects' && verb === 'create') {
      const p = await target.createProject(arg);
      out(`project ${p.name} created (${p.id})`);
    } else if (what === 'projects') {
      for (const p of await target.projects()) out(`${p.id}  ${p.name}`);
    } else if (verb === 'create') {
      const k = await target.createKey({ project: values.project!, name: values.name, scopes });
      out(`key ${k.id} for project ${k.project} (${k.scopes.join(',')}); shown once, store it now:`);
      out(k.key);
    } else if (verb === 'list') {
      for (const k of await target.keys()) {
        out(`${k.id}  ${k.project.padEnd(16)} ${k.scopes.join(',').padEnd(18)} ${k.name.padEnd(20)} ${k.revokedAt ? `revoked ${k.revokedAt}` : 'active'}`);
      }
    } else {
      await target.revoke(arg);
      out(`revoked ${arg}`);
    }
    return 0;
  } finally {
    await target.close();
  }
}
