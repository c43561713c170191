/**
 * The `waymark` command line (client side; `waymark plane …` is plane/cli.ts).
 *
 * Each command is one entry of COMMANDS: its arguments, options and help. The
 * arguments are checked (every problem named, near misses suggested) before a
 * database is opened; `--help` works on every command. A refused command line
 * prints as every other error does (`waymark runs: USAGE: …`, args.ts's
 * errorText) and exits 2; an error a command throws is printed by
 * bin/waymark.mjs in the same shape and exits 1.
 * A command that talks to a plane takes its URL from --plane or
 * WAYMARK_PLANE_URL, and its key from --key or WAYMARK_API_KEY.
 */
import { existsSync, rmSync } from 'node:fs';
import { ErrorCode, WaymarkError } from '../../shared/errors.js';
import { LIMITS } from '../../shared/limits.js';
import { terminalSafe } from '../../support/terminal.js';
import { RunInProgress } from '../errors.js';
import { integerTextProblem, planeOptionProblem, readableNameProblem, refuse } from '../../support/validate.js';
import { cancelThroughPlane } from '../replica/cancel.js';
import { openStore, sqliteFileOf } from '../open-store.js';
import {
  errorText,
  packageVersion,
  parseCommand,
  USAGE_EXIT,
  usageOf,
  UsageError,
  type CommandSpec,
  type OptionSpec,
  type Parsed,
} from '../../support/cli-args.js';
import { suggest } from '../../support/validate.js';
import { inspectRun, listRuns, parseSince, type RunFilter } from './store-commands.js';
import { quarantineList, restoreCommand, syncNow, syncStatus } from './sync-commands.js';
import type { ExecutionState } from '../checkpointer.js';
import { checkUi, runUi, UI_OPTIONS } from './ui-command.js';

type Out = (line: string) => void;

const STATES: readonly ExecutionState[] = ['running', 'paused', 'completed', 'failed', 'cancelled'];
const db: Record<string, OptionSpec> = {
  db: { type: 'string', help: 'the store: a SQLite file or a postgres:// URL (required)' },
  schema: {
    type: 'string',
    help: 'Postgres schema of the store (default: waymark; a #schema or ?schema= in the URL names it too)',
  },
};
const plane: Record<string, OptionSpec> = {
  plane: {
    type: 'string',
    help: 'the plane URL, e.g. http://127.0.0.1:4600 (default: $WAYMARK_PLANE_URL; one is required)',
  },
  key: { type: 'string', help: 'an API key of the plane (default: $WAYMARK_API_KEY; one is required)' },
};
/** The plane options of a command that works without one (cancel: this store only). */
const planeOptional: Record<string, OptionSpec> = {
  plane: {
    type: 'string',
    help: 'the plane URL, e.g. http://127.0.0.1:4600 (default: $WAYMARK_PLANE_URL; without one, only this store)',
  },
  key: { type: 'string', help: 'an API key of the plane, with the cancel and read scopes (default: $WAYMARK_API_KEY)' },
};
const json: Record<string, OptionSpec> = { json: { type: 'boolean', help: 'print JSON (one document) for scripts' } };

interface Command extends CommandSpec {
  needsPlane?: boolean;
  /** The command names its store its own way (its `check` says what is missing), not by the required --db. */
  ownStore?: boolean;
  /** Extra checks of the parsed arguments; every problem is reported at once. */
  check?: (p: Parsed) => string[];
  run: (p: Parsed, out: Out, err: Out) => Promise<number>;
}

