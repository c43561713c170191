/**
 * The real `waymark plane` binary (bin/waymark.mjs, which runs dist/: `npm
 * run build` first) started as a process of its own against a Postgres
 * database, for the benches that measure the plane apart from its clients.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './paths.js';

const BIN = join(ROOT, 'bin/waymark.mjs');
/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS = 100;

/** CPU seconds (user + system) a live process has used so far. */
export function cpuSecs(pid: number): number {
  // fields after the command name, which is in parentheses and may hold spaces
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICKS;
}

export interface PlaneProcess {
  child: ChildProcess;
  url: string;
  /** The operator metrics listener (`…/metrics`), when started with `metrics`. */
  metricsUrl: string | null;
  /** SIGTERM, and wait for it to exit. */
  stop(): Promise<void>;
}

/**
 * `waymark plane` on `databaseUrl`, port 0 on 127.0.0.1, with the operator
 * metrics listener on a port of its own when `metrics` is set. Node options
 * for the plane only come from WAYMARK_BENCH_PLANE_NODE_ARGS (e.g. "--cpu-prof
 * --cpu-prof-dir=DIR"). A plane that neither listens nor exits within a
 * minute is killed.
 */
export async function startPlaneProcess(databaseUrl: string, o: { metrics?: boolean } = {}): Promise<PlaneProcess> {
  const nodeArgs = process.env.WAYMARK_BENCH_PLANE_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  // no data dir: planes may share one database, and each would hold (and lock) the same default dir
  const args = ['plane', '--port', '0', '--data-dir', 'memory://', ...(o.metrics ? ['--metrics-port', '0'] : [])];
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    env: { ...process.env, WAYMARK_DATABASE_URL: databaseUrl, WAYMARK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const { url, metricsUrl } = await new Promise<{ url: string; metricsUrl: string | null }>((resolve, reject) => {
    const late = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      const metrics = /operator metrics: (http:\/\/\S+)\/metrics/.exec(out);
      if (m && (!o.metrics || metrics)) {
        clearTimeout(late);
        resolve({ url: m[1], metricsUrl: metrics?.[1] ?? null });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(late);
      reject(new Error(`plane exited (${code ?? signal}) before listening: ${out}`));
    });
  });
  return {
    child,
    url,
    metricsUrl,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
