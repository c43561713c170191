/**
 * A plane in its own process: prints its URL, serves until told to exit.
 * argv: a Postgres URL, or `pglite:<dir>`. Mints keys over IPC (PGlite is
 * single-process: nothing else may open its folder while it runs).
 */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { faultPoint, killAt } from '../../client/testing/faults.js';
import { createKey, type Scope } from '../../plane/auth.js';
import { loadConfig } from '../../plane/config.js';
import { startPlane } from '../../plane/server.js';

const target = process.argv[2];
// on Postgres the data dir holds only the admin-key file: keep it out of the working tree
const scratch = join(tmpdir(), `waymark-plane-child-${process.pid}`);
const where = target.startsWith('pglite:')
  ? { dataDir: target.slice('pglite:'.length) }
  : { databaseUrl: target, dataDir: scratch };
// WAYMARK_PLANE_FAULT=point:hits SIGKILLs this plane at a named fault point; WAYMARK_PLANE_PORT keeps its port across restarts
const fault = process.env.WAYMARK_PLANE_FAULT;
const hook = fault ? killAt(faultPoint(fault.split(':')[0]), { hits: Number(fault.split(':')[1] ?? 1) }) : undefined;
const plane = await startPlane(
  loadConfig(
    {},
    {
      host: '127.0.0.1',
      port: Number(process.env.WAYMARK_PLANE_PORT ?? 0),
      ...where,
      ...(process.env.WAYMARK_TAKEOVER_AFTER_MS
        ? { takeoverAfterMs: Number(process.env.WAYMARK_TAKEOVER_AFTER_MS) }
        : {}),
    },
  ),
  {
    logger: pino({ level: 'silent' }),
    faults: hook,
  },
);
process.on('message', async (m: { type: string; project?: string; scopes?: Scope[] }) => {
  if (m.type === 'key') {
    const k = await createKey(plane.database.db, { createProject: true, project: m.project!, scopes: m.scopes! });
    process.send?.({ type: 'key', key: k.key });
  } else if (m.type === 'exit') {
    await plane.close();
    rmSync(scratch, { recursive: true, force: true });
    process.exit(0);
  }
});
process.send?.({ type: 'ready', url: plane.url });
