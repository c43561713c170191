/**
 * The two test tiers (vitest.config.ts turns them into the projects `fast`
 * and `slow`):
 * - `npm test` runs FAST, the loop a contributor runs between edits (about
 *   6 minutes alone on a 2-core machine): the store contract on both backends,
 *   the runtime, the plane's routes, the drain and feeds, the CLI, and the
 *   crash points of test/runtime/crash-*.
 * - `npm run test:slow` runs SLOW; `npm run test:all` runs both tiers in one
 *   run. CI runs `npm test`, then `npm run test:slow`: each test once.
 *
 * A file goes to SLOW for what it does, not for one slow run: the fault
 * campaigns (test/faults/), crash sweeps and race rounds, bulk data, the
 * bench smoke, the browsers, holds, leases and deadlines waited out in real
 * time, packing or installing packages, and scenarios whose tests are mostly
 * several real processes racing, handing off or being killed.
 *
 * FAST names files one by one, so it grows only on purpose. A SLOW entry is a
 * file, or a folder ending in `/` whose every test file is slow. The `slow`
 * project takes every file `fast` does not, so a file in neither list still
 * runs in `npm run test:all`; test/package/tiers.test.ts fails until it is
 * placed in exactly one list.
 */

export const FAST: readonly string[] = [
  'test/ai-sdk/entry.test.ts',
  'test/ai-sdk/loopback.test.ts',
  'test/ai-sdk/mock.test.ts',
  'test/ai-sdk/tool-call-ids.test.ts',
  'test/ai-sdk/usage.test.ts',
  'test/cli/inspect-claim-row.test.ts',
  'test/cli/keys-create-problems.test.ts',
  'test/cli/plane-config-env.test.ts',
  'test/cli/plane-url-env.test.ts',
  'test/cli/usage-codes.test.ts',
  'test/decisions/feed-items.test.ts',
  'test/decisions/feed.test.ts',
  'test/decisions/plane.test.ts',
  'test/decisions/requests-plane-refuses.test.ts',
  'test/decisions/worker.test.ts',
  'test/langgraph/edges.test.ts',
  'test/langgraph/restore-thread.test.ts',
  'test/langgraph/saver.test.ts',
  'test/langgraph/thread-view.test.ts',
  'test/langgraph/validation-postgres.test.ts',
  'test/langgraph/validation-sqlite.test.ts',
  'test/package/decisions-reliability.test.ts',
  'test/package/docs.test.ts',
  'test/package/layering.test.ts',
  'test/package/screenshots.test.ts',
  'test/package/tiers.test.ts',
  'test/plane/admin.test.ts',
  'test/plane/changes.test.ts',
  'test/plane/clock-migration.test.ts',
  'test/plane/clock-order.test.ts',
  'test/plane/cursor-edges.test.ts',
  'test/plane/decision-routes.test.ts',
  'test/plane/run-requests.test.ts',
  'test/plane/run-list-rows.test.ts',
  'test/runtime/expect-newest.test.ts',
  'test/plane/data-dir-init.test.ts',
  'test/plane/decisions.test.ts',
  'test/plane/deep-rows.test.ts',
  'test/plane/distribute-script.test.ts',
  'test/plane/json-bodies.test.ts',
  'test/plane/key-cache.test.ts',
  'test/plane/ingest-cost.test.ts',
  'test/plane/ingest-group.test.ts',
  'test/plane/inspector-forms.test.ts',
  'test/plane/isolation.test.ts',
  'test/plane/listing-order.test.ts',
  'test/plane/metrics.test.ts',
  'test/plane/pglite.test.ts',
  'test/plane/postgres.test.ts',
  'test/plane/postgres-partitioned.test.ts',
  'test/plane/proto-keys.test.ts',
  'test/plane/retention-tables.test.ts',
  'test/plane/retention.test.ts',
  'test/plane/run-page-statements.test.ts',
  'test/plane/schema-newer.test.ts',
  'test/plane/revoked-in-flight.test.ts',
  'test/plane/writer-key-name.test.ts',
  'test/plane/writer-changes.test.ts',
  'test/plane/writer-wakes.test.ts',
  'test/plane/writer-decisions.test.ts',
  'test/replica/changes.test.ts',
  'test/replica/cli-sync.test.ts',
  'test/replica/drain.test.ts',
  'test/replica/feed-follower.test.ts',
  'test/replica/writer-feed.test.ts',
  'test/replica/writer-decisions.test.ts',
  'test/replica/feed-key-refused.test.ts',
  'test/replica/many-stores.test.ts',
  'test/replica/options.test.ts',
  'test/replica/owner.test.ts',
  'test/replica/restore-holes.test.ts',
  'test/replica/restore.test.ts',
  'test/replica/stale-keepalive.test.ts',
  'test/replica/unconnected-resume.test.ts',
  'test/replica/writers.test.ts',
  'test/runtime/cli.test.ts',
  'test/runtime/crash-postgres.test.ts',
  'test/runtime/crash-sqlite.test.ts',
  'test/runtime/execution-gone.test.ts',
  'test/runtime/openai.test.ts',
  'test/runtime/postgres.test.ts',
  'test/runtime/recover.test.ts',
  'test/runtime/resume-value.test.ts',
  'test/runtime/retry.test.ts',
  'test/runtime/scripted-model.test.ts',
  'test/runtime/sqlite.test.ts',
  'test/runtime/tool-arguments.test.ts',
  'test/runtime/tool-call-ids.test.ts',
  'test/runtime/tool-results.test.ts',
  'test/runtime/unknown-options.test.ts',
  'test/support/db-errors.test.ts',
  'test/support/peer.test.ts',
  'test/support/prices.test.ts',
  'test/support/run-words.test.ts',
  'test/shared/error-codes.test.ts',
  'test/shared/json.test.ts',
  'test/shared/idempotency-key.test.ts',
  'test/support/time.test.ts',
  'test/support/validate.test.ts',
  'test/store/cancel-race.test.ts',
  'test/store/codec.test.ts',
  'test/store/columns.test.ts',
  'test/store/input-check.test.ts',
  'test/store/migrations.test.ts',
  'test/store/open-store.test.ts',
  'test/store/postgres-listing-index.test.ts',
  'test/store/postgres-migrate.test.ts',
  'test/store/postgres-put-batch.test.ts',
  'test/store/postgres-race.test.ts',
  'test/store/postgres.test.ts',
  'test/store/restore-divergence.test.ts',
  'test/store/sqlite-group-commit.test.ts',
  'test/store/sqlite-migrate.test.ts',
  'test/store/sqlite-migrate-v7.test.ts',
  'test/store/sqlite.test.ts',
  'test/ui/form-bodies.test.ts',
  'test/ui/local-run-list-cost.test.ts',
  'test/ui/local-source-pauses.test.ts',
  'test/ui/failure-text.test.ts',
  'test/ui/local-ui-paging.test.ts',
  'test/ui/run-page-streamed.test.ts',
];

