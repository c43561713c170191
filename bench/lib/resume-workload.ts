/** waymark's side of the resume bench: the workload of `ourAgent`, paused by `interrupt()` in its last tool call. */
import { z } from 'zod';
import { Agent, interrupt, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { randomText } from './text.js';

export const P = 200;

/** T turns of P-byte pseudo-random text (fixed by seed and turn, as in `peerGraph`); the last tool asks a human. */
export function benchAgent(store: Checkpointer, turns: number, seed = 0): Agent {
  const step = tool({
    name: 'step',
    description: '',
    parameters: z.object({ i: z.number() }),
    execute: ({ i }) => (i === turns - 1 ? interrupt('last', { i }).approved : randomText(P, seed, i, 1)),
  });
  const model = new ScriptedModel(({ turn }) =>
    turn < turns
      ? { content: randomText(P, seed, turn, 0), toolCalls: [{ name: 'step', arguments: { i: turn } }] }
      : { content: 'done' },
  );
  return new Agent({ name: 'bench', model, tools: [step], checkpointer: store, maxTurns: turns + 1 });
}
