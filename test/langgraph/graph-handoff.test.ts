/**
 * A LangGraph agent with tools and an interrupt runs on WaymarkSaver on
 * machine A (a child process, its own SQLite file), reaches the plane, is
 * restored on machine B (another process, another file) with
 * restoreFromPlane and resumed there: every tool effect happens once.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { runTs } from '../helpers/child.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = new URL('./graph-child.ts', import.meta.url).pathname;
const SUB_CHILD = new URL('./subgraph-child.ts', import.meta.url).pathname;
const tmp = scratchDir('waymark-lg-handoff-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('langgraph', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

async function machine(mode: 'start' | 'resume', db: string, thread: string, effects: string, script = CHILD) {
  const r = await runTs(script, [mode, db, thread, effects, plane.url, key]);
  if (r.code !== 0) throw new Error(`machine ${mode} exited ${r.code} (${r.signal}): ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!);
}

describe('a LangGraph graph on WaymarkSaver, handed from machine A to machine B through the plane', () => {
  it('runs to its interrupt on A, restores on B from the plane, resumes there; each tool effect happens once', async () => {
    const thread = 'support-thread-1';
    const effects = tmp.file('effects.log');
    writeFileSync(effects, '');
    const a = await machine('start', tmp.file('a.db'), thread, effects);
    expect(a.next).toEqual(['tools']);
    expect(a.interrupts).toEqual([{ question: 'send "sunny in Paris" to bob?' }]);
    expect(a.flush).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });

    // the thread is one execution on the plane, with A's rows
    const storeA = new SqliteCheckpointer({ path: tmp.file('a.db') });
    const rowsA = await storeA.list(thread);
    await storeA.close();
    const onPlane = await call(`${plane.url}/v1/executions/${encodeURIComponent(thread)}/rows`, { key });
    expect(onPlane.status).toBe(200);
    expect(onPlane.body.items.map((r: { id: string }) => r.id)).toEqual(rowsA.map((r) => r.id));
    expect(rowsA.every((r) => r.step === 'graph_step')).toBe(true);

    const b = await machine('resume', tmp.file('b.db'), thread, effects);
    expect(b.pid).not.toBe(a.pid);
    expect(b.restored).toMatchObject({ inserted: rowsA.length, diverged: [] });
    // B saw the pause it restored before answering it
    expect(b.interruptsBeforeResume).toEqual([{ question: 'send "sunny in Paris" to bob?' }]);
    expect(b.next).toEqual([]);
    expect(b.messages).toEqual([
      'human: Email the Paris weather to bob',
      'ai: ',
      'tool: sunny in Paris',
      'ai: ',
      'tool: sent to bob',
      'ai: Done: sent to bob',
    ]);
    expect(b.flush).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });

    const lines = readFileSync(effects, 'utf8').trim().split('\n');
    expect(lines).toEqual([`lookup_weather Paris ${a.pid}`, `send_email bob ${b.pid}`]);

    // B's continuation reached the plane after A's rows
    const after = await call(`${plane.url}/v1/executions/${encodeURIComponent(thread)}/rows`, { key });
    const storeB = new SqliteCheckpointer({ path: tmp.file('b.db') });
    const rowsB = await storeB.list(thread);
    await storeB.close();
    expect(after.body.items.map((r: { id: string }) => r.id)).toEqual(rowsB.map((r) => r.id));
    expect(rowsB.length).toBeGreaterThan(rowsA.length);
    expect(rowsB.slice(0, rowsA.length).map((r) => r.id)).toEqual(rowsA.map((r) => r.id));

    // the inspector shows the thread as a run, its rows as graph steps
    const login = await fetch(`${plane.url}/login`, {
      method: 'POST',
      body: new URLSearchParams({ key, next: '/' }),
      headers: { origin: plane.url },
      redirect: 'manual',
    });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0];
    const page = await fetch(`${plane.url}/runs/${encodeURIComponent(thread)}`, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(thread);
    expect(html.match(/graph_step/g)?.length ?? 0).toBeGreaterThanOrEqual(rowsB.length);
  });

  it('a thread paused inside a subgraph: restoreThread brings the root and the subgraph namespace to B, which resumes inside the subgraph without re-running it', async () => {
    const thread = 'sub-thread-1';
    const effects = tmp.file('sub-effects.log');
    writeFileSync(effects, '');
    const a = await machine('start', tmp.file('sub-a.db'), thread, effects, SUB_CHILD);
    expect(a.interrupts).toEqual([{ question: 'send the draft?' }]);
    // the subgraph's checkpoints are their own execution, <thread>|<namespace>
    expect(a.executions).toHaveLength(2);
    const sub = a.executions.find((e: string) => e !== thread);
    expect(sub.startsWith(`${thread}|approval:`)).toBe(true);
    expect(a.flush).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });

    const b = await machine('resume', tmp.file('sub-b.db'), thread, effects, SUB_CHILD);
    expect(b.restored.map((r: { executionId: string }) => r.executionId)).toEqual([thread, sub]);
    expect(b.restored.every((r: { inserted: number }) => r.inserted > 0)).toBe(true);
    expect(b.next).toEqual([]);
    expect(b.log).toEqual(['prepared', 'drafted', 'sent']);
    expect(readFileSync(effects, 'utf8').trim().split('\n')).toEqual([
      `prepare ${a.pid}`,
      `draft ${a.pid}`,
      `send ${b.pid}`,
    ]);
  });
});
