/**
 * `npm run soak`: the fault campaigns at large counts, bounded in time,
 * seedable (WAYMARK_SOAK_SEED). Prints one table; exits non-zero on any
 * invariant violation.
 *
 *   kill campaign   WAYMARK_SOAK_TRIALS (default 300) SIGKILLs of client or plane
 *   network faults  WAYMARK_SOAK_NET (default 60) drains through random proxy faults
 *   fuzz            WAYMARK_SOAK_FUZZ (default 4000) runs per fast-check property
 *   recovery        WAYMARK_SOAK_RECOVERY (default 60) runs SIGKILLed in 4 starters, recovered by pairs of workers
 *   cross-machine   WAYMARK_SOAK_FLEET (default 200) trials of two or three machines and a plane, the
 *                   runner SIGKILLed or SIGSTOPped/SIGCONTed (test/faults/fleet-campaign.ts); one
 *                   progress line per trial; WAYMARK_FLEET_SEEDS=<seed>,… replays those trials;
 *                   WAYMARK_FLEET_BACKEND=postgres puts the plane on Postgres;
 *                   WAYMARK_FLEET_VERBOSE=1 prints every trial's event log
 *
 * Arguments choose the campaigns (all when none): `kill`, `net`, `fuzz`,
 * `recovery`, `fleet`; `fleet=N` also sets its trial count. So
 * `npm run soak -- fleet` runs the cross-machine campaign alone.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectPlane } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { FaultProxy, type Fault } from '../helpers/fault-proxy.js';
import { call, startTestPlane } from '../helpers/plane.js';
import { step } from '../helpers/rows.js';
import { rng, runCampaign, type CampaignSummary } from './campaign.js';
import { failureReport, progressLine, runFleetCampaign, type FleetCampaignSummary } from './fleet-campaign.js';
import { runRecoverySoak } from './recovery-soak.js';

const SECTIONS = ['kill', 'net', 'fuzz', 'recovery', 'fleet'] as const;
const args = process.argv.slice(2);
for (const a of args) {
  if (!SECTIONS.includes(a.split('=')[0] as (typeof SECTIONS)[number])) {
    console.error(`soak: unknown argument '${a}' (campaigns: ${SECTIONS.join(', ')}; fleet=N sets its trials)`);
    process.exit(2);
  }
}
const want = (s: (typeof SECTIONS)[number]) => args.length === 0 || args.some((a) => a.split('=')[0] === s);
const fleetArg = args.find((a) => a.startsWith('fleet='))?.split('=')[1];

const seed = Number(process.env.WAYMARK_SOAK_SEED ?? Date.now() % 1_000_000);
const trials = Number(process.env.WAYMARK_SOAK_TRIALS ?? 300);
const netTrials = Number(process.env.WAYMARK_SOAK_NET ?? 60);
const fuzzRuns = Number(process.env.WAYMARK_SOAK_FUZZ ?? 4000);
const recoveryRuns = Number(process.env.WAYMARK_SOAK_RECOVERY ?? 60);
const fleetSeeds = (process.env.WAYMARK_FLEET_SEEDS ?? '').split(',').filter(Boolean).map(Number);
const fleetTrials = fleetSeeds.length || Number(fleetArg ?? process.env.WAYMARK_SOAK_FLEET ?? 200);
const started = Date.now();
const dir = mkdtempSync(join(tmpdir(), 'waymark-soak-'));
const violations: string[] = [];
console.log(
  `soak: seed ${seed} (replay with WAYMARK_SOAK_SEED=${seed}); campaigns: ${SECTIONS.filter(want).join(', ')}`,
);

// 1 · kill campaign
let campaign: CampaignSummary | null = null;
if (want('kill')) {
  campaign = await runCampaign({
    trials,
    seed,
    dir,
    onTrial: (r) => {
      if (r.violations.length) console.log(`  ✗ ${r.trial} ${r.point}:${r.hits}: ${r.violations.join('; ')}`);
    },
  });
  for (const v of campaign.violations) violations.push(`${v.trial} ${v.point}:${v.hits}: ${v.violations.join('; ')}`);
  console.log(`kill campaign done: ${campaign.trials} trials in ${Math.round((Date.now() - started) / 1000)} s`);
}

// 2 · network faults: random fault sequences through a proxy in front of a real plane
const faultsByKind: Record<string, number> = {};
if (want('net')) {
  const plane = await startTestPlane('pglite');
  const key = await plane.key('soak', ['ingest', 'read']);
  const random = rng(seed + 7);
  const kinds: Fault[] = [
    'reset',
    'hang',
    'drop-after-commit',
    'truncate',
    'trickle',
    { status: 500 },
    { status: 502 },
    { status: 503, retryAfter: '0' },
    { status: 429, retryAfter: '0' },
  ];
  for (let t = 0; t < netTrials; t++) {
    const proxy = await new FaultProxy(plane.url).start();
    const store = new SqliteCheckpointer({ path: join(dir, `net-${t}.db`), synchronous: 'NORMAL' });
    const exec = `net-${seed}-${t}`;
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await store.put(step(exec, i))).id);
    proxy.queue = Array.from(
      { length: 1 + Math.floor(random() * 4) },
      () => kinds[Math.floor(random() * kinds.length)],
    );
    for (const f of proxy.queue) {
      const k = typeof f === 'string' ? f : `http ${f.status}`;
      faultsByKind[k] = (faultsByKind[k] ?? 0) + 1;
    }
    const replica = connectPlane(store, {
      url: proxy.url,
      apiKey: key,
      pollMs: 0,
      batchRows: 1 + Math.floor(random() * 40),
      timeoutMs: 400,
      backoffBaseMs: 10,
      backoffCapMs: 100,
    });
    const s = await replica.flush({ timeoutMs: 30_000 });
    await replica.stop();
    const onPlane =
      (await call(`${plane.url}/v1/executions/${exec}/rows?limit=1000`, { key })).body.items?.map(
        (r: { id: string }) => r.id,
      ) ?? [];
    if (s.pendingRows !== 0) violations.push(`network ${exec}: ${s.pendingRows} rows never drained (${s.lastError})`);
    if (onPlane.join() !== ids.join())
      violations.push(`network ${exec}: plane holds ${onPlane.length} rows, store ${ids.length}`);
    if (s.quarantinedCount) violations.push(`network ${exec}: ${s.quarantinedCount} quarantined`);
    await store.close();
    await proxy.close();
  }
  await plane.close();
}

// 3 · fuzz at large counts (the same properties as npm test)
const root = fileURLToPath(new URL('../..', import.meta.url));
const fuzz = !want('fuzz')
  ? null
  : spawnSync(
      process.execPath,
      [
        join(root, 'node_modules/vitest/vitest.mjs'),
        'run',
        'test/faults/fuzz.test.ts',
        'test/faults/fuzz-idempotent.test.ts',
      ],
      {
        cwd: root,
        env: { ...process.env, WAYMARK_FUZZ_RUNS: String(fuzzRuns), WAYMARK_FUZZ_SEED: String(seed) },
        encoding: 'utf8',
      },
    );
const fuzzLine = fuzz && /\[fuzz\] seed \d+: (\d+) bodies, (\d+) rows refused/.exec(fuzz.stdout);
const idemLine = fuzz && /\[fuzz-idempotent\] seed \d+: (\{.*\})/.exec(fuzz.stdout);
if (fuzz && fuzz.status !== 0)
  violations.push(
    `fuzz failed (seed ${seed}): ${fuzz.stdout
      .split('\n')
      .filter((l) => /×|Counterexample|Error/.test(l))
      .slice(0, 5)
      .join(' | ')}`,
  );

// 4 · recovery: runs killed mid-flight, two recovery workers at once per round (one often killed too)
const recovery = want('recovery')
  ? await runRecoverySoak({ runs: recoveryRuns, starters: 4, maxRounds: 12, seed, dir })
  : null;
for (const v of recovery?.violations ?? []) violations.push(`recovery: ${v}`);
rmSync(dir, { recursive: true, force: true });

// 5 · cross-machine: two or three machines and a plane, the runner killed or stopped and continued, recoverers in watch mode
let fleet: FleetCampaignSummary | null = null;
if (want('fleet')) {
  const fleetStarted = Date.now();
  console.log(`cross-machine campaign: ${fleetTrials} trials, seed ${seed}`);
  fleet = await runFleetCampaign({
    trials: fleetTrials,
    seed,
    seeds: fleetSeeds,
    backend: process.env.WAYMARK_FLEET_BACKEND === 'postgres' ? 'postgres' : 'pglite',
    onTrial: (r, i, t) => {
      console.log(progressLine(r, i, fleetTrials, t));
      if (!r.ok || process.env.WAYMARK_FLEET_VERBOSE) console.log(failureReport(r));
    },
  });
  for (const f of fleet.failures)
    violations.push(`cross-machine trial ${f.seed} (WAYMARK_FLEET_SEEDS=${f.seed}): ${f.violations.join('; ')}`);
  console.log(
    `cross-machine campaign done: ${fleet.trials} trials in ${Math.round((Date.now() - fleetStarted) / 1000)} s`,
  );
}

const row = (a: string, b: string | number) => console.log(`| ${a.padEnd(44)} | ${String(b).padStart(10)} |`);
console.log(`\n| ${'what'.padEnd(44)} | ${'count'.padStart(10)} |\n|${'-'.repeat(46)}|${'-'.repeat(12)}|`);
if (campaign) {
  row('kill-campaign trials', campaign.trials);
  for (const [p, n] of Object.entries(campaign.kills).sort()) row(`  kills at ${p}`, n);
}
if (want('net')) {
  row('network-fault trials', netTrials);
  for (const [k, n] of Object.entries(faultsByKind).sort()) row(`  faults injected: ${k}`, n);
}
if (fuzz) {
  row('ingest bodies fuzzed', fuzzLine?.[1] ?? 'failed');
  row('  rows refused (quarantined with a reason)', fuzzLine?.[2] ?? 'failed');
  row('store inputs fuzzed', fuzzRuns);
  if (!idemLine) row('idempotent calls fuzzed', 'failed');
  for (const [k, n] of Object.entries(idemLine ? (JSON.parse(idemLine[1]) as Record<string, number>) : {}))
    row(`idempotent calls fuzzed: ${k}`, n);
}
if (recovery) {
  row('recovery: runs', recovery.runs);
  row('  rounds of two recovery workers', recovery.rounds);
  row('  processes SIGKILLed', recovery.kills);
  row('  runs recovered / held elsewhere', `${recovery.recovered} / ${recovery.heldElsewhere}`);
}
if (fleet) {
  row('cross-machine trials', fleet.trials);
  for (const [k, n] of Object.entries(fleet.faults).sort()) row(`  faults fired: ${k}`, n);
  row('  machines restarted / takeovers', `${fleet.restarts} / ${fleet.takeovers}`);
  row('  trials with every invariant held', fleet.passed);
  row('  double effects', fleet.doubles);
  row('    broken: the plane had the first record', fleet.doubleKinds.broken);
  row('    the first record not yet at the plane', fleet.doubleKinds.unsent);
  row('    stall after the check (accepted window)', fleet.doubleKinds.window);
  row('  stranded runs', fleet.stranded);
  row('  runs left unfinished', fleet.unfinished);
  row('  orders of completed runs never charged', fleet.missing);
}
row('invariant violations', violations.length);
console.log(`\nseed ${seed} · ${new Date().toISOString()} · ${Math.round((Date.now() - started) / 1000)} s`);
for (const v of violations) console.log(`VIOLATION ${v}`);
process.exit(violations.length ? 1 : 0);
