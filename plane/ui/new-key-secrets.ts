/**
 * The secret of a key just made on the Keys page, held between the create
 * form's post and the one page that shows it (Post/Redirect/Get: the post
 * makes the key and answers 303 to that page, so a reload or Back re-posts
 * nothing and makes no second key).
 *
 * Guarantees:
 * - The secret is never in a URL, a cookie or the database (which keeps only
 *   the key's hash, as for every key): it waits in this process's memory under
 *   a random single-use token, and the URL carries the token only.
 * - `take` answers the secret once, to the session that made the key (compared
 *   by its cookie's hash): the first answer forgets it, so a reload, a second
 *   tab or a copied URL gets nothing; another session gets nothing and leaves
 *   it to its own session.
 * - A secret not taken within `ttlMs` (default 2 minutes: the browser asks for
 *   the page at once, following the 303) is forgotten; so is every secret when
 *   the plane process stops. The page then says the secret is not shown again
 *   and to revoke the key and make another if it was not copied.
 *
 * Memory rather than a table: a row would put the secret on disk, in backups
 * and replicas, against the promise that the plane keeps only a key's hash.
 * The cost: a plane of several processes behind a balancer that is not sticky
 * may send the GET to another process, which then says the secret is gone.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The key made, as the page shows it. */
export interface NewKey {
  id: string;
  key: string;
  project: string;
}

/** How long a made key's secret waits for its page by default. */
export const NEW_KEY_SHOWN_FOR_MS = 120_000;

const hash = (t: string) => createHash('sha256').update(t).digest('hex');

/** A store of secrets waiting for their page (one per inspector): each is dropped from memory when its time is up. */
export function newKeySecrets(ttlMs: number = NEW_KEY_SHOWN_FOR_MS) {
  const held = new Map<string, { session: string; key: NewKey; until: number }>();
  return {
    /** Keep `key` for the session whose cookie is `session`; the token its page is opened with. */
    hold(session: string, key: NewKey): string {
      const token = randomBytes(32).toString('base64url');
      const at = hash(token);
      held.set(at, { session: hash(session), key, until: performance.now() + ttlMs });
      // a timer that does not keep the plane running: an unopened page's secret leaves memory at its time
      setTimeout(() => held.delete(at), ttlMs).unref();
      return token;
    },
    /**
     * Key `id` held under `token` for this session, forgotten as it is answered; null: taken already, expired, not
     * this session's or not that key (those two leave it held).
     */
    take(session: string, token: string, id: string): NewKey | null {
      const at = hash(token);
      const h = held.get(at);
      if (!h || h.session !== hash(session) || h.key.id !== id) return null;
      held.delete(at);
      return h.until > performance.now() ? h.key : null;
    },
  };
}
