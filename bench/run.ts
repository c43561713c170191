/**
 * `npm run bench -- <name>`: steps | storage | resume | put | ingest | drain | drain-rss | all.
 * Runs each benchmark in its own process, prints its table and JSON lines, and
 * with `all` writes bench/RESULTS.md (tables, the exact commands, the date).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const BENCHES: Record<string, string[]> = {
  steps: ['steps.ts', 'steps', 'both', '3'],
  storage: ['steps.ts', 'storage'],
  resume: ['resume-cost.ts', '200', '7', 'sqlite'],
  'resume-20': ['resume-cost.ts', '20', '7', 'sqlite'],
  'resume-pg': ['resume-cost.ts', '200', '5', 'postgres'],
  put: ['store-put.ts', '2000'],
  ingest: ['ingest.ts', '20000', 'both'],
  drain: ['drain.ts', '20000', 'both'],
  'drain-rss': ['drain-rss.ts', '1000000'],
};
const name = process.argv[2] ?? 'all';
const names = name === 'all' ? Object.keys(BENCHES) : [name];
if (names.some((n) => !BENCHES[n])) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHES).join('|')}|all>`);
  process.exit(2);
}
const sections: string[] = [];
const started = Date.now();
for (const n of names) {
  const [file, ...args] = BENCHES[n];
  const cmd = `npx tsx bench/${file} ${args.join(' ')}`;
  console.log(`\n== ${n}: ${cmd}`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${here}${file}`, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  process.stdout.write(r.stdout);
  if (r.status !== 0) {
    console.error(`${n} failed (exit ${r.status})`);
    process.exitCode = 1;
  }
  const human = r.stdout.split('\n').filter((l) => l && !l.startsWith('{'));
  const json = r.stdout.split('\n').filter((l) => l.startsWith('{'));
  sections.push(`### ${n}\n\n\`${cmd}\` (${Math.round((Date.now() - t0) / 1000)} s)\n\n\`\`\`\n${human.join('\n')}\n\`\`\`\n\n<details><summary>JSON lines</summary>\n\n\`\`\`\n${json.join('\n')}\n\`\`\`\n</details>\n`);
}
if (name === 'all') {
  const when = new Date().toISOString();
  writeFileSync(
    `${here}RESULTS.md`,
    `# Benchmark results\n\n\`npm run bench -- all\` on ${when} (Node ${process.version}, ${cpus().length} cores, a shared and noisy machine: ratios within one run are what count; ${Math.round((Date.now() - started) / 1000)} s in all).\n\nTARGETS\n\n${sections.join('\n')}`,
  );
  console.log(`\nwrote bench/RESULTS.md (${Math.round((Date.now() - started) / 1000)} s)`);
}
