/**
 * `resume(id, undefined, { expectNewestId })`, the rule a run request's worker
 * applies retry and recover by: the run is taken up only while its newest row
 * is the one named, checked before anything is taken and again once the lease
 * is held, so a request applied twice moves the run once. Real SQLite files.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Agent, ScriptedModel } from '../../client/index.js';
import type { LeaseRequest } from '../../client/checkpointer.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { scratchDir } from '../helpers/tmp.js';

/** A model that fails its first call (the run fails) and answers after. */
const flaky = () => {
  let calls = 0;
  return new ScriptedModel(() => {
    if (calls++ === 0) throw Object.assign(new Error('upstream 500'), { code: 'MODEL_ERROR' });
    return { content: 'done' };
  });
};

describe('resume with expectNewestId (the named-row rule)', () => {
  const open: SqliteCheckpointer[] = [];
  const dir = scratchDir('expect-newest-');
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(() => dir.cleanup());
  const storeAt = (path: string, S: typeof SqliteCheckpointer = SqliteCheckpointer) => {
    const s = new S({ path });
    open.push(s);
    return s;
  };

  it('a failed run is retried while its failed marker is newest; named anything else it is MOVED_ON and nothing is written; applied twice, it moves once', async () => {
    const store = storeAt(dir.file('a.db'));
    const agent = new Agent({ name: 'bot', model: flaky(), checkpointer: store });
    const failed = await agent.run('hello', { executionId: 'run-1' });
    expect(failed.status).toBe('failed');
    const marker = (await store.latest('run-1'))!;
    expect(marker).toMatchObject({ step: 'run_end', status: 'failed' });

    // an older row of the run: this store is past it, the run moved on
    const first = (await store.list('run-1', { limit: 1 }))[0];
    const other = await agent.resume('run-1', undefined, { expectNewestId: first.id }).catch((e) => e);
    expect(other.code).toBe('MOVED_ON');
    expect(other.details).toMatchObject({ expectedId: first.id, newestId: marker.id });
    expect((await store.latest('run-1'))!.id).toBe(marker.id);
    // a row this store does not hold: its copy may be behind, so it does not judge the run moved on
    const unknown = await agent.resume('run-1', undefined, { expectNewestId: 'not-in-this-store' }).catch((e) => e);
    expect(unknown.code).toBe('STORE_BEHIND');
    expect(unknown.details).toMatchObject({ expectedId: 'not-in-this-store', newestId: marker.id });
    expect((await store.latest('run-1'))!.id).toBe(marker.id);

    const r = await agent.resume('run-1', undefined, { expectNewestId: marker.id });
    expect(r.status).toBe('completed');
    const rows = await store.list('run-1', { limit: 100 });
    const again = await agent.resume('run-1', undefined, { expectNewestId: marker.id }).catch((e) => e);
    expect(again.code).toBe('MOVED_ON');
    expect(await store.list('run-1', { limit: 100 })).toEqual(rows);
  });

  it('checked again once the lease is taken: a resumer that read the marker newest, then waited for the lease while another resumer retried the run, writes nothing', async () => {
    const path = dir.file('b.db');
    const first = storeAt(path);
    const agent = new Agent({ name: 'bot', model: flaky(), checkpointer: first });
    await agent.run('hello', { executionId: 'run-2' });
    const marker = (await first.latest('run-2'))!;
    // the second resumer's store: its lease acquisition lets the first resumer run the retry to its end before it
    let once = true;
    let beforeLease: () => Promise<void> = async () => {};
    class Slow extends SqliteCheckpointer {
      override async acquireLease(executionId: string, request: LeaseRequest) {
        if (once) {
          once = false;
          await beforeLease();
        }
        return super.acquireLease(executionId, request);
      }
    }
    const second = storeAt(path, Slow as typeof SqliteCheckpointer);
    const late = new Agent({
      name: 'bot',
      model: new ScriptedModel(() => ({ content: 'twice' })),
      checkpointer: second,
    });
    beforeLease = async () => {
      expect((await agent.resume('run-2', undefined, { expectNewestId: marker.id })).status).toBe('completed');
    };
    const rows = async () => (await first.list('run-2', { limit: 100 })).length;
    // the late resume writes nothing: the rows once the first resumer's retry ended (in beforeLease) stay as they are
    let afterRetry = -1;
    const retry = beforeLease;
    beforeLease = async () => {
      await retry();
      afterRetry = await rows();
    };
    const r = await late.resume('run-2', undefined, { expectNewestId: marker.id }).catch((e) => e);
    expect(r.code).toBe('MOVED_ON');
    expect(afterRetry).toBeGreaterThan(0);
    const newest = (await first.latest('run-2'))!;
    expect(newest).toMatchObject({ step: 'run_end', status: 'completed' });
    // the late resumer's model was never asked: nothing of its 'twice' in the run
    expect(JSON.stringify(await first.readState(newest))).not.toContain('twice');
    expect(await rows()).toBe(afterRetry);
  });
});
