/**
 * Token usage as rows carry it. The agent records each model call's usage in
 * `nodeOutput.usage` (an array, one entry per call) of the first row it writes
 * after the call: the next tool_call or llm_call row, or the run-end marker
 * (then `nodeOutput` is `{ output, usage }` / `{ error, usage }`). A call whose
 * reply a crash cut off before that row is not recorded (it is re-issued on
 * resume, and that call is recorded as its own).
 */
import type { Json } from './json.js';

/** One model call's usage, as a row records it: the model, where in the run, the token counts and the finish reason. */
export interface UsageRecord {
  model: string;
  agentPath: string;
  turn: number;
  inputTokens: number | null;
  outputTokens: number | null;
  cachedInputTokens: number | null;
  finishReason: string | null;
}

/** Usage summed over rows (`sumUsage`): calls and token counts. */
export interface UsageTotal {
  /** Model calls that reported usage. */
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  /** Calls by model name. */
  models: Record<string, number>;
  /** Calls and token counts by model name (what a cost is priced from: each model has its own prices). */
  byModel: Record<string, ModelUsageTotal>;
}

/** One model's part of a `UsageTotal`. */
export interface ModelUsageTotal {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

/** The usage entries of one row's nodeOutput (none for rows without, or of other shapes). */
export function usageOf(nodeOutput: Json | null | undefined): UsageRecord[] {
  if (!nodeOutput || typeof nodeOutput !== 'object' || Array.isArray(nodeOutput)) return [];
  const list = (nodeOutput as { usage?: unknown }).usage;
  if (!Array.isArray(list)) return [];
  const out: UsageRecord[] = [];
  for (const u of list) {
    if (!u || typeof u !== 'object' || Array.isArray(u)) continue;
    const r = u as Record<string, unknown>;
    out.push({
      model: typeof r.model === 'string' ? r.model : 'unknown',
      agentPath: typeof r.agentPath === 'string' ? r.agentPath : '',
      turn: num(r.turn) ?? 0,
      inputTokens: num(r.inputTokens),
      outputTokens: num(r.outputTokens),
      cachedInputTokens: num(r.cachedInputTokens),
      finishReason: typeof r.finishReason === 'string' ? r.finishReason : null,
    });
  }
  return out;
}

/** Sum the usage recorded in rows (each row once; pass every row of a run). */
export function sumUsage(rows: Iterable<{ nodeOutput: Json | null }>): UsageTotal {
  const t: UsageTotal = { calls: 0, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, models: {}, byModel: {} };
  for (const row of rows) {
    for (const u of usageOf(row.nodeOutput)) {
      // defined, not assigned: a model named "__proto__" is a key like any other
      if (!Object.hasOwn(t.byModel, u.model))
        Object.defineProperty(t.byModel, u.model, {
          value: { calls: 0, inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 },
          enumerable: true,
          writable: true,
          configurable: true,
        });
      const m = t.byModel[u.model];
      for (const total of [t, m]) {
        total.calls++;
        total.inputTokens += u.inputTokens ?? 0;
        total.outputTokens += u.outputTokens ?? 0;
        total.cachedInputTokens += u.cachedInputTokens ?? 0;
      }
      t.models[u.model] = (t.models[u.model] ?? 0) + 1;
    }
  }
  return t;
}

/** One line for people: `3 calls, 1200 in (800 cached), 310 out (gpt-x ×3)`. */
export function usageLine(t: UsageTotal): string {
  if (!t.calls) return 'no model usage reported';
  const models = Object.entries(t.models)
    .map(([m, n]) => `${m} ×${n}`)
    .join(', ');
  return `${t.calls} model call${t.calls === 1 ? '' : 's'}, ${t.inputTokens} input tokens (${t.cachedInputTokens} cached), ${t.outputTokens} output tokens (${models})`;
}
