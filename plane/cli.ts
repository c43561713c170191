/**
 * `waymark plane …`
 *
 *   waymark plane [--database-url URL] [--data-dir DIR] [--host H] [--port N] [--metrics-port N]
 *   waymark plane projects create NAME | list
 *   waymark plane keys create --project NAME --scopes ingest,read[,admin] [--name N]
 *   waymark plane keys list
 *   waymark plane keys revoke KEY_ID
 *     (projects and keys: [--plane URL] [--key ADMIN_KEY]; see admin-cli.ts for where they go)
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { printable, terminalSafe } from '../support/terminal.js';
import { isInMemory } from './db/open.js';
import { SCOPES, type Scope } from './auth.js';
import { keyRequestProblems } from './admin.js';
import { configProblems, databaseUrlProblem, loadConfig, type PlaneConfig } from './config.js';
import { ErrorCode, hasCode, WaymarkError } from '../shared/errors.js';
import { MIN_RETENTION_SECONDS, parseAge } from './retention.js';
import { onStopRequest } from '../support/launcher.js';
import {
  errorText,
  parseCommand,
  USAGE_EXIT,
  usageOf,
  UsageError,
  type CommandSpec,
  type OptionSpec,
  type Parsed,
} from '../support/cli-args.js';
import { suggest } from '../support/validate.js';
import { planeOptionProblem, portTextProblem } from '../support/validate.js';
import { readPricesFile } from '../support/prices.js';

const database: Record<string, OptionSpec> = {
  'data-dir': {
    type: 'string',
    help: "the plane's PGlite data directory (default: $WAYMARK_PLANE_DIR or .waymark/plane)",
  },
  'database-url': { type: 'string', help: 'a Postgres URL instead of PGlite (default: $WAYMARK_DATABASE_URL)' },
};
const admin: Record<string, OptionSpec> = {
  ...database,
  plane: {
    type: 'string',
    help: 'the running plane to ask, e.g. http://127.0.0.1:4600 (default: the plane holding --data-dir)',
  },
  key: { type: 'string', help: "an admin key of that plane (default: the data dir's admin-key file)" },
};

/** Every `waymark plane …` command; the first is the plane itself. */
const COMMANDS: CommandSpec[] = [
  {
    name: 'plane',
    summary:
      'Start the plane (embedded PGlite in --data-dir, or Postgres with --database-url) and serve until SIGINT/SIGTERM.',
    options: {
      ...database,
      host: { type: 'string', help: 'the address to listen on (default: 127.0.0.1)' },
      port: { type: 'string', help: 'the port to listen on (default: $WAYMARK_PORT or 4600; 0 picks a free one)' },
      'metrics-port': { type: 'string', help: 'serve operator metrics on this port (not on the main listener)' },
      dev: { type: 'boolean', help: 'development mode' },
      prices: {
        type: 'string',
        help: "a JSON file of model prices per million tokens: the inspector shows each run's cost",
      },
    },
  },
  { name: 'plane projects create', args: ['NAME'], summary: 'Create a project.', options: admin },
  { name: 'plane projects list', summary: 'List the projects.', options: admin },
  {
    name: 'plane keys create',
    summary: 'Create an API key for a project; the key is shown once.',
    options: {
      project: { type: 'string', help: 'the project the key is for (required)' },
      scopes: { type: 'string', help: `comma-separated scopes, of ${SCOPES.join(', ')} (required)` },
      name: { type: 'string', help: 'a name to tell the key by' },
      ...admin,
    },
  },
  { name: 'plane keys list', summary: 'List the API keys (never the keys themselves).', options: admin },
  { name: 'plane keys revoke', args: ['KEY_ID'], summary: 'Revoke an API key.', options: admin },
  {
    name: 'plane prune',
    summary:
      "Retention: delete the finished runs (completed, failed, cancelled) not updated for --older-than, with all their rows, and list them. Never a paused or running run, nor one with an open pause, a held claim or a held owner. Without --project: the admin key's project (the bootstrap key: every project).",
    options: {
      'older-than': { type: 'string', help: 'an age: 30d, 12h, 90m (at least 1h; required)' },
      project: { type: 'string', help: 'only this project' },
      'dry-run': { type: 'boolean', help: 'list what would be deleted, delete nothing' },
      ...admin,
    },
  },
];

