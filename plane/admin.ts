/**
 * Admin operations: projects and keys, shared by the HTTP endpoints
 * (routes/admin.ts), the inspector's keys page and the CLI, through the running
 * plane (so a PGlite data dir is only ever opened by the plane that serves it).
 *
 * - A key with `admin` manages its own project: it lists that project, lists
 *   its keys, creates keys in it and revokes them. Another project does not
 *   exist for it (UNKNOWN_PROJECT / KEY_NOT_FOUND, listing only its own).
 * - A key with `operator` (the bootstrap key) manages every project, and is
 *   the only one that may create projects or grant `operator`.
 */
import { z } from 'zod';
import { ErrorCode, WaymarkError } from '../shared/errors.js';
import {
  createKey,
  createProject,
  keyNameProblems,
  keyState,
  listKeys,
  listProjects,
  projectId,
  revokeKey,
  UnknownProject,
  type Principal,
  type Scope,
} from './auth.js';
import { printable } from '../support/terminal.js';
import { scopeProblems } from './scopes.js';
import type { PlaneDb } from './db/open.js';
import { projects } from './db/schema.js';
import { eq } from 'drizzle-orm';

export const ProjectView = z.object({ id: z.string(), name: z.string(), createdAt: z.string() });
export const KeyView = z.object({
  id: z.string(),
  name: z.string(),
  project: z.string(),
  scopes: z.array(z.string()),
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
});
export const CreatedKey = KeyView.extend({ key: z.string().describe('the secret, shown this once') });

const isOperator = (p: Principal) => p.scopes.includes('operator');

/**
 * Every problem of a key request that needs no database (the scopes, the
 * name; a field not given is not checked), each with the field it is of.
 * The CLI names them as its options before it asks a plane; the plane as
 * fields of its answer.
 */
export function keyRequestProblems(o: {
  scopes?: readonly string[];
  name?: string;
}): [field: 'scopes' | 'name', problem: string][] {
  const problems: [field: 'scopes' | 'name', problem: string][] = [];
  for (const p of o.scopes ? scopeProblems(o.scopes) : []) problems.push(['scopes', p]);
  for (const p of o.name === undefined ? [] : keyNameProblems(o.name)) problems.push(['name', p]);
  return problems;
}

export function keyView(k: Awaited<ReturnType<typeof listKeys>>[number]): z.infer<typeof KeyView> {
  return {
    id: k.id,
    name: k.name,
    project: k.project,
    scopes: k.scopes,
    createdAt: k.createdAt.toISOString(),
    revokedAt: k.revokedAt?.toISOString() ?? null,
  };
}

/** The admin operations, shared by the HTTP endpoints and the inspector's keys page. */
export const admin = {
  async projects(db: PlaneDb, p: Principal) {
    return (await listProjects(db, isOperator(p) ? undefined : p.projectId)).map((r) => ({
      id: r.id,
      name: r.name,
      createdAt: r.createdAt.toISOString(),
    }));
  },
  async createProject(db: PlaneDb, p: Principal, name: string) {
    if (!isOperator(p))
      throw new WaymarkError(
        ErrorCode.FORBIDDEN,
        "creating a project takes the 'operator' scope (the plane's bootstrap admin key has it)",
      );
    return createProject(db, name);
  },
  async keys(db: PlaneDb, p: Principal) {
    return (await listKeys(db, isOperator(p) ? undefined : p.projectId)).map(keyView);
  },
  /**
   * Create a key; nothing is written unless the request has no problem. An
   * unknown project alone is UNKNOWN_PROJECT (listing the known ones); any
   * other problem is INVALID_REQUEST naming every problem of the request,
   * the unknown project too (`details.problems`, each `field: problem`).
   */
  async createKey(
    db: PlaneDb,
    p: Principal,
    o: { project?: string; name?: string; scopes: readonly string[]; unknownFields?: readonly string[] },
  ) {
    if (o.scopes.includes('operator') && !isOperator(p))
      throw new WaymarkError(ErrorCode.FORBIDDEN, "only an operator key may grant the 'operator' scope");
    const own =
      o.project ??
      (await db.select({ name: projects.name }).from(projects).where(eq(projects.id, p.projectId)))[0]?.name;
    const visibleTo = isOperator(p) ? undefined : p.projectId;
    const unknown = await projectId(db, own ?? '', visibleTo).then(
      () => null,
      (e: unknown) => {
        if (e instanceof UnknownProject) return e;
        throw e;
      },
    );
    const problems = [
      ...(o.unknownFields ?? []).map(
        (f) => `${printable(f)}: not a field of a key request (known: project, name, scopes)`,
      ),
      ...keyRequestProblems(o).map(([field, problem]) => `${field}: ${problem}`),
    ];
    if (problems.length) {
      if (unknown) problems.push(`project: ${unknown.message}`);
      throw new WaymarkError(ErrorCode.INVALID_REQUEST, `the key was not created: ${problems.join('; ')}`, {
        details: { problems, ...unknown?.details },
      });
    }
    if (unknown) throw unknown;
    const k = await createKey(db, { project: own ?? '', name: o.name, scopes: o.scopes as Scope[], visibleTo });
    const [view] = (await listKeys(db, k.projectId)).filter((r) => r.id === k.id).map(keyView);
    return { ...view, key: k.key };
  },
  async revoke(db: PlaneDb, p: Principal, id: string) {
    const scope = isOperator(p) ? undefined : p.projectId;
    if (await revokeKey(db, id, scope)) return { id, revoked: true as const };
    const state = await keyState(db, id, scope);
    if (state === 'revoked') throw new WaymarkError(ErrorCode.KEY_REVOKED, `key ${id} is revoked already`);
    throw new WaymarkError(ErrorCode.KEY_NOT_FOUND, `no key ${id} in this project`);
  },
};