const COMMANDS: Command[] = [
  {
    name: 'runs',
    summary: 'List the runs in a store with their state, newest row and, for failed runs, why.',
    options: {
      ...db,
      state: { type: 'string', help: 'only runs in this state', choices: STATES },
      since: { type: 'string', help: 'only runs updated since: an ISO time or an age such as 30m, 2h, 7d' },
      limit: { type: 'string', help: 'at most this many runs, the first by execution id (default: all, paged)' },
      ...json,
    },
    check: (p) => [
      ...(typeof p.values.since === 'string' && parseSince(String(p.values.since)) === null
        ? [`option '--since' must be an ISO time or an age like 30m, 2h, 7d (got '${p.values.since}')`]
        : []),
      ...(typeof p.values.limit === 'string' ? [integerTextProblem("option '--limit'", p.values.limit, 1)] : []).filter(
        (x) => x !== null,
      ),
    ],
    run: (p, out) =>
      withStore(p, async (store) => {
        const filter: RunFilter = {
          state: p.values.state as ExecutionState | undefined,
          since: p.values.since !== undefined ? parseSince(String(p.values.since))! : undefined,
          limit: p.values.limit !== undefined ? Number(p.values.limit) : undefined,
        };
        await listRuns(store, out, { ...filter, json: p.values.json === true });
        return 0;
      }),
  },
  {
    name: 'inspect',
    args: ['EXECUTION_ID?'],
    summary:
      "A run's rows, how it ended (and why, if it failed), its pauses with the answers given, and its idempotency entries. Without an id: the run list.",
    options: { ...db, ...json },
    run: (p, out) =>
      withStore(p, async (store) => {
        if (!p.positionals[0]) {
          await listRuns(store, out, { json: p.values.json === true });
          return 0;
        }
        return (await inspectRun(store, p.positionals[0], out, { json: p.values.json === true })) ? 0 : 1;
      }),
  },
  {
    name: 'cancel',
    args: ['EXECUTION_ID'],
    summary:
      'Cancel a run: a cancelled run-end marker; its runner stops at its next step, its open pause is closed, resume refuses it. Given a plane (--plane or WAYMARK_PLANE_URL, with a key of the cancel and read scopes), the run is cancelled there, so the machine running it stops, whichever it is, and this store takes the marker; a run the plane does not hold is cancelled here. Without a plane, only this store.',
    options: {
      ...db,
      ...planeOptional,
      reason: { type: 'string', help: 'why (kept in the marker, shown by runs and the inspector)' },
      ...json,
    },
    run: (p, out) =>
      withStore(p, async (store) => {
        const id = p.positionals[0];
        const reason = p.values.reason as string | undefined;
        const url = planeUrl(p);
        // given a plane, the run is cancelled there, whichever machine runs it (this store may not even hold it)
        if (url) {
          const key = apiKey(p);
          if (!key)
            refuse(
              'cancel',
              ['--key: required with --plane (or WAYMARK_API_KEY; a key with the cancel and read scopes)'],
              'nothing was cancelled',
            );
          const r = await cancelThroughPlane(store, id, { url, apiKey: key, reason }).catch(async (e: unknown) => {
            // a run the plane does not hold (never synced) is this store's alone: cancelled here, as without a plane
            if ((e as { code?: string }).code === ErrorCode.EXECUTION_NOT_FOUND && (await store.latest(id)))
              return null;
            throw e;
          });
          if (r) {
            const here = {
              restored: "this store took the plane's marker",
              marked: 'this store went further than the plane and got a marker of its own',
              absent: 'this store holds no rows of it',
              unknown: `this store could not read the plane's copy (${r.localProblem}): restore it with a key of the read scope`,
            }[r.local];
            if (p.values.json === true) out(JSON.stringify({ ...r, plane: url }, null, 2));
            else if (r.alreadyCancelled)
              out(`${id} was already cancelled at the plane ${url} (marker ${r.checkpointId}); ${here}`);
            else
              out(
                `cancelled ${id} at the plane ${url} (marker seq ${r.seq}${r.closedPause ? ', closed its pause' : ''})` +
                  `${r.takenFrom ? `; writer '${r.takenFrom}' that ran it stops at its next step` : ''}; ${here}`,
              );
            return 0;
          }
          out(`the plane ${url} does not hold ${id}: cancelled in this store only`);
        }
        const r = await store.cancel(id, { reason });
        if (p.values.json === true) out(JSON.stringify(r, null, 2));
        else if (r.alreadyCancelled) out(`${id} was already cancelled (marker ${r.checkpoint.id}); nothing written`);
        else
          out(
            `cancelled ${id} (marker seq ${r.checkpoint.seq}${r.closedPause ? `, closed its pause at ${r.closedPause.nodeId}` : ''})`,
          );
        // a run a plane holds may be running on another machine: this store's marker reaches it only at the next sync
        if (!url && p.values.json !== true && (await store.heldByPlane(id))) {
          out(
            `note: a plane holds ${id}: a machine running it stops when this store syncs; to stop it now, cancel at the plane (--plane, --key)`,
          );
        }
        return 0;
      }),
  },
  {
    name: 'delete',
    args: ['EXECUTION_ID'],
    summary:
      "Delete a run's rows from this store for good (checkpoints, pause, idempotency entries, lease), with --yes. Its rows not yet sent to a plane are lost. The deletion is queued for a plane: at the next sync of this store the plane deletes its copy of the run too, every machine's rows of it; with --local only this store's copy goes (the plane keeps its copy: restore takes it back). A run whose lease is live (another process is running it) is refused unless --force.",
    options: {
      ...db,
      yes: { type: 'boolean', help: 'really delete (required)' },
      local: {
        type: 'boolean',
        help: "delete this store's copy only: the deletion is not sent, the plane keeps its copy (to take the plane's branch of a diverged run: delete --local, then restore)",
      },
      force: { type: 'boolean', help: 'delete even while another process holds the run' },
      ...json,
    },
    check: (p) =>
      p.values.yes === true
        ? []
        : ["give --yes: the run's rows are deleted from this store for good, and from a plane at the next sync"],
    run: (p, out) =>
      withStore(p, async (store) => {
        const id = p.positionals[0];
        if (!(await store.latest(id)) && (await store.listIdempotent(id)).length === 0) {
          throw new WaymarkError(
            ErrorCode.EXECUTION_NOT_FOUND,
            `execution '${id}' has no rows in this store; nothing was deleted`,
            { details: { executionId: id } },
          );
        }
        const lease = await store.getLease(id);
        // its runner would be refused at its next write (EXECUTION_GONE), after an effect it may have run
        if (lease?.live && p.values.force !== true)
          throw new RunInProgress(id, lease.holder ?? 'another runner', lease.expiresAt ?? '');
        const onPlane = await store.heldByPlane(id);
        const localOnly = p.values.local === true;
        const r = await store.deleteExecution(id, { localOnly });
        if (p.values.json === true) out(JSON.stringify({ ...r, onPlane, localOnly }, null, 2));
        else
          out(
            `deleted ${id}: ${r.checkpoints} row(s), ${r.pending} open pause(s), ${r.idempotency} idempotency entr${r.idempotency === 1 ? 'y' : 'ies'}` +
              (localOnly
                ? "; from this store only: a plane's copy stays (waymark restore takes it back)"
                : onPlane
                  ? '; a plane holds the run: its copy there is deleted at the next sync of this store'
                  : ''),
          );
        return 0;
      }),
  },
  {
    name: 'decide',
    args: ['EXECUTION_ID'],
    summary:
      "Record a decision for a run's open pause (approve or decline, with a comment): only recorded; your decision worker (serveDecisions) applies it. A connected replica sends it to the plane.",
    options: {
      ...db,
      approve: { type: 'boolean', help: 'approve the pause' },
      decline: { type: 'boolean', help: 'decline the pause' },
      comment: {
        type: 'string',
        help: 'kept in the decision (metadata.comment, what interrupt() returns to the tool)',
      },
      user: { type: 'string', help: 'who decided (default: your OS user name)' },
      pause: {
        type: 'string',
        help: 'the checkpoint id of the pause you decided on; refused if the open pause is another (default: the open pause)',
      },
      ...json,
    },
    check: (p) => [
      ...((p.values.approve === true) === (p.values.decline === true)
        ? ['give exactly one of --approve and --decline']
        : []),
      // the decision's `decidedBy`: checked here, with the other options, before the store is opened
      ...userProblems(p.values.user),
    ],
    run: (p, out) =>
      withStore(p, async (store) => {
        const { decide, osUser } = await import('../runtime/decide.js');
        const d = await decide(store, p.positionals[0], {
          approved: p.values.approve === true,
          ...(p.values.comment === undefined ? {} : { comment: String(p.values.comment) }),
          decidedBy: (p.values.user as string | undefined) || osUser(),
          ...(p.values.pause === undefined ? {} : { checkpointId: String(p.values.pause) }),
        });
        if (p.values.json === true) out(JSON.stringify(d, null, 2));
        else
          out(
            `${d.approved ? 'approved' : 'declined'} the pause ${d.checkpointId} of ${d.executionId} as '${d.decidedBy}' (decision ${d.decisionId}); a decision worker applies it`,
          );
        return 0;
      }),
  },
  {
    name: 'sync status',
    summary: "The store's outbox: backlog, quarantine, last ack, last success and last error (with local times).",
    options: { ...db, ...json },
    run: (p, out) =>
      withStore(p, async (store) => {
        await syncStatus(store, out, { json: p.values.json === true });
        return 0;
      }),
  },
  {
    name: 'sync now',
    summary: 'Drain the backlog to the plane now, with progress; exits 1 if rows are left.',
    needsPlane: true,
    options: { ...db, ...plane, timeout: { type: 'string', help: 'give up after this many seconds (default: 60)' } },
    check: (p) =>
      typeof p.values.timeout === 'string' && !(Number(p.values.timeout) > 0)
        ? [`option '--timeout' must be a positive number of seconds (got '${p.values.timeout}')`]
        : [],
    run: (p, out) =>
      withStore(p, async (store) =>
        (await syncNow(
          store,
          { url: planeUrl(p)!, apiKey: apiKey(p)!, timeoutMs: Number(p.values.timeout ?? 60) * 1000 },
          out,
        ))
          ? 0
          : 1,
      ),
  },
  {
    name: 'restore',
    args: ['EXECUTION_ID'],
    summary: 'Pull a run from the plane into this store (created if missing), with progress.',
    needsPlane: true,
    options: { ...db, ...plane },
    run: async (p, out) => {
      // a SQLite file this restore creates is removed again when it fails (the plane down, the key refused): no
      // empty store is left where the user will look for the run
      const file = sqliteFileOf(String(p.values.db));
      const made = file !== null && !existsSync(file);
      const store = await openOrCreate(String(p.values.db), p.values.schema as string | undefined);
      let restored = false;
      try {
        await restoreCommand(store, p.positionals[0], { url: planeUrl(p)!, apiKey: apiKey(p)! }, out);
        restored = true;
        return 0;
      } finally {
        await store.close();
        if (made && !restored) for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
      }
    },
  },
  {
    name: 'quarantine',
    summary: 'Rows the plane refused, with the reasons.',
    options: { ...db, ...json },
    run: (p, out) =>
      withStore(p, async (store) => {
        await quarantineList(store, out, { json: p.values.json === true });
        return 0;
      }),
  },
  {
    name: 'ui',
    summary:
      "The inspector over a local store, in a browser: run list, a run's timeline, pause, state diff and idempotency entries, pending approvals (approve/decline a pause: your decision worker applies it), the quarantine and the outbox's sync status. No plane needed, nothing copied; on 127.0.0.1 until Ctrl-C.",
    ownStore: true,
    options: UI_OPTIONS,
    check: checkUi,
    run: runUi,
  },
];

