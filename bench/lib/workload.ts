/** waymark's side of the workload: the same turns, tool calls, sizes and message text as the peer's graph. */
import { z } from 'zod';
import { Agent, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import { randomText } from './text.js';

/**
 * T turns, each a P-byte model message with one tool call, then a P-byte tool
 * result; the text is pseudo-random, fixed by (seed, turn), as in `peerGraph`.
 */
export function ourAgent(store: Checkpointer, T: number, P: number, onTurn?: () => void, seed = 0): Agent {
  const work = tool({
    name: 'work',
    description: 'work',
    parameters: z.object({ t: z.number() }),
    execute: ({ t }) => randomText(P, seed, t, 1),
  });
  const model = new ScriptedModel(({ turn }) => {
    onTurn?.();
    return turn < T
      ? { content: randomText(P, seed, turn, 0), toolCalls: [{ name: 'work', arguments: { t: turn } }] }
      : { content: 'done' };
  });
  return new Agent({ name: 'bench', model, tools: [work], checkpointer: store, maxTurns: T + 1 });
}
