/** A child process holding its own SqliteCheckpointer on a shared file; driven over IPC. */
import { SqliteCheckpointer } from '../../client/sqlite/index.js';

const store = new SqliteCheckpointer({ path: process.argv[2] });
const send = (m: unknown) => process.send?.(m);

process.on(
  'message',
  async (m: {
    type: string;
    executionId?: string;
    checkpointId?: string;
    round?: number;
    count?: number;
    executions?: string[];
  }) => {
    try {
      if (m.type === 'claim') {
        const r = await store.claimInterrupt({ executionId: m.executionId!, checkpointId: m.checkpointId! });
        send({ type: 'claimed', round: m.round, won: r !== null, pid: process.pid });
      } else if (m.type === 'write') {
        const ids: string[] = [];
        for (let i = 0; i < m.count!; i++) {
          const executionId = m.executions![i % m.executions!.length];
          const row = await store.put({
            executionId,
            nodeId: `turn:${i}`,
            turn: i,
            step: 'llm_call',
            status: 'completed',
            agentPath: `agent:w${process.pid}`,
            state: { messages: [{ role: 'user', content: `from ${process.pid} #${i}` }], turn: i },
          });
          ids.push(row.id);
        }
        send({ type: 'written', ids });
      } else if (m.type === 'exit') {
        await store.close();
        process.exit(0);
      }
    } catch (e) {
      send({ type: 'error', message: (e as Error).message });
    }
  },
);
send({ type: 'ready' });