const USAGE = `usage:
  waymark plane [--data-dir DIR | --database-url URL] [--host H] [--port N] [--metrics-port N] [--prices FILE]
  waymark plane projects create NAME
  waymark plane projects list
  waymark plane keys create --project NAME --scopes SCOPE[,SCOPE…] [--name N]   (SCOPE: ${SCOPES.join(', ')})
  waymark plane keys list
  waymark plane keys revoke KEY_ID
  waymark plane prune --older-than 30d [--project NAME] [--dry-run]
  (projects and keys go through the running plane: --plane URL --key ADMIN_KEY, by default the
   plane holding --data-dir and its admin-key file; the database directly only when no plane holds it)
'waymark plane COMMAND --help' shows a command's options.`;

const isHelp = (a: string) => a === '--help' || a === '-h';

/** Which plane command `argv` names (the words after 'plane'), or what is wrong with it. */
function findPlaneCommand(
  argv: string[],
): { command: CommandSpec; rest: string[] } | { problem: string } | { help: string } {
  const [first, second] = argv;
  if (first === undefined || first.startsWith('-')) return { command: COMMANDS[0], rest: argv };
  if (first === 'help') return { help: USAGE };
  const single = COMMANDS.find((c) => c.name === `plane ${first}`);
  if (single) return { command: single, rest: argv.slice(1) };
  const groups = [...new Set(COMMANDS.slice(1).map((c) => c.name.split(' ')[1]))];
  if (!groups.includes(first)) {
    const near = suggest(first, groups);
    return {
      problem: `unknown command 'plane ${first}'${near ? ` (did you mean 'plane ${near}'?)` : ''}; known: ${groups.join(', ')}`,
    };
  }
  const subs = COMMANDS.filter((c) => c.name.startsWith(`plane ${first} `)).map((c) => c.name.split(' ')[2]);
  if (second === undefined || second.startsWith('-')) {
    if (argv.slice(1).some(isHelp))
      return {
        help: subs
          .map((s) => usageOf(COMMANDS.find((c) => c.name === `plane ${first} ${s}`)!).split('\n')[0])
          .join('\n'),
      };
    return { problem: `'plane ${first}' needs a subcommand: ${subs.join(' or ')}` };
  }
  const command = COMMANDS.find((c) => c.name === `plane ${first} ${second}`);
  if (command) return { command, rest: argv.slice(2) };
  const near = suggest(second, subs);
  return {
    problem: `unknown subcommand 'plane ${first} ${second}'${near ? ` (did you mean 'plane ${first} ${near}'?)` : ''}; known: ${subs.join(', ')}`,
  };
}

/**
 * `waymark plane …`. Every refusal is printed by errorText (support/cli-args.ts),
 * as the client commands print theirs: a command line it cannot parse is
 * `waymark[ plane …]: USAGE: …` and exits 2, naming the environment's bad
 * settings with it; any other error (a bad setting in the environment on an
 * otherwise good command line, the plane's answer, a data dir another process holds)
 * is `waymark: CODE: …` and exits 1.
 */
export async function planeMain(
  argv: string[],
  print: (l: string) => void = console.log,
  printErr: (l: string) => void = print === console.log ? console.error : print,
): Promise<number> {
  // ids and names come from other people: nothing in them may act on the terminal (support/terminal.ts)
  const out = (line: string) => print(terminalSafe(line));
  const err = (line: string) => printErr(terminalSafe(line));
  try {
    return await planeCommand(argv, out);
  } catch (e) {
    err(errorText(e));
    return e instanceof UsageError ? USAGE_EXIT : 1;
  }
}

