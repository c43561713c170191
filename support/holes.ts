/**
 * The text of a run's holes (rows the plane refused, `HoleView`): the plane's
 * RUN_INCOMPLETE message, which a client passes on, and the inspector's pages
 * say them the same way.
 */
import type { HoleView } from '../shared/protocol.js';

/** One line naming each hole and why, e.g. `seq 3 (ROW_TOO_LARGE: …); seq 7 (…)`. */
export function describeHoles(list: Pick<HoleView, 'seq' | 'code' | 'reason'>[]): string {
  return list.map((h) => `seq ${h.seq} (${h.code}: ${h.reason})`).join('; ');
}
