/** A LangGraph checkpoint holding `values` (each channel at `version`) and the metadata of a loop step, for the saver tests. */
import { emptyCheckpoint, uuid6, type Checkpoint as GraphCheckpoint } from '@langchain/langgraph-checkpoint';

export function checkpoint(values: Record<string, unknown>, version = 1): GraphCheckpoint {
  return {
    ...emptyCheckpoint(),
    id: uuid6(-3),
    channel_values: values,
    channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, version])),
  };
}

export const meta = { source: 'loop' as const, step: 0, parents: {} };
