/**
 * The top self-time functions of a V8 `.cpuprofile` (from `node --cpu-prof`),
 * with their share of the sampled time, and the top by total (self + callees).
 *
 *   npx tsx bench/profile-summary.ts /tmp/prof/x.cpuprofile [top=25] [filter]
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
const [file, topArg, filter] = process.argv.slice(2);
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const dt = new Map<number, number>();
prof.samples.forEach((s, i) => dt.set(s, (dt.get(s) ?? 0) + (prof.timeDeltas[i] ?? 0)));
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const label = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*\/(node_modules\/|step-cpu\/)?/, '')}:${n.callFrame.lineNumber + 1}`;
const self = new Map<string, number>();
const incl = new Map<string, number>();
for (const [id, t] of dt) {
  const n = byId.get(id)!;
  self.set(label(n), (self.get(label(n)) ?? 0) + t);
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + t);
  }
}
const show = (m: Map<string, number>, title: string) => {
  console.log(`${title} (of ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [l, t] of [...m]
    .filter(([l]) => !filter || l.includes(filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    console.log(`${(t / 1000).toFixed(1).padStart(9)} ms ${((100 * t) / total).toFixed(1).padStart(5)}%  ${l}`);
  }
};
show(self, 'self time');
show(incl, 'total time');
