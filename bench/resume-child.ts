/**
 * One fresh process of the resume bench (bench/resume-cost.ts): resume a
 * paused run and print, as one JSON line, where the time went. Each side loads
 * only its own modules, dynamically, so the parent's wall time of this process
 * compares like with like; the store module of each side is loaded before the
 * clock starts ("open" starts at the same point for both).
 *
 *   node --import tsx bench/resume-child.ts <waymark|langgraph> <spec> <executionId> <turns> <seed>
 *
 * loadMs: process start to the clock's start (runtime, loader, imports);
 * openMs: open the store and read the run's newest row (the peer: its latest checkpoint tuple);
 * buildMs: build the agent / compile the graph; callMs: the resume call alone.
 */
const [who, spec, id, turns, seedArg] = process.argv.slice(2);
const T = Number(turns);
const seed = Number(seedArg);
const sqlite = spec.startsWith('sqlite:');

if (who === 'waymark') {
  const { openStore } = await import('../client/index.js');
  const { benchAgent } = await import('./lib/resume-workload.js');
  await import(sqlite ? '../client/sqlite/index.js' : '../client/postgres/index.js');
  const t0 = performance.now();
  const store = await openStore(spec, { max: 4 });
  await store.latest(id);
  const t1 = performance.now();
  const agent = benchAgent(store, T, seed);
  const t2 = performance.now();
  const r = await agent.resume(id, { approved: true });
  const t3 = performance.now();
  if (r.status !== 'completed') throw new Error(`resume ended ${r.status}`);
  console.log(JSON.stringify({ loadMs: t0, openMs: t1 - t0, buildMs: t2 - t1, callMs: t3 - t2, totalMs: t3 - t0 }));
  await store.close();
} else {
  const lg = await import('./lib/langgraph.js');
  lg.peerLoad(sqlite ? 'sqlite' : 'postgres');
  const t0 = performance.now();
  let saver: any;
  if (sqlite) saver = lg.peerSqliteSaver(spec.slice('sqlite:'.length));
  else {
    const [url, schema] = spec.slice('postgres:'.length).split('#');
    saver = await lg.peerPostgresSaver(url, schema);
  }
  await lg.peerLatest(saver, id);
  const t1 = performance.now();
  const graph = lg.peerGraph(saver, T, 200, undefined, true, seed);
  const t2 = performance.now();
  const messages = await lg.peerResume(graph, id, T, { approved: true });
  const t3 = performance.now();
  if (messages !== 2 * T + 2) throw new Error(`peer resume ended with ${messages} messages`);
  console.log(JSON.stringify({ loadMs: t0, openMs: t1 - t0, buildMs: t2 - t1, callMs: t3 - t2, totalMs: t3 - t0 }));
  await saver.end?.();
}
