/**
 * The snapshot codec: how a run's state is stored in each checkpoint without
 * growing the store quadratically.
 *
 * Glossary
 * - state: the run's state at a boundary, a JSON object; its `messages` array
 *   is append-mostly, every other key is a small field (so is `messages` when
 *   it is not an array).
 * - full: `{v:1, kind:"full", state}`, the whole state.
 * - delta: `{v:1, kind:"delta", base, prev, keep, append, set, unset}`: the
 *   state of row `prev` (seq - 1 of the same execution) with its first `keep`
 *   messages, then `append`, with fields `set` and `unset`. `base` is the seq
 *   of the full snapshot the chain starts from, so a reader fetches rows
 *   base..seq in one range scan and never guesses.
 *
 * Policy: a chain is cut with a full snapshot when replaying it would cost more
 * than CODEC.fullReplayRatio times the size of the full state, or after
 * CODEC.maxChainRows rows. For append-only histories the replay cost equals the
 * state size, so bytes grow linearly with run length.
 */
import { CODEC } from './limits.js';
import { deepFreeze, setOwn, stableStringify, type Json } from './json.js';
import type { EncodedState } from './rows.js';
import { WaymarkError, ErrorCode } from './errors.js';

/** A run's state at one row: a JSON object (the agent's messages and turn, a graph's channels). */
export type State = { [key: string]: Json };

/** What a writer remembers about the newest row of an execution to encode the next one. */
export interface CodecCursor {
  readonly id: string;
  readonly seq: number;
  readonly base: number;
  readonly chainRows: number;
  readonly chainBytes: number;
  readonly messagesBytes: number;
  /**
   * The row's messages are the first `messageCount` of this array. It is the
   * cursor's own (never a caller's array) and only ever appended to: the next
   * row of the chain may push its messages onto it, so a run's cursors share
   * one array instead of copying the history at every row.
   */
  readonly messages: readonly Json[];
  readonly messageCount: number;
  /** whether the state has a `messages` key at all */
  readonly hasMessages: boolean;
  /** Each field's canonical JSON, by key (a prototype-less object: any key is an own property). */
  readonly fieldMap: Readonly<Record<string, string>>;
}

/** A state encoded for a row by `encodeState`: the encoding, its JSON text, and the cursor for the next row. */
export interface Encoded {
  encoded: EncodedState;
  /** JSON text of `encoded`, to store as is. */
  text: string;
  cursor: CodecCursor;
}

function splitState(state: State): { messages: Json[]; fieldMap: Record<string, string> } {
  const hasMessages = Array.isArray(state.messages);
  const messages = hasMessages ? (state.messages as Json[]) : [];
  // no prototype: `fieldMap[k] = …` makes an own property even for `__proto__`, without defineProperty per key
  const fieldMap: Record<string, string> = Object.create(null);
  for (const k of Object.keys(state)) {
    // only an array `messages` is the message list; any other value under that key is an ordinary field
    if ((k === 'messages' && hasMessages) || state[k] === undefined) continue;
    fieldMap[k] = stableStringify(state[k]);
  }
  return { messages, fieldMap };
}

/** Length of `key=json` of every field joined by NUL: the text is never built, only its length counts. */
function fieldsLength(fieldMap: Record<string, string>): number {
  let n = -1;
  for (const k in fieldMap) {
    // a value JSON cannot hold has no text (the row is refused later): it counts as the text "undefined"
    const v = fieldMap[k] as string | undefined;
    n += k.length + 1 + (v === undefined ? 9 : v.length) + 1;
  }
  return Math.max(0, n);
}

function jsonLength(values: readonly Json[]): number {
  let n = 2;
  for (const v of values) n += JSON.stringify(v).length + 1;
  return n;
}

/** A plain JSON value that nothing can change: frozen all the way down (what the runtime passes). */
function isDeepFrozen(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (!Object.isFrozen(v)) return false;
  const proto = Object.getPrototypeOf(v);
  if (!Array.isArray(v) && proto !== Object.prototype && proto !== null) return false;
  for (const k of Object.keys(v)) if (!isDeepFrozen((v as Record<string, unknown>)[k])) return false;
  return true;
}

/**
 * The cursor's own copy of a message: the caller's object only when nothing
 * can change it, else a frozen copy of its JSON form (what is stored). A
 * cursor never holds an object its caller may edit in place, so the next put
 * compares against what was stored, and a reader never sees a later edit.
 */
function own(m: Json): Json {
  return isDeepFrozen(m) ? m : deepFreeze(JSON.parse(JSON.stringify(m) ?? 'null') as Json);
}

/**
 * The messages array of the cursor after `prev`: its first `keep` messages,
 * then its own copies of `append`. Pushed onto `prev`'s array when the new row
 * keeps all of it and nothing was pushed there since (the common case: O(1)
 * per row, not a copy of the history); copied otherwise.
 */