/** Listed in the top-level help; run by plane/cli.ts (which loads the plane only when asked). */
const PLANE_COMMANDS: [string, string][] = [
  ['plane', 'start the plane (embedded PGlite, or --database-url for Postgres)'],
  ['plane keys create|list|revoke', 'manage API keys (through the running plane)'],
  ['plane projects create|list', 'manage projects'],
  ['plane prune', 'delete finished runs older than an age (retention; through the running plane)'],
];

function topLevelUsage(): string {
  const rows: [string, string][] = [
    ...COMMANDS.map((c): [string, string] => [
      `${c.name}${(c.args ?? []).map((a) => (a.endsWith('?') ? ` [${a.slice(0, -1)}]` : ` ${a}`)).join('')}`,
      c.summary.split('. ')[0].replace(/\.$/, ''),
    ]),
    ...PLANE_COMMANDS,
  ];
  const width = Math.max(...rows.map(([n]) => n.length));
  return [
    `waymark ${packageVersion()}: durable, portable agent runs`,
    '',
    'usage: waymark COMMAND [options]',
    '',
    'commands:',
    ...rows.map(([n, s]) => `  ${n.padEnd(width)}  ${s}`),
    '',
    "'waymark COMMAND --help' shows a command's options; a plane's URL and key may come from WAYMARK_PLANE_URL and WAYMARK_API_KEY.",
    "'waymark --version' prints the version.",
  ].join('\n');
}

