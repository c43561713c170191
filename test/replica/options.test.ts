/**
 * connectPlane and the Replica constructor refuse options they cannot work
 * with: one INVALID_OPTIONS naming every problem (`details.problems`, one per
 * field), before anything starts. A refused connect leaves the store as it
 * was: no plane guard, no timer, no note, nothing sent.
 */
import { createHook } from 'node:async_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { connectPlane, Replica, type ConnectOptions } from '../../client/index.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { LIMITS } from '../../shared/limits.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const tmp = scratchDir('waymark-options-');
let plane: TestPlane;
let key = '';
beforeAll(async () => {
  plane = await startTestPlane('pglite');
  key = await plane.key('options', ['ingest', 'read']);
});
afterAll(async () => {
  await plane?.close();
  tmp.cleanup();
});

const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

let n = 0;
function store(): SqliteCheckpointer {
  const s = new SqliteCheckpointer({ path: tmp.file(`s${++n}.db`) });
  closing.push(() => s.close());
  return s;
}

/** A connect whose options are not type-checked: what a JavaScript caller or an unset variable passes. */
function connect(s: SqliteCheckpointer, options: Record<string, unknown>): Replica {
  const replica = connectPlane(s, options as unknown as ConnectOptions);
  closing.push(() => replica.stop());
  return replica;
}

/** The error a call threw (undefined: it did not throw). */
function thrown(f: () => unknown): (Error & { code?: string; details?: { problems?: string[] } }) | undefined {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  return undefined;
}

const good = () => ({ url: plane.url, apiKey: key, pollMs: 0, followChanges: false });

