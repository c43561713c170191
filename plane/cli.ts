/**
 * `waymark plane …`
 *
 *   waymark plane [--database-url URL] [--data-dir DIR] [--host H] [--port N] [--metrics-port N]
 *   waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]
 *   waymark plane keys list
 *   waymark plane keys revoke KEY_ID
 */
import { parseArgs } from 'node:util';
import { createKey, listKeys, revokeKey, SCOPES, type Scope } from './auth.js';
import { loadConfig } from './config.js';
import { openPlaneDatabase } from './db/open.js';
import { startPlane } from './server.js';

export async function planeMain(argv: string[], out: (l: string) => void = console.log): Promise<number> {
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
      dev: { type: 'boolean' },
    },
    allowPositionals: true,
  });
  const config = loadConfig(process.env, {
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values.port ? { port: Number(values.port) } : {}),
    ...(values['metrics-port'] ? { metricsPort: port('--metrics-port', values['metrics-port']) } : {}),
    ...(values.dev ? { dev: true } : {}),
  });
  if (positionals[0] === 'keys') {
    const database = await openPlaneDatabase(config.databaseUrl ? { databaseUrl: config.databaseUrl } : { dataDir: config.dataDir });
    try {
      if (positionals[1] === 'create') {
        if (!values.project || !values.scopes) {
          out('usage: waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]');
          return 2;
        }
        const scopes = values.scopes.split(',').map((s) => s.trim()) as Scope[];
        const bad = scopes.filter((s) => !SCOPES.includes(s));
        if (bad.length) {
          out(`unknown scope(s): ${bad.join(', ')} (known: ${SCOPES.join(', ')})`);
          return 2;
        }
        const k = await createKey(database.db, { project: values.project, name: values.name, scopes });
        out(`key ${k.id} for project ${values.project} (${k.scopes.join(',')}); shown once, store it now:`);
        out(k.key);
        return 0;
      }
      if (positionals[1] === 'list') {
        for (const k of await listKeys(database.db)) {
          out(`${k.id}  ${k.project.padEnd(16)} ${k.scopes.join(',').padEnd(18)} ${k.name.padEnd(20)} ${k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active'}`);
        }
        return 0;
      }
      if (positionals[1] === 'revoke' && positionals[2]) {
        const ok = await revokeKey(database.db, positionals[2]);
        out(ok ? `revoked ${positionals[2]}` : `no active key ${positionals[2]}`);
        return ok ? 0 : 1;
      }
      out('usage: waymark plane keys create|list|revoke');
      return 2;
    } finally {
      await database.close();
    }
  }
  const plane = await startPlane(config);
  out(`waymark plane listening on ${plane.url} (database: ${plane.database.kind}${plane.database.kind === 'pglite' ? ` at ${config.dataDir}` : ''})`);
  out(`inspector: ${plane.url}/   openapi: ${plane.url}/openapi.json`);
  if (plane.metricsUrl) out(`operator metrics: ${plane.metricsUrl}/metrics (not served on the main listener)`);
  if (plane.adminKeyFile) out(`first start: created project 'local' and an admin key, written to ${plane.adminKeyFile} (mode 0600)`);
  else if (plane.adminKey) out(`in-memory database: created project 'local' and an admin key, shown this once and written nowhere: ${plane.adminKey}`);
  else out(`admin key: created on first start (see ${config.databaseUrl ? '.waymark' : config.dataDir}/admin-key), or make one with 'waymark plane keys create'`);
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
