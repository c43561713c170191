/**
 * Retention: finished runs (completed or failed) whose summary has not
 * changed for longer than a set age are deleted from the plane, with every
 * row, pause, idempotency entry and hole of theirs. A paused or running run is
 * never pruned, nor one updated within the age (rows still arriving): the
 * age is checked again by the DELETE itself, so a row ingested meanwhile keeps
 * its run. Run as `waymark plane prune` (POST /v1/admin/prune) and, with
 * WAYMARK_RETENTION_DAYS, on a schedule inside the plane.
 */
import { and, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import { UnknownProject, type Principal } from './auth.js';
import { type PlaneDb, rowsOf } from './db/open.js';
import {
  checkpoints,
  decisions,
  executions,
  holes,
  idempotency,
  pendingInterrupts,
  projects,
  runOwners,
  runRequests,
  runTakeovers,
} from './db/schema.js';

/** The smallest age a prune accepts: a run updated within the last hour may still be receiving rows. */
export const MIN_RETENTION_SECONDS = 3600;

export interface PruneResult {
  dryRun: boolean;
  /** Runs last updated before this were candidates. */
  cutoff: string;
  items: { project: string; executionId: string; status: string; rowCount: number; updatedAt: string }[];
}

/** '30d', '12h', '90m', '3600s' (or a bare number of seconds) as seconds; null when it is none of those. */
export function parseAge(text: string): number | null {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  if (!m) return null;
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

/**
 * Prune (or with `dryRun`, list) the finished runs older than `olderThanSeconds`:
 * of `project` when named, else of every project an operator manages, else of
 * the admin key's own project.
 */
export async function pruneRuns(
  db: PlaneDb,
  p: Principal,
  o: { olderThanSeconds: number; project?: string; dryRun?: boolean },
): Promise<PruneResult> {
  if (!Number.isSafeInteger(o.olderThanSeconds) || o.olderThanSeconds < MIN_RETENTION_SECONDS) {
    throw new WaymarkError(
      ErrorCode.INVALID_REQUEST,
      `the age must be at least ${MIN_RETENTION_SECONDS} s (1h): a run updated more recently may still be receiving rows (got ${o.olderThanSeconds})`,
    );
  }
  const operator = p.scopes.includes('operator');
  const visible = await db
    .select({ id: projects.id, name: projects.name })
    .from(projects)
    .where(operator ? undefined : eq(projects.id, p.projectId));
  let scope = visible;
  if (o.project !== undefined) {
    scope = visible.filter((x) => x.name === o.project);
    if (!scope.length)
      throw new UnknownProject(
        o.project,
        visible.map((x) => x.name),
      );
  }
  // the database's clock, the one that stamped updated_at
  const [{ cutoff }] = rowsOf<{ cutoff: Date | string }>(
    await db.execute(sql`SELECT (now() - ${o.olderThanSeconds} * interval '1 second')::timestamptz AS cutoff`),
  );
  const cutoffAt = new Date(cutoff);
  const names = new Map(scope.map((x) => [x.id, x.name]));
  const items: PruneResult['items'] = [];
  if (!scope.length) return { dryRun: !!o.dryRun, cutoff: cutoffAt.toISOString(), items };
  const finishedBefore = and(
    inArray(executions.projectId, [...names.keys()]),
    inArray(executions.status, ['completed', 'failed']),
    lt(executions.updatedAt, cutoffAt),
  );
  if (o.dryRun) {
    const rows = await db
      .select()
      .from(executions)
      .where(finishedBefore)
      .orderBy(executions.projectId, executions.updatedAt, executions.executionId);
    for (const r of rows)
      items.push({
        project: names.get(r.projectId)!,
        executionId: r.executionId,
        status: r.status,
        rowCount: r.rowCount,
        updatedAt: r.updatedAt.toISOString(),
      });
    return { dryRun: true, cutoff: cutoffAt.toISOString(), items };
  }
  await db.transaction(async (tx) => {
    // the summary row goes first, under the same conditions: an ingest that touched the run since holds or changed it
    const gone = await tx.delete(executions).where(finishedBefore).returning();
    for (const r of gone) {
      const where = <T extends { projectId: unknown; executionId: unknown }>(t: T) =>
        and(eq(t.projectId as never, r.projectId), eq(t.executionId as never, r.executionId));
      await tx.delete(checkpoints).where(where(checkpoints));
      await tx.delete(pendingInterrupts).where(where(pendingInterrupts));
      await tx.delete(idempotency).where(where(idempotency));
      await tx.delete(holes).where(where(holes));
      await tx.delete(decisions).where(where(decisions));
      await tx.delete(runOwners).where(where(runOwners));
      await tx.delete(runTakeovers).where(where(runTakeovers));
      await tx.delete(runRequests).where(where(runRequests));
      items.push({
        project: names.get(r.projectId)!,
        executionId: r.executionId,
        status: r.status,
        rowCount: r.rowCount,
        updatedAt: r.updatedAt.toISOString(),
      });
    }
  });
  items.sort(
    (a, b) =>
      a.project.localeCompare(b.project) ||
      a.updatedAt.localeCompare(b.updatedAt) ||
      a.executionId.localeCompare(b.executionId),
  );
  return { dryRun: false, cutoff: cutoffAt.toISOString(), items };
}

/** WAYMARK_RETENTION_DAYS: prune every project now and then every `everyMs`, logging what went. */
export function scheduleRetention(
  db: PlaneDb,
  o: { days: number; everyMs: number; logger: Logger },
): { stop(): Promise<void> } {
  const root: Principal = { projectId: '', keyId: '', scopes: ['admin', 'operator'] };
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      try {
        const r = await pruneRuns(db, root, { olderThanSeconds: Math.round(o.days * 86_400) });
        o.logger.info(
          {
            retentionDays: o.days,
            cutoff: r.cutoff,
            pruned: r.items.length,
            runs: r.items.map((i) => `${i.project}/${i.executionId}`),
          },
          `retention: pruned ${r.items.length} finished run(s) last updated before ${r.cutoff}`,
        );
      } catch (e) {
        o.logger.error({ err: e }, 'retention: prune failed (tried again at the next interval)');
      }
    })();
  };
  tick();
  const timer = setInterval(tick, o.everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
