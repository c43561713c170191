/** The state diff between two rows of a run, as the inspector shows it. */
import { stableStringify, type Json } from '../shared/json.js';
import type { State } from '../shared/codec.js';

export interface StateDiff {
  /** Messages both states share, from the start. */
  common: number;
  /** Messages only the later state has (after the shared prefix). */
  added: Json[];
  /** Messages only the earlier state had (when history was rewritten). */
  removed: Json[];
  /** Fields other than messages whose values differ: [before, after] (undefined = absent). */
  changed: { field: string; before: Json | undefined; after: Json | undefined }[];
}

/** Whether two JSON values are equal: the same object (two states decoded from the same rows share them), or the same text. */
const same = (x: Json | undefined, y: Json | undefined) => x === y || stableStringify(x) === stableStringify(y);

export function diffStates(a: State, b: State): StateDiff {
  const am = Array.isArray(a.messages) ? (a.messages as Json[]) : [];
  const bm = Array.isArray(b.messages) ? (b.messages as Json[]) : [];
  let common = 0;
  while (common < am.length && common < bm.length && same(am[common], bm[common])) common++;
  const fields = new Set([...Object.keys(a), ...Object.keys(b)].filter((k) => k !== 'messages'));
  const changed = [...fields]
    .sort()
    .filter((k) => !same(a[k], b[k]))
    .map((field) => ({
      field,
      before: Object.hasOwn(a, field) ? a[field] : undefined,
      after: Object.hasOwn(b, field) ? b[field] : undefined,
    }));
  return { common, added: bm.slice(common), removed: am.slice(common), changed };
}
