/**
 * Taking a run up again (`Agent.resume`), between the call's checks and the
 * loop's re-entry: the run's newest row is read and judged, the run is claimed
 * or taken, and the row it re-enters at is found. Every refusal comes before
 * the loop starts; one after the lease was taken gives the lease back.
 *
 * - A paused run is claimed with the answer: the claim guard first (the
 *   agent's own, or the connected plane's claim, so of the fleet's resumers
 *   exactly one runs), then the store's claim, which writes the answer as the
 *   pause's tool row and takes the lease in one transaction.
 * - Any other run is taken: its lease acquired (a live runner refuses it with
 *   RunInProgress), what it became meanwhile read again, and with a plane
 *   connected, the run taken over there from another machine.
 *
 * - A refusal says what is true of the run: a completed run is
 *   ALREADY_FINISHED, a cancelled one RUN_CANCELLED; an answer for a run with
 *   no open pause is ALREADY_RESUMED when its pause was answered already, and
 *   otherwise (it never paused) ALREADY_FINISHED or PAUSE_NOT_FOUND, naming a
 *   failed run's error.
 *
 * Before a row is claimed or re-entered, its path is walked through the
 * agent's workers and tools (resolvePath): a pause the agent cannot carry on
 * is left open.
 *
 * Naming the pause a resume answers: a decision answers one pause
 * (its `interrupted` checkpoint id); `resume` with `checkpointId` refuses to
 * answer any other, so a decision made for an earlier pause never answers a
 * later one the person was not shown.
 */
import type { Json } from '../../shared/json.js';
import { ErrorCode, runErrorOf, type WaymarkError } from '../../shared/errors.js';
import type { Checkpoint } from '../../shared/rows.js';
import type { Checkpointer, ClaimGuard } from '../checkpointer.js';
import {
  AlreadyFinished,
  AlreadyResumed,
  CheckpointError,
  MovedOn,
  NotConnected,
  PauseNotFound,
  ResumeRequired,
  StoreBehind,
} from '../errors.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';
import { Resume } from './interrupt.js';
import { holderOf, RunLease } from './lease.js';
import type { AgentLoop } from './loop.js';
import { acquireRun, holding, kept, TOOL_MISSING } from './run-state.js';
import { toolSegment } from './tool.js';
import type { Level, Place, ResumeOptions, RunState } from './types.js';

/** A resume call, its arguments checked: the run, the resuming agent's loop and what the agent was made with. */
export interface Resumption {
  executionId: string;
  store: Checkpointer;
  /** The resuming agent's loop: its path, tools and workers. */
  runner: AgentLoop;
  leaseMs: number;
  /** The agent's own guard, called before a local claim instead of the connected plane's. */
  claimGuard?: ClaimGuard;
  options: ResumeOptions;
  decisionId?: string;
}

/** A person's answer to a pause, as `resume` takes it. */
export type Answer = Resume | { approved: boolean; metadata?: Record<string, Json> };

/** A run this runner holds: its level, and the row of the agent's own path the loop re-enters at. */
export interface HeldRun {
  level: Level;
  own: Checkpoint;
}

/** Claim the run's open pause with `resume`, or, given no answer, take the run. */
export async function claimOrTake(r: Resumption, resume: Answer | undefined): Promise<HeldRun> {
  const latest = await resumable(r);
  const answer = resume === undefined ? undefined : (resume instanceof Resume ? resume : new Resume(resume)).toJSON();
  // a take catches up with the plane before its last check: a store behind the named row is judged after that
  await refuseNotNewest(r, latest, answer !== undefined);
  await checkAnswer(r, latest, answer);
  const { lease, newest } = answer === undefined ? await take(r, latest) : await claim(r, latest, answer);
  return holding(lease, () => reentryRow(r, lease, newest));
}