export const SLOW: readonly string[] = [
  // the fault campaigns (kill trials, fuzzing, database storms, the tenancy
  // matrix, the regression cases), crash sweeps, race rounds
  'test/faults/',
  'test/runtime/edges-nested.test.ts',
  'test/runtime/edges-reentry.test.ts',
  'test/langgraph/crash.test.ts',
  'test/decisions/plane-race.test.ts',
  'test/decisions/requests-two-workers.test.ts',
  'test/decisions/requests-behind.test.ts',
  'test/decisions/requests-fork-once.test.ts',
  'test/decisions/requests-copied-store.test.ts',
  'test/decisions/requests-fork-frozen.test.ts',
  'test/decisions/requests-paging.test.ts',
  'test/store/postgres-lost-commit.test.ts',
  // bulk data (the 100,000-row backlog, pages of 1 MB rows, 10,000 runs), the bench smoke
  'test/replica/backlog.test.ts',
  'test/plane/page-bytes.test.ts',
  'test/ui/run-list-scale.test.ts',
  'test/bench-smoke.test.ts',
  // every statement of every route EXPLAINed on a schema partitioned by project (the plane on a distributed Postgres)
  'test/plane/shard-routing.test.ts',
  // headless chromium
  'test/ui/approvals.test.ts',
  'test/ui/bulk-approvals.test.ts',
  'test/ui/pause-answer.test.ts',
  'test/ui/cancel-reason.test.ts',
  'test/ui/cancel.test.ts',
  'test/ui/run-requests.test.ts',
  'test/ui/inspector.test.ts',
  'test/ui/keys.test.ts',
  'test/ui/langgraph-thread.test.ts',
  'test/ui/live.test.ts',
  'test/ui/local-ui.test.ts',
  'test/ui/long-run.test.ts',
  'test/ui/reading.test.ts',
  'test/ui/row-detail.test.ts',
  'test/ui/cost.test.ts',
  'test/ui/lost-at-plane.test.ts',
  'test/ui/run-truth.test.ts',
  'test/ui/security.test.ts',
  // holds, leases and deadlines waited out in real time
  'test/plane/takeover.test.ts',
  'test/plane/run-state.test.ts',
  'test/plane/slow-body.test.ts',
  'test/replica/claim.test.ts',
  'test/replica/stall.test.ts',
  'test/decisions/stale-claim.test.ts',
  'test/decisions/pause-not-found.test.ts',
  // npm pack, installs from the registry
  'test/package/pack.test.ts',
  'test/types/consumer-node-types.test.ts',
  // several real processes racing, handing off or killed: the proofs, the
  // the docs' flows as pasted, leases, claims, CLIs and planes as processes
  'test/machines/',
  'test/runtime/proofs.test.ts',
  'test/runtime/readme.test.ts',
  'test/plane/readme-plane.test.ts',
  'test/runtime/lease-postgres.test.ts',
  'test/runtime/lease-sqlite.test.ts',
  'test/runtime/stale-resumer.test.ts',
  'test/store/sqlite-race.test.ts',
  'test/langgraph/exclusive.test.ts',
  'test/langgraph/graph-handoff.test.ts',
  'test/replica/handoff.test.ts',
  'test/replica/takeover.test.ts',
  'test/plane/bootstrap-dir.test.ts',
  'test/plane/first-start-memory.test.ts',
  'test/plane/cli-keys.test.ts',
  'test/plane/data-dir-lock.test.ts',
  'test/plane/one-process.test.ts',
  'test/plane/operations.test.ts',
  'test/plane/stalled-clients.test.ts',
  'test/cli/stop-on-start.test.ts',
];

/**
 * Slow files that run for minutes alone, started before every other file of
 * their tier (test/sequencer.ts). Without a timing cache (a clean clone, as
 * CI is) vitest starts the largest files first, and these are small: named
 * here, they never leave one worker running alone at the end. Longest first.
 */
export const START_FIRST: readonly string[] = [
  'test/faults/campaign.test.ts',
  'test/replica/backlog.test.ts',
  'test/runtime/proofs.test.ts',
  'test/faults/fleet-campaign.test.ts',
  'test/runtime/lease-postgres.test.ts',
  'test/plane/first-start-memory.test.ts',
  'test/runtime/lease-sqlite.test.ts',
];

/** vitest `include` globs for a tier's entries (a folder entry takes every test file under it). */
export function tierGlobs(entries: readonly string[]): string[] {
  return entries.map((entry) => (entry.endsWith('/') ? `${entry}**/*.test.ts` : entry));
}