describe('connectPlane refuses options it cannot work with (INVALID_OPTIONS)', () => {
  // [the option given, the field each problem names]
  const cases: [string, Record<string, unknown>, string][] = [
    ['an empty key', { apiKey: '' }, 'apiKey'],
    ['a key of whitespace', { apiKey: '   ' }, 'apiKey'],
    ['a key with a line break (an env file read as is)', { apiKey: 'wm_x\n' }, 'apiKey'],
    ['no key (an unset variable)', { apiKey: undefined }, 'apiKey'],
    ['a url that is not http(s)', { url: 'ftp://127.0.0.1:4600' }, 'url'],
    ['a url that is not a URL', { url: '127.0.0.1:4600' }, 'url'],
    ['no url', { url: undefined }, 'url'],
    ['a url with credentials (dropped: the key is apiKey)', { url: 'http://user:pw@127.0.0.1:4600' }, 'url'],
    ['a url with a query (dropped by every request)', { url: 'http://127.0.0.1:4600/?project=a' }, 'url'],
    ['a negative timeout', { timeoutMs: -1 }, 'timeoutMs'],
    ['a zero timeout (undici: no timeout at all)', { timeoutMs: 0 }, 'timeoutMs'],
    ['a NaN timeout', { timeoutMs: Number.NaN }, 'timeoutMs'],
    ['a timeout past what a timer holds', { timeoutMs: 2 ** 31 }, 'timeoutMs'],
    ['a batch of no rows', { batchRows: 0 }, 'batchRows'],
    ['a fractional batch', { batchRows: 2.5 }, 'batchRows'],
    ['a negative batch size in bytes', { batchBytes: -1 }, 'batchBytes'],
    ['a negative debounce', { debounceMs: -5 }, 'debounceMs'],
    ['a NaN poll', { pollMs: Number.NaN }, 'pollMs'],
    ['a backoff starting at zero (a hot retry loop)', { backoffBaseMs: 0 }, 'backoffBaseMs'],
    ['an infinite backoff cap', { backoffCapMs: Number.POSITIVE_INFINITY }, 'backoffCapMs'],
    ['a backoff cap under its base', { backoffBaseMs: 1000, backoffCapMs: 10 }, 'backoffCapMs'],
    ['a NaN claim flush', { claimFlushMs: Number.NaN }, 'claimFlushMs'],
    ['a negative claim flush', { claimFlushMs: -1 }, 'claimFlushMs'],
    ['an unknown onClaimRefused', { onClaimRefused: 'maybe' }, 'onClaimRefused'],
    ['followChanges that is not a boolean', { followChanges: 'yes' }, 'followChanges'],
    ['a change-feed hold past the plane’s 25 s (it answers 400)', { changeWaitSeconds: 26 }, 'changeWaitSeconds'],
    [
      'a decision-feed hold of 0 (a followed feed would poll back to back)',
      { decisionWaitSeconds: 0 },
      'decisionWaitSeconds',
    ],
    ['an empty writer id', { writerId: '' }, 'writerId'],
    ['a writer id with a control character', { writerId: 'a\u0001b' }, 'writerId'],
    ['faults that is not a function', { faults: 'drain.afterFetch' }, 'faults'],
    ['a dispatcher with no request()', { dispatcher: {} }, 'dispatcher'],
  ];

  it.each(cases)('%s', (_name, bad, field) => {
    const s = store();
    const e = thrown(() => connect(s, { ...good(), ...bad }));
    expect(e?.code).toBe('INVALID_OPTIONS');
    expect(e?.details?.problems).toEqual([expect.stringMatching(new RegExp(`^${field}: `))]);
    expect(e?.message).toContain(field);
    expect(s.planeGuard.current).toBeNull();
  });

  it('the example of the report: a reachable-looking url with an empty key is refused, not reported idle', () => {
    const e = thrown(() => connect(store(), { url: 'http://127.0.0.1:1', apiKey: '' }));
    expect(e).toMatchObject({ code: 'INVALID_OPTIONS', details: { problems: [expect.stringMatching(/^apiKey: /)] } });
  });

  it('several problems at once: one error names every one of them', () => {
    const e = thrown(() =>
      connect(store(), {
        url: 'ftp://x',
        apiKey: '',
        timeoutMs: -1,
        batchRows: 0,
        claimFlushMs: Number.NaN,
        onClaimRefused: 'maybe',
        pollMs: 1.5,
      }),
    );
    expect(e?.code).toBe('INVALID_OPTIONS');
    const fields = ['url', 'apiKey', 'timeoutMs', 'batchRows', 'pollMs', 'claimFlushMs', 'onClaimRefused'];
    expect(e?.details?.problems?.map((p) => p.slice(0, p.indexOf(':'))).sort()).toEqual([...fields].sort());
    for (const f of fields) expect(e?.message).toContain(f);
  });

  it('no options object at all is refused the same way', () => {
    expect(thrown(() => connectPlane(store(), undefined as unknown as ConnectOptions))?.code).toBe('INVALID_OPTIONS');
  });

  it('secrets are not repeated in the message: the key, the password of a url', () => {
    const key = thrown(() => connect(store(), { ...good(), apiKey: 'wm_secret value' }));
    expect(key?.code).toBe('INVALID_OPTIONS');
    expect(JSON.stringify([key?.message, key?.details])).not.toContain('secret');
    const url = thrown(() => connect(store(), { ...good(), url: 'https://me:hunter2@plane.example' }));
    expect(url?.code).toBe('INVALID_OPTIONS');
    expect(JSON.stringify([url?.message, url?.details])).not.toContain('hunter2');
  });

  it('the Replica constructor checks its options the same way', () => {
    const e = thrown(() => {
      const replica = new Replica(store(), { url: 'ws://127.0.0.1:1', apiKey: ' ', batchBytes: 0 });
      closing.push(() => replica.stop());
    });
    expect(e?.code).toBe('INVALID_OPTIONS');
    expect(e?.details?.problems?.map((p) => p.slice(0, p.indexOf(':'))).sort()).toEqual([
      'apiKey',
      'batchBytes',
      'url',
    ]);
  });
});

