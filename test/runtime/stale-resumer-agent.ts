/**
 * A run with two successive pauses: turn 0 calls `deploy` ("deploy to prod?"),
 * turn 1 calls `drop_database` ("drop the production database?"). Each tool
 * appends what it did to a ledger file, so effects are counted across processes.
 */
import { z } from 'zod';
import { Agent, interrupt, ScriptedModel, tool, type Checkpointer } from '../../client/index.js';
import type { Ledger } from '../../examples/agents/refund.js';

export function deployAgent(store: Checkpointer, ledger: Ledger): Agent {
  const model = new ScriptedModel(({ turn }) => {
    if (turn === 0) return { toolCalls: [{ name: 'deploy', arguments: { target: 'prod' } }] };
    if (turn === 1) return { toolCalls: [{ name: 'drop_database', arguments: { db: 'production' } }] };
    return { content: 'done' };
  });
  const deploy = tool({
    name: 'deploy',
    description: 'Deploy',
    parameters: z.object({ target: z.string() }),
    execute: ({ target }) => {
      const d = interrupt('deploy to prod?', { target });
      ledger.append({ kind: 'charge', order: `deploy:${target}:approved=${d.approved}` });
      return d.approved ? 'deployed' : 'not deployed';
    },
  });
  const drop = tool({
    name: 'drop_database',
    description: 'Drop a database',
    parameters: z.object({ db: z.string() }),
    execute: ({ db }) => {
      const d = interrupt('drop the production database?', { db });
      ledger.append({ kind: 'charge', order: `drop:${db}:approved=${d.approved}` });
      return d.approved ? 'dropped' : 'kept';
    },
  });
  return new Agent({ name: 'deployer', model, tools: [deploy, drop], checkpointer: store });
}
