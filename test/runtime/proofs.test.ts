import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import { pgReady } from '../helpers/pg.js';

const RUN_ALL = fileURLToPath(new URL('../../examples/proofs/run-all.ts', import.meta.url));
const pg = await pgReady('proofs on postgres');

function runProofs(backend: string): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', RUN_ALL], {
    env: { ...process.env, WAYMARK_PROOF_BACKENDS: backend },
    encoding: 'utf8',
    timeout: 240_000,
  });
  return { status: r.status, out: `${r.stdout}\n${r.stderr}` };
}

describe('the boundary proofs run green', () => {
  it('on sqlite', () => {
    const r = runProofs('sqlite');
    expect(r.out).toMatch(/6 passed, 0 failed/);
    expect(r.status, r.out).toBe(0);
  }, 240_000);
  it.skipIf(!pg)(
    'on postgres',
    () => {
      const r = runProofs('postgres');
      expect(r.out).toMatch(/6 passed, 0 failed/);
      expect(r.status, r.out).toBe(0);
    },
    240_000,
  );
});
