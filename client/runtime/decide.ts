/**
 * Record a person's decision for a run's open pause in a store, the way the
 * local UI's form does: what a script, a CLI (`waymark decide`) or a screen of
 * your own calls. The decision is only recorded (and, with a replica
 * connected, replicated to the plane); a decision worker (`serveDecisions`)
 * applies it through the claim.
 */
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { uuidv7 } from '../../shared/ids.js';
import type { Json } from '../../shared/json.js';
import { DecisionRequest } from '../../shared/protocol.js';
import { Decision } from '../../shared/rows.js';
import { userInfo } from 'node:os';
import type { Checkpointer } from '../checkpointer.js';

/** A decision for `decide`: approved or not, its metadata and comment, who decided, and the pause it answers. */
export interface DecideInput {
  approved: boolean;
  /** Kept in the decision's metadata, which is what `interrupt()` returns to the tool (with `comment`). */
  metadata?: Record<string, Json>;
  /** Stored as `metadata.comment`. */
  comment?: string;
  /** Who decided (a user name). */
  decidedBy: string;
  /** The pause this answers; default the run's open pause. Name it when a person decided on what they saw. */
  checkpointId?: string;
}

/**
 * Record `input` for the open pause of `executionId` (source `local`).
 * Refuses, recording nothing: a pause already decided (ALREADY_DECIDED,
 * naming the first decision); a run with no open pause, or whose open pause
 * is not `checkpointId` (PAUSE_NOT_FOUND, or PAUSE_CLOSED when it was
 * answered); a bad value (INVALID_DECISION, naming every problem).
 */
export async function decide(store: Checkpointer, executionId: string, input: DecideInput): Promise<Decision> {
  // a named pause that was decided (and perhaps applied since) is ALREADY_DECIDED, whatever its state now
  const first = input.checkpointId === undefined ? null : await store.getDecision(executionId, input.checkpointId);
  if (first) throw alreadyDecided(executionId, first);
  const open = await store.getPendingInterrupt(executionId);
  if (input.checkpointId === undefined && !open) {
    // say why: a run that finished (or runs on) has no open pause, which reads differently from a run this store never held
    const latest = await store.latest(executionId);
    const why = latest
      ? `execution '${executionId}' is ${latest.status}; it has no open pause`
      : `execution '${executionId}' is not in this store`;
    throw new WaymarkError(ErrorCode.PAUSE_NOT_FOUND, `${why}; nothing was recorded`, {
      details: { executionId, checkpointId: null, status: latest?.status ?? null },
    });
  }
  // the store refuses a named pause that is not open (PAUSE_NOT_FOUND / PAUSE_CLOSED)
  const pause = { checkpointId: input.checkpointId ?? open!.checkpointId };
  const body = DecisionRequest.safeParse({
    checkpointId: pause.checkpointId,
    approved: input.approved,
    metadata: input.metadata,
    ...(input.comment === undefined ? {} : { comment: input.comment }),
  });
  const d = body.success
    ? Decision.safeParse({
        decisionId: uuidv7(),
        executionId,
        checkpointId: pause.checkpointId,
        approved: body.data.approved,
        metadata:
          body.data.comment === undefined ? body.data.metadata : { ...body.data.metadata, comment: body.data.comment },
        decidedBy: input.decidedBy,
        source: 'local',
        decidedAt: new Date().toISOString(),
      })
    : null;
  if (!body.success || !d?.success) {
    const problems = (!body.success ? body.error : d!.error!).issues.map(
      (i) => `${i.path.join('.') || 'the decision'}: ${i.message}`,
    );
    throw new WaymarkError(
      ErrorCode.INVALID_DECISION,
      `invalid decision for execution '${executionId}': ${problems.join('; ')}; nothing was recorded`,
      { details: { problems } },
    );
  }
  const r = await store.recordDecision(d.data);
  if (!r.recorded)
    throw alreadyDecided(executionId, (await store.getDecision(executionId, pause.checkpointId)) ?? r.existing);
  return d.data;
}

function alreadyDecided(executionId: string, first: Decision): WaymarkError {
  return new WaymarkError(
    ErrorCode.ALREADY_DECIDED,
    `pause ${first.checkpointId} of execution '${executionId}' was already decided by '${first.decidedBy}' at ${first.decidedAt} (${first.approved ? 'approved' : 'declined'}); nothing was recorded`,
    { details: { decision: first } },
  );
}

/** The OS user's name, the default `decidedBy` of the CLI and the local UI ('local user' when the OS has none). */
export function osUser(): string {
  try {
    return userInfo().username || 'local user';
  } catch {
    return 'local user';
  }
}
