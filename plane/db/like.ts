/**
 * LIKE patterns from literal text: every pattern the plane builds from a search text or a stored key comes from
 * here. Its wildcards (`%`, `_`) and LIKE's default escape character (`\`) are escaped with that character, so the
 * text matches only itself (for LIKE, ILIKE and NOT LIKE alike).
 */
const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A LIKE pattern of the strings starting with `s`. */
export const likeStart = (s: string) => `${escapeLike(s)}%`;

/** A LIKE pattern of the strings containing `s`. */
export const likeContains = (s: string) => `%${escapeLike(s)}%`;
