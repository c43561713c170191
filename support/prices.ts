/**
 * Model prices, for the cost the inspector shows (`waymark ui --prices FILE`, `waymark plane --prices FILE`, or the
 * `prices` option of `serveLocalUi` and of the plane's config). A prices file is JSON:
 *
 *   { "currency": "USD",
 *     "models": { "gpt-4o": { "input": 2.5, "output": 10, "cachedInput": 1.25 } } }
 *
 * Prices are per million tokens, by model id as usage records it (shared/usage.ts). `cachedInput` prices the input
 * tokens read from a provider's prompt cache (part of the input tokens); without it they are priced as input. A run's
 * cost is the sum over its model calls' usage; a model with usage and no price makes the cost unknown (it is never
 * counted as free).
 */
import { readFileSync } from 'node:fs';
import type { UsageTotal } from '../shared/usage.js';
import { numberProblem, objectProblem, shown, unknownOptions } from './validate.js';

/** One model's prices, per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  /** input tokens read from the prompt cache; absent: priced as input */
  cachedInput?: number;
}

/** The prices of models, in one currency (an ISO 4217 code: USD, EUR…). */
export interface Prices {
  currency: string;
  models: Readonly<Record<string, Readonly<ModelPrice>>>;
}

const PRICE_FIELDS = ['input', 'output', 'cachedInput'];

/** Every problem of a prices value (empty: usable), each named by its place (`prices.models["gpt-4o"].input: …`). */
export function pricesProblems(v: unknown, field = 'prices'): string[] {
  const shape = v === undefined ? `${field}: must be an object (got undefined)` : objectProblem(field, v);
  if (shape) return [shape];
  const o = v as Record<string, unknown>;
  const problems = unknownOptions(o, ['currency', 'models'], `${field}.`);
  if (typeof o.currency !== 'string' || !/^[A-Z]{3}$/.test(o.currency))
    problems.push(
      `${field}.currency: must be a currency's three-letter ISO 4217 code, such as "USD" (got ${shown(o.currency)})`,
    );
  const models = o.models;
  const modelsShape =
    models === undefined
      ? `${field}.models: must be an object (got undefined)`
      : objectProblem(`${field}.models`, models);
  if (modelsShape) return [...problems, modelsShape];
  const entries = Object.entries(models as Record<string, unknown>);
  if (!entries.length) problems.push(`${field}.models: must name at least one model`);
  for (const [model, price] of entries) {
    const at = `${field}.models[${JSON.stringify(model)}]`;
    const priceShape = objectProblem(at, price);
    if (priceShape) {
      problems.push(priceShape);
      continue;
    }
    const p = price as Record<string, unknown>;
    problems.push(...unknownOptions(p, PRICE_FIELDS, `${at}.`));
    for (const k of ['input', 'output'])
      problems.push(
        ...[
          p[k] === undefined
            ? `${at}.${k}: required, a price per million tokens`
            : numberProblem(`${at}.${k}`, p[k], 0),
        ].filter((x): x is string => x !== null),
      );
    const cached = numberProblem(`${at}.cachedInput`, p.cachedInput, 0);
    if (cached) problems.push(cached);
  }
  return problems;
}

const resolved = new WeakSet<object>();

/**
 * A prices value checked and frozen, once: the frozen copy (its caller cannot change it later), or every problem
 * with it (pricesProblems), named under `field`. A copy this returned is taken as it is, not checked again: a
 * `--prices` file read by a command and handed to the plane's config or to serveLocalUi is checked once.
 */
export function resolvePrices(v: unknown, field = 'prices'): { prices: Readonly<Prices> } | { problems: string[] } {
  if (typeof v === 'object' && v !== null && resolved.has(v)) return { prices: v as Readonly<Prices> };
  const problems = pricesProblems(v, field);
  if (problems.length) return { problems };
  const given = v as Prices;
  const models: Record<string, Readonly<ModelPrice>> = Object.create(null);
  for (const [m, p] of Object.entries(given.models))
    models[m] = Object.freeze({
      input: p.input,
      output: p.output,
      ...(p.cachedInput !== undefined ? { cachedInput: p.cachedInput } : {}),
    });
  const prices = Object.freeze({ currency: given.currency, models: Object.freeze(models) });
  resolved.add(prices);
  return { prices };
}

/** The prices file at `path`, or every problem with it (unreadable, not JSON, or not prices), named with the file. */
export function readPricesFile(
  path: string,
  field = "option '--prices'",
): { prices: Readonly<Prices> } | { problems: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    return {
      problems: [
        `${field}: cannot read ${JSON.stringify(path)} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      ],
    };
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { problems: [`${field}: ${JSON.stringify(path)} is not JSON (${(e as Error).message})`] };
  }
  const r = resolvePrices(v, path);
  return 'problems' in r ? { problems: r.problems.map((p) => `${field}: ${p}`) } : r;
}

/** A run's cost from its usage: the amount, or the models with usage that have no price (then the amount is unknown). */
export type Cost = { amount: number; currency: string } | { unpriced: string[] };

/** The cost of `usage` at `prices`: each model's input (less its cached part), cached input and output tokens at its prices. */
export function costOf(usage: UsageTotal, prices: Prices): Cost {
  let amount = 0;
  const unpriced: string[] = [];
  for (const [model, u] of Object.entries(usage.byModel)) {
    const p = Object.hasOwn(prices.models, model) ? prices.models[model] : undefined;
    if (!p) {
      unpriced.push(model);
      continue;
    }
    const cached = Math.min(u.cachedInputTokens, u.inputTokens);
    amount +=
      ((u.inputTokens - cached) * p.input + cached * (p.cachedInput ?? p.input) + u.outputTokens * p.output) /
      1_000_000;
  }
  return unpriced.length ? { unpriced: unpriced.sort() } : { amount, currency: prices.currency };
}

/** An amount in its currency as a person reads it: `$0.0123`, `€12.50` (at least cents, up to 4 decimals for small sums). */
export function moneyText(amount: number, currency: string): string {
  return new Intl.NumberFormat('en-US', {
    style: 'currency',
    currency,
    minimumFractionDigits: 2,
    maximumFractionDigits: amount !== 0 && Math.abs(amount) < 1 ? 4 : 2,
  }).format(amount);
}

/** A cost as one line: the amount, or what has no price. */
export const costText = (c: Cost) =>
  'unpriced' in c ? `no price for ${c.unpriced.join(', ')}` : moneyText(c.amount, c.currency);
