/**
 * Shared helpers of the proof scripts: a store on the chosen backend
 * (WAYMARK_PROOF_BACKEND=sqlite|postgres), a ledger, child processes, and a
 * checker that prints each claim and makes the script exit non-zero if any fails.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { openStore, type Checkpointer } from '../../client/index.js';
import { Ledger, untilLeaseFree } from '../agents/refund.js';

export const backend = process.env.WAYMARK_PROOF_BACKEND === 'postgres' ? 'postgres' : 'sqlite';
const pgUrl =
  process.env.WAYMARK_PROOF_PG_URL ?? process.env.WAYMARK_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const CHILD = fileURLToPath(new URL('../agents/refund-child.ts', import.meta.url));

export interface ProofEnv {
  spec: string;
  store: Checkpointer;
  ledger(name: string): Ledger;
  /** Run the refund agent in a child process; a killed child's lease (1 s) is waited out before this returns. */
  child(args: {
    executionId: string;
    action: string;
    amount?: number;
    ledger: Ledger;
    kill?: string;
    hits?: number;
  }): Promise<ChildOutcome>;
  close(): Promise<void>;
}

export interface ChildOutcome {
  code: number | null;
  signal: string | null;
  pid: number;
  out: {
    result?: { status: string; output?: string; pendingInterrupt?: { context: unknown } };
    error?: { code?: string; message: string };
    modelCalls?: number;
  } | null;
  stderr: string;
}

export async function proofEnv(name: string): Promise<ProofEnv> {
  const dir = mkdtempSync(join(tmpdir(), `waymark-proof-${name}-`));
  let spec: string;
  let dropSchema = async () => {};
  if (backend === 'sqlite') {
    spec = `sqlite:${join(dir, 'runs.db')}`;
  } else {
    const schema = `proof_${name.replace(/\W/g, '_')}_${process.pid}`;
    spec = `postgres:${pgUrl}#${schema}`;
    dropSchema = async () => {
      const sql = postgres(pgUrl, { max: 1, onnotice: () => {} });
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.end();
    };
    await dropSchema();
  }
  const store = await openStore(spec, { max: 4 });
  return {
    spec,
    store,
    ledger: (n) => new Ledger(join(dir, `${n}.jsonl`)),
    child: ({ executionId, action, amount = 0, ledger, kill, hits }) =>
      new Promise((resolve) => {
        const args = [
          '--import',
          'tsx',
          CHILD,
          spec,
          ledger.path,
          executionId,
          action,
          String(amount),
          ...(kill ? [kill, String(hits ?? 1)] : []),
        ];
        const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        p.stdout.on('data', (d) => (stdout += d));
        p.stderr.on('data', (d) => (stderr += d));
        p.on('exit', (code, signal) => {
          let out = null;
          try {
            out = JSON.parse(stdout.trim().split('\n').pop() ?? '');
          } catch {
            out = null;
          }
          const outcome = { code, signal, pid: p.pid ?? 0, out, stderr };
          // a killed runner still holds the run until its lease expires: a resume before that is refused (RunInProgress)
          if (signal === 'SIGKILL')
            untilLeaseFree(store, executionId).then(
              () => resolve(outcome),
              () => resolve(outcome),
            );
          else resolve(outcome);
        });
      }),
    async close() {
      await store.close();
      await dropSchema();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Prints claims as it checks them; `finish()` sets the exit code. */
export class Proof {
  private failures: string[] = [];
  constructor(readonly title: string) {
    console.log(`\n${title} · backend: ${backend}`);
  }
  section(title: string): void {
    console.log(`\n── ${title}`);
  }
  say(line: string): void {
    console.log(line);
  }
  check(ok: boolean, claim: string): void {
    console.log(`  ${ok ? '✓' : '✗'} ${claim}`);
    if (!ok) this.failures.push(claim);
  }
  async rows(store: Checkpointer, executionId: string): Promise<string[]> {
    const rows = await store.list(executionId);
    const lines = rows.map((r) => `${r.nodeId.padEnd(22)} step=${r.step.padEnd(11)} status=${r.status}`);
    for (const [i, l] of lines.entries()) console.log(`  #${String(rows[i].seq).padEnd(3)} ${l}`);
    return rows.map((r) => `${r.nodeId} ${r.step} ${r.status}`);
  }
  finish(): void {
    if (this.failures.length) {
      console.log(`\n${this.failures.length} claim(s) FAILED:\n${this.failures.map((f) => `  - ${f}`).join('\n')}`);
      process.exitCode = 1;
    } else {
      console.log(`\nall claims hold`);
    }
  }
}

export const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
