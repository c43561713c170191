/// <reference lib="dom" />
/**
 * The machine that lost a double claim is told so by its own `waymark ui` and
 * CLI, whatever its run's status there: two stores (two SQLite files, two
 * writer ids) on one real plane; one resumes the pause at the plane and
 * finishes, the other resumes it offline and finishes too, then syncs: the
 * plane keeps the first's branch and refuses the second's rows. The loser's
 * local UI (headless Chromium, 1280 and 390 px) marks the completed run "lost
 * at plane" in its list, and its page says from which row the plane refused
 * this store's rows, whose branch the plane keeps, and how to take it; the
 * CLI says the same. Once `replica.adoptPlaneBranch` took the plane's branch,
 * none of it shows and the run is the winner's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { connectPlane, type Replica, restoreFromPlane } from '../../client/index.js';
import { inspectRun, listRuns } from '../../client/cli/store-commands.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { serveLocalUi, type LocalUi } from '../../client/ui/serve.js';
import { Ledger, refundAgent, refundRequest } from '../../examples/agents/refund.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { startTestPlane, type TestPlane } from '../helpers/plane.js';
import { scratchDir } from '../helpers/tmp.js';

const RUN = 'refund-double';
/** A run of the loser the plane took whole: never marked. */
const KEPT = 'refund-kept';
/** Nothing listens here: a resume against it is offline (its local claim stands). */
const UNREACHABLE = 'http://127.0.0.1:9';