/** The run's newest row, refused when the store has none or the run was cancelled. */
async function resumable({ store, executionId }: Resumption): Promise<Checkpoint> {
  const latest = await store.latest(executionId);
  if (!latest) {
    const hint = store.planeGuard.current
      ? '; restoreFromPlane(store, id, …) brings a run this store has never seen'
      : '';
    throw new CheckpointError(`execution '${executionId}' has no rows in this store${hint}`, {
      code: ErrorCode.EXECUTION_NOT_FOUND,
      details: { executionId },
    });
  }
  if (isCancelMarker(latest)) throw runCancelled(latest);
  return latest;
}

/**
 * An answer goes to the open pause (the one `checkpointId` names, if given), a
 * paused run needs one, and a completed run is not taken again. An answer for
 * a run with no open pause is refused as what is true of the run (noOpenPause).
 */
async function checkAnswer(r: Resumption, latest: Checkpoint, answer: Json | undefined): Promise<void> {
  const { executionId, options } = r;
  const paused = latest.status === 'interrupted';
  const named = options.checkpointId !== undefined && options.checkpointId !== latest.id;
  if (paused && named) throw pauseNotOpen(executionId, options.checkpointId!, latest);
  if (!paused && answer !== undefined) throw await noOpenPause(r, latest);
  if (paused && answer === undefined) throw new ResumeRequired(executionId, latest.interruptReason ?? 'paused');
  refuseEnded(executionId, latest);
}

/** The pause asked for is not the run's open pause, which is another one (the run moved on to it): not answered. */
function pauseNotOpen(executionId: string, checkpointId: string, latest: Checkpoint): AlreadyResumed {
  return new AlreadyResumed(
    `execution '${executionId}': the pause at checkpoint ${checkpointId} is no longer open; the run's open pause is ${latest.id}, not answered; nothing was claimed`,
    { executionId, checkpointId, openCheckpointId: latest.id },
  );
}

/**
 * Why an answer finds no open pause, as what is true of the run: its pause
 * was answered already (ALREADY_RESUMED: the pause named, or its last one;
 * the message says what the run did since), or it never paused: it completed
 * (ALREADY_FINISHED), failed (PAUSE_NOT_FOUND, with its error) or runs on
 * (PAUSE_NOT_FOUND). `details.status` is the run's status; a failed run's
 * error is `details.error`, and it is resumed without an answer.
 */
async function noOpenPause({ store, executionId, options }: Resumption, latest: Checkpoint): Promise<WaymarkError> {
  const ended = latest.step === 'run_end';
  const status = ended ? latest.status : 'running';
  const error = ended && latest.status === 'failed' ? runErrorOf(latest.nodeOutput) : null;
  const now = error
    ? `failed (${error.code}: ${error.message}); resume it without an answer to run it again`
    : ended
      ? 'completed'
      : 'is running, or stopped without an end marker';
  const details = { executionId, status, ...(error ? { error } : {}) };
  const last = await lastPause(store, executionId);
  if (last) {
    const which = options.checkpointId ?? last.id;
    return new AlreadyResumed(
      `execution '${executionId}': the pause at checkpoint ${which} ${options.checkpointId ? 'is no longer open' : 'was answered already'}; the run ${ended ? '' : 'has no open pause and '}${now}; nothing was claimed`,
      { ...details, checkpointId: which, lastPauseId: last.id, openCheckpointId: null },
    );
  }
  if (ended && !error)
    return new AlreadyFinished(
      executionId,
      latest.id,
      `execution '${executionId}' completed without pausing: it has no pause to answer; nothing was claimed`,
    );
  return new PauseNotFound(
    `execution '${executionId}' never paused: it has no pause to answer; it ${error ? now : `${now}: resume it without an answer to take it up`}; nothing was claimed`,
    { ...details, checkpointId: options.checkpointId ?? null },
  );
}

