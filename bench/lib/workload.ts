/** waymark's side of the workload: the same turns, tool calls and sizes as the peer's graph. */
import { z } from 'zod';
import { Agent, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';

export function ourAgent(store: Checkpointer, T: number, P: number, onTurn?: () => void): Agent {
  const work = tool({ name: 'work', description: 'work', parameters: z.object({ t: z.number() }), execute: () => 'r'.repeat(P) });
  const model = new ScriptedModel(({ turn }) => {
    onTurn?.();
    return turn < T ? { content: 'a'.repeat(P), toolCalls: [{ name: 'work', arguments: { t: turn } }] } : { content: 'done' };
  });
  return new Agent({ name: 'bench', model, tools: [work], checkpointer: store, maxTurns: T + 1 });
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
export const spread = (xs: number[]) => (xs.length ? Math.max(...xs) - Math.min(...xs) : 0);
