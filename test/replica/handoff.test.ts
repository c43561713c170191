import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import type { ChildProcess } from 'node:child_process';
import { Ledger } from '../../examples/agents/refund.js';
import { forkTs, nextMessage, runTs } from '../helpers/child.js';
import { call } from '../helpers/plane.js';
import { createTestDatabase, pgReady, type TestDatabase } from '../helpers/pg.js';
import { scratchDir } from '../helpers/tmp.js';

const PLANE = fileURLToPath(new URL('../plane/plane-child.ts', import.meta.url));
const MACHINE = fileURLToPath(new URL('../../examples/agents/machine.ts', import.meta.url));
const pg = await pgReady('handoff with a plane on postgres');

for (const backend of ['pglite', 'postgres'] as const) {
  describe.skipIf(backend === 'postgres' && !pg)(
    `laptop-to-laptop handoff through a plane process on ${backend}`,
    () => {
      const tmp = scratchDir(`waymark-handoff-${backend}-`);
      let plane: ChildProcess;
      let url = '';
      let key = '';
      let db: TestDatabase | null = null;
      beforeAll(async () => {
        let target = `pglite:${tmp.file('plane')}`;
        if (backend === 'postgres') {
          db = await createTestDatabase('waymark_handoff');
          target = db.url;
        }
        plane = forkTs(PLANE, [target]);
        url = (await nextMessage<{ type: string; url: string }>(plane, (m) => m.type === 'ready')).url;
        const answer = nextMessage<{ type: string; key: string }>(plane, (m) => m.type === 'key');
        plane.send({ type: 'key', project: 'fleet', scopes: ['ingest', 'read'] });
        key = (await answer).key;
      });
      afterAll(async () => {
        await new Promise<void>((r) =>
          plane.exitCode !== null ? r() : (plane.once('exit', () => r()), plane.send({ type: 'exit' })),
        );
        await db?.drop();
        tmp.cleanup();
      });

      const machineIn =
        (ledger: Ledger) =>
        async (action: string, name: string, planeUrl = url, flushMs?: number) => {
          const r = await runTs(MACHINE, [
            action,
            tmp.file(`${name}.db`),
            planeUrl,
            key,
            'refund-offline',
            ledger.path,
            ...(flushMs ? [String(flushMs)] : []),
          ]);
          expect(r.code, r.stderr).toBe(0);
          return JSON.parse(r.stdout.trim().split('\n').pop()!);
        };

      it('offline, a second claim stands locally and the plane flags it as a conflict when it arrives', async () => {
        const ledger = new Ledger(tmp.file('ledger-offline.jsonl'));
        const machine = machineIn(ledger);
        expect((await machine('pause', 'off-a')).result.status).toBe('paused');
        expect((await machine('restore-resume', 'off-b')).result.status).toBe('completed');
        const offline = await machine('resume', 'off-a', 'http://127.0.0.1:9', 100);
        expect(offline.result).toMatchObject({ status: 'completed' });
        expect(offline.flush.pendingRows).toBeGreaterThan(0);
        expect(ledger.charges().length).toBe(1);
        const back = await machine('sync', 'off-a');
        expect(back.flush, JSON.stringify(back.flush)).toMatchObject({ pendingRows: 0 });
        expect(back.flush.quarantinedCount).toBeGreaterThan(0);
        expect(back.flush.lastQuarantineReason).toMatch(/seq_conflict/);
        const conflicts = (await call(`${url}/v1/conflicts`, { key })).body.items;
        expect(conflicts).toEqual([
          expect.objectContaining({ executionId: 'refund-offline', loserWriterId: offline.writerId, source: 'ingest' }),
        ]);
        // this agent charges before it pauses: the one charge was recorded once, before the double claim, so no side effect is named
        expect(conflicts[0].sideEffects).toEqual([]);
      }, 120_000);

      it('A pauses; B, which never ran it, restores, resumes and finishes with one charge; A is then refused; the plane holds every row once', async () => {
        const ledger = new Ledger(tmp.file('ledger.jsonl'));
        const machine = async (action: string, name: string) => {
          const r = await runTs(MACHINE, [action, tmp.file(`${name}.db`), url, key, 'refund-1042', ledger.path]);
          expect(r.code, r.stderr).toBe(0);
          return JSON.parse(r.stdout.trim().split('\n').pop()!);
        };
        const a = await machine('pause', 'laptop-a');
        expect(a.result).toMatchObject({ status: 'paused' });
        expect(a.flush.pendingRows).toBe(0);
        expect(ledger.charges().map((c) => c.pid)).toEqual([a.pid]);

        const b = await machine('restore-resume', 'laptop-b');
        expect(b.restore).toMatchObject({ inserted: 3, pendingImported: true, idempotencyInserted: 1, totalRows: 3 });
        expect(b.progress).toEqual(['2/3', '3/3']);
        expect(b.result).toMatchObject({ status: 'completed', output: 'Refund for order 1042 is on its way.' });
        expect(b.flush.pendingRows).toBe(0);
        // the charge made before the pause on A did not run again on B
        expect(ledger.charges().length).toBe(1);

        const late = await machine('resume', 'laptop-a');
        expect(late.error).toMatchObject({ code: 'ALREADY_RESUMED' });
        expect(late.error.message).toContain(b.writerId);
        expect(ledger.charges().length).toBe(1);

        const exec = await call(`${url}/v1/executions/refund-1042`, { key });
        expect(exec.body.execution).toMatchObject({ status: 'completed' });
        expect(exec.body.conflicts).toEqual([]);
        const rows = (await call(`${url}/v1/executions/refund-1042/rows?limit=1000`, { key })).body.items.map(
          (r: { id: string; writerId: string }) => r.id,
        );
        const union = [...new Set([...a.rowIds, ...b.rowIds])];
        expect(rows.sort()).toEqual(union.sort());
        expect(new Set(rows).size).toBe(rows.length);
        expect(b.rowIds.length).toBeGreaterThan(a.rowIds.length);
      }, 120_000);
    },
  );
}
