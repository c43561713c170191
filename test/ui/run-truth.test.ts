/// <reference lib="dom" />
/**
 * Both inspectors (the plane's and the local `waymark ui`, which share
 * inspector/) say what is true of a run, in headless Chromium at 1280 and
 * 390 px, on one laptop store synced to a real plane:
 * - a run whose process was SIGKILLed mid-run (a real child, killed at
 *   'runtime.afterTool'), its lease and its plane hold expired, is stale and
 *   recoverable, in the CLI's words (`waymark runs`), never "running / in
 *   progress" with a duration as if it ended;
 * - a run stopped by its turn limit says so (MAX_TURNS), not that a model
 *   call failed;
 * - a pause shows where it stands: decided or claimed and not applied yet,
 *   or resumed; never "completed".
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { eq, sql } from 'drizzle-orm';
import type { Browser, Page } from 'playwright-core';
import { Agent, connectPlane, type Replica, ScriptedModel, tool } from '../../client/index.js';
import { inspectRun, listRuns } from '../../client/cli/store-commands.js';
import { decide } from '../../client/runtime/decide.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { runOwners } from '../../plane/db/schema.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { runTs } from '../helpers/child.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pollUntil } from '../helpers/plane-process.js';
import { scratchDir } from '../helpers/tmp.js';

const CHILD = fileURLToPath(new URL('./stale-run-child.ts', import.meta.url));
/** The killed runner's lease, and the plane's shortest hold: both expire soon after it dies. */
const LEASE_MS = 300;
const LOCAL_TIME = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d\d:\d\d/.source;