async function planeCommand(argv: string[], out: (l: string) => void): Promise<number> {
  const found = findPlaneCommand(argv);
  if ('help' in found) {
    out(found.help);
    return 0;
  }
  if ('problem' in found) throw new UsageError([found.problem], "'waymark plane --help' lists the plane commands.");
  const { command, rest } = found;
  const parsed = parseCommand(command, rest);
  if (parsed === null) {
    out(command === COMMANDS[0] ? `${usageOf(command)}\n\n${USAGE}` : usageOf(command));
    return 0;
  }
  const values = parsed.values as Record<string, string | undefined> & { dev?: boolean };
  // the settings the flags give (an empty value is refused by the parser): their variables are not read
  const overrides: Partial<PlaneConfig> = {
    ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    ...(values.host ? { host: values.host } : {}),
    ...(values.port ? { port: Number(values.port) } : {}),
    ...(values['metrics-port'] ? { metricsPort: Number(values['metrics-port']) } : {}),
    ...(values.dev ? { dev: true } : {}),
  };
  const prices = values.prices ? readPricesFile(values.prices) : null;
  if (prices && 'prices' in prices) overrides.prices = prices.prices;
  const problems = [
    ...parsed.problems,
    ...check(command, parsed),
    ...(prices && 'problems' in prices ? prices.problems : []),
  ];
  // with the environment's own problems, so one run names them all
  if (problems.length)
    throw new UsageError(
      [...problems, ...configProblems(process.env, Object.keys(overrides))],
      usageOf(command),
      command.name,
    );
  const config = loadConfig(process.env, overrides);
  if (command !== COMMANDS[0]) return adminCommand(config, command.name.split(' ').slice(1), parsed, out);
  // loaded only to act: usage and bad arguments answer without the server or PGlite
  const { startPlane, adminKeyPath } = await import('./server.js');
  // DATA_DIR_LOCKED, PORT_IN_USE, INVALID_OPTIONS (another database's admin-key file): said by planeMain, not thrown on
  const plane = await startPlane(config).catch((e: unknown) => {
    // npm takes a flag after `npm start` as its own (the plane never sees it): the hint is the npm line that works
    if (hasCode(e, ErrorCode.PORT_IN_USE) && process.env.npm_lifecycle_event === 'start') {
      throw new WaymarkError(
        ErrorCode.PORT_IN_USE,
        `${(e as Error).message} (under npm start: 'npm start -- --port N' or 'WAYMARK_PORT=N npm start')`,
        {
          cause: e,
          details: (e as WaymarkError).details,
        },
      );
    }
    throw e;
  });
  // before the first line: a supervisor may stop the plane as soon as it says where it listens (said, so an operator's
  // log shows the stop was asked for and finished; the data dir's lock is gone once it says stopped)
  onStopRequest(() => {
    out('stopping: finishing the requests in hand, then closing the database');
    void plane.close().then(() => {
      out('stopped');
      process.exit(0);
    });
  });
  const where =
    plane.database.kind === 'pglite'
      ? ` at ${config.dataDir}`
      : isInMemory(config.dataDir)
        ? ''
        : `, data dir ${resolve(config.dataDir)}`;
  out(`waymark plane listening on ${plane.url} (database: ${plane.database.kind}${where})`);
  out(`inspector: ${plane.url}/   openapi: ${plane.url}/openapi.json`);
  if (plane.metricsUrl) out(`operator metrics: ${plane.metricsUrl}/metrics (not served on the main listener)`);
  if (plane.adminKeyFile)
    out(`first start: created project 'local' and an admin key, written to ${plane.adminKeyFile} (mode 0600)`);
  else if (plane.adminKey)
    out(
      `in-memory database: created project 'local' and an admin key, shown this once and written nowhere: ${plane.adminKey}`,
    );
  else if (isInMemory(config.dataDir))
    out(
      'admin key: this plane has no data dir (memory://): use a key of the plane that set its database up (its data dir has the admin-key file)',
    );
  else if (existsSync(adminKeyPath(config.dataDir))) out(`admin key: ${adminKeyPath(config.dataDir)}`);
  else if (plane.database.kind === 'pglite') {
    // a PGlite database lives in its data dir: no plane with another data dir set it up
    out(
      `admin key: none at ${adminKeyPath(config.dataDir)}: this database was set up without one ('waymark plane projects' or 'keys' commands ran on it before the plane's first start, or the file was removed); ` +
        `stop the plane and make one with 'waymark plane keys create --project NAME --scopes admin,operator --data-dir ${config.dataDir}' (NAME: one of 'waymark plane projects list')`,
    );
  } else {
    out(
      `admin key: none at ${adminKeyPath(config.dataDir)}: the database was set up by a plane with another data dir (its admin-key file has the key), ` +
        `or make one there with 'waymark plane keys create --project local --scopes admin,operator' (without a plane on this data dir, or --plane URL --key KEY)`,
    );
  }
  return new Promise<number>(() => {});
}

