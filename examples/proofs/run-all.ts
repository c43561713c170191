/**
 * Runs every proof on SQLite and, when reachable (always under CI=true), on
 * Postgres. Exits non-zero if any claim fails. `npm run proofs`.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';

const dir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const proofs = readdirSync(dir)
  .filter((f) => /^proof-\d.*\.ts$/.test(f))
  .filter((f) => !only.length || only.some((o) => f.includes(o)))
  .sort();

async function pgReachable(): Promise<boolean> {
  const sql = postgres(
    process.env.WAYMARK_PROOF_PG_URL ??
      process.env.WAYMARK_TEST_PG_URL ??
      'postgres://postgres@127.0.0.1:5432/postgres',
    { max: 1, connect_timeout: 3, onnotice: () => {} },
  );
  try {
    await sql`SELECT 1`;
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

const backends = (process.env.WAYMARK_PROOF_BACKENDS ?? 'sqlite,postgres').split(',');
const results: { proof: string; backend: string; ok: boolean }[] = [];
const havePg = backends.includes('postgres') && (await pgReachable());
if (backends.includes('postgres') && !havePg) {
  if (process.env.CI === 'true') {
    console.error('Postgres is required under CI=true');
    process.exit(1);
  }
  console.log('[proofs] SKIPPED postgres: no server reachable');
}
for (const backend of backends) {
  if (backend === 'postgres' && !havePg) continue;
  for (const p of proofs) {
    const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}/${p}`], {
      env: { ...process.env, WAYMARK_PROOF_BACKEND: backend },
      stdio: 'inherit',
    });
    results.push({ proof: p, backend, ok: r.status === 0 });
  }
}
console.log('\nproof'.padEnd(36) + 'backend   result');
for (const r of results) console.log(`${r.proof.padEnd(35)}${r.backend.padEnd(10)}${r.ok ? 'ok' : 'FAILED'}`);
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
