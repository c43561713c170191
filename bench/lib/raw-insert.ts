import postgres from 'postgres';
import { PGlite } from '@electric-sql/pglite';
import type { OutboxEvent } from '../../shared/rows.js';

const DDL = `CREATE TABLE raw_rows (project_id text, id text, execution_id text, seq int, node_id text, step text, status text, agent_path text, writer_id text, created_at text, row jsonb, hash text, PRIMARY KEY (project_id, id))`;
const cols = (e: OutboxEvent) => {
  const r = (e as Extract<OutboxEvent, { kind: 'checkpoint' }>).row;
  return {
    project_id: 'bench',
    id: r.id,
    execution_id: r.executionId,
    seq: r.seq,
    node_id: r.nodeId,
    step: r.step,
    status: r.status,
    agent_path: r.agentPath,
    writer_id: r.writerId,
    created_at: r.createdAt,
    row: JSON.stringify(r),
    hash: 'x',
  };
};

/** Multi-row inserts of the same rows into a plain table: the raw limit the plane is compared with. */
export async function rawPostgres(url: string, events: OutboxEvent[], BATCH: number): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  await sql`DROP TABLE IF EXISTS raw_rows`;
  await sql.unsafe(DDL);
  const t0 = performance.now();
  for (let i = 0; i < events.length; i += BATCH) {
    const rows = events.slice(i, i + BATCH).map(cols);
    await sql`INSERT INTO raw_rows ${sql(rows)}`;
  }
  const rate = events.length / ((performance.now() - t0) / 1000);
  await sql`DROP TABLE raw_rows`;
  await sql.end();
  return rate;
}

export async function rawPglite(events: OutboxEvent[], BATCH: number): Promise<number> {
  const db = new PGlite();
  await db.exec(DDL);
  const t0 = performance.now();
  for (let i = 0; i < events.length; i += BATCH) {
    const rows = events.slice(i, i + BATCH).map(cols);
    const keys = Object.keys(rows[0]);
    const params: unknown[] = [];
    const tuples = rows.map(
      (r) =>
        `(${keys
          .map((k) => {
            params.push((r as Record<string, unknown>)[k]);
            return `$${params.length}`;
          })
          .join(',')})`,
    );
    await db.query(`INSERT INTO raw_rows (${keys.join(',')}) VALUES ${tuples.join(',')}`, params);
  }
  const rate = events.length / ((performance.now() - t0) / 1000);
  await db.close();
  return rate;
}
