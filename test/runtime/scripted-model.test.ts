import { describe, expect, it } from 'vitest';
import { ScriptedModel } from '../../client/index.js';
import type { ModelRequest } from '../../client/models/model.js';

/** A request whose tool list counts its reads, as the agent's is: built on first read. */
function countingRequest(signal?: AbortSignal): { request: ModelRequest; reads: () => number } {
  let reads = 0;
  const request: ModelRequest = {
    messages: [{ role: 'user', content: 'hi' }],
    signal,
    get tools() {
      reads++;
      return [{ name: 'work', description: 'work', parameters: { type: 'object' } }];
    },
  };
  return { request, reads: () => reads };
}

describe('ScriptedModel', () => {
  it('does not read the tool list unless its rule does (the agent builds the JSON schemas on first read)', async () => {
    const { request, reads } = countingRequest();
    const reply = await new ScriptedModel(({ turn, lastUser }) => ({ content: `${turn}:${lastUser}` })).generate(
      request,
    );
    expect(reply.content).toBe('0:hi');
    expect(reads()).toBe(0);
  });

  it('gives a rule that reads the tool list the request’s own, and passes the signal on', async () => {
    const signal = new AbortController().signal;
    const { request, reads } = countingRequest(signal);
    let seen: AbortSignal | undefined;
    const reply = await new ScriptedModel((ctx) => {
      seen = ctx.signal;
      return { content: ctx.tools.map((t) => t.name).join(',') };
    }).generate(request);
    expect(reply.content).toBe('work');
    expect(reads()).toBe(1);
    expect(seen).toBe(signal);
  });
});