function grown(prev: CodecCursor, keep: number, append: readonly Json[]): Json[] {
  const shared = prev.messages as Json[];
  const out =
    keep === prev.messageCount && shared.length === keep && !Object.isFrozen(shared) ? shared : shared.slice(0, keep);
  for (const m of append) out.push(own(m));
  return out;
}

/** Whether `JSON.stringify` of each value certainly gives text (a plain object, no `toJSON`; or a primitive it writes). */
function textual(values: readonly Json[]): boolean {
  for (const v of values) {
    const t = typeof v;
    if (
      t === 'object'
        ? v !== null && typeof (v as { toJSON?: unknown }).toJSON === 'function'
        : t !== 'string' && t !== 'number' && t !== 'boolean'
    )
      return false;
  }
  return true;
}

/**
 * Messages passed by reference (the runtime freezes and reuses them) compare
 * in O(1); fresh objects fall back to comparing their canonical JSON.
 */
function sameMessage(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b) || stableStringify(a) === stableStringify(b);
}

/**
 * Encode `next`, the state of row (`id`, `seq`), after `prev` (the cursor of
 * row seq - 1 of the same execution, or null for its first row). Returns the
 * encoding, its text and the cursor for the row after.
 */
export function encodeState(prev: CodecCursor | null, next: State, id: string, seq: number): Encoded {
  const { messages, fieldMap } = splitState(next);
  const hasMessages = Array.isArray(next.messages);
  if (prev && prev.seq === seq - 1 && prev.hasMessages === hasMessages && prev.chainRows + 1 < CODEC.maxChainRows) {
    const limit = Math.min(prev.messageCount, messages.length);
    let keep = 0;
    while (keep < limit && sameMessage(prev.messages[keep], messages[keep])) keep++;
    const append = messages.slice(keep);
    const set: Record<string, Json> = {};
    const unset: string[] = [];
    for (const k in fieldMap) if (!(k in prev.fieldMap) || prev.fieldMap[k] !== fieldMap[k]) setOwn(set, k, next[k]);
    for (const k in prev.fieldMap) if (!(k in fieldMap)) unset.push(k);
    const encoded: EncodedState = { v: 1, kind: 'delta', base: prev.base, prev: prev.id, keep, append, set, unset };
    // the text written piece by piece is JSON.stringify(encoded) to the byte, and the appended messages are
    // serialised once for both the text and their size; a value whose text JSON.stringify may leave out takes the old way
    const appendText = textual(append) ? JSON.stringify(append) : null;
    const text =
      appendText === null
        ? JSON.stringify(encoded)
        : `{"v":1,"kind":"delta","base":${prev.base},"prev":${JSON.stringify(prev.id)},"keep":${keep},"append":${appendText},"set":${JSON.stringify(set)},"unset":${JSON.stringify(unset)}}`;
    // jsonLength(append) - 2: each message's text and one separator
    const appendBytes = !append.length ? 0 : appendText !== null ? appendText.length - 1 : jsonLength(append) - 2;
    const messagesBytes = keep === prev.messageCount ? prev.messagesBytes + appendBytes : jsonLength(messages);
    // the fields' text (`key=json` joined by NUL) is what the policy counts for them
    const fullBytes = messagesBytes + fieldsLength(fieldMap) + 32;
    const chainBytes = prev.chainBytes + text.length;
    if (chainBytes <= CODEC.fullReplayRatio * fullBytes) {
      return {
        encoded,
        text,
        cursor: {
          id,
          seq,
          base: prev.base,
          chainRows: prev.chainRows + 1,
          chainBytes,
          messagesBytes,
          messages: grown(prev, keep, append),
          messageCount: keep + append.length,
          hasMessages,
          fieldMap,
        },
      };
    }
  }
  const encoded: EncodedState = { v: 1, kind: 'full', state: next };
  const text = JSON.stringify(encoded);
  return {
    encoded,
    text,
    cursor: {
      id,
      seq,
      base: seq,
      chainRows: 1,
      chainBytes: text.length,
      messagesBytes: jsonLength(messages),
      messages: messages.map(own),
      messageCount: messages.length,
      hasMessages,
      fieldMap,
    },
  };
}

/** A stored row as `decodeChain` reads it: id, seq and encoded state. */
export interface ChainRow {
  id: string;
  seq: number;
  state: EncodedState;
  /** Length of the stored JSON text of `state`, when the reader has it (saves re-serializing). */
  bytes?: number;
}

/**
 * Replay a chain (ascending by seq, starting at a full snapshot) to its last row: that row's fields and messages,
 * and (`countBytes`) the chain's bytes, which only a cursor needs. A broken chain (a gap, a wrong `prev`) is
 * reported, never papered over.
 */