function apiKey(p: Parsed): string | undefined {
  return (p.values.key as string | undefined) ?? process.env.WAYMARK_API_KEY;
}

/** --plane, else WAYMARK_PLANE_URL (the variable the README's programs read too); empty counts as unset. */
function planeUrl(p: Parsed): string | undefined {
  return (p.values.plane as string | undefined) ?? (process.env.WAYMARK_PLANE_URL || undefined);
}

/** The plane URL's problem, said for the option (or variable) that gave it, before any store is opened or created. */
function planeProblems(p: Parsed): string[] {
  const url = planeUrl(p);
  if (url === undefined) return [];
  const problem = planeOptionProblem(url, p.values.plane !== undefined ? "option '--plane'" : 'WAYMARK_PLANE_URL');
  return problem ? [problem] : [];
}

async function withStore(
  p: Parsed,
  body: (store: Awaited<ReturnType<typeof openStore>>) => Promise<number>,
): Promise<number> {
  const store = await openStore(String(p.values.db), {
    schema: p.values.schema as string | undefined,
    max: 2,
    mustExist: true,
  });
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

/** Restore may target a store that does not exist yet (a machine that never ran the run). */
function openOrCreate(db: string, schema?: string) {
  return openStore(db, { schema, max: 2 });
}

/** Which command `argv` names, and how many words its name took. */
function findCommand(argv: string[]): { command: Command; rest: string[] } | { problem: string; unknown: boolean } {
  const [first, second] = argv;
  const two = COMMANDS.find((c) => c.name === `${first} ${second}`);
  if (two) return { command: two, rest: argv.slice(2) };
  const one = COMMANDS.find((c) => c.name === first);
  if (one) return { command: one, rest: argv.slice(1) };
  const groups = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  if (groups.length) {
    const subs = groups.map((c) => c.name.split(' ')[1]);
    if (second === undefined || second.startsWith('-'))
      return { problem: `'${first}' needs a subcommand: ${subs.join(' or ')}`, unknown: false };
    const near = suggest(second, subs);
    return {
      problem: `unknown subcommand '${first} ${second}'${near ? ` (did you mean '${first} ${near}'?)` : ''}; known: ${subs.join(', ')}`,
      unknown: true,
    };
  }
  const names = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0])), 'plane'];
  const near = suggest(first, names);
  return { problem: `unknown command '${first}'${near ? ` (did you mean '${near}'?)` : ''}`, unknown: true };
}

