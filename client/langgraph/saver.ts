/**
 * `WaymarkSaver`: a LangGraph checkpoint saver over any waymark store
 * (`SqliteCheckpointer`, `PostgresCheckpointer`), built only on the public
 * `Checkpointer` contract. Every checkpoint is one waymark row (and its outbox
 * event), every pending write one idempotency entry (and its event), so a
 * graph's thread reaches the plane, shows in the inspector and restores on
 * another machine with `restoreThread(store, threadId, …)` (client/langgraph/restore.ts).
 *
 * Guarantees
 * - `put` is one store transaction: the checkpoint row and its outbox event,
 *   both or neither. A crash after it returns loses nothing. It writes with
 *   the store's `prevId` check: a thread's first row is refused if another
 *   writer took the execution first (then the ownership check names it), and a
 *   checkpoint that follows a parent is refused with EXECUTION_GONE if the
 *   parent is gone (the thread was deleted or pruned while its graph ran)
 *   rather than bringing the thread back without the parent's channels.
 * - `putWrites` is one store transaction per call (one idempotency entry, the
 *   checkpoint's next free slot), and `getTuple` reads a checkpoint's writes by
 *   point lookups, not by scanning the thread. A regular write (idx >= 0)
 *   keeps the first value stored for (checkpoint, task, idx), as LangGraph's
 *   savers do; a special write (error, interrupt, resume, scheduled; idx < 0)
 *   is replaced by a later call's (the newest generation is read).
 * - `getTuple`/`list` return pending writes in `writesSortKey` order.
 * - Bytes grow linearly with the run for an append-only `messages` channel.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  getCheckpointId,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint as GraphCheckpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { Checkpointer } from '../checkpointer.js';
import type { Checkpoint as Row } from '../../shared/rows.js';
import type { State } from '../../shared/codec.js';
import { DuplicateIdError } from '../errors.js';
import { isCancelMarker, runCancelled } from '../store/cancel.js';
import { ErrorCode, WaymarkError, hasCode } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { deepFreeze, setOwn, stableStringify, type Json } from '../../shared/json.js';
import { DEFAULT_LEASE_MS, holderOf, RunLease } from '../runtime/lease.js';
import { durationProblem, unknownOptions } from '../../support/validate.js';
import { codePointOrder } from '../../shared/text.js';
import { graphCheckpointOf, graphNodeId, graphWriteKey } from '../../support/langgraph.js';
import {
  agentPathOf,
  executionIdOf,
  invalid,
  loadValue,
  plainJson,
  rowIdOf,
  storeValue,
  type RowRef,
  type StoredValue,
} from './mapping.js';

/** `exclusive`'s options. */
export interface ExclusiveOptions {
  /** How long the thread stays held after its holder stops renewing it (a crash): another `exclusive` call may take it then. Renewed every third of it. Default 30 s. */
  ttlMs?: number;
}

/** An `exclusive` call's hold on its thread. */
interface Held {
  thread: string;
  run: RunLease;
}

/** Options of `new WaymarkSaver(store, ...)`: the serializer and the listing's page size. */
export interface WaymarkSaverOptions {
  /** LangGraph's serializer; default its JsonPlusSerializer. */
  serde?: SerializerProtocol;
  /** Rows read per page when listing (a page size, not a limit on results). Default 100. */
  pageSize?: number;
}

/** The longest lease a timer can renew (past it Node's setTimeout fires at once). */
const MAX_TTL_MS = 2 ** 31 - 1;
const STORED = 'lg:stored';
const HEAD = 'lg:checkpoint';
const SEEN = 'lg:seen';
const channelKey = (c: string) => `c:${c}`;

/** One `putWrites` call, stored as one idempotency entry. */
interface WriteBatch {
  checkpoint_id: string;
  task_id: string;
  task_path: string;
  /** The call's slot among the `putWrites` calls on this checkpoint (0, 1, …), in the order they were stored. */
  gen: number;
  writes: { channel: string; idx: number; value: StoredValue }[];
}

/** One write as read back: its batch's fields and its own. */
interface WriteRecord {
  checkpoint_id: string;
  task_id: string;
  task_path: string;
  channel: string;
  idx: number;
  gen: number;
  value: StoredValue;
}

