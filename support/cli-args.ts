/**
 * Argument checking shared by every `waymark` command: one table of commands,
 * `--help` on each, and every problem in the arguments named at once (with a
 * suggestion for a near miss) before anything opens a database.
 *
 * node:util's parseArgs does the tokenizing; it stops at the first unknown
 * option in strict mode, so this reads its tokens non-strictly and collects the
 * problems itself.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { ErrorCode } from '../shared/errors.js';
import { oneOfProblem, suggest } from './validate.js';

export type OptionSpec = { type: 'string' | 'boolean'; short?: string; help: string; choices?: readonly string[] };

export interface CommandSpec {
  /** e.g. 'sync now' */
  name: string;
  /** the positional arguments, in order; a trailing '?' marks one optional */
  args?: string[];
  summary: string;
  options: Record<string, OptionSpec>;
}

export interface Parsed {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** The exit status of a command line the CLI cannot parse (every other refusal exits 1). */
export const USAGE_EXIT = 2;

/**
 * A command line the CLI cannot parse: every problem at once, and what to
 * read next (the command's usage, or where the commands are listed). Printed
 * by `errorText`, the command exits USAGE_EXIT.
 */
export class UsageError extends Error {
  readonly code = ErrorCode.USAGE;
  constructor(
    readonly problems: string[],
    readonly usage: string,
    /** The command it is of ('plane keys create'); none when the command itself is unknown. */
    readonly command?: string,
  ) {
    super(
      problems.length === 1
        ? problems[0]
        : `${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  }
}

/**
 * How the CLI prints an error, every refusal in one shape:
 * `waymark[ COMMAND]: CODE: message`. The stable code comes first after the
 * command, so a script matches it without parsing the sentence (bin/waymark.mjs
 * prints an error thrown out of a command the same way); a usage error is
 * followed by its usage.
 */
export function errorText(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  const where = e instanceof UsageError && e.command ? `waymark ${e.command}` : 'waymark';
  const text = `${where}: ${typeof code === 'string' && /^[A-Z][A-Z_]+$/.test(code) ? `${code}: ` : ''}${message}`;
  return e instanceof UsageError ? `${text}\n\n${e.usage}` : text;
}

const HELP: OptionSpec = { type: 'boolean', short: 'h', help: 'show this help' };

export function usageOf(spec: CommandSpec, prefix = 'waymark'): string {
  const args = (spec.args ?? []).map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : a)).join(' ');
  const lines = [`usage: ${prefix} ${spec.name}${args ? ` ${args}` : ''} [options]`, '', spec.summary, '', 'options:'];
  const opts = { ...spec.options, help: HELP };
  const width = Math.max(...Object.entries(opts).map(([k, o]) => optionLabel(k, o).length));
  for (const [k, o] of Object.entries(opts)) lines.push(`  ${optionLabel(k, o).padEnd(width)}  ${o.help}`);
  return lines.join('\n');
}

function optionLabel(name: string, o: OptionSpec): string {
  const value = o.type === 'string' ? (o.choices ? ` ${o.choices.join('|')}` : ` ${name.toUpperCase()}`) : '';
  return `${o.short ? `-${o.short}, ` : ''}--${name}${value}`;
}

/**
 * Parse `argv` (what follows the command name) against `spec`. Returns null
 * when `--help` was asked for; otherwise the values and every problem found.
 */
export function parseCommand(spec: CommandSpec, argv: string[]): (Parsed & { problems: string[] }) | null {
  const options: Record<string, OptionSpec> = { ...spec.options, help: HELP };
  const { values, tokens } = parseArgs({
    args: argv,
    options: Object.fromEntries(
      Object.entries(options).map(([k, o]) => [k, { type: o.type, ...(o.short ? { short: o.short } : {}) }]),
    ),
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  if (values.help === true) return null;
  const problems: string[] = [];
  const known = Object.keys(options);
  // the value after an unknown option ('--dbb x') is that option's, not a stray argument
  const swallowed = new Set<number>();
  for (const [i, t] of tokens.entries()) {
    if (t.kind !== 'option') continue;
    const option = options[t.name];
    if (!option) {
      const near = suggest(t.name, known);
      problems.push(`unknown option '${t.rawName}'${near ? ` (did you mean '--${near}'?)` : ''}`);
      const next = tokens[i + 1];
      if (t.value === undefined && next?.kind === 'positional') swallowed.add(next.index);
    } else if (option.type === 'string' && (t.value === undefined || t.value === '')) {
      problems.push(`option '--${t.name}' needs a value`);
    } else if (option.type === 'boolean' && t.value !== undefined) {
      problems.push(`option '--${t.name}' takes no value`);
    } else if (option.choices && typeof t.value === 'string') {
      const problem = oneOfProblem(`option '--${t.name}'`, t.value, option.choices);
      if (problem) problems.push(problem);
    }
  }
  const given = tokens
    .filter((t) => t.kind === 'positional' && !swallowed.has(t.index))
    .map((t) => (t as { value: string }).value);
  const args = spec.args ?? [];
  const required = args.filter((a) => !a.endsWith('?')).length;
  for (const a of args.slice(given.length, required)) problems.push(`missing argument ${a}`);
  for (const p of given.slice(args.length)) problems.push(`unexpected argument '${p}'`);
  return { values: values as Parsed['values'], positionals: given, problems };
}

/** waymark's own version, from the package.json above this file (source or dist). */
export function packageVersion(): string {
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'waymark' && pkg.version) return pkg.version;
    } catch {
      // not at this level
    }
  }
  return 'unknown';
}
