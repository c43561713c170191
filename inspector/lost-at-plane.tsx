/** @jsxImportSource hono/jsx */
/**
 * A run this store lost at the plane (a local store's, `waymark ui`), whatever
 * its status here: a badge for the run list and a notice for the run page, in
 * the words of support/run-words.ts (the CLI's too).
 */
import type { FC } from 'hono/jsx';
import { LOST_BADGE, type LostAtPlane, lostWords } from '../support/run-words.js';
import { pageText } from './layout.js';
import { rowHref } from './timeline.js';

/** Beside a run's status in the list: its copy here is not the plane's record. */
export const LostBadge: FC<{ lost: LostAtPlane }> = ({ lost }) => (
  <span
    class="badge s-failed"
    data-testid="lost-at-plane"
    title={`the plane refused this store's rows of the run from #${lost.fromSeq} on: see its page`}
  >
    {LOST_BADGE}
  </span>
);

/** On a run's page: what the plane refused, its reason, and how to take the plane's branch here. */
export const LostNotice: FC<{ executionId: string; lost: LostAtPlane }> = ({ executionId, lost }) => {
  // a link that lands on the row whatever page of the timeline it is on
  const w = lostWords(executionId, lost, (n) => <a href={rowHref(executionId, n)}>#{n}</a>);
  return (
    <section aria-labelledby="lost-h" class="card" data-testid="lost-notice">
      <h2 id="lost-h" class="error">
        Lost at the plane
      </h2>
      <p data-testid="lost-what">{w.what}</p>
      <p class="reason" data-testid="lost-said">
        {pageText(w.said)}
      </p>
      <p data-testid="lost-take">{w.take}</p>
    </section>
  );
};
