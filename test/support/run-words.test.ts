/**
 * support/run-words.ts's rule of a run that has ended (`hasEnded`), the one
 * home the run list's duration and the run page's Fork form judge by: a run
 * whose newest row is its run-end marker (completed, failed, cancelled); a
 * running, paused or stale one has not ended.
 */
import { describe, expect, it } from 'vitest';
import { RunState } from '../../shared/protocol.js';
import { hasEnded } from '../../support/run-words.js';

describe('hasEnded', () => {
  it('is true of completed, failed and cancelled runs, and of no other state a run is shown in', () => {
    expect(RunState.options.filter(hasEnded)).toEqual(['completed', 'failed', 'cancelled']);
    // a status read from somewhere else (a row, a query string) that is none of them
    expect(['', 'Completed', 'ended', 'interrupted'].filter(hasEnded)).toEqual([]);
  });
});
