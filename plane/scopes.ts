/**
 * What a key may do, and what `createKey` takes: written once, with no
 * drizzle type, for the plane's modules and its public facade (index.ts).
 */

/**
 * The scopes a key may hold: `ingest`, `read`, `approve` (decide open pauses), `cancel`,
 * `operate` (ask the application to retry, recover or fork a run: run requests), `admin` (everything in the key's
 * own project, its keys included) and `operator` (projects and keys of every project).
 */
export const SCOPES = ['ingest', 'read', 'approve', 'cancel', 'operate', 'admin', 'operator'] as const;
/** One scope of `SCOPES`. */
export type Scope = (typeof SCOPES)[number];

/** Who a request's key stands for: its project, its id and its scopes. */
export interface Principal {
  projectId: string;
  keyId: string;
  scopes: Scope[];
}

/** What `createKey` makes: the key's project, name and scopes. */
export interface CreateKeyOptions {
  /** The project's name. */
  project: string;
  /** A readable name for the key, shown in key listings (nothing a terminal acts on). */
  name?: string;
  /** What the key may do (`SCOPES`); at least one. */
  scopes: Scope[];
  /** Make the project when it does not exist (default: false, UNKNOWN_PROJECT). */
  createProject?: boolean;
  /** A project id: the key's project must be this one, as for a project admin making keys (another is UNKNOWN_PROJECT). */
  visibleTo?: string;
}

/** The problems of a key's scopes: names that are no scope, or none at all. */
export function scopeProblems(scopes: readonly string[]): string[] {
  const unknown = scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
  const problems: string[] = [];
  if (unknown.length) problems.push(`unknown scope(s): ${unknown.join(', ')} (known: ${SCOPES.join(', ')})`);
  if (!scopes.length) problems.push('a key needs at least one scope');
  return problems;
}