/** The problems beyond the option table's: values that must parse, options a command requires. */
function check(command: CommandSpec, p: Parsed): string[] {
  const problems: string[] = [];
  if (typeof p.values['database-url'] === 'string') {
    const problem = databaseUrlProblem(p.values['database-url']);
    if (problem) problems.push(problem);
  }
  if (typeof p.values.plane === 'string') {
    const problem = planeOptionProblem(p.values.plane, "option '--plane'");
    if (problem) problems.push(problem);
  }
  for (const flag of ['port', 'metrics-port']) {
    const v = p.values[flag];
    const problem = typeof v === 'string' ? portTextProblem(`option '--${flag}'`, v) : null;
    if (problem) problems.push(problem);
  }
  if (command.name === 'plane prune') {
    const age = p.values['older-than'];
    if (age === undefined) problems.push('option --older-than is required');
    else if (typeof age === 'string' && parseAge(age) === null)
      problems.push(`option '--older-than' must be an age like 30d, 12h or 90m (got '${age}')`);
    else if (typeof age === 'string' && parseAge(age)! < MIN_RETENTION_SECONDS)
      problems.push(
        `option '--older-than' must be at least 1h: a run updated more recently may still be receiving rows (got '${age}')`,
      );
  }
  if (command.name === 'plane keys create') {
    if (p.values.project === undefined) problems.push('option --project is required');
    if (p.values.scopes === undefined) problems.push('option --scopes is required');
    // what only the plane knows (the project) is its answer; the rest is refused here, nothing asked or opened
    const given = {
      scopes: typeof p.values.scopes === 'string' ? scopesOf(p) : undefined,
      name: typeof p.values.name === 'string' ? p.values.name : undefined,
    };
    for (const [field, problem] of keyRequestProblems(given)) problems.push(`option '--${field}': ${problem}`);
  }
  return problems;
}

/** --scopes as a list ('ingest, read,' is ingest and read). */
function scopesOf(p: Parsed): Scope[] {
  return String(p.values.scopes ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as Scope[];
}

async function adminCommand(
  config: Readonly<PlaneConfig>,
  [what, verb]: string[],
  p: Parsed,
  out: (l: string) => void,
): Promise<number> {
  const values = p.values as Record<string, string | undefined>;
  const arg = p.positionals[0];
  const { adminTarget, printKeys } = await import('./admin-cli.js');
  const target = await adminTarget(config, {
    plane: values.plane,
    key: values.key,
    command: `waymark plane ${[what, verb].filter(Boolean).join(' ')}`,
    // only a named data dir may be made where there is none (see adminTarget)
    dataDirGiven: Boolean(values['data-dir'] || process.env.WAYMARK_PLANE_DIR),
  });
  try {
    if (what === 'prune') {
      const dryRun = values['dry-run'] !== undefined;
      const r = await target.prune({
        olderThanSeconds: parseAge(values['older-than']!)!,
        project: values.project,
        dryRun,
      });
      for (const i of r.items)
        out(
          `${dryRun ? 'would prune' : 'pruned'}  ${printable(i.project).padEnd(16)} ${printable(i.executionId)}  ${i.status.padEnd(9)} ${String(i.rowCount).padStart(6)} rows  updated ${i.updatedAt}`,
        );
      out(
        `${dryRun ? 'dry run: would prune' : 'pruned'} ${r.items.length} finished run(s) last updated before ${r.cutoff} (${target.via})`,
      );
    } else if (what === 'projects' && verb === 'create') {
      const pr = await target.createProject(arg);
      out(`project ${pr.name} created (${pr.id}) through ${target.via}`);
    } else if (what === 'projects') {
      for (const pr of await target.projects()) out(`${pr.id}  ${printable(pr.name)}`);
    } else if (verb === 'create') {
      const k = await target.createKey({ project: values.project!, name: values.name, scopes: scopesOf(p) });
      // where it was made: a stopped plane's data dir is not the running plane's (its key would be refused there)
      out(
        `key ${k.id} for project ${k.project} (${k.scopes.join(',')}), made through ${target.via}; shown once, store it now:`,
      );
      out(k.key);
    } else if (verb === 'list') {
      printKeys(await target.keys(), out);
    } else {
      await target.revoke(arg);
      out(`revoked ${arg} through ${target.via}`);
    }
    return 0;
  } finally {
    await target.close();
  }
}