/** The run's newest pause row (a pause opened: status interrupted), answered or not; null when it never paused. */
async function lastPause(store: Checkpointer, executionId: string): Promise<Checkpoint | null> {
  for (let before: number | undefined; ; ) {
    const rows = await store.list(executionId, { step: 'hitl_pause', order: 'desc', beforeSeq: before, limit: 100 });
    const pause = rows.find((p) => p.status === 'interrupted');
    if (pause) return pause;
    if (rows.length < 100) return null;
    before = rows[rows.length - 1].seq;
  }
}

/** Claim the pause `latest` with `answer`: through the claim guard, then the store's claim, which takes the lease. */
async function claim(r: Resumption, latest: Checkpoint, answer: Json): Promise<{ lease: RunLease; newest: string }> {
  const { store, executionId, decisionId } = r;
  // before the claim: a pause this agent cannot carry on (a tool or a delegation gone) is left open
  await resolvePath(r, latest);
  // read once: a replica stopped meanwhile must not leave a claim that was checked by nothing
  const plane = store.planeGuard.current;
  const guard = r.claimGuard ?? (plane ? (c: Parameters<ClaimGuard>[0]) => plane.claim(c) : undefined);
  if (!guard) await refuseOffPlane(r);
  const paused = (await store.readState(latest)) as RunState;
  const prior = Array.isArray(paused.resumes) ? (paused.resumes as Json[]) : [];
  // one holder for both claims: the plane's owner record names the acquisition the store's lease is
  const holder = holderOf(store);
  if (guard)
    await guard({
      executionId,
      checkpointId: latest.id,
      ...(decisionId ? { decisionId } : {}),
      holder,
      ttlMs: r.leaseMs,
    });
  // the claim names the pause read above: if another resumer answered it meanwhile, a later pause is not taken
  const claimed = await store.claimInterrupt(
    { executionId, checkpointId: latest.id },
    {
      // the claim winner takes the lease in the claim's transaction: a claimed resume is never left unowned
      lease: { holder, ttlMs: r.leaseMs },
      decisionId,
      next: {
        executionId,
        prevId: latest.id,
        nodeId: latest.nodeId,
        turn: latest.turn,
        step: 'tool_call',
        status: 'completed',
        agentPath: latest.agentPath,
        parentId: latest.id,
        state: { ...paused, resumes: [...prior, answer] },
        nodeInput: latest.nodeInput,
      },
    },
  );
  if (!claimed) {
    // closed by a cancel rather than answered by another resumer
    const now = await store.latest(executionId);
    if (isCancelMarker(now)) throw runCancelled(now!);
    throw new AlreadyResumed(
      `execution '${executionId}': the pause at checkpoint ${latest.id} is no longer open: another resumer answered it`,
      { executionId, checkpointId: latest.id },
    );
  }
  return { lease: new RunLease(store, claimed.lease!), newest: claimed.checkpoint?.id ?? latest.id };
}

/**
 * Take a run that is not paused: acquire its lease, then catch up with what
 * it became. A live runner of this store (or one dead less than a lease ago)
 * refuses this with RunInProgress; the plane is asked only after this and the
 * local checks, so a resume that cannot run here never takes the run from
 * the fleet.
 */
async function take(r: Resumption, latest: Checkpoint): Promise<{ lease: RunLease; newest: string }> {
  if (!r.store.planeGuard.current) await refuseOffPlane(r);
  const lease = await acquireRun(r.store, r.executionId, r.leaseMs);
  return { lease, newest: await holding(lease, () => catchUp(r, lease, latest.id)) };
}

/**
 * The newest row of a run just taken: what the run became while another held
 * its lease (finished, paused, or further along), and, connected to a plane,
 * what taking it over there brought.
 */
