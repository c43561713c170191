/**
 * What an idempotency key is made of (client/runtime/idempotent.ts builds them), read back for people:
 *
 * - the default key: the function's name, `:`, and the sha256 (hex) of the stable JSON of its arguments;
 * - the key of earlier versions (still looked up): the name, `:`, and that JSON itself;
 * - any other key: given by the application (the `key` option), shown as it is.
 */
import type { Json } from './json.js';

/** Hex characters of the default key's digest (sha256). */
export const DIGEST_LENGTH = 64;

/** A key as a person reads it. */
export type KeyParts =
  | { kind: 'default'; name: string; digest: string }
  | { kind: 'legacy'; name: string; args: Json[] }
  | { kind: 'given'; key: string };

const DIGEST = new RegExp(`^[0-9a-f]{${DIGEST_LENGTH}}$`);

/** The parts of an idempotency key: a default key's function and digest, an old key's function and arguments, or a key the application gave. */
export function keyParts(key: string): KeyParts {
  const at = key.lastIndexOf(':');
  if (at > 0 && DIGEST.test(key.slice(at + 1)))
    return { kind: 'default', name: key.slice(0, at), digest: key.slice(at + 1) };
  const open = key.indexOf(':[');
  if (open > 0 && key.endsWith(']')) {
    try {
      const args = JSON.parse(key.slice(open + 1)) as Json;
      if (Array.isArray(args)) return { kind: 'legacy', name: key.slice(0, open), args };
    } catch {
      // not JSON: a key the application gave that looks like one
    }
  }
  return { kind: 'given', key };
}

/** Arguments in one line, as a call reads: `"A-1", 100`, each cut to `max` characters. */
export const argsLine = (args: Json[], max = 40) =>
  args
    .map((a) => {
      const t = JSON.stringify(a) ?? 'null';
      return t.length > max ? `${t.slice(0, max - 1)}…` : t;
    })
    .join(', ');
