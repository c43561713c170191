/**
 * The person approving a fleet's pauses (bench/fleet.ts): about once a
 * second, each project's approvals inbox (GET /v1/pauses, paged) is read and
 * every open pause without a decision approved (POST
 * /v1/executions/:id/decision), as someone at the inspector would. A shed
 * answer (429, 503) is asked again next round; anything else unexpected is
 * said (`errors`). Each call is bounded (CALL_MS).
 *
 * `stop()` ends the rounds, then reads the projects' decision feeds
 * (GET /v1/decisions) until every decision it recorded stands `applied` (at
 * most STOP_MS), and answers those that do not, each said.
 */

const CALL_MS = 30_000;
const STOP_MS = 120_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  body: Record<string, unknown>;
}

export function approving(url: string, approvers: string[]) {
  /** Decision id → its run. */
  const recorded = new Map<string, string>();
  const errors: string[] = [];
  const say = (what: string) => {
    if (errors.length < 5) errors.push(what);
  };
  let stopping = false;
  const ask = async (key: string, path: string, body?: unknown): Promise<Answer> => {
    const r = await fetch(`${url}${path}`, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(CALL_MS),
    });
    const text = await r.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text: text.slice(0, 200) };
    }
    return { status: r.status, body: parsed };
  };
  const shed = (a: Answer) => a.status === 429 || a.status === 503;
  /** Every item of a paged listing (`cursorParam` names the next page's cursor), or null when a page was shed. */
  const all = async <T>(key: string, path: string, cursorParam: string): Promise<T[] | null> => {
    const out: T[] = [];
    let cursor: string | null = null;
    for (;;) {
      const page = await ask(key, `${path}${cursor === null ? '' : `&${cursorParam}=${encodeURIComponent(cursor)}`}`);
      if (shed(page)) return null;
      if (page.status !== 200) throw new Error(`GET ${path}: ${page.status} ${JSON.stringify(page.body)}`);
      const items = page.body.items as T[];
      out.push(...items);
      const next = (page.body.nextCursor as string | null) ?? null;
      // the inbox ends with a null cursor; the decision feed with an empty page
      if (next === null || !items.length || next === cursor) return out;
      cursor = next;
    }
  };
  type Pause = { executionId: string; checkpointId: string; decision: { decisionId: string } | null };
  const round = async () => {
    for (const key of approvers) {
      const inbox = await all<Pause>(key, '/v1/pauses?limit=1000', 'cursor');
      for (const p of inbox ?? []) {
        if (p.decision || stopping) continue;
        const r = await ask(key, `/v1/executions/${encodeURIComponent(p.executionId)}/decision`, {
          checkpointId: p.checkpointId,
          approved: true,
        });
        if (r.status === 201) recorded.set(r.body.decisionId as string, p.executionId);
        else if (!shed(r)) say(`decision for ${p.executionId}: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }
  };
  const loop = (async () => {
    while (!stopping) {
      await round().catch((e: Error) => say(`the person's round: ${e.message}`));
      await sleep(1000);
    }
  })();
  return {
    recorded,
    errors,
    /** Stop approving; the decisions recorded that did not come to stand `applied` within STOP_MS, each said. */
    async stop(): Promise<string[]> {
      stopping = true;
      await loop;
      const deadline = performance.now() + STOP_MS;
      let states = new Map<string, string>();
      for (;;) {
        try {
          const now = new Map<string, string>();
          for (const key of approvers) {
            const feed = await all<{ decisionId: string; state: string }>(key, '/v1/decisions?limit=1000', 'after');
            if (!feed) throw new Error('shed');
            for (const d of feed) now.set(d.decisionId, d.state);
          }
          states = now;
        } catch {
          // a shed or failed read: asked again until the deadline
        }
        const left = [...recorded.keys()].filter((id) => states.get(id) !== 'applied');
        if (!left.length || performance.now() > deadline)
          return left.map(
            (id) => `decision ${id} (${recorded.get(id)}): ${states.get(id) ?? 'not read'} at the plane, not applied`,
          );
        await sleep(500);
      }
    },
  };
}
