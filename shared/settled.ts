/** What work done together answered for one of its parts: its value, or the error it alone failed with. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };
