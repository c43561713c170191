/**
 * What a fresh process pays for the first resume answer it checks: the
 * `ResumeValue` schema's first parse (zod compiles the object's fast path on
 * first use) against `plainResume`'s first call, each in its own fresh
 * process, alternating, after the same imports.
 *
 *   npx tsx bench/resume-first-use.ts [pairs=7]
 */
import { spawnSync } from 'node:child_process';
import { childCommand } from './lib/paths.js';

if (process.argv[2] === '--child') {
  const { plainResume } = await import('../client/runtime/interrupt.js');
  const { ResumeValue } = await import('../shared/rows.js');
  const answer = { approved: true, metadata: { comment: 'ok by the manager', amount: 5000 } };
  const t0 = performance.now();
  const ok = process.argv[3] === 'schema' ? ResumeValue.safeParse(answer).success : plainResume(answer) !== null;
  const ms = performance.now() - t0;
  if (!ok) throw new Error('the answer was refused');
  console.log(JSON.stringify({ ms }));
} else {
  const pairs = Number(process.argv[2] ?? 7);
  const took: Record<'schema' | 'plain', number[]> = { schema: [], plain: [] };
  for (let i = 0; i < pairs; i++) {
    for (const mode of i % 2 ? (['plain', 'schema'] as const) : (['schema', 'plain'] as const)) {
      const r = spawnSync(process.execPath, [...childCommand(import.meta.url, 'resume-first-use'), '--child', mode], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(r.stderr);
      took[mode].push(JSON.parse(r.stdout.trim()).ms);
    }
    process.stderr.write(`pair ${i + 1}/${pairs}\r`);
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (xs: number[]) =>
    `${med(xs).toFixed(2)} [${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}] ms`;
  console.log(
    `first resume answer checked in a fresh process, ${pairs} pairs alternating: ResumeValue.safeParse ${fmt(took.schema)} · plainResume ${fmt(took.plain)}`,
  );
  console.log(
    JSON.stringify({
      bench: 'resume-first-use',
      pairs,
      schemaMs: took.schema,
      plainMs: took.plain,
      date: new Date().toISOString(),
    }),
  );
}
