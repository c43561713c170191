/** @jsxImportSource hono/jsx */
/**
 * An idempotency key as the run page shows it (shared/idempotency-key.ts reads what it is made of): the effect's
 * function and its arguments where the key holds them, a short digest where it holds only their hash, or the key
 * the application gave; the whole key one click away.
 */
import type { FC } from 'hono/jsx';
import { argsLine, keyParts } from '../shared/idempotency-key.js';
import { clip } from './layout.js';

/** What the run page says once above its entries: how to read them. */
export const EFFECT_KEYS_WORDS =
  "Each entry by its key: an effect's function and the first characters of its arguments' hash (the default key), or the key the application gave; click one for the whole key.";

/** How many characters of a key the summary shows; a longer one is cut (its whole text is in the body). */
const SHOWN = 80;

export const EffectKey: FC<{ k: string }> = ({ k }) => {
  const p = keyParts(k);
  const summary =
    p.kind === 'default' ? (
      <>
        <strong class="mono">{clip(p.name, SHOWN)}</strong> <span class="muted">args #{p.digest.slice(0, 8)}</span>
      </>
    ) : p.kind === 'legacy' ? (
      <>
        <strong class="mono">{clip(p.name, SHOWN)}</strong>
        <span class="mono">({clip(argsLine(p.args), SHOWN)})</span>
      </>
    ) : (
      <>
        <span class="mono">{clip(p.key, SHOWN)}</span> <span class="muted">(given)</span>
      </>
    );
  return (
    <details class="effect-key">
      <summary>{summary}</summary>
      <code>{k}</code>
    </details>
  );
};