function replayChain(rows: readonly ChainRow[], countBytes: boolean) {
  if (rows.length === 0) throw new WaymarkError(ErrorCode.CORRUPT_ROW, 'empty snapshot chain');
  const first = rows[0];
  if (first.state.kind !== 'full') {
    throw new WaymarkError(ErrorCode.CORRUPT_ROW, `row ${first.id}: snapshot chain does not start at a full snapshot`, {
      details: { rowId: first.id, seq: first.seq },
    });
  }
  let state: State = first.state.state as State;
  let hasMessages = Array.isArray(state.messages);
  // one array, appended in place: replaying n rows costs O(n), not O(n²) copies
  let messages: Json[] = hasMessages ? (state.messages as Json[]).slice() : [];
  let chainBytes = !countBytes ? 0 : (first.bytes ?? JSON.stringify(first.state).length);
  let fieldState: Record<string, Json> = {};
  for (const k of Object.keys(state)) if (k !== 'messages' || !hasMessages) setOwn(fieldState, k, state[k]);
  for (let i = 1; i < rows.length; i++) {
    const r = rows[i];
    const prevRow = rows[i - 1];
    const enc = r.state;
    if (enc.kind === 'full') {
      state = enc.state as State;
      hasMessages = Array.isArray(state.messages);
      messages = hasMessages ? (state.messages as Json[]).slice() : [];
      fieldState = {};
      for (const k of Object.keys(state)) if (k !== 'messages' || !hasMessages) setOwn(fieldState, k, state[k]);
      chainBytes = !countBytes ? 0 : (r.bytes ?? JSON.stringify(enc).length);
      continue;
    }
    if (enc.prev !== prevRow.id || r.seq !== prevRow.seq + 1 || enc.keep > messages.length) {
      throw new WaymarkError(ErrorCode.CORRUPT_ROW, `row ${r.id}: snapshot delta does not follow row ${prevRow.id}`, {
        details: { rowId: r.id, seq: r.seq },
      });
    }
    messages.length = enc.keep;
    for (const m of enc.append) messages.push(m);
    for (const k of Object.keys(enc.set)) setOwn(fieldState, k, enc.set[k]);
    for (const k of enc.unset) delete fieldState[k];
    if (countBytes) chainBytes += r.bytes ?? JSON.stringify(enc).length;
  }
  return { fieldState, messages, hasMessages, chainBytes };
}

/**
 * Rebuild the state of the last row of `rows` (ascending by seq, starting at
 * a full snapshot). Also returns the cursor to encode the row after it.
 * A broken chain (a gap, a wrong `prev`) is reported, never papered over.
 */
export function decodeChain(rows: readonly ChainRow[]): { state: State; cursor: CodecCursor } {
  const { fieldState, messages, hasMessages, chainBytes } = replayChain(rows, true);
  const last = rows[rows.length - 1];
  // frozen: the cursor (cached by a store) shares these objects with the state handed to readers
  const out: State = deepFreeze(hasMessages ? { ...fieldState, messages } : { ...fieldState });
  const { fieldMap } = splitState(out);
  const base = last.state.kind === 'full' ? last.seq : last.state.base;
  return {
    state: out,
    cursor: {
      id: last.id,
      seq: last.seq,
      base,
      chainRows: last.seq - base + 1,
      chainBytes,
      messagesBytes: jsonLength(messages),
      messages,
      messageCount: messages.length,
      hasMessages,
      fieldMap,
    },
  };
}

/**
 * The state of the last row of `rows`, as `decodeChain` rebuilds it (the same checks), for a reader that encodes
 * nothing after it: no cursor, so no row is measured or written out again. The state and its values are the
 * caller's own (not frozen), made of the rows' objects.
 */
export function decodeState(rows: readonly ChainRow[]): State {
  const { fieldState, messages, hasMessages } = replayChain(rows, false);
  return hasMessages ? { ...fieldState, messages } : fieldState;
}

/** The seq of the full snapshot a row's chain starts from. */
export function chainBase(row: { seq: number; state: EncodedState }): number {
  return row.state.kind === 'full' ? row.seq : row.state.base;
}

/**
 * The full state a cursor stands for (the state of row `cursor.seq`), frozen
 * all the way down: its messages are the cursor's own (never a caller's
 * editable object), so no reader can change what another reads.
 */
export function stateOfCursor(c: CodecCursor): State {
  const out: State = {};
  for (const k of Object.keys(c.fieldMap)) setOwn(out, k, JSON.parse(c.fieldMap[k]) as Json);
  if (c.hasMessages) out.messages = c.messages.slice(0, c.messageCount);
  return deepFreeze(out);
}
