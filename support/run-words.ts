/**
 * How a run's state is said, once, for the CLI (`waymark runs`) and both
 * inspectors (the plane's and `waymark ui`, which share inspector/): whether
 * it has ended, who holds a run that has no end marker (by its lease), what
 * stopped a failed run, and where a pause stands. The sources read the facts; these rules word them.
 *
 * Glossary
 *   held   a live lease: a runner holds the run now (running)
 *   stale  the holder's lease expired without a release: its runner died or
 *          stalled mid-run; recoverable
 *   free   nobody holds it (released, or never taken); `recoverRuns` takes it up
 *   recoverable  stale (`recoverable`): shown `stale`, and what the plane's
 *          Recover takes (`recoverRuns`, or a resume without an answer; at the
 *          plane, another machine's takeover, takes the run up)
 */
import { ErrorCode } from '../shared/errors.js';
import type { RunState } from '../shared/protocol.js';
import { isGraphNodeId } from './langgraph.js';

/** The statuses of a run that has ended: its newest row is its run-end marker (completed, failed, or a cancel's). */
export const ENDED_STATUSES: readonly RunState[] = ['completed', 'failed', 'cancelled'];

/** Whether a run has ended (one of ENDED_STATUSES); any other status or state (running, paused, stale) has not. */
export const hasEnded = (status: string): boolean => (ENDED_STATUSES as readonly string[]).includes(status);

/** A run's lease as its source reads it (a local store's lease; the plane's owner record), by that source's clock. */
export interface LeaseView {
  /** Who holds it; null once released, or when never held. */
  holder: string | null;
  expiresAt: string | null;
  /** The holder's expiry is still ahead. */
  live: boolean;
}

/**
 * Who holds a run without an end marker (running, or crashed: its rows alone cannot tell):
 * `held` (a live lease), `stale` (the holder's lease expired), `free`
 * (nobody's), `lost` (this store lost it at the plane: its rows refused
 * there) or `thread` (a LangGraph thread: it never ends with a marker, and
 * `recoverRuns` does not take it). Null for a run that ended or is paused (it holds no lease).
 */
export type Hold =
  | { kind: 'held'; holder: string; until: string }
  | { kind: 'stale'; holder: string; expiredAt: string }
  | { kind: 'free' }
  | { kind: 'lost' }
  | { kind: 'thread' };

/** A LangGraph thread's run (client/langgraph): its newest row is a graph row, and it has no run-end marker. */
export const isGraphThread = (run: { status: string; lastNodeId?: string | null }): boolean =>
  run.status === 'running' && isGraphNodeId(run.lastNodeId);

/** A run's hold from its status, newest node and lease; `lostAtPlane`: this store's rows of it were refused at the plane. */
export function holdOf(
  run: { status: string; lastNodeId?: string | null; lease?: LeaseView | null },
  o: { lostAtPlane?: boolean } = {},
): Hold | null {
  if (run.status !== 'running') return null;
  const l = run.lease ?? null;
  if (l?.live && l.holder && l.expiresAt) return { kind: 'held', holder: l.holder, until: l.expiresAt };
  if (o.lostAtPlane) return { kind: 'lost' };
  if (isGraphThread(run)) return { kind: 'thread' };
  if (l?.holder && l.expiresAt) return { kind: 'stale', holder: l.holder, expiredAt: l.expiresAt };
  return { kind: 'free' };
}

/**
 * Whether a run is stale: running, its holder's lease expired mid-run (its runner died or stalled). The one rule
 * for the `stale` word and for what the plane's Recover takes: a run shown running (a live lease, a LangGraph
 * thread, nobody's, lost) is not recovered from there.
 */
export const recoverable = (hold: Hold | null): hold is Extract<Hold, { kind: 'stale' }> => hold?.kind === 'stale';

/** The word a run's status is shown as: `stale` for a run whose runner's lease expired mid-run, else its status. */
export const statusWord = (status: string, hold: Hold | null): string => (recoverable(hold) ? 'stale' : status);

/**
 * The state a run is shown in (the inspectors' status column, the plane's API listing): its status, but
 * `paused` for a LangGraph thread waiting at `interrupt()` (`graphPaused`: its summary says running; the
 * source reads its newest checkpoint's writes) and `stale` for a running run whose holder's lease expired.
 */
export function runState(
  run: { status: Exclude<RunState, 'stale'>; lastNodeId?: string | null; lease?: LeaseView | null },
  o: { graphPaused?: boolean } = {},
): RunState {
  const status = o.graphPaused && run.status === 'running' ? 'paused' : run.status;
  return statusWord(status, holdOf({ ...run, status })) as RunState;
}

/**
 * A hold in words: text, and its time as `time` renders one (the CLI: local
 * time text; a page: a time element), so every reader says the same.
 */
export function holdWords<T>(h: Hold, time: (iso: string) => T): (string | T)[] {
  switch (h.kind) {
    case 'held':
      return [`held by ${h.holder} until `, time(h.until)];
    case 'stale':
      return [`STALE: ${h.holder} expired `, time(h.expiredAt), ' (recoverable)'];
    case 'free':
      return ['free (recoverRuns takes it)'];
    case 'lost':
      return [
        "LOST: the plane refused its rows (taken over or cancelled there: waymark sync status); recoverRuns takes the plane's copy once nobody holds it",
      ];
    case 'thread':
      return ['free'];
  }
}

