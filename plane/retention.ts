/**
 * Retention: finished runs (completed, failed or cancelled) whose summary has
 * not changed for longer than a set age are deleted from the plane, with
 * their rows in every table that holds a run's data (`RUN_TABLES`). A paused
 * or running run is never pruned, nor one with an open pause, a held claim or
 * a held owner, nor one updated within the age (rows still arriving): these
 * are checked again by the DELETE itself, so a row ingested meanwhile keeps
 * its run. Project by project, in transactions of at most `PRUNE_BATCH` runs.
 * Run as `waymark plane prune` (POST /v1/admin/prune) and, with
 * WAYMARK_RETENTION_DAYS, on a schedule inside the plane.
 */
import { and, eq, gt, gte, inArray, isNull, lt, type SQL, sql } from 'drizzle-orm';
import type { AnyPgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Logger } from 'pino';
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import { UnknownProject, type Principal } from './auth.js';
import { type PlaneDb, rowsOf } from './db/open.js';
import { lockOwners, ownerIsLive } from './owners.js';
import { ENDED_STATUSES } from '../support/run-words.js';
import {
  checkpoints,
  claimConflicts,
  claims,
  decisions,
  events,
  executionTombstones,
  executions,
  holes,
  idempotency,
  pendingInterrupts,
  projects,
  quarantine,
  runContacts,
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

/** The summary states of an ended run (support/run-words.ts): a cancelled run is ended like a completed or failed one. */
export const FINISHED_STATUSES = ENDED_STATUSES;

/** The most runs one prune transaction deletes: each transaction touches one project and at most this many runs. */
export const PRUNE_BATCH = 100;

/**
 * Every table that holds a run's data besides its summary (`executions`), keyed by (`project_id`, `execution_id`):
 * retention deletes a pruned run's rows from each. The one list: test/plane/retention-tables.test.ts derives every
 * table with both columns from the schema and fails when one is missing here.
 */
export const RUN_TABLES = [
  checkpoints,
  events,
  pendingInterrupts,
  claims,
  decisions,
  claimConflicts,
  idempotency,
  quarantine,
  holes,
  runContacts,
  runTakeovers,
  runOwners,
  runRequests,
  executionTombstones,
] as const;

type Item = PruneResult['items'][number];

/** One prune transaction's runs (or a dry run's page of them), all of one project. */
export interface PruneBatch {
  project: string;
  items: Item[];
}

/**
 * Prune (or with `dryRun`, list) the finished runs (completed, failed, cancelled) older than `olderThanSeconds`:
 * of `project` when named, else of every project an operator manages, else of the admin key's own project.
 *
 * Project by project, in transactions of at most {@link PRUNE_BATCH} runs of one project each, until none is left
 * (paged by execution id, no overall limit). A run is kept, whatever its summary says, while it has an open pause,
 * a claim not yet applied or an owner holding it (a lease not expired); those conditions and the age are checked
 * again by the DELETE of its summary, so a row ingested meanwhile keeps its run. A pruned run's rows go from
 * every table of {@link RUN_TABLES}, in the transaction that deletes its summary. `onBatch` is told each
 * transaction's runs once it committed (each page, for a dry run).
 */
export async function pruneRuns(
  db: PlaneDb,
  p: Principal,
  o: { olderThanSeconds: number; project?: string; dryRun?: boolean; onBatch?: (b: PruneBatch) => void },
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
  const items: Item[] = [];
  for (const project of [...scope].sort((a, b) => a.name.localeCompare(b.name))) {
    const prunable = prunableOf(project.id, cutoffAt);
    const item = (r: typeof executions.$inferSelect): Item => ({
      project: project.name,
      executionId: r.executionId,
      status: r.status,
      rowCount: r.rowCount,
      updatedAt: r.updatedAt.toISOString(),
    });
    let after: string | null = null;
    for (;;) {
      // a page of candidates, read apart from the transaction that deletes them
      const page = await db
        .select()
        .from(executions)
        .where(and(prunable, after === null ? undefined : gt(executions.executionId, after)))
        .orderBy(executions.executionId)
        .limit(PRUNE_BATCH);
      if (!page.length) break;
      after = page[page.length - 1].executionId;
      const batch = o.dryRun
        ? page.map(item)
        : await db.transaction(async (tx) => {
            // the owner records first, as ingest, claims and cancels lock them (owners.ts): a claim or a takeover of
            // one of these runs waits for this transaction, and none deadlocks with it
            await lockOwners(
              tx,
              project.id,
              page.map((r) => r.executionId),
            );
            // then the summary, under the same conditions again: an ingest, a claim or an owner that touched the run
            // since holds or changed it, and the run stays whole
            const gone = await tx
              .delete(executions)
              .where(
                and(
                  prunable,
                  inArray(
                    executions.executionId,
                    page.map((r) => r.executionId),
                  ),
                ),
              )
              .returning();
            if (!gone.length) return [];
            const ids = gone.map((r) => r.executionId);
            for (const t of RUN_TABLES)
              await tx.delete(t).where(and(eq(t.projectId, project.id), inArray(t.executionId, ids)));
            return gone.map(item);
          });
      if (batch.length) {
        items.push(...batch);
        o.onBatch?.({ project: project.name, items: batch });
      }
      if (page.length < PRUNE_BATCH) break;
    }
  }
  items.sort(
    (a, b) =>
      a.project.localeCompare(b.project) ||
      a.updatedAt.localeCompare(b.updatedAt) ||
      a.executionId.localeCompare(b.executionId),
  );
  return { dryRun: !!o.dryRun, cutoff: cutoffAt.toISOString(), items };
}

/**
 * A project's runs retention may delete: finished, not updated since `cutoff`, and held by nobody: no open pause,
 * no claim of one not yet applied, no owner whose lease still runs. Every table is named with its project as a
 * constant, so each statement stays within the project's shard.
 */
function prunableOf(projectId: string, cutoff: Date) {
  const ofRun = <T extends { projectId: AnyPgColumn; executionId: AnyPgColumn }>(t: T) =>
    and(eq(t.projectId, projectId), eq(t.executionId, executions.executionId));
  const none = (t: PgTable, where: SQL | undefined) => sql`NOT EXISTS (SELECT 1 FROM ${t} WHERE ${where})`;
  return and(
    eq(executions.projectId, projectId),
    inArray(executions.status, [...FINISHED_STATUSES]),
    lt(executions.updatedAt, cutoff),
    none(pendingInterrupts, and(ofRun(pendingInterrupts), eq(pendingInterrupts.state, 'open'))),
    // a claim not applied within the retention age (a pause a cancel closed under it) no longer holds its run
    none(claims, and(ofRun(claims), isNull(claims.appliedAt), gte(claims.claimedAt, cutoff))),
    none(runOwners, and(ofRun(runOwners), ownerIsLive)),
  );
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
        const r = await pruneRuns(db, root, {
          olderThanSeconds: Math.round(o.days * 86_400),
          // one line per transaction, as it commits: a long prune shows its progress, project by project
          onBatch: (b) =>
            o.logger.info(
              { retentionDays: o.days, project: b.project, runs: b.items.map((i) => `${b.project}/${i.executionId}`) },
              `retention: pruned ${b.items.length} run(s) of project ${b.project}`,
            ),
        });
        o.logger.info(
          {
            retentionDays: o.days,
            cutoff: r.cutoff,
            pruned: r.items.length,
            projects: new Set(r.items.map((i) => i.project)).size,
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