async function catchUp(r: Resumption, lease: RunLease, newest: string): Promise<string> {
  const { store, executionId } = r;
  const now = await store.latest(executionId);
  if (!now) return newest;
  const plane = store.planeGuard.current;
  // with no plane to catch up from, this is the last word on the named row
  await refuseNotNewest(r, now, !plane);
  refuseMovedOn(executionId, now);
  // re-entry inside a nested worker: its tool and every delegation to it must still be there
  if (now.step !== 'run_end') await resolvePath(r, now);
  // connected to a plane: another machine's run is taken over there (one owner, once its hold expired); the
  // guard may first bring what the plane holds and this copy lacks, so the newest row is read again after it
  if (!plane) return now.id;
  await plane.takeover({ executionId, seq: now.seq, holder: lease.lease.holder, ttlMs: r.leaseMs });
  const after = (await store.latest(executionId)) ?? now;
  await refuseNotNewest(r, after, true);
  if (after.id === now.id) return now.id;
  refuseMovedOn(executionId, after);
  if (after.step !== 'run_end') await resolvePath(r, after);
  return after.id;
}

/** The row the loop re-enters at: the newest of the agent's own path, whose tool the agent must still have. */
async function reentryRow(r: Resumption, lease: RunLease, newest: string): Promise<HeldRun> {
  const level = r.runner.topLevel(r.executionId, r.store, newest, lease, r.options.onEvent);
  const own = await r.runner.latestOwn(level);
  if (!own) throw new CheckpointError(`execution '${r.executionId}' has no row of ${r.runner.path} to resume from`);
  if (own.step === 'tool_call') await resolveTool(r, own);
  return { level, own };
}

/**
 * With `expectNewestId`, a run whose newest row is another one: MovedOn when
 * this store holds the named row (it is at or past it: the run moved on since
 * it was named). A store without it is behind (or the row is not this run's)
 * and judges nothing: passed over until the plane's takeover caught it up,
 * then (`final`) StoreBehind. Nothing written either way.
 */
async function refuseNotNewest(
  { store, executionId, options }: Resumption,
  row: Checkpoint,
  final: boolean,
): Promise<void> {
  const want = options.expectNewestId;
  if (want === undefined || row.id === want) return;
  const named = await store.getById(want);
  if (!named || named.executionId !== executionId) {
    if (!final) return;
    throw new StoreBehind(
      `execution '${executionId}': this store does not hold row ${want}, which the resume names as the newest (its newest is #${row.seq}, ${row.id}): its copy is behind the plane's; nothing was done`,
      { executionId, expectedId: want, newestId: row.id, newestSeq: row.seq },
    );
  }
  throw new MovedOn(
    `execution '${executionId}' moved on: its newest row is #${row.seq} (${row.step} ${row.status}, ${row.id}), not ${want}; nothing was done`,
    {
      executionId,
      expectedId: want,
      newestId: row.id,
      newestSeq: row.seq,
      status: row.step === 'run_end' ? row.status : row.status === 'interrupted' ? 'paused' : 'running',
    },
  );
}

/** A run that has ended is not resumed: completed is AlreadyFinished, cancelled is RunCancelled. */
function refuseEnded(executionId: string, row: Checkpoint): void {
  if (row.step === 'run_end' && row.status === 'completed')
    throw new AlreadyFinished(
      executionId,
      row.id,
      `execution '${executionId}' already finished (completed); there is nothing to resume`,
    );
  if (isCancelMarker(row)) throw runCancelled(row);
}

/** A run taken without an answer that ended or paused meanwhile is refused as such. */
function refuseMovedOn(executionId: string, row: Checkpoint): void {
  refuseEnded(executionId, row);
  if (row.status === 'interrupted') throw new ResumeRequired(executionId, row.interruptReason ?? 'paused');
}

/**
 * A run a plane holds is resumed through that plane's claim: with no guard
 * installed (no `connectPlane`, no claim guard of the agent's own) it is
 * refused, unless the caller gives the fleet-wide claim up with `withoutPlane`.
 */
async function refuseOffPlane({ store, executionId, options }: Resumption): Promise<void> {
  if (options.withoutPlane !== true && (await store.heldByPlane(executionId))) throw new NotConnected(executionId);
}