/**
 * A run this store lost at the plane, whatever its status here (a local
 * store's, client/replica/branch.ts `lostAtPlane`): the plane refused this
 * store's rows of it from `fromSeq` on and keeps another branch. `reason`:
 * the plane's word for the first row it refused (`CODE: why`; it names the
 * writer whose branch it keeps, when it knows one).
 */
export interface LostAtPlane {
  fromSeq: number;
  reason: string;
}

/** The badge of a run this store lost at the plane, beside its status here. */
export const LOST_BADGE = 'lost at plane';

/**
 * A lost run in words, for the CLI and the local UI: what the plane refused
 * and what its record is (`what`, the first refused row as `seq` renders one:
 * the CLI's `#N`, a page's link), the plane's reason (`said`), and how this
 * store takes the plane's branch in place of its own (`take`).
 */
export function lostWords<T>(
  executionId: string,
  l: LostAtPlane,
  seq: (n: number) => T,
): { what: (string | T)[]; said: string; take: string } {
  return {
    what: [
      "the plane refused this store's rows of the run from ",
      seq(l.fromSeq),
      " on: its record of the run is another branch (another machine's, which took the run over or resumed the same " +
        'pause; or the run cancelled there), not this copy',
    ],
    said: `the plane said: ${l.reason}`,
    take:
      `replica.adoptPlaneBranch('${executionId}') replaces this copy with the plane's branch, keeping the effects this ` +
      'store recorded (recoverRuns does it for a run nobody holds); or ' +
      `waymark delete ${executionId} --local --yes, then waymark restore ${executionId}`,
  };
}

/** The outcome of the row a failed run stopped after: `stopped` by its turn limit (no call failed), else `failed`. */
export const failureOutcome = (code: string | undefined): 'stopped' | 'failed' =>
  code === ErrorCode.MAX_TURNS ? 'stopped' : 'failed';

/**
 * What stopped a failed run, said at the row it stopped after (`at`: that
 * row's step and turn). A turn limit is no failed call: the run stopped before
 * its next model call. Any other error is the failure of what that row began:
 * a model-call row's call, a tool row's call, else the next step.
 */
export function failureWords(code: string, at: { step: string; turn: number }): string {
  if (failureOutcome(code) === 'stopped') return `stopped after ${at.turn} turn${at.turn === 1 ? '' : 's'} (MAX_TURNS)`;
  const what = at.step === 'llm_call' ? 'the model call' : at.step === 'tool_call' ? 'the tool call' : 'the next step';
  return `${what} failed: ${code}`;
}

/**
 * Where a pause stands: `open` (no answer yet), `decided` (a decision is
 * recorded, no worker has applied it yet), `claimed` (claimed, its claimer
 * has not reported applying it yet), `resumed` (its answer was applied: the
 * run went on), `cancelled` (closed by a cancel, not answered).
 */
export type PauseStand = 'open' | 'decided' | 'claimed' | 'resumed' | 'cancelled';

/**
 * A pause's stand from what a source knows of it: its state (`open`; a local
 * store's `answered`, which its claim applied in the same transaction; the
 * plane's `claimed`, applied only once its claim is), its claim, and whether
 * a decision waits for it.
 */
export function pauseStand(
  p: { state: string; claim: { state: 'held' | 'applied' } | null },
  decided: boolean,
): PauseStand {
  if (p.state === 'cancelled') return 'cancelled';
  if (p.state === 'open') return decided ? 'decided' : 'open';
  if (p.state === 'answered' || p.claim?.state === 'applied') return 'resumed';
  return 'claimed';
}

/**
 * The answer a resumed pause was given: a claim writes the pause's tool row again with the answer appended to the
 * state's `resumes` (client/runtime/resume.ts), so the claim row's last resume is it; null when there is none.
 */
export function resumeAnswer(state: Record<string, unknown> | null): unknown {
  const resumes = state?.resumes;
  return Array.isArray(resumes) && resumes.length ? resumes[resumes.length - 1] : null;
}

/**
 * Whether `next`, the run's first row after `pause` (by seq), is the pause's claim row: a claim writes the pause's
 * tool row again, as the pause row's child, in the claim's transaction, so it is the row right after the pause or
 * none is (a later row of the run that names the pause as parent is not an answer to it).
 */
export function isClaimRow(
  pause: { id: string },
  next: { parentId?: string | null; step: string } | null | undefined,
): boolean {
  return !!next && next.parentId === pause.id && next.step === 'tool_call';
}

/** Each pause stand in words. */
export const PAUSE_WORDS: Record<PauseStand, string> = {
  open: 'open: waiting for an answer',
  decided: "decided, not applied yet: the application's decision worker resumes the run with it",
  claimed: 'claimed, not applied yet: its claimer has not reported resuming the run',
  resumed: 'resumed: its answer was applied and the run went on',
  cancelled: 'closed by a cancel of the run, not answered',
};
