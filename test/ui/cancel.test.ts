/// <reference lib="dom" />
/**
 * Cancel from the plane's inspector, in headless Chromium against a
 * real plane whose runs a "laptop" store synced through /v1/ingest:
 * - a session whose key has the cancel scope opens a running run, gives a
 *   reason, ticks the confirmation and cancels: the page shows the run
 *   cancelled with the reason and the writer it stopped; the API says
 *   cancelled; the restore bundle ends with the cancel marker; the laptop's
 *   next row is refused (it is stopped);
 * - a paused run's cancel shows its pause closed by the cancel, not answered;
 * - one click cannot cancel: the button alone is held by the browser, and a
 *   post without the box ticked is refused by the plane;
 * - who sees the form: a read key sees a note naming the scope, a completed or
 *   cancelled run has none, a failed run has it;
 * - refusals change nothing: a run completed while the form was open
 *   (ALREADY_FINISHED), a run not here, no CSRF token, a foreign origin, a
 *   read session's forged post;
 * - a phone (390 px) shows the form without horizontal scrolling, and the page
 *   passes the accessibility checks (test/helpers/a11y.ts).
 * Screenshots go to test-output/ui-screenshots/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { csrfOf } from '../../inspector/csrf.js';
import { SqliteCheckpointer } from '../../client/sqlite/index.js';
import { accessibilityProblems } from '../helpers/a11y.js';
import { launchChromium, SHOTS } from '../helpers/browser.js';
import { call, startTestPlane, type TestPlane } from '../helpers/plane.js';
import { pause, step, takeEvents } from '../helpers/rows.js';
import { csrfIn } from '../helpers/html.js';

const post = (url: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(body) });

/** The page has no horizontal overflow at its current width. */
const fitsWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('cancel from the plane inspector', () => {
  let plane: TestPlane;
  let browser: Browser;
  let launching: Promise<Browser>;
  const keys: Record<string, string> = {};
  // the machine that runs the runs: its store's rows reach the plane through /v1/ingest, as a drain sends them
  let laptop: SqliteCheckpointer;
  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

  /** Everything the laptop's store has not sent, to the plane; the plane's answer. */
  const sync = async () => {
    const r = await call(`${plane.url}/v1/ingest`, {
      key: keys.ingest,
      json: { protocol: 1, writerId: laptop.writerId, rows: await takeEvents(laptop) },
    });
    expect(r.status).toBe(200);
    return r.body as {
      accepted: number;
      rejected: number;
      results: { status: string; code?: string; reason?: string }[];
    };
  };
  /** A run on the laptop, synced: `steps` model calls, then paused, completed or failed as asked (else running). */
  const run = async (id: string, end: 'running' | 'paused' | 'completed' | 'failed' = 'running', steps = 3) => {
    for (let i = 0; i < steps; i++) await laptop.put(step(id, i));
    // the pause row carries its reason and context, as the runtime writes it (client/runtime/loop.ts)
    const context = { amount: 9000 };
    if (end === 'paused')
      await laptop.recordInterrupt(
        { ...pause(id, steps), interruptReason: 'manager_approval', interruptContext: context },
        { reason: 'manager_approval', context },
      );
    if (end === 'completed' || end === 'failed')
      await laptop.put({
        ...step(id, steps),
        nodeId: 'run_end',
        step: 'run_end',
        status: end,
        ...(end === 'failed' ? { nodeOutput: { code: 'MODEL_ERROR', message: 'upstream 500' } } : {}),
      });
    expect((await sync()).rejected).toBe(0);
    return id;
  };
  const detail = async (id: string) => (await call(`${plane.url}/v1/executions/${id}`, { key: keys.reader })).body;
  /** Every row of the run's restore bundle (all its pages). */
  const restored = async (id: string) => {
    const rows: { seq: number; step: string; status: string; writerId: string; nodeOutput: unknown }[] = [];
    let cursor: string | null = null;
    let first: { pending: unknown } | null = null;
    do {
      const r = await call(
        `${plane.url}/v1/executions/${id}/restore${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`,
        { key: keys.reader },
      );
      expect(r.status).toBe(200);
      first ??= r.body;
      rows.push(...r.body.rows);
      cursor = r.body.nextCursor;
    } while (cursor);
    return { rows, pending: first!.pending };
  };
  /** A browser page signed in with `key` at `width` px. */
  const signedIn = async (key: string, width = 1100, next = '/') => {
    const page = await (await browser.newContext({ viewport: { width, height: 900 } })).newPage();
    await page.goto(`${plane.url}/login?next=${encodeURIComponent(next)}`);
    await page.fill('input[name=key]', key);
    await page.click('button[type=submit]');
    await page.waitForURL(`${plane.url}${next}`);
    return page;
  };
  /** A session cookie of `key` (no browser). */
  const session = async (key: string) => {
    const r = await fetch(`${plane.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      body: new URLSearchParams({ key, next: '/' }),
    });
    expect(r.status).toBe(303);
    return r.headers.get('set-cookie')!.split(';')[0];
  };
  const html = async (path: string, cookie: string) =>
    (await fetch(`${plane.url}${path}`, { headers: { cookie } })).text();

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    launching = launchChromium();
    launching.catch(() => {});
    plane = await startTestPlane('pglite');
    keys.ingest = await plane.key('acme', ['ingest']);
    keys.reader = await plane.key('acme', ['read']);
    keys.canceller = await plane.key('acme', ['read', 'cancel']);
    keys.cancelOnly = await plane.key('acme', ['cancel']);
    keys.admin = await plane.key('acme', ['admin']);
    keys.approver = await plane.key('acme', ['approve']);
    laptop = new SqliteCheckpointer({ path: ':memory:', writerId: 'laptop-a' });
    browser = await launching;
  });
  afterAll(async () => {
    await (await launching?.catch(() => null))?.close();
    await laptop?.close();
    await plane?.close();
  });

  it('a cancel-scoped session cancels a running run: the page shows it cancelled with the reason; the API and the restore bundle agree; the runner is stopped', async () => {
    const id = await run('live-run');
    const page = await signedIn(keys.canceller);
    await page.goto(`${plane.url}/runs/${id}`);
    expect(await page.textContent('h1')).toContain('running');
    const form = page.locator('[data-testid=cancel-form]');
    expect(await form.count()).toBe(1);
    const reason = 'Customer withdrew the request <b>not markup</b> — stop now';
    await page.getByRole('textbox', { name: /Reason/ }).fill(reason);

    // one click on the button alone: the browser holds the form (the box is required), nothing is posted
    await page.getByRole('button', { name: 'Cancel run' }).click();
    expect(page.url()).toBe(`${plane.url}/runs/${id}`);
    expect(await page.locator('#cancel-confirm:invalid').count()).toBe(1);
    expect((await detail(id)).execution.status).toBe('running');

    await page.getByRole('checkbox', { name: /I understand: the runner stops at its next step/ }).check();
    await shot(page, 'cancel-form');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.waitForURL(`${plane.url}/runs/${id}#cancel-h`);

    // the page: cancelled, the reason as given (text, not markup), the writer it stopped; no form any more
    expect(await page.textContent('h1')).toContain('cancelled');
    expect(await page.textContent('[data-testid=cancel-reason]')).toBe(reason);
    expect(await page.locator('[data-testid=cancelled] b').count()).toBe(0);
    expect(await page.textContent('[data-testid=cancelled]')).toContain('Cancelled at the plane');
    // who cancelled: the name of the session's key, kept with the run at the plane
    expect(await page.textContent('[data-testid=cancelled-by-key]')).toBe('Cancelled at the plane by key key');
    expect(await page.textContent('[data-testid=cancel-stopped]')).toContain('Writer key (laptop-a) was running it');
    expect(await page.locator('[data-testid=cancel-form]').count()).toBe(0);
    // the cancel's fence of laptop-a is said in the cancel's card, not as a takeover by another machine
    expect(await page.locator('[data-testid=takeovers]').count()).toBe(0);
    // the timeline ends with the marker, its row badge cancelled, and the step before it is not shown as done
    const marker = page.locator('ol.timeline li').last();
    expect(await marker.locator('.row-head').textContent()).toMatch(/#3\s*run_end\s*run_end\s*cancelled/);
    expect(await page.locator('ol.timeline li').nth(2).locator('.badge').textContent()).toBe('cancelled');
    expect(await page.locator('[data-testid=cancel-closed-pause]').count()).toBe(0);
    await shot(page, 'cancel-done');

    // the API: cancelled, its last writer the plane
    const d = await detail(id);
    expect(d.execution).toMatchObject({ status: 'cancelled', lastSeq: 3, writerId: 'plane' });
    expect(d.pause).toBeNull();
    // the restore bundle ends with the cancel marker, carrying the reason
    const bundle = await restored(id);
    expect(bundle.rows.map((r) => r.seq)).toEqual([0, 1, 2, 3]);
    expect(bundle.rows.at(-1)).toMatchObject({
      seq: 3,
      step: 'run_end',
      status: 'cancelled',
      writerId: 'plane',
      nodeOutput: { reason },
    });
    expect(bundle.pending).toBeNull();

    // the runner's next step reaches the plane refused: it lost the run
    await laptop.put(step(id, 3));
    const after = await sync();
    expect([after.accepted, after.rejected]).toEqual([0, 1]);
    expect(after.results[0]).toMatchObject({ code: 'taken_over' });
    expect((await detail(id)).execution).toMatchObject({ status: 'cancelled', lastSeq: 3 });

    // a reload shows the same; a second post (the form is gone, but an old tab had it) records nothing more
    await page.reload();
    expect(await page.textContent('[data-testid=cancel-reason]')).toBe(reason);
    // its refused row fenced it again (after the marker): still one line for it, and no takeover shown
    expect(await page.locator('[data-testid=cancel-stopped]').count()).toBe(1);
    expect(await page.locator('[data-testid=takeovers]').count()).toBe(0);
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
    const token = csrfOf(/wm_session=([^;]+)/.exec(cookie)![1]);
    const again = await post(
      `${plane.url}/runs/${id}/cancel`,
      { csrf: token, reason: 'second thoughts', confirm: 'yes' },
      { cookie },
    );
    expect(again.status).toBe(200);
    const againText = await again.text();
    expect(againText).toContain('already cancelled');
    expect(againText).toContain('nothing was changed');
    expect((await restored(id)).rows.at(-1)).toMatchObject({ seq: 3, nodeOutput: { reason } });
    await page.context().close();
  });

  it("a paused run's cancel closes its pause: shown closed by the cancel, not answered; the decision form goes with it", async () => {
    const id = await run('paused-run', 'paused', 2);
    const page = await signedIn(keys.admin);
    await page.goto(`${plane.url}/runs/${id}`);
    // an admin session: the approve/decline form and the cancel form both; the cancel's box names the pause
    expect(await page.locator('[data-testid=decision-form]').count()).toBe(1);
    expect(await page.textContent('[data-testid=cancel-form]')).toContain('the open pause is closed unanswered');
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole('textbox', { name: /Reason/ }).fill('duplicate refund');
    await page.getByRole('checkbox', { name: /I understand/ }).check();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.waitForURL(`${plane.url}/runs/${id}#cancel-h`);
    expect(await page.textContent('h1')).toContain('cancelled');
    const closed = await page.textContent('[data-testid=cancel-closed-pause]');
    expect(closed).toContain('manager_approval');
    expect(closed).toContain('closed by the cancel, not answered');
    expect(await page.textContent('[data-testid=cancel-closed-pause] pre')).toContain('9000');
    // no open pause, no form to answer it
    expect(await page.locator('section[aria-labelledby=pause-h]').count()).toBe(0);
    expect(await page.locator('[data-testid=decision-form]').count()).toBe(0);
    expect(await page.textContent('[data-testid=cancel-reason]')).toBe('duplicate refund');
    expect(await accessibilityProblems(page)).toEqual([]);
    await shot(page, 'cancel-paused-done');
    const d = await detail(id);
    expect(d.execution.status).toBe('cancelled');
    expect(d.pause).toBeNull();
    expect((await restored(id)).pending).toBeNull();

    // a decision recorded before the cancel, not yet applied by a worker: the cancel supersedes it
    const decided = await run('decided-run', 'paused', 1);
    const checkpointId = (await detail(decided)).pause.pending.checkpointId;
    const recorded = await call(`${plane.url}/v1/executions/${decided}/decision`, {
      key: keys.approver,
      json: { checkpointId, approved: true, comment: 'fine by me' },
    });
    expect(recorded.status).toBe(201);
    await page.goto(`${plane.url}/runs/${decided}`);
    await page.getByRole('checkbox', { name: /I understand/ }).check();
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.waitForURL(`${plane.url}/runs/${decided}#cancel-h`);
    expect(await page.locator('[data-testid=run-approvals] [data-testid=decision]').getAttribute('data-state')).toBe(
      'superseded',
    );
    expect(await page.textContent('[data-testid=cancel-closed-pause]')).toContain('no decision applies to it any more');
    await page.goto(`${plane.url}/approvals`);
    expect(await page.locator(`[data-testid=pause][data-execution="${decided}"]`).count()).toBe(0);
    await page.context().close();
  });

  it('who sees the form: a read session a note naming the scope; completed and cancelled runs none; a failed run and a cancel-only key have it', async () => {
    const running = await run('seen-running');
    const completed = await run('seen-completed', 'completed');
    const failed = await run('seen-failed', 'failed');
    const reader = await session(keys.reader);
    const readerPage = await html(`/runs/${running}`, reader);
    expect(readerPage).not.toContain('data-testid="cancel-form"');
    expect(readerPage).toContain('no cancel scope');
    expect(readerPage).toContain('the cancel or the admin scope');
    // an approve session may decide, not cancel
    expect(await html(`/runs/${running}`, await session(keys.approver))).not.toContain('data-testid="cancel-form"');

    const canceller = await session(keys.canceller);
    for (const id of [completed, 'live-run']) {
      const text = await html(`/runs/${id}`, canceller);
      expect(text, id).not.toContain('data-testid="cancel-form"');
      expect(text, id).not.toContain('no cancel scope');
    }
    expect(await html(`/runs/${failed}`, canceller)).toContain('data-testid="cancel-form"');
    // a key with only the cancel scope signs in (as an approve-only key does) and has the form
    expect(await html(`/runs/${running}`, await session(keys.cancelOnly))).toContain('data-testid="cancel-form"');
    // with live updates on, the form too: they update the page in place and never touch a form (test/ui/live.test.ts)
    expect(await html(`/runs/${running}?live=1`, canceller)).toContain('data-testid="cancel-form"');

    // in the browser: the read session sees the note, not the form
    const page = await signedIn(keys.reader);
    await page.goto(`${plane.url}/runs/${running}`);
    expect(await page.locator('[data-testid=cancel-form]').count()).toBe(0);
    expect(await page.textContent('[data-testid=no-cancel]')).toContain('cancel or the admin scope');
    await page.goto(`${plane.url}/runs/${completed}`);
    expect(await page.locator('[data-testid=cancel-form], [data-testid=no-cancel]').count()).toBe(0);
    await page.context().close();
  });

  it('on a phone (390 px) the form fits without horizontal scrolling, and the page passes the accessibility checks', async () => {
    const id = await run('phone-run');
    const phone = await signedIn(keys.canceller, 390);
    await phone.goto(`${plane.url}/runs/${id}`);
    const form = phone.locator('[data-testid=cancel-form]');
    await form.scrollIntoViewIfNeeded();
    expect(await fitsWidth(phone)).toBe(true);
    for (const part of ['textarea[name=reason]', '#cancel-confirm', 'button.decline']) {
      const box = (await form.locator(part).boundingBox())!;
      expect(box.x, part).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, part).toBeLessThanOrEqual(390);
    }
    expect(await accessibilityProblems(phone)).toEqual([]);
    // the controls are reached by their names, as a screen reader finds them
    expect(await phone.getByRole('region', { name: 'Cancel this run' }).count()).toBe(1);
    expect(await phone.getByRole('textbox', { name: /Reason/ }).count()).toBe(1);
    expect(await phone.getByRole('checkbox', { name: /I understand/ }).count()).toBe(1);
    await shot(phone, 'cancel-form-phone');
    // and a cancel made on the phone shows its result there, still fitting
    await phone.getByRole('checkbox', { name: /I understand/ }).check();
    await phone.getByRole('button', { name: 'Cancel run' }).click();
    await phone.waitForURL(`${plane.url}/runs/${id}#cancel-h`);
    expect(await phone.textContent('h1')).toContain('cancelled');
    expect(await phone.textContent('[data-testid=cancel-reason-shown]')).toContain('none was given');
    expect(await fitsWidth(phone)).toBe(true);
    expect(await accessibilityProblems(phone)).toEqual([]);
    await phone.context().close();
  });

  it('refusals change nothing and say why: a run completed while the form was open, a run not here, no token, a foreign origin, a read session, no confirmation', async () => {
    // the form open in the browser; meanwhile the runner completes the run
    const id = await run('finishing-run');
    const page = await signedIn(keys.canceller);
    await page.goto(`${plane.url}/runs/${id}`);
    await page.getByRole('textbox', { name: /Reason/ }).fill('too late');
    await page.getByRole('checkbox', { name: /I understand/ }).check();
    await laptop.put({ ...step(id, 3), nodeId: 'run_end', step: 'run_end', status: 'completed' });
    expect((await sync()).rejected).toBe(0);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.waitForURL(`${plane.url}/runs/${id}/cancel`);
    expect(await page.textContent('[data-testid=refusal-code]')).toBe('ALREADY_FINISHED');
    expect(await page.textContent('[data-testid=refusal]')).toContain('already completed');
    expect(await page.textContent('main')).toContain('Nothing was changed.');
    expect(await accessibilityProblems(page)).toEqual([]);
    await shot(page, 'cancel-refused-finished');
    expect((await detail(id)).execution).toMatchObject({ status: 'completed', lastSeq: 3 });
    expect((await restored(id)).rows.at(-1)).toMatchObject({ seq: 3, status: 'completed' });
    await page.getByRole('link', { name: 'Back to the run' }).click();
    expect(await page.textContent('h1')).toContain('completed');
    expect(await page.locator('[data-testid=cancel-form]').count()).toBe(0);
    await page.context().close();

    const target = await run('guarded-run');
    const url = `${plane.url}/runs/${target}/cancel`;
    const canceller = await session(keys.canceller);
    const csrf = csrfIn(await html(`/runs/${target}`, canceller));
    expect(csrf).not.toBe('');
    const ok = { reason: 'r', confirm: 'yes' };
    const refused = async (
      body: Record<string, string>,
      headers: Record<string, string>,
      status: number,
      code: string,
      path = url,
    ) => {
      const r = await post(path, body, headers);
      const text = await r.text();
      expect([r.status, text.includes(code), text.includes('Nothing was changed.')], code).toEqual([
        status,
        true,
        true,
      ]);
      return text;
    };
    // no token, a forged one, another origin, another site: 403 CSRF_FAILED
    await refused(ok, { cookie: canceller }, 403, 'CSRF_FAILED');
    await refused({ ...ok, csrf: 'forged' }, { cookie: canceller }, 403, 'CSRF_FAILED');
    await refused({ ...ok, csrf }, { cookie: canceller, origin: 'http://evil.example' }, 403, 'CSRF_FAILED');
    await refused({ ...ok, csrf }, { cookie: canceller, 'sec-fetch-site': 'cross-site' }, 403, 'CSRF_FAILED');
    // a read session's own token: 403 FORBIDDEN naming the scope
    const reader = await session(keys.reader);
    expect(
      await refused({ ...ok, csrf: csrfOf(reader.split('=')[1]) }, { cookie: reader }, 403, 'FORBIDDEN'),
    ).toContain('cancel scope');
    // the box not ticked (a client that skips the browser's check), a stray field, a reason too long: 400 naming each
    const noConfirm = await refused({ csrf, reason: 'r' }, { cookie: canceller }, 400, 'INVALID_REQUEST');
    expect(noConfirm).toContain('confirm: tick');
    const bad = await refused(
      { csrf, confirm: 'yes', reason: 'x'.repeat(2049), extra: '1' },
      { cookie: canceller },
      400,
      'INVALID_REQUEST',
    );
    expect(bad).toContain('unknown field');
    expect(bad).toContain('reason: at most 2048 characters');
    // a GET of the target changes nothing
    expect((await fetch(`${url}?confirm=yes&csrf=${csrf}`, { headers: { cookie: canceller } })).status).toBe(404);
    // a run not here (and a path no run id can be): 404, no link back to a run that is not there
    for (const missing of ['no-such-run', 'bad\u0001id']) {
      const text = await refused(
        { ...ok, csrf },
        { cookie: canceller },
        404,
        'EXECUTION_NOT_FOUND',
        `${plane.url}/runs/${encodeURIComponent(missing)}/cancel`,
      );
      expect(text).not.toContain('Back to the run');
    }
    // another project's session with the cancel scope: the run is not there for it
    const rival = await session(await plane.key('rival', ['read', 'cancel']));
    await refused({ ...ok, csrf: csrfOf(rival.split('=')[1]) }, { cookie: rival }, 404, 'EXECUTION_NOT_FOUND');
    // nothing of it changed the run
    expect((await detail(target)).execution).toMatchObject({ status: 'running', lastSeq: 2 });
    expect(await html(`/runs/${target}`, canceller)).toContain('data-testid="cancel-form"');
  });
});