describe('a refused connect starts nothing', () => {
  it('no guard, no timer or socket, no note, nothing sent; the paused run resumes locally', async () => {
    const s = store();
    const ledger = new Ledger(tmp.file(`l${n}.jsonl`));
    const { agent } = refundAgent({ store: s, ledger });
    const executionId = `options-${n}`;
    expect((await agent.run(refundRequest('7', 50_000), { executionId })).status).toBe('paused');
    const pending = (await s.outboxStats()).pendingCount;
    expect(pending).toBeGreaterThan(0);

    // everything right but one number: before the check this replica drained to the plane
    const created: string[] = [];
    const hook = createHook({
      init: (_id, type) => {
        if (type !== 'PROMISE') created.push(type);
      },
    }).enable();
    let e: ReturnType<typeof thrown>;
    try {
      e = thrown(() => connect(s, { ...good(), followChanges: true, pollMs: 10, debounceMs: 0, batchRows: 0 }));
    } finally {
      hook.disable();
    }
    expect(e?.code).toBe('INVALID_OPTIONS');
    expect(created).toEqual([]);
    expect(s.planeGuard.current).toBeNull();

    // long enough for a drain started with no debounce and a 10 ms poll to have noted and sent
    await new Promise((r) => setTimeout(r, 300));
    expect(await s.getMeta('drain')).toBeNull();
    expect((await s.outboxStats()).pendingCount).toBe(pending);
    expect((await call(`${plane.url}/v1/executions/${executionId}`, { key })).status).toBe(404);

    expect((await agent.resume(executionId, { approved: true })).status).toBe('completed');
    expect(ledger.charges()).toHaveLength(1);
  });
});

describe('valid options work as before', () => {
  it('the README and examples’ options connect and drain; a batch over the plane’s limit is still capped, not refused', async () => {
    for (const options of [
      { url: plane.url, apiKey: key },
      { url: `${plane.url}/`, apiKey: key, pollMs: 0, timeoutMs: 5000, claimFlushMs: 5000 },
      {
        url: plane.url,
        apiKey: key,
        pollMs: 200,
        debounceMs: 5,
        backoffBaseMs: 50,
        backoffCapMs: 500,
        timeoutMs: 3000,
        claimFlushMs: 2000,
        faults: () => {},
      },
      {
        url: plane.url,
        apiKey: key,
        pollMs: 0,
        backoffCapMs: 100,
        decisionWaitSeconds: 1,
        changeWaitSeconds: 25,
        onClaimRefused: 'resume_locally' as const,
      },
      {
        url: plane.url,
        apiKey: key,
        pollMs: 0,
        batchRows: LIMITS.batchRows * 10,
        batchBytes: LIMITS.batchBytes * 10,
        debounceMs: 0,
        claimFlushMs: 0,
      },
    ]) {
      const s = store();
      const ledger = new Ledger(tmp.file(`l${n}.jsonl`));
      const { agent } = refundAgent({ store: s, ledger });
      const replica = connect(s, options);
      expect(s.planeGuard.current).not.toBeNull();
      expect((await agent.run(refundRequest('8', 50_000), { executionId: `valid-${n}` })).status).toBe('paused');
      expect((await replica.flush({ timeoutMs: 20_000 })).pendingRows).toBe(0);
    }
  });
});

describe('setApiKey refuses a key the same way', () => {
  it("'' and whitespace are INVALID_OPTIONS; the replica keeps its state and its key", async () => {
    const s = store();
    const replica = connect(s, { ...good(), apiKey: 'wm_not_a_key' });
    const ledger = new Ledger(tmp.file(`l${n}.jsonl`));
    expect(
      (await refundAgent({ store: s, ledger }).agent.run(refundRequest('9', 50_000), { executionId: `key-${n}` }))
        .status,
    ).toBe('paused');
    expect((await replica.flush({ timeoutMs: 10_000 })).state).toBe('auth_failed');

    for (const bad of ['', '  ', 'wm_a b']) {
      expect(thrown(() => replica.setApiKey(bad))).toMatchObject({
        code: 'INVALID_OPTIONS',
        details: { problems: [expect.stringMatching(/^apiKey: /)] },
      });
      expect((await replica.status()).state).toBe('auth_failed');
    }

    replica.setApiKey(key);
    expect((await replica.flush({ timeoutMs: 10_000 })).pendingRows).toBe(0);
  });
});
