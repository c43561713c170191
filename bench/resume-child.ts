/**
 * One fresh process of the resume bench (bench/resume-cost.ts): resume a
 * paused run and print, as one JSON line, where the time went. Each side loads
 * only its own modules, dynamically, so the parent's wall time of this process
 * compares like with like. The agent library of each side (waymark's root
 * entry; LangGraph and its messages) is loaded before the clock starts; the
 * store module (`waymark/sqlite` or `waymark/postgres`; the peer's saver
 * package) is loaded inside it, so both windows start at the same point.
 *
 *   node --import tsx bench/resume-child.ts <waymark|langgraph> <spec> <executionId> <turns> <seed>
 *
 * loadMs: process start to the clock's start (runtime, loader, the agent library);
 * importMs: load the store module (the peer: its saver package);
 * openMs: open the store and read the run's newest row (the peer: its latest checkpoint tuple);
 * buildMs: build the agent / compile the graph; callMs: the resume call alone;
 * totalMs: open + build + call; windowMs: import + open + build + call;
 * windowCpuMs: the process's CPU time over that window (`process.cpuUsage`, user + system, every thread:
 * the compiler's and the collector's too), which other processes on a shared machine disturb less than the
 * wall time. (Not /proc/thread-self/schedstat: a running thread's figure there moves in scheduler ticks, 4 ms.)
 */

/** This process's CPU time so far, ms. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

const [who, spec, id, turns, seedArg] = process.argv.slice(2);
const T = Number(turns);
const seed = Number(seedArg);
const sqlite = spec.startsWith('sqlite:');

if (who === 'waymark') {
  const { openStore } = await import('../client/index.js');
  const { benchAgent } = await import('./lib/resume-workload.js');
  const cpu0 = cpuMs();
  const tImport = performance.now();
  await import(sqlite ? '../client/sqlite/index.js' : '../client/postgres/index.js');
  const t0 = performance.now();
  const store = await openStore(spec, { max: 4 });
  await store.latest(id);
  const t1 = performance.now();
  const agent = benchAgent(store, T, seed);
  const t2 = performance.now();
  const r = await agent.resume(id, { approved: true });
  const t3 = performance.now();
  const cpu = cpuMs() - cpu0;
  if (r.status !== 'completed') throw new Error(`resume ended ${r.status}`);
  console.log(JSON.stringify(times(tImport, t0, t1, t2, t3, cpu)));
  await store.close();
} else {
  const lg = await import('./lib/langgraph.js');
  lg.peerLoad();
  const cpu0 = cpuMs();
  const tImport = performance.now();
  lg.peerLoadSaver(sqlite ? 'sqlite' : 'postgres');
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
  const cpu = cpuMs() - cpu0;
  if (messages !== 2 * T + 2) throw new Error(`peer resume ended with ${messages} messages`);
  console.log(JSON.stringify(times(tImport, t0, t1, t2, t3, cpu)));
  await saver.end?.();
}

/** The parts of one resume from its clock readings (before the store module, after it, after open, after build, after the call) and the window's CPU. */
function times(tImport: number, t0: number, t1: number, t2: number, t3: number, cpu: number) {
  return {
    loadMs: tImport,
    importMs: t0 - tImport,
    openMs: t1 - t0,
    buildMs: t2 - t1,
    callMs: t3 - t2,
    totalMs: t3 - t0,
    windowMs: t3 - tImport,
    windowCpuMs: cpu,
  };
}
