/**
 * The ingest benches' load: every event posted to `POST /v1/ingest` once, by
 * `writers` concurrent writers in batches of `batch` rows (writer w takes
 * batches w, w + writers, …, and posts to `urls[w % urls.length]`).
 * Back-pressure (429, 503) is retried after its Retry-After, as the drain
 * does, up to 10 attempts; a failed request, an answer that is not a 200, or
 * one that accepted another number of rows, is an error.
 */
import type { OutboxEvent } from '../../shared/rows.js';

/** Post every event once; the errors counted (a bench wants 0). */
export async function ingestAll(
  urls: string[],
  key: string,
  events: OutboxEvent[],
  o: { writers: number; batch: number },
): Promise<number> {
  let errors = 0;
  const writer = async (w: number) => {
    const url = urls[w % urls.length];
    for (let i = w * o.batch; i < events.length; i += o.writers * o.batch) {
      const rows = events.slice(i, i + o.batch);
      for (let attempt = 1; ; attempt++) {
        const res = await fetch(`${url}/v1/ingest`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ protocol: 1, writerId: `bench-${w}`, rows }),
        }).catch((e: Error) => e);
        if (res instanceof Error) {
          errors++;
          break;
        }
        if ((res.status === 429 || res.status === 503) && attempt < 10) {
          await res.body?.cancel();
          await new Promise((r) => setTimeout(r, 1000 * Number(res.headers.get('retry-after') ?? 1)));
          continue;
        }
        // the status first: an answer that is not JSON (a proxy's 502) is an error, not the end of the bench
        const body =
          res.status === 200 ? ((await res.json()) as { accepted?: number }) : (await res.body?.cancel(), null);
        if (body?.accepted !== rows.length) errors++;
        break;
      }
    }
  };
  await Promise.all(Array.from({ length: o.writers }, (_, w) => writer(w)));
  return errors;
}