/** What keeps `--user` from being a decision's `decidedBy` (Decision in shared/rows.ts): blank, too long, a control character. */
function userProblems(user: unknown): string[] {
  const problem = user === undefined ? null : readableNameProblem("option '--user'", user, LIMITS.decidedByLength);
  return problem ? [problem] : [];
}

export async function main(argv: string[], print: Out = console.log, printErr: Out = console.error): Promise<number> {
  // ids, names and reasons come from other people: nothing in them may act on the terminal (terminal.ts)
  const out: Out = (line) => print(terminalSafe(line));
  const err: Out = (line) => printErr(terminalSafe(line));
  const [first] = argv;
  if (first === undefined) {
    err(errorText(new UsageError(['no command given'], topLevelUsage())));
    return USAGE_EXIT;
  }
  if (first === '--help' || first === '-h' || first === 'help') {
    out(topLevelUsage());
    return 0;
  }
  if (first === '--version' || first === '-V' || first === 'version') {
    out(packageVersion());
    return 0;
  }
  const found = findCommand(argv);
  if ('problem' in found) {
    // help for a command group ('sync --help') is the command list; an unknown command is an error, --help or not
    if (!found.unknown && (argv.includes('--help') || argv.includes('-h'))) {
      out(topLevelUsage());
      return 0;
    }
    err(errorText(new UsageError([found.problem], "'waymark --help' lists the commands.")));
    return USAGE_EXIT;
  }
  const { command, rest } = found;
  const parsed = parseCommand(command, rest);
  if (parsed === null) {
    out(usageOf(command));
    return 0;
  }
  const problems = [
    ...parsed.problems,
    ...(!command.ownStore && parsed.values.db === undefined ? ['option --db is required'] : []),
    ...(command.needsPlane && !planeUrl(parsed) ? ['a plane is required: --plane or WAYMARK_PLANE_URL'] : []),
    // a command that never asks a plane does not read WAYMARK_PLANE_URL: a bad one is not its problem
    ...(command.needsPlane || command.options?.plane ? planeProblems(parsed) : []),
    ...(command.needsPlane && !apiKey(parsed) ? ['a key is required: --key or WAYMARK_API_KEY'] : []),
    ...(command.check?.(parsed) ?? []),
  ];
  if (problems.length) {
    err(errorText(new UsageError(problems, usageOf(command), command.name)));
    return USAGE_EXIT;
  }
  return command.run(parsed, out, err);
}
