/**
 * A misspelled option is refused, not dropped, where a dropped one made the
 * call do something unsafe by default: `run(input, { executionID })` ran under a fresh id (a
 * retry of the call ran the run again instead of EXECUTION_EXISTS),
 * `resume(id, answer, { checkpointid })` answered whichever pause was open,
 * `new SqliteCheckpointer({ file })` opened a temporary database, `outBox:
 * false` kept the outbox. Each public call that takes options names the name
 * (INVALID_OPTIONS, `details.problems`, the near known name suggested) with
 * its other problems, and changes nothing. The plane's options (connectPlane,
 * restoreFromPlane) still let other names through: one config object serves
 * both, and no misspelling there asks for anything unsafe.
 */
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  Agent,
  connectPlane,
  ErrorCode,
  idempotent,
  interrupt,
  openStore,
  recoverRuns,
  restoreFromPlane,
  ScriptedModel,
  serveDecisions,
  tool,
  WaymarkError,
} from '../../client/index.js';
import { PostgresCheckpointer } from '../../client/postgres/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { suggest } from '../../support/validate.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-unknown-options-');
afterAll(() => tmp.cleanup());

/** The INVALID_OPTIONS a call threw (sync or async), or a failure naming what it did instead. */
async function refusal(call: () => unknown): Promise<WaymarkError> {
  try {
    await call();
  } catch (e) {
    expect(e, String(e)).toBeInstanceOf(WaymarkError);
    expect((e as WaymarkError).code, (e as Error).message).toBe(ErrorCode.INVALID_OPTIONS);
    return e as WaymarkError;
  }
  throw new Error('the call was not refused');
}

const problems = (e: WaymarkError) => (e.details as { problems: string[] }).problems;

function approvalBot(store: SqliteCheckpointer, charges: string[]): Agent {
  const refund = tool({
    name: 'refund',
    description: 'refund an order once a manager approves',
    parameters: z.object({}),
    execute: () => {
      const answer = interrupt('approval', {});
      charges.push(answer.approved ? 'refunded' : 'declined');
      return answer.approved ? 'refunded' : 'declined';
    },
  });
  const model = new ScriptedModel(({ turn }) =>
    turn === 0 ? { toolCalls: [{ name: 'refund', arguments: {} }] } : { content: 'done' },
  );
  return new Agent({ name: 'bot', model, tools: [refund], checkpointer: store });
}

