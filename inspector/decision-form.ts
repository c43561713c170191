/**
 * The fields of the inspector's decision forms, read and checked: the run
 * page's approve/decline form (one pause) and the inbox's (the pauses ticked,
 * or a row's own button). Every problem is named; the answer fields are
 * checked alike for both. Recording is approvals.tsx's (`recordOne`).
 */
import { ErrorCode } from '../shared/errors.js';
import { LIMITS } from '../shared/limits.js';
import { Uuidv7 } from '../shared/rows.js';

/** A pause's key in the inbox's form: its checkpoint id (a UUIDv7, no colon), a colon, its run's id. */
export const pauseKey = (p: { checkpointId: string; executionId: string }) => `${p.checkpointId}:${p.executionId}`;

/** The problems of a form's answer fields (shared by the run page's form and the inbox's). */
function answerProblems(approved: unknown, comment: unknown): string[] {
  const problems: string[] = [];
  if (approved !== 'true' && approved !== 'false')
    problems.push("approved: must be 'true' (Approve) or 'false' (Decline)");
  if (comment !== undefined && typeof comment !== 'string') problems.push('comment: must be text');
  if (typeof comment === 'string' && comment.length > LIMITS.decisionCommentLength)
    problems.push(`comment: at most ${LIMITS.decisionCommentLength} characters`);
  return problems;
}

/** The problem of a posted pause id, or null. */
function checkpointProblem(checkpointId: unknown): string | null {
  if (typeof checkpointId !== 'string' || !checkpointId) return 'checkpointId: the pause is missing';
  if (!Uuidv7.safeParse(checkpointId).success)
    return `checkpointId: not a pause's id (a UUIDv7), got '${checkpointId.slice(0, 40)}'`;
  return null;
}

/** A decision's comment as recorded: trimmed, left out when empty. */
export const commentOf = (comment: unknown) => {
  const text = typeof comment === 'string' ? comment.trim() : '';
  return text ? { comment: text } : {};
};

/** The decision a form posts, or every problem of it (the form's own fields only). */
export function formRequest(
  form: Record<string, unknown>,
): { req: { checkpointId: string; approved: boolean; comment?: string } } | { problems: string[] } {
  const problems: string[] = [];
  for (const k of Object.keys(form))
    if (!['csrf', 'checkpointId', 'approved', 'comment'].includes(k)) problems.push(`unknown field '${k}'`);
  const { checkpointId, approved, comment } = form;
  const bad = checkpointProblem(checkpointId);
  if (bad) problems.push(bad);
  problems.push(...answerProblems(approved, comment));
  if (problems.length) return { problems };
  return { req: { checkpointId: checkpointId as string, approved: approved === 'true', ...commentOf(comment) } };
}

/** One pause an inbox form names: its run and pause id, or why it names none. */
type NamedPause = { key: string; executionId: string; checkpointId: string } | { key: string; problem: string };

/** The pause a form's key names (`pauseKey`), or its problem. */
function namedPause(key: string): NamedPause {
  const at = key.indexOf(':');
  const checkpointId = at < 0 ? key : key.slice(0, at);
  const executionId = at < 0 ? '' : key.slice(at + 1);
  const bad = checkpointProblem(checkpointId);
  if (bad) return { key, problem: bad };
  if (!executionId) return { key, problem: 'the run is missing (a pause is named as checkpointId:executionId)' };
  return { key, executionId, checkpointId };
}

/**
 * The decisions the inbox's form posts: the answer (the Approve/Decline selected button, or a row's own button,
 * which names its one pause) and each pause named. A problem of the form as a whole is `problems` (nothing is
 * recorded); a pause that is not one is its own refusal, and the others go on.
 */
export function bulkRequest(
  form: Record<string, unknown>,
):
  | { approved: boolean; comment?: string; pauses: NamedPause[] }
  | { code: typeof ErrorCode.INVALID_DECISION | typeof ErrorCode.TOO_MANY_PAUSES; problems: string[] } {
  const problems: string[] = [];
  for (const k of Object.keys(form))
    if (!['csrf', 'pause', 'one', 'approved', 'comment'].includes(k)) problems.push(`unknown field '${k}'`);
  const texts = (v: unknown) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  const one = texts(form.one);
  const comment = form.comment;
  let approved: unknown = Array.isArray(form.approved) ? undefined : form.approved;
  let keys: unknown[];
  if (one.length > 0) {
    // a row's own button: its one pause, its answer
    if (one.length > 1 || typeof one[0] !== 'string') problems.push('one: a single pause');
    const [answer, ...rest] = typeof one[0] === 'string' ? one[0].split(':') : [];
    approved = answer;
    keys = [rest.join(':')];
  } else {
    keys = texts(form.pause);
    if (keys.length === 0) problems.push('pause: select at least one pause');
  }
  problems.push(...answerProblems(approved, comment));
  if (keys.some((k) => typeof k !== 'string')) problems.push('pause: must be text');
  if (problems.length) return { code: ErrorCode.INVALID_DECISION, problems };
  const unique = [...new Set(keys as string[])];
  if (unique.length > LIMITS.bulkDecisions)
    return {
      code: ErrorCode.TOO_MANY_PAUSES,
      problems: [`pause: ${unique.length} pauses selected, at most ${LIMITS.bulkDecisions} at once`],
    };
  return { approved: approved === 'true', ...commentOf(comment), pauses: unique.map(namedPause) };
}