describe('the inspectors tell the truth about a run', () => {
  const tmp = scratchDir('waymark-truth-');
  let plane: TestPlane;
  let store: SqliteCheckpointer;
  let replica: Replica;
  let ui: LocalUi;
  let browser: Browser;
  let launching: Promise<Browser> | undefined;
  const keys = { ingest: '', reader: '', approver: '' };
  const pauses = { claimed: '' };

  /** A page of the plane's inspector, signed in with the read key, or of the local UI, at `width` px. */
  async function open(where: 'plane' | 'local', path: string, width: number): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    if (where === 'local') {
      await page.goto(`${ui.url}${path}`);
      return page;
    }
    await page.goto(`${plane.url}/login?next=${encodeURIComponent(path)}`);
    await page.fill('input[name=key]', keys.reader);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}${path}`);
    return page;
  }
  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const text = async (page: Page, selector: string) => ((await page.textContent(selector)) ?? '').trim();
  /** The CLI's `waymark runs` lines, and the LEASE cell of one run in them. */
  const cliRuns = async () => {
    const lines: string[] = [];
    await listRuns(store, (l) => lines.push(l));
    return lines;
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    // the plane lets a run be taken over once its writer was not heard from for LEASE_MS
    plane = await startTestPlane('pglite', { takeoverAfterMs: LEASE_MS });
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.reader = await plane.key('acme', ['read']);
    keys.approver = await plane.key('acme', ['read', 'approve']);
    const db = tmp.file('laptop.db');

    // a runner SIGKILLed mid-run, its rows on the plane
    const child = await runTs(CHILD, [db, plane.url, keys.ingest, 'stale-run', String(LEASE_MS)]);
    expect([child.signal, child.stderr]).toEqual(['SIGKILL', '']);

    store = new SqliteCheckpointer({ path: db });
    replica = connectPlane(store, { url: plane.url, apiKey: keys.ingest, pollMs: 0, followChanges: false });
    // a run stopped by its turn limit
    const looper = new Agent({
      name: 'looper',
      model: new ScriptedModel(({ turn }) => ({ toolCalls: [{ name: 'noop', arguments: { turn } }] })),
      tools: [tool({ name: 'noop', description: '', parameters: z.object({ turn: z.number() }), execute: () => 'ok' })],
      checkpointer: store,
      maxTurns: 2,
    });
    expect(await looper.run('loop', { executionId: 'max-turns-run' })).toMatchObject({
      status: 'failed',
      error: { code: 'MAX_TURNS' },
    });
    // pauses: one decided here (not applied), one to be claimed at the plane (not applied), one resumed
    const { agent } = refundAgent({ store, ledger: new Ledger(tmp.file('ledger.jsonl')) });
    for (const id of ['pause-decided', 'pause-claimed', 'pause-resumed'])
      expect((await agent.run(refundRequest('1042', 50_000), { executionId: id })).status).toBe('paused');
    await decide(store, 'pause-decided', { approved: true, decidedBy: 'alice' });
    expect((await agent.resume('pause-resumed', { approved: true })).status).toBe('completed');
    await replica.flush({ timeoutMs: 10_000 });

    // on the plane, a decision for the third pause, claimed by another writer whose local claim never came
    pauses.claimed = (await store.getPendingInterrupt('pause-claimed'))!.checkpointId;
    const decision = await call(`${plane.url}/v1/executions/pause-claimed/decision`, {
      key: keys.approver,
      json: { checkpointId: pauses.claimed, approved: true },
    });
    expect(decision.status).toBe(201);
    const claim = await call(`${plane.url}/v1/executions/pause-claimed/claim`, {
      key: keys.ingest,
      json: {
        checkpointId: pauses.claimed,
        writerId: 'laptop-z',
        decisionId: decision.body.decisionId,
        holder: 'laptop-z#1/1',
        ttlMs: 600_000,
      },
    });
    expect(claim.status).toBe(200);

    // the dead runner's lease here and its hold at the plane both expire
    await pollUntil(async () => (await store.getLease('stale-run'))?.live === false, 10_000);
    await pollUntil(async () => {
      const held = await plane.database.db
        .select({ live: sql<boolean>`${runOwners.expiresAt} > now()` })
        .from(runOwners)
        .where(eq(runOwners.executionId, 'stale-run'));
      return held.length === 1 && held[0].live === false;
    }, 10_000);
    ui = await serveLocalUi(store, { port: 0 });
    browser = await launching;
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await ui?.close();
    await replica?.stop();
    await store?.close();
    await plane?.close();
    tmp.cleanup();
  });

  for (const where of ['plane', 'local'] as const) {
    it(`${where}: a run SIGKILLed mid-run, its lease expired, is stale (recoverable) as the CLI says, in the list and on its page; no duration as if it ended`, async () => {
      const cli = (await cliRuns()).find((l) => l.startsWith('stale-run'))!;
      expect(cli).toMatch(new RegExp(`STALE: \\S+ expired ${LOCAL_TIME} \\(recoverable\\)`));
      const cliLease = /STALE: .*\(recoverable\)/.exec(cli)![0];
      for (const width of [1280, 390]) {
        const list = await open(where, '/', width);
        const row = list.locator('tr', { has: list.locator('a[href="/runs/stale-run"]') });
        expect(await row.locator('.badge').first().textContent()).toBe('stale');
        const hold = (await row.locator('[data-testid=hold]').textContent())!.trim();
        expect(hold).toMatch(new RegExp(`^STALE: \\S+ expired ${LOCAL_TIME} \\(recoverable\\)$`));
        // the local UI reads the store's lease, as the CLI does: the very same words
        if (where === 'local') expect(hold).toBe(cliLease);
        if (width === 1280) {
          const took = (await row.locator('[data-testid=duration]').textContent())!.trim();
          expect(took).toMatch(/ to its last row$/);
          // the list's finished runs keep their plain duration
          const done = list.locator('tr', { has: list.locator('a[href="/runs/pause-resumed"]') });
          expect((await done.locator('[data-testid=duration]').textContent())!.trim()).toMatch(/^[\d.]+ (ms|s|min|h)$/);
        }
        await shot(list, `truth-${where}-list-${width}`);
        await list.context().close();

        const page = await open(where, '/runs/stale-run', width);
        expect(await text(page, 'h1 .badge')).toBe('stale');
        expect(await text(page, '[data-testid=hold]')).toMatch(
          new RegExp(`^STALE: \\S+ expired ${LOCAL_TIME} \\(recoverable\\)$`),
        );
        if (where === 'local') expect(await text(page, '[data-testid=hold]')).toBe(cliLease);
        // its newest row, the tool's, did not go on: the run is stale there, not in progress
        const rows = page.locator('ol.timeline > li');
        expect(await rows.last().locator('.badge').textContent()).toBe('stale');
        expect(await page.locator('ol.timeline .badge', { hasText: 'in progress' }).count()).toBe(0);
        await shot(page, `truth-${where}-stale-${width}`);
        await page.context().close();
      }
    });

    it(`${where}: a run stopped by its turn limit says it stopped after its turns (MAX_TURNS), not that a model call failed`, async () => {
      for (const width of [1280, 390]) {
        const page = await open(where, '/runs/max-turns-run', width);
        const body = await text(page, 'main');
        expect(body).not.toMatch(/model call failed/);
        expect(await text(page, '[data-testid=failure]')).toBe('stopped after 2 turns (MAX_TURNS)');
        // the row it stopped at: stopped, its model call never made
        const stoppedAt = page.locator('ol.timeline > li', { has: page.locator('[data-testid=failure]') });
        expect(await stoppedAt.locator('.row-head .badge').textContent()).toBe('stopped');
        expect(await text(page, '#failed-h')).toBe('Failed: MAX_TURNS');
        await shot(page, `truth-${where}-max-turns-${width}`);
        await page.context().close();
      }
      // the CLI words it by its code and message: the limit, not a failed call
      const out: string[] = [];
      await inspectRun(store, 'max-turns-run', (l) => out.push(l));
      expect(out).toContain("ended: failed: MAX_TURNS: agent 'looper' reached its limit of 2 turns");
    });

    it(`${where}: a pause shows where it stands: decided or claimed and not applied yet, or resumed; never "completed"`, async () => {
      const stands: Record<string, { badge: string; words: RegExp; status: string }> = {
        // claimed at the plane by a writer that has not reported resuming: the run runs (held by it); the local store never heard of the claim
        'pause-claimed':
          where === 'plane'
            ? { badge: 'claimed', words: /^claimed, not applied yet/, status: 'running' }
            : { badge: 'paused', words: /^open: waiting for an answer/, status: 'paused' },
        'pause-resumed': { badge: 'resumed', words: /^resumed: its answer was applied/, status: 'completed' },
        'pause-decided': { badge: 'decided', words: /^decided, not applied yet/, status: 'paused' },
      };
      for (const [id, want] of Object.entries(stands)) {
        for (const width of [1280, 390]) {
          const page = await open(where, `/runs/${id}`, width);
          expect(await text(page, 'h1 .badge')).toBe(want.status);
          expect(await text(page, '#pause-h .badge')).toBe(want.badge);
          expect(await text(page, '[data-testid=pause-stand]')).toMatch(want.words);
          expect(await page.locator('#pause-h .badge', { hasText: 'completed' }).count()).toBe(0);
          await shot(page, `truth-${where}-${id}-${width}`);
          await page.context().close();
        }
      }
    });
  }
});