describe("the loser of a double claim sees, in its local UI and CLI, that the plane keeps the other machine's branch", () => {
  const tmp = scratchDir('waymark-lost-at-plane-');
  let plane: TestPlane;
  let key = '';
  let loser: SqliteCheckpointer;
  let winner: SqliteCheckpointer;
  const replicas: Replica[] = [];
  let replica: Replica;
  let ui: LocalUi;
  let browser: Browser;
  let launching: Promise<Browser> | undefined;
  /** The seq of the loser's first row after the pause: the first the plane refused. */
  let splitSeq = -1;
  let winnerRows: string[] = [];

  const connect = (store: SqliteCheckpointer, url: string) => {
    const r = connectPlane(store, { url, apiKey: key, pollMs: 0, followChanges: false });
    replicas.push(r);
    return r;
  };
  async function open(path: string, width: number): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    await page.goto(`${ui.url}${path}`);
    return page;
  }
  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  const text = async (page: Page, selector: string) => ((await page.textContent(selector)) ?? '').trim();
  /** The page is no wider than its viewport (nothing to scroll sideways to read). */
  const fits = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  const cli = async (run: (out: (l: string) => void) => Promise<unknown>) => {
    const lines: string[] = [];
    await run((l) => lines.push(l));
    return lines.join('\n');
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    key = await plane.key('acme', ['ingest', 'read']);
    loser = new SqliteCheckpointer({ path: tmp.file('laptop-a.db'), writerId: 'laptop-a' });
    winner = new SqliteCheckpointer({ path: tmp.file('laptop-b.db'), writerId: 'laptop-b' });
    const ledger = new Ledger(tmp.file('ledger.jsonl'));

    // the loser runs the refund to its approval pause, and one refund through, both synced
    const first = connect(loser, plane.url);
    const a = refundAgent({ store: loser, ledger }).agent;
    expect((await a.run(refundRequest('1042', 50_000), { executionId: RUN })).status).toBe('paused');
    expect((await a.run(refundRequest('7', 20), { executionId: KEPT })).status).toBe('completed');
    expect(await first.flush({ timeoutMs: 10_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    await first.stop();
    splitSeq = (await loser.latest(RUN))!.seq + 1;

    // the winner takes the pause from the plane, resumes it there (its claim wins) and finishes
    const b = connect(winner, plane.url);
    await restoreFromPlane(winner, RUN, { url: plane.url, apiKey: key });
    expect((await refundAgent({ store: winner, ledger }).agent.resume(RUN, { approved: true })).status).toBe(
      'completed',
    );
    expect(await b.flush({ timeoutMs: 10_000 })).toMatchObject({ pendingRows: 0, quarantinedCount: 0 });
    winnerRows = (await winner.list(RUN)).map((r) => r.id);

    // the loser, offline, resumes the same pause: its local claim stands and it finishes too
    const offline = connect(loser, UNREACHABLE);
    expect((await refundAgent({ store: loser, ledger }).agent.resume(RUN, { approved: true })).status).toBe(
      'completed',
    );
    await offline.stop();
    // back online, it syncs: the plane keeps the winner's branch and refuses the loser's rows from the split on
    replica = connect(loser, plane.url);
    const synced = await replica.flush({ timeoutMs: 10_000 });
    expect(synced.pendingRows).toBe(0);
    expect(synced.quarantinedCount).toBeGreaterThan(0);
    expect((await loser.latest(RUN))!.writerId).toBe('laptop-a');

    ui = await serveLocalUi(loser, { port: 0 });
    browser = await launching;
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await ui?.close();
    for (const r of replicas) await r.stop();
    await loser?.close();
    await winner?.close();
    await plane?.close();
    tmp.cleanup();
  });

  it('the completed run is "lost at plane" in the list and on its page, with the row the plane refused from and the winner named; the CLI says the same', async () => {
    for (const width of [1280, 390]) {
      const list = await open('/', width);
      const row = list.locator('tr', { has: list.locator(`a[href="/runs/${RUN}"]`) });
      expect(await row.locator('.badge').first().textContent()).toBe('completed');
      expect(await row.locator('[data-testid=lost-at-plane]').count()).toBe(1);
      expect((await row.locator('[data-testid=lost-at-plane]').textContent())!.trim()).toBe('lost at plane');
      expect(await row.locator('[data-testid=lost-at-plane]').isVisible()).toBe(true);
      // a run the plane took whole is not marked
      const kept = list.locator('tr', { has: list.locator(`a[href="/runs/${KEPT}"]`) });
      expect(await kept.locator('[data-testid=lost-at-plane]').count()).toBe(0);
      expect(await fits(list)).toBe(true);
      await shot(list, `lost-at-plane-list-${width}`);
      await list.context().close();

      const page = await open(`/runs/${RUN}`, width);
      expect(await text(page, 'h1 .badge')).toBe('completed');
      const notice = page.locator('[data-testid=lost-notice]');
      expect(await notice.isVisible()).toBe(true);
      expect(await text(page, '#lost-h')).toBe('Lost at the plane');
      expect(await text(page, '[data-testid=lost-what]')).toBe(
        `the plane refused this store's rows of the run from #${splitSeq} on: its record of the run is another branch ` +
          "(another machine's, which took the run over or resumed the same pause; or the run cancelled there), not this copy",
      );
      expect(await notice.locator(`a[href="/runs/${RUN}?seq=${splitSeq}#seq-${splitSeq}"]`).count()).toBe(1);
      // the plane's reason names the writer whose branch it keeps
      expect(await text(page, '[data-testid=lost-said]')).toBe(
        `the plane said: seq_conflict: execution ${RUN} already has a different row at seq ${splitSeq}, written by 'laptop-b'`,
      );
      expect(await text(page, '[data-testid=lost-take]')).toContain(`replica.adoptPlaneBranch('${RUN}')`);
      expect(await fits(page)).toBe(true);
      await shot(page, `lost-at-plane-run-${width}`);
      await page.context().close();

      const keptPage = await open(`/runs/${KEPT}`, width);
      expect(await keptPage.locator('[data-testid=lost-notice]').count()).toBe(0);
      await keptPage.context().close();
    }
    // `waymark runs` and `waymark inspect`, in the same words
    const runs = (await cli((out) => listRuns(loser, out))).split('\n');
    expect(runs.find((l) => l.startsWith(RUN))).toMatch(/ completed, lost at plane /);
    expect(runs.find((l) => l.startsWith(KEPT))).not.toMatch(/lost at plane/);
    const shown = await cli((out) => inspectRun(loser, RUN, out));
    expect(shown).toContain(
      `lost at plane: the plane refused this store's rows of the run from #${splitSeq} on: its record of the run is another branch`,
    );
    expect(shown).toContain(`written by 'laptop-b'`);
    expect(shown).toContain(`to take the plane's branch: replica.adoptPlaneBranch('${RUN}')`);
  });

  it("after adoptPlaneBranch the run is the plane's branch, the winner's, and nothing says it is lost", async () => {
    expect(await replica.adoptPlaneBranch(RUN)).toBe(true);
    expect((await loser.list(RUN)).map((r) => r.id)).toEqual(winnerRows);
    for (const width of [1280, 390]) {
      const list = await open('/', width);
      const row = list.locator('tr', { has: list.locator(`a[href="/runs/${RUN}"]`) });
      expect(await row.locator('.badge').first().textContent()).toBe('completed');
      expect(await list.locator('[data-testid=lost-at-plane]').count()).toBe(0);
      await list.context().close();

      const page = await open(`/runs/${RUN}`, width);
      expect(await page.locator('[data-testid=lost-notice]').count()).toBe(0);
      expect(await text(page, 'h1 .badge')).toBe('completed');
      expect(await text(page, 'main')).toContain('last writer laptop-b');
      await shot(page, `lost-at-plane-adopted-${width}`);
      await page.context().close();
    }
    expect(await cli((out) => listRuns(loser, out))).not.toMatch(/lost at plane/);
    expect(await cli((out) => inspectRun(loser, RUN, out))).not.toMatch(/lost at plane/);
  });
});