describe('unknown options are refused, naming each, and the call changes nothing', () => {
  it('run: a misspelled executionId is refused before any row, so a retry under the meant id still finds none', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('run.db') });
    const bot = approvalBot(store, []);
    const e = await refusal(() => bot.run('refund order 42', { executionID: 'order-42' } as never));
    expect(problems(e)).toEqual(["unknown option 'executionID' (did you mean 'executionId'?)"]);
    expect(e.message).toContain('nothing was written');
    expect(await store.listExecutions({ limit: 10 })).toEqual([]);
    // options that are not an object: the id meant as the options
    const notObject = await refusal(() => bot.run('refund order 42', 'order-42' as never));
    expect(problems(notObject)).toEqual(['options: must be an object (got "order-42")']);
    expect(await store.listExecutions({ limit: 10 })).toEqual([]);
    await store.close();
  });

  it('resume: a misspelled checkpointId is refused, nothing claimed; the pause is still open for the right answer', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('resume.db') });
    const charges: string[] = [];
    const bot = approvalBot(store, charges);
    const paused = await bot.run('refund order 7', { executionId: 'order-7' });
    expect(paused.status).toBe('paused');
    const at = paused.pendingInterrupt!.checkpointId;
    const e = await refusal(() =>
      bot.resume('order-7', { approved: true }, { checkpointid: at, withoutPlan: true } as never),
    );
    expect(problems(e)).toEqual([
      "unknown option 'checkpointid' (did you mean 'checkpointId'?)",
      "unknown option 'withoutPlan' (did you mean 'withoutPlane'?)",
    ]);
    expect(e.message).toContain('nothing was claimed');
    expect(charges).toEqual([]);
    expect((await store.latest('order-7'))?.status).toBe('interrupted');
    expect(await bot.resume('order-7', { approved: true }, { checkpointId: at })).toMatchObject({
      status: 'completed',
    });
    expect(charges).toEqual(['refunded']);
    // fork names its own
    const fork = await refusal(() => bot.fork('order-7', { executionid: 'order-7b' } as never));
    expect(problems(fork)).toEqual(["unknown option 'executionid' (did you mean 'executionId'?)"]);
    expect(await store.latest('order-7b')).toBeNull();
    await store.close();
  });

  it('resume: a value of the wrong type is refused as INVALID_OPTIONS naming it, not read as false or as another pause', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('resume-types.db') });
    const charges: string[] = [];
    const bot = approvalBot(store, charges);
    const paused = await bot.run('refund order 8', { executionId: 'order-8' });
    const at = paused.pendingInterrupt!.checkpointId;
    // 'yes' is not true: read as false, a run the plane holds would have been refused for the wrong reason
    const yes = await refusal(() => bot.resume('order-8', { approved: true }, { withoutPlane: 'yes' } as never));
    expect(problems(yes)).toEqual(['withoutPlane: must be true or false (got "yes")']);
    // a number is no checkpoint id: it was compared with the open pause's and refused as ALREADY_RESUMED
    const num = await refusal(() => bot.resume('order-8', { approved: true }, { checkpointId: 42 } as never));
    expect(problems(num)).toEqual(['checkpointId: must be a string (got 42)']);
    expect(num.message).toBe('resume: checkpointId: must be a string (got 42); nothing was claimed');
    const listener = await refusal(() => bot.run('x', { onEvent: 'log' } as never));
    expect(problems(listener)).toEqual(['onEvent: must be a function (got "log")']);
    expect(charges).toEqual([]);
    expect(await bot.resume('order-8', { approved: true }, { checkpointId: at })).toMatchObject({
      status: 'completed',
    });
    await store.close();
  });

  it('Agent, idempotent, recoverRuns, serveDecisions: each names the unknown name with its other problems', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('agent.db') });
    const model = new ScriptedModel(() => ({ content: 'hi' }));
    const agent = await refusal(
      () => new Agent({ name: 'bot', model, checkpointer: store, maxTurn: 3, leaseMs: 0 } as never),
    );
    expect(problems(agent)).toEqual([
      "unknown option 'maxTurn' (did you mean 'maxTurns'?)",
      'leaseMs: must be an integer number of ms, at least 1 (got 0)',
    ]);
    const once = await refusal(() => idempotent(async function charge(_order: string) {}, { Key: 'x' } as never));
    expect(problems(once)).toEqual(["unknown option 'Key' (did you mean 'key'?)"]);
    const bot = new Agent({ name: 'bot', model, checkpointer: store });
    const recover = await refusal(() => recoverRuns({ agents: [bot], store, concurency: 0 } as never));
    expect(problems(recover)).toEqual(["unknown option 'concurency' (did you mean 'concurrency'?)"]);
    const missing = await refusal(() => recoverRuns({ store, concurrency: 0 } as never));
    expect(problems(missing)).toEqual([
      'agents: required, an array of the agents whose runs to recover',
      'concurrency: must be an integer, at least 1 (got 0)',
    ]);
    const serve = await refusal(() =>
      serveDecisions({ agent: bot, store, signal: new AbortController().signal, pollMS: 5 } as never),
    );
    expect(problems(serve)).toEqual(["unknown option 'pollMS' (did you mean 'pollMs'?)"]);
    await store.close();
  });

  it('stores: a misspelled path opens nothing (it opened a temporary database); bad values named, every one', async () => {
    const dir = tmp.file('stores');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(dir);
    const sqlite = await refusal(
      () =>
        new SqliteCheckpointer({ file: `${dir}/runs.db`, synchronous: 'off; drop table x', outBox: false } as never),
    );
    expect(problems(sqlite)).toEqual([
      "unknown option 'file'",
      "unknown option 'outBox' (did you mean 'outbox'?)",
      "path: required, the database file (or ':memory:') (got undefined)",
      "synchronous: must be 'FULL', 'NORMAL' or 'EXTRA' (got \"off; drop table x\")",
    ]);
    expect(sqlite.message).toContain('nothing was opened');
    expect(readdirSync(dir)).toEqual([]);
    const pg = await refusal(
      () => new PostgresCheckpointer({ URL: 'postgres://127.0.0.1/x', schema: 'Bad-Name', max: 0 } as never),
    );
    expect(problems(pg)).toEqual([
      "unknown option 'URL' (did you mean 'url'?)",
      'give url (a postgres:// URL) or sql (a postgres.js client)',
      'schema: must be a lower-case SQL name (a-z, 0-9, _; at most 63, not starting with a digit) (got "Bad-Name")',
      'max: must be an integer, at least 1 (got 0)',
    ]);
    const opened = await refusal(() => openStore(`${dir}/runs.db`, { mustexist: true } as never));
    expect(problems(opened)).toEqual(["unknown option 'mustexist' (did you mean 'mustExist'?)"]);
    expect(existsSync(`${dir}/runs.db`)).toBe(false);
  });

  it('connectPlane and restoreFromPlane let other names through (one config object serves both), their own names checked; restore names a missing id', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('plane.db') });
    const shared = {
      url: 'http://127.0.0.1:1',
      apiKey: 'k',
      claimFlushMs: 100,
      onClaimRefused: 'refuse' as const,
      pageSize: 10,
    };
    const replica = connectPlane(store, shared);
    await replica.stop();
    const restore = await refusal(() => restoreFromPlane(store, 'order-1', { ...shared, apiKey: ' ' }));
    expect(problems(restore)).toEqual([expect.stringMatching(/^apiKey: /)]);
    expect(restore.message).toContain('nothing was imported');
    expect(await store.latest('order-1')).toBeNull();
    // the id a script forgot (process.argv[2] unset): named, not asked of the plane as 'undefined'
    const noId = await refusal(() =>
      restoreFromPlane(store, undefined as never, { url: 'http://127.0.0.1:1', apiKey: 'k' }),
    );
    expect(problems(noId)).toEqual([expect.stringMatching(/^executionId: /)]);
    await store.close();
  });

  it('an option given as undefined asks for nothing and is let through', async () => {
    const store = new SqliteCheckpointer({ path: tmp.file('undefined.db'), extra: undefined } as never);
    const bot = new Agent({ name: 'bot', model: new ScriptedModel(() => ({ content: 'hi' })), checkpointer: store });
    expect(await bot.run('hello', { executionId: 'u-1', spare: undefined } as never)).toMatchObject({
      status: 'completed',
      executionId: 'u-1',
    });
    await store.close();
  });

  it('suggest: a case difference always, a near miss within a third of the name, nothing for a stranger', () => {
    const known = ['executionId', 'checkpointId', 'onEvent'];
    expect(suggest('EXECUTIONID', known)).toBe('executionId');
    expect(suggest('exectionId', known)).toBe('executionId');
    expect(suggest('file', known)).toBeNull();
  });
});