/**
 * What re-entering at `row` needs, checked before anything is claimed or
 * written: its path's workers and tool (resolveTool), and for a row inside
 * a nested worker, each level's delegation (that level's newest own row, a
 * tool row) still a tool delegating to that worker. A supervisor redeployed
 * with the delegation renamed or dropped would otherwise claim the pause
 * and then fail, or tell its model the tool does not exist.
 */
async function resolvePath(r: Resumption, row: Checkpoint): Promise<void> {
  await resolveTool(r, row);
  let agent: AgentLoop = r.runner;
  let place: Place = { executionId: r.executionId, store: r.store, path: agent.path, afterSeq: -1 };
  for (const part of row.agentPath.split('/').slice(1)) {
    if (!part.startsWith('agent:')) break;
    const name = part.slice('agent:'.length);
    const delegation = await kept(r.runner.latestOwn(place));
    // a tool row's node id names its tool (`turn:N/tool:NAME`); a fork's origin carries its source's
    const nodeId =
      delegation?.step === 'fork_origin'
        ? (delegation.nodeInput as { nodeId?: unknown } | null)?.nodeId
        : delegation?.nodeId;
    const at = typeof nodeId === 'string' ? nodeId.lastIndexOf('/tool:') : -1;
    const toolName = at >= 0 ? (nodeId as string).slice(at + '/tool:'.length) : null;
    const worker = agent.workers.get(name);
    if (!delegation || toolName === null || !worker || agent.workersByTool.get(toolName) !== worker) {
      throw new CheckpointError(
        `the run needs tool '${toolName ?? '?'}' of agent '${agent.name}' delegating to worker agent '${name}', which agent '${agent.name}' does not have`,
        {
          details: { tool: toolName ?? name },
          code: ErrorCode.TOOL_NOT_FOUND,
        },
      );
    }
    agent = worker;
    place = { executionId: r.executionId, store: r.store, path: `${place.path}/${part}`, afterSeq: delegation.seq };
  }
}

/**
 * Walk a row's agent path (`agent:A/agent:W/tool:T`) through the agent's
 * workers; throws TOOL_NOT_FOUND naming a missing tool. The tool a row is
 * at may be missing only when the row is marked as written for a tool its
 * agent did not have then (TOOL_MISSING): re-entered, the model is answered
 * again that it does not exist. Its state is read only then.
 */
async function resolveTool({ runner, store }: Resumption, row: Checkpoint): Promise<void> {
  const parts = row.agentPath.split('/');
  if (parts[0] !== runner.path) {
    throw new CheckpointError(`row belongs to '${parts[0]}', not to ${runner.path}`);
  }
  let agent: AgentLoop = runner;
  for (const [i, part] of parts.entries()) {
    if (i === 0) continue;
    const [kind, name] = [part.slice(0, part.indexOf(':')), part.slice(part.indexOf(':') + 1)];
    if (kind === 'agent') {
      const w = agent.workers.get(name);
      if (!w)
        throw new CheckpointError(
          `the paused run needs worker agent '${name}', which agent '${agent.name}' does not have`,
          { details: { tool: name } },
        );
      agent = w;
    } else if (kind === 'tool') {
      if (!agent.tools.has(name) && !(i === parts.length - 1 && (await writtenMissing(store, row, name)))) {
        throw new CheckpointError(`the run needs tool '${name}', which agent '${agent.name}' does not have`, {
          details: { tool: name },
          code: ErrorCode.TOOL_NOT_FOUND,
        });
      }
    }
  }
}

/** Whether `row` is a tool row written for a tool (named `segment` in its path) that its agent did not have then. */
async function writtenMissing(store: Checkpointer, row: Checkpoint, segment: string): Promise<boolean> {
  if (row.step !== 'tool_call') return false;
  const state = (await kept(store.readState(row))) as RunState;
  return state[TOOL_MISSING] === true && typeof state.toolName === 'string' && toolSegment(state.toolName) === segment;
}
