/**
 * What an embedded plane holds in memory: a first start (which makes its
 * PGlite folder) holds no more than a restart of the same folder, and stays
 * within a laptop's budget. RSS is read from /proc for the real binary.
 */
import { readFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { startPlaneProcess } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-rss-');
afterAll(() => tmp.cleanup());

const MB = 1024 * 1024;
/** The resident set of a started plane, once its start-up has settled. */
async function rssOfStartedPlane(dataDir: string): Promise<number> {
  const plane = await startPlaneProcess(['--data-dir', dataDir]);
  try {
    const health = await fetch(`${plane.url}/healthz`);
    expect(health.status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000));
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${plane.child.pid}/status`, 'utf8'));
    return Number(kb![1]) * 1024;
  } finally {
    await plane.stop();
  }
}

it.runIf(process.platform === 'linux')(
  'a first start on PGlite holds what a restart holds, and at most 350 MB',
  async () => {
    const dir = tmp.file('plane');
    const first = await rssOfStartedPlane(dir);
    const restart = await rssOfStartedPlane(dir);
    console.log(
      `plane RSS on PGlite: first start ${(first / MB).toFixed(0)} MiB, restart ${(restart / MB).toFixed(0)} MiB`,
    );
    expect(first).toBeLessThanOrEqual(350 * MB);
    expect(first).toBeLessThanOrEqual(restart + 40 * MB);
  },
  120_000,
);