function isLangGraphRow(row: Row): boolean {
  return graphCheckpointOf(row) !== null;
}

/**
 * A LangGraph checkpoint saver over a waymark store: each checkpoint is one row of the thread's execution (and its
 * outbox event), each pending write one idempotency entry, so a thread reaches the plane and restores elsewhere.
 */
export class WaymarkSaver extends BaseCheckpointSaver {
  readonly store: Checkpointer;
  private readonly pageSize: number;
  private readonly messageCache = new WeakMap<object, { id: unknown; content: unknown; stored: Json }>();
  /** The thread an `exclusive` call holds, seen by the saver calls its graph makes inside it. */
  private readonly held = new AsyncLocalStorage<Held>();

  constructor(store: Checkpointer, options: WaymarkSaverOptions = {}) {
    super(options.serde);
    this.store = store;
    this.pageSize = options.pageSize ?? 100;
  }

  /** Create or migrate the store's schema (the store's own `setup`). */
  async setup(): Promise<void> {
    await this.store.setup();
  }

  /**
   * Run `fn` holding the thread: the store's lease on its execution, renewed
   * while `fn` runs and given up when it settles. `fn` gets the config to run
   * the graph with (`config` with `durability: 'sync'`) and must finish its
   * graph call before it returns (`invoke`, or `stream` read to its end
   * inside it: a stream it returns is cancelled and refused). Another
   * `exclusive` call on the same thread and store, in this process or
   * another, is refused `RUN_IN_PROGRESS` (details: holder, expiresAt) and
   * runs nothing, until this one settles or, after a crash, its lease expires
   * (`ttlMs`). So two workers resuming one interrupted thread run its nodes
   * once between them, not once each. A graph call outside `exclusive` is not
   * refused: every path that may run the thread must come through here.
   *
   * The thread's checkpoints and pending writes made inside `fn` are fenced by
   * the lease: once another holder took the thread over (this process stalled
   * past `ttlMs`), they throw `LEASE_LOST` and write nothing (a task's pending
   * writes, whose effect happened, are kept for the new holder and then
   * refused; an answer to a pause is refused and nothing kept). Each graph
   * call's first read (`getTuple`) confirms the lease with the store, so a
   * holder taken over after checking a pause never reads the new holder's
   * checkpoint, answers its pause or runs its next node. With
   * `durability: 'sync'` LangGraph starts no node before the step's writes
   * are in, so `fn` stops before its next node; under `'async'`
   * or `'exit'` it would not, so another durability is refused. A subgraph
   * namespace (an execution of its own) is checked by a fenced renewal before
   * each of its writes. A node already running when its process stalls past
   * `ttlMs` can still finish its effect once more: give the provider an
   * idempotency key for that.
   */
  async exclusive<C extends RunnableConfig & { durability?: string }, T>(
    config: C,
    fn: (config: C & { durability: 'sync' }) => Promise<T> | T,
    given: ExclusiveOptions = {},
  ): Promise<T> {
    const options: ExclusiveOptions = given ?? {};
    const problems: string[] = [];
    const threadId = config?.configurable?.thread_id;
    if (threadId === undefined || threadId === null || threadId === '')
      problems.push('config.configurable.thread_id is missing or empty');
    if (config?.durability !== undefined && config.durability !== 'sync') {
      problems.push(
        `config.durability must be 'sync' or absent, got ${JSON.stringify(config.durability)} (under 'async' or 'exit' LangGraph starts a node before the fenced writes are in)`,
      );
    }
    if (typeof fn !== 'function') problems.push('fn must be a function (the graph call to run holding the thread)');
    problems.push(...unknownOptions(options, ['ttlMs'], 'options.'));
    const ttlProblem = durationProblem('options.ttlMs', options.ttlMs, 100, MAX_TTL_MS);
    if (ttlProblem) problems.push(ttlProblem);
    const ttlMs = options.ttlMs ?? DEFAULT_LEASE_MS;
    if (problems.length) throw invalid('cannot hold a LangGraph thread', problems);
    const thread = String(threadId);
    const lease = await this.store.acquireLease(executionIdOf(thread, ''), { holder: holderOf(this.store), ttlMs });
    const run = new RunLease(this.store, lease);
    run.start();
    try {
      const result = await this.held.run({ thread, run }, () => fn({ ...config, durability: 'sync' }));
      if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) {
        // the graph would go on running unheld: stop it, and say how to hold it
        await (result as { return?: () => Promise<unknown> }).return?.().catch(() => undefined);
        throw invalid('cannot hold a LangGraph thread', [
          'fn returned a stream: read it to its end inside fn (for await …), so the thread is held while the graph runs',
        ]);
      }
      return result;
    } finally {
      await run.stop();
    }
  }

  /**
   * The lease an `exclusive` call holds on this thread (throws LEASE_LOST once
   * a renewal found it taken). `confirm`: a fenced renewal first, the store's
   * word rather than the local flag: a subgraph namespace's write (the store
   * cannot fence it by the root's lease), and a graph call's first read.
   */
  private async fence(thread: string, ns: string, confirm = ns !== ''): Promise<Held | null> {
    const held = this.held.getStore();
    if (!held || held.thread !== thread) return null;
    if (confirm) await held.run.confirm();
    else held.run.check();
    return held;
  }

  // ---- reads ---------------------------------------------------------------

  /** The checkpoint `config` names (`checkpoint_id`), or the thread's newest, with its pending writes; undefined when none. */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined || threadId === null) return undefined;
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    // a graph call held by `exclusive` starts here: a holder that stalled past its lease (its renewal timer could not
    // fire) and was taken over must not read the new holder's checkpoint and answer the pause open there
    await this.fence(String(threadId), ns, true);
    const executionId = executionIdOf(String(threadId), ns);
    const checkpointId = getCheckpointId(config);
    let row: Row | null;
    // a cancelled thread does not run again: refused here, where a graph call starts, before LangGraph runs a node
    // (under its default 'async' durability it ran the graph from the start, and only its first put was refused)
    const latest = await this.store.latest(executionId);
    if (isCancelMarker(latest)) throw runCancelled(latest!);
    if (checkpointId) {
      row = await this.store.getById(rowIdOf(executionId, checkpointId));
      if (row && row.executionId !== executionId) row = null;
    } else {
      row = latest;
    }
    if (!row || !isLangGraphRow(row)) return undefined;
    const ref = row.nodeInput as unknown as RowRef;
    if (ref.thread_id !== String(threadId) || ref.checkpoint_ns !== ns) return undefined;
    if (checkpointId && ref.checkpoint_id !== checkpointId) return undefined;
    return this.tupleOf(row);
  }

  /** The thread's checkpoints, newest first, with their pending writes; `before`, `limit` and a metadata `filter` narrow them. */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let limit = options.limit;
    const threadId = config.configurable?.thread_id as string | undefined;
    const ns = config.configurable?.checkpoint_ns as string | undefined;
    const onlyId = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    for await (const executionId of this.executionsOf(threadId === undefined ? undefined : String(threadId), ns)) {
      let beforeSeq: number | undefined;
      for (;;) {
        const page = await this.store.list(executionId, {
          order: 'desc',
          limit: this.pageSize,
          ...(beforeSeq !== undefined ? { beforeSeq } : {}),
        });
        for (const row of page) {
          if (!isLangGraphRow(row)) continue;
          const ref = row.nodeInput as unknown as RowRef;
          if (threadId !== undefined && ref.thread_id !== String(threadId)) continue;
          if (ns !== undefined && ref.checkpoint_ns !== ns) continue;
          if (onlyId && ref.checkpoint_id !== onlyId) continue;
          if (beforeId && !(ref.checkpoint_id < beforeId)) continue;
          if (filter && Object.keys(filter).length) {
            const metadata = (await this.metadataOf(row)) as Record<string, unknown>;
            if (!Object.entries(filter).every(([k, v]) => metadata?.[k] === v)) continue;
          }
          if (limit !== undefined) {
            if (limit <= 0) return;
            limit--;
          }
          yield await this.tupleOf(row);
        }
        if (page.length < this.pageSize) break;
        beforeSeq = page[page.length - 1].seq;
      }
    }
  }

  // ---- writes --------------------------------------------------------------

  /**
   * Write one checkpoint after its parent, in one store transaction (the row and its outbox event); resolves with the
   * config that names it.
   */
  async put(
    config: RunnableConfig,
    checkpoint: GraphCheckpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    // a first row races another writer's first row (EXECUTION_EXISTS): look again, now that the execution has an owner
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.putOnce(config, checkpoint, metadata, newVersions);
      } catch (e) {
        if (!hasCode(e, ErrorCode.EXECUTION_EXISTS) || attempt >= 2) throw e;
      }
    }
  }

  private async putOnce(
    config: RunnableConfig,
    checkpoint: GraphCheckpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const problems: string[] = [];
    if (!config.configurable) problems.push('config.configurable is missing');
    const threadId = config.configurable?.thread_id;
    if (threadId === undefined || threadId === null || threadId === '')
      problems.push('config.configurable.thread_id is missing');
    if (typeof checkpoint?.id !== 'string' || checkpoint.id === '') problems.push('checkpoint.id is missing');
    if (problems.length) throw invalid('cannot put a LangGraph checkpoint', problems);
    const thread = String(threadId);
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const executionId = executionIdOf(thread, ns);
    const parentCheckpointId = (config.configurable?.checkpoint_id as string | undefined) ?? null;
    const id = rowIdOf(executionId, checkpoint.id);

    // the thread's own rows only: a waymark run (or another thread) under this execution id is not overwritten
    const latest = await this.store.latest(executionId);
    if (isCancelMarker(latest)) throw runCancelled(latest!);
    if (latest) {
      const ref = isLangGraphRow(latest) ? (latest.nodeInput as unknown as RowRef) : null;
      if (!ref || ref.thread_id !== thread || ref.checkpoint_ns !== ns) {
        throw invalid(`cannot put a LangGraph checkpoint`, [
          `execution ${JSON.stringify(executionId)} already holds ${ref ? `thread ${JSON.stringify(ref.thread_id)} namespace ${JSON.stringify(ref.checkpoint_ns)}` : 'a run that is not a LangGraph thread'}`,
        ]);
      }
    }

    const parentRowId = parentCheckpointId ? rowIdOf(executionId, parentCheckpointId) : null;
    const found = parentRowId ? await this.store.getById(parentRowId) : null;
    const parent = found && found.executionId === executionId ? found : null;
    if (parentRowId && !parent && carriesFromParent(checkpoint, newVersions)) {
      // the values of the channels not written since the parent live only in the parent's row: without it this
      // checkpoint cannot be stored whole (the thread was deleted or pruned while its graph ran)
      throw new WaymarkError(
        ErrorCode.EXECUTION_GONE,
        `thread ${JSON.stringify(thread)} namespace ${JSON.stringify(ns)}: checkpoint ${parentCheckpointId}, which checkpoint ${checkpoint.id} follows, is not in the store (the thread was deleted or pruned meanwhile); nothing was written`,
        { details: { executionId, prevId: parentRowId, threadId: thread, checkpointNs: ns, parentCheckpointId } },
      );
    }
    const parentState = parent ? await this.store.readState(parent) : null;
    const state = await this.stateOf(checkpoint, newVersions, parentState);
    const step = typeof metadata?.step === 'number' ? metadata.step : -1;
    const ref: RowRef = {
      thread_id: thread,
      checkpoint_ns: ns,
      checkpoint_id: checkpoint.id,
      parent_checkpoint_id: parentCheckpointId,
    };
    const fence = await this.fence(thread, ns);
    try {
      await this.store.put(
        {
          id,
          executionId,
          // atomic with the write: the parent (or the newest row seen) must still be there, and a first row must be the first
          prevId: parent ? parent.id : latest ? latest.id : null,
          nodeId: graphNodeId(metadata?.source),
          turn: Math.min(Math.max(step + 1, 0), LIMITS.maxSeq),
          step: 'graph_step',
          status: 'completed',
          agentPath: agentPathOf(ns),
          parentId: parentCheckpointId ? rowIdOf(executionId, parentCheckpointId) : null,
          state,
          nodeInput: ref as unknown as Json,
          nodeOutput: { metadata: await storeValue(this.serde, metadata ?? {}) } as unknown as Json,
        },
        // the lease is the root execution's: a subgraph namespace (an execution of its own) got a fenced renewal above
        fence && ns === '' ? { lease: fence.run.lease } : undefined,
      );
    } catch (e) {
      if (!(e instanceof DuplicateIdError)) throw e;
      // rows are immutable: putting the same checkpoint again is accepted only when it is the same checkpoint
      const existing = await this.store.getById(id);
      const same =
        existing &&
        existing.executionId === executionId &&
        stableStringify(await this.store.readState(existing)) === stableStringify(state);
      if (!same)
        throw invalid('cannot put a LangGraph checkpoint', [
          `checkpoint ${checkpoint.id} is already stored with other values; waymark rows are never rewritten`,
        ]);
    }
    return { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const problems: string[] = [];
    const threadId = config.configurable?.thread_id;
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (threadId === undefined || threadId === null || threadId === '')
      problems.push('config.configurable.thread_id is missing');
    if (!checkpointId) problems.push('config.configurable.checkpoint_id is missing');
    if (typeof taskId !== 'string' || taskId === '') problems.push('taskId is missing');
    if (problems.length) throw invalid('cannot put LangGraph writes', problems);
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const executionId = executionIdOf(String(threadId), ns);
    if (writes.length === 0) return;
    const batch: WriteBatch = {
      checkpoint_id: checkpointId!,
      task_id: taskId,
      task_path: taskPath ?? '',
      gen: 0,
      writes: [],
    };
    for (let i = 0; i < writes.length; i++) {
      const [channel, value] = writes[i];
      batch.writes.push({ channel, idx: WRITES_IDX_MAP[channel] ?? i, value: await storeValue(this.serde, value) });
    }
    // one entry (one commit) per call, at the checkpoint's next free slot; a racing call that took it first moves us on
    for (let slot = 0; ; slot++) {
      const key = graphWriteKey(checkpointId!, slot);
      if (key.length > LIMITS.idempotencyKeyLength)
        throw invalid('cannot put LangGraph writes', [
          `checkpoint id ${JSON.stringify(checkpointId)} is too long for a waymark key`,
        ]);
      if ((await this.store.getIdempotent(executionId, key)).hit) continue;
      batch.gen = slot;
      const mine = batch as unknown as Json;
      const fence = await this.fence(String(threadId), ns);
      // a holder taken over keeps a task's result (its effect happened) for the new holder; an answer to a pause (a
      // special write: __resume__, __interrupt__…) is refused, nothing kept: it decides nothing once the thread is another's
      const anchor = batch.writes.every((w) => w.idx >= 0) ? { anchorId: rowIdOf(executionId, checkpointId!) } : {};
      const stored = await this.store.putIdempotent(
        executionId,
        key,
        mine,
        fence && ns === '' ? { lease: fence.run.lease, ...anchor } : undefined,
      );
      if (stableStringify(stored.result) === stableStringify(mine)) return;
    }
  }

  async deleteThread(threadId: string): Promise<void> {
    for await (const executionId of this.executionsOf(String(threadId), undefined))
      await this.store.deleteExecution(executionId);
  }

  // ---- mapping -------------------------------------------------------------

  /** Executions holding LangGraph rows of this thread and namespace (either may be absent: all). */
  private async *executionsOf(threadId: string | undefined, ns: string | undefined): AsyncGenerator<string> {
    if (threadId !== undefined && ns !== undefined) {
      yield executionIdOf(threadId, ns);
      return;
    }
    // ids are paged in the store's own order; which of them belong to the thread is read from their rows
    let after: string | undefined;
    for (;;) {
      const page = await this.store.listExecutions({
        limit: this.pageSize,
        ...(after !== undefined ? { afterExecutionId: after } : {}),
      });
      for (const e of page) {
        if (threadId !== undefined && e.executionId !== threadId && !e.executionId.startsWith(`${threadId}|`)) continue;
        let latest = await this.store.latest(e.executionId);
        // a cancelled thread's history is still its own: the row under the cancel marker names it
        if (isCancelMarker(latest))
          latest = (await this.store.list(e.executionId, { order: 'desc', limit: 2 }))[1] ?? null;
        if (!latest || !isLangGraphRow(latest)) continue;
        const ref = latest.nodeInput as unknown as RowRef;
        if (threadId !== undefined && ref.thread_id !== threadId) continue;
        if (ns !== undefined && ref.checkpoint_ns !== ns) continue;
        yield e.executionId;
      }
      if (page.length < this.pageSize) return;
      after = page[page.length - 1].executionId;
    }
  }

  private async stateOf(
    checkpoint: GraphCheckpoint,
    newVersions: ChannelVersions,
    parentState: State | null,
  ): Promise<State> {
    const state: State = {};
    const stored: Record<string, Json> = {};
    const versions = (checkpoint.channel_versions ?? {}) as Record<string, string | number>;
    const values = (checkpoint.channel_values ?? {}) as Record<string, unknown>;
    const parentStored = (parentState?.[STORED] ?? {}) as Record<string, Json>;
    for (const channel of Object.keys(newVersions ?? {})) {
      if (!Object.hasOwn(values, channel)) continue;
      const value = values[channel];
      if (channel === 'messages' && Array.isArray(value)) {
        const list: Json[] = [];
        for (const m of value) list.push(await this.storeMessage(m));
        state.messages = list;
      } else {
        setOwn(state, channelKey(channel), (await storeValue(this.serde, value)) as unknown as Json);
      }
      setOwn(stored, channel, plainJson('a channel version', newVersions[channel]));
    }
    if (parentState) {
      // carried over: a channel not written since the parent keeps the parent's value at the same version
      for (const channel of Object.keys(versions)) {
        if (
          Object.hasOwn(stored, channel) ||
          !Object.hasOwn(parentStored, channel) ||
          parentStored[channel] !== versions[channel]
        )
          continue;
        if (
          channel === 'messages' &&
          Array.isArray(parentState.messages) &&
          !Object.hasOwn(parentState, channelKey(channel))
        )
          state.messages = parentState.messages;
        else if (Object.hasOwn(parentState, channelKey(channel)))
          setOwn(state, channelKey(channel), parentState[channelKey(channel)]);
        else continue;
        setOwn(stored, channel, parentStored[channel]);
      }
    }
    const { channel_values: _values, versions_seen, ...head } = checkpoint;
    state[STORED] = stored;
    state[HEAD] = plainJson('the checkpoint', head);
    state[SEEN] = plainJson('versions_seen', versions_seen ?? {});
    return state;
  }

  /**
   * A message's stored form, serialized once: the graph hands the same message
   * objects to every checkpoint, and the same (frozen) stored object lets the
   * codec see an unchanged prefix without comparing text. A message whose id
   * or content changed since is serialized again.
   */
  private async storeMessage(m: unknown): Promise<Json> {
    if (typeof m !== 'object' || m === null) return (await storeValue(this.serde, m)) as unknown as Json;
    const probe = m as { id?: unknown; content?: unknown };
    const hit = this.messageCache.get(m);
    if (hit && hit.id === probe.id && hit.content === probe.content) return hit.stored;
    const stored = deepFreeze((await storeValue(this.serde, m)) as unknown as Json);
    this.messageCache.set(m, { id: probe.id, content: probe.content, stored });
    return stored;
  }

  private async metadataOf(row: Row): Promise<CheckpointMetadata> {
    const out = row.nodeOutput as { metadata?: Json } | null;
    return (out?.metadata ? await loadValue(this.serde, out.metadata) : {}) as CheckpointMetadata;
  }

  /**
   * Pending writes of one checkpoint: its entries are slots 0, 1, … (point
   * lookups, as many as `putWrites` calls on it); per (task, index) the first
   * stored regular write and the last stored special write; in writesSortKey order.
   */
  private async writesFor(executionId: string, checkpointId: string): Promise<WriteRecord[]> {
    const newest = new Map<string, WriteRecord>();
    for (let slot = 0; ; slot++) {
      const hit = await this.store.getIdempotent(executionId, graphWriteKey(checkpointId, slot));
      if (!hit.hit) break;
      const b = hit.result as unknown as WriteBatch;
      for (const w of b.writes) {
        const r: WriteRecord = {
          checkpoint_id: b.checkpoint_id,
          task_id: b.task_id,
          task_path: b.task_path,
          gen: b.gen,
          ...w,
        };
        const k = JSON.stringify([r.task_id, r.idx]);
        // slots ascend: a regular write keeps the first value stored, a special one the last
        if (!newest.has(k) || r.idx < 0) newest.set(k, r);
      }
    }
    return [...newest.values()].sort(compareWrites);
  }

  private async tupleOf(row: Row): Promise<CheckpointTuple> {
    const ref = row.nodeInput as unknown as RowRef;
    const state = await this.store.readState(row);
    const head = state[HEAD] as Record<string, Json>;
    const versions = { ...((head.channel_versions ?? {}) as Record<string, string | number>) };
    const stored = (state[STORED] ?? {}) as Record<string, Json>;
    const channelValues: Record<string, unknown> = {};
    for (const channel of Object.keys(versions)) {
      if (!Object.hasOwn(stored, channel) || stored[channel] !== versions[channel]) continue;
      if (channel === 'messages' && Array.isArray(state.messages) && !Object.hasOwn(state, channelKey(channel))) {
        channelValues.messages = await Promise.all(state.messages.map((m) => loadValue(this.serde, m)));
      } else if (Object.hasOwn(state, channelKey(channel))) {
        setOwn(
          channelValues as Record<string, Json>,
          channel,
          (await loadValue(this.serde, state[channelKey(channel)])) as Json,
        );
      }
    }
    const checkpoint = {
      ...(JSON.parse(JSON.stringify(head)) as object),
      channel_values: channelValues,
      channel_versions: versions,
      versions_seen: JSON.parse(JSON.stringify(state[SEEN] ?? {})),
    } as GraphCheckpoint;
    const pendingWrites: CheckpointPendingWrite[] = await Promise.all(
      (await this.writesFor(row.executionId, ref.checkpoint_id)).map(
        async (w) =>
          [w.task_id, w.channel, await loadValue(this.serde, w.value as unknown as Json)] as CheckpointPendingWrite,
      ),
    );
    if (checkpoint.v < 4 && ref.parent_checkpoint_id) {
      // checkpoints before format 4 kept sends as writes of the parent: move them into the TASKS channel
      const sends = await Promise.all(
        (await this.writesFor(row.executionId, ref.parent_checkpoint_id))
          .filter((w) => w.channel === TASKS)
          .map((w) => loadValue(this.serde, w.value as unknown as Json)),
      );
      checkpoint.channel_values[TASKS] = sends;
      checkpoint.channel_versions[TASKS] =
        Object.keys(checkpoint.channel_versions).length > 0
          ? maxChannelVersion(...Object.values(checkpoint.channel_versions))
          : this.getNextVersion(undefined);
    }
    const tuple: CheckpointTuple = {
      config: {
        configurable: { thread_id: ref.thread_id, checkpoint_ns: ref.checkpoint_ns, checkpoint_id: ref.checkpoint_id },
      },
      checkpoint,
      metadata: await this.metadataOf(row),
      pendingWrites,
    };
    if (ref.parent_checkpoint_id) {
      tuple.parentConfig = {
        configurable: {
          thread_id: ref.thread_id,
          checkpoint_ns: ref.checkpoint_ns,
          checkpoint_id: ref.parent_checkpoint_id,
        },
      };
    }
    return tuple;
  }
}

/** True when a channel of `checkpoint` keeps its value from the parent (its version is not among `newVersions`). */
function carriesFromParent(checkpoint: GraphCheckpoint, newVersions: ChannelVersions): boolean {
  return Object.keys(checkpoint.channel_versions ?? {}).some((c) => !Object.hasOwn(newVersions ?? {}, c));
}

/**
 * The order LangGraph applies one superstep's writes in: (task path, task id,
 * index), strings by Unicode code point (UTF-8 byte order is code point
 * order), writes without a path first. Written here rather than imported so the
 * saver runs on every @langchain/langgraph-checkpoint its peer range allows.
 */
function compareWrites(a: WriteRecord, b: WriteRecord): number {
  return codePointOrder(a.task_path, b.task_path) || codePointOrder(a.task_id, b.task_id) || a.idx - b.idx;
}
