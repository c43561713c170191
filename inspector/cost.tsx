/** @jsxImportSource hono/jsx */
/** A run's cost as the pages show it, from its usage and the configured prices (support/prices.ts). */
import type { FC } from 'hono/jsx';
import type { UsageTotal } from '../shared/usage.js';
import { costOf, costText, type Prices } from '../support/prices.js';

/** The cost, or "no price for <model>" when a model with usage has none; a dash when the run recorded no usage. */
export const CostText: FC<{ usage: UsageTotal | null | undefined; prices: Prices }> = ({ usage, prices }) => {
  if (!usage || usage.calls === 0)
    return (
      <span class="muted" title="no model usage recorded">
        —
      </span>
    );
  const cost = costOf(usage, prices);
  return 'unpriced' in cost ? (
    <span class="muted" title="the prices configured name no price for this model: the cost is not known">
      {costText(cost)}
    </span>
  ) : (
    <span title={`at the configured prices per million tokens, in ${cost.currency}`}>{costText(cost)}</span>
  );
};
