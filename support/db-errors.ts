/**
 * Which database failures are worth another attempt, decided in one place for
 * the client's Postgres store and the plane (DBOS's `retriablePostgresException`
 * and graphile's `src/lib.ts` are the models). Pure: it reads `code` fields and
 * loads no driver.
 *
 * Glossary
 * - code: a SQLSTATE (`'57P01'`) from the server, postgres.js's own code for a
 *   socket it lost (`'CONNECTION_CLOSED'`), or a Node errno (`'ECONNREFUSED'`).
 *   postgres.js and node-postgres (pg) both put the SQLSTATE in `code`.
 * - cause chain: drizzle and waymark wrap driver errors (`{ cause }`); Node's
 *   connect wraps one error per address in an `AggregateError` (`errors`). The
 *   code that decides may sit anywhere below the error thrown, so every
 *   predicate walks the chain (`codesOf`), never the top-level error alone.
 *
 * Classify by code, never by message text.
 */

/** What a failure means for the work that met it. */
export type DbFailure =
  /** The connection broke under a statement: whether a commit in flight landed is unknown. */
  | 'connection_lost'
  /** No connection could be had now (down, starting, stopping, full, unreachable): nothing ran. */
  | 'unavailable'
  /** The database is missing or refuses the credentials: nothing ran, and only an operator can fix it. */
  | 'refused'
  /** The server rolled the transaction back to break a conflict: nothing was written; running it again may succeed. */
  | 'conflict';

/** SQLSTATE codes the stores decide on by name (beyond the table below). */
export const SQLSTATE = {
  uniqueViolation: '23505', // unique_violation
  serializationFailure: '40001', // serialization_failure
  deadlockDetected: '40P01', // deadlock_detected
  invalidTextRepresentation: '22P02', // invalid_text_representation (a text cast to json that is not JSON)
} as const;

/** The one table: every code a predicate answers true for, with what it means. */
export const DB_FAILURES: Readonly<Record<string, DbFailure>> = {
  // SQLSTATE, class 40: transaction rollback
  '40001': 'conflict', // serialization_failure
  '40P01': 'conflict', // deadlock_detected
  // class 53: insufficient resources
  '53300': 'unavailable', // too_many_connections
  // class 57: operator intervention
  '57P01': 'connection_lost', // admin_shutdown (pg_terminate_backend, a fast shutdown)
  '57P02': 'connection_lost', // crash_shutdown
  '57P03': 'unavailable', // cannot_connect_now (starting up, recovering)
  // class 08: connection exception
  '08000': 'connection_lost', // connection_exception
  '08003': 'connection_lost', // connection_does_not_exist
  '08006': 'connection_lost', // connection_failure
  '08001': 'unavailable', // sqlclient_unable_to_establish_sqlconnection
  '08004': 'unavailable', // sqlserver_rejected_establishment_of_sqlconnection
  // the database is gone or refuses us: an operator problem, never a bug in the request
  '3D000': 'refused', // invalid_catalog_name
  '28000': 'refused', // invalid_authorization_specification
  '28P01': 'refused', // invalid_password
  // postgres.js's codes for its own connection
  CONNECTION_CLOSED: 'connection_lost', // the socket closed under a query
  CONNECTION_ENDED: 'connection_lost', // the client was ended with queries still to run
  CONNECTION_DESTROYED: 'connection_lost', // the connection was destroyed under a query
  CONNECT_TIMEOUT: 'unavailable', // no connection within connect_timeout
  // Node errno codes of the socket
  ECONNRESET: 'connection_lost', // the peer reset the connection
  EPIPE: 'connection_lost', // written to a socket the peer closed
  ECONNREFUSED: 'unavailable', // nothing listens at the address
  ETIMEDOUT: 'unavailable', // the connect (or a keepalive probe) timed out
};

/** How far down a chain of causes a code is looked for. */
const MAX_DEPTH = 5;

/**
 * Every string `code` on `e` and below it (`cause`, and an `AggregateError`'s
 * `errors`), outermost first, at most {@link MAX_DEPTH} levels down; a cycle is
 * walked once.
 */
export function codesOf(e: unknown): string[] {
  const codes: string[] = [];
  const seen = new Set<unknown>();
  let level: unknown[] = [e];
  for (let depth = 0; depth < MAX_DEPTH && level.length; depth++) {
    const next: unknown[] = [];
    for (const cur of level) {
      if (typeof cur !== 'object' || cur === null || seen.has(cur)) continue;
      seen.add(cur);
      const { code, cause, errors } = cur as { code?: unknown; cause?: unknown; errors?: unknown };
      if (typeof code === 'string') codes.push(code);
      if (cause !== undefined) next.push(cause);
      if (Array.isArray(errors)) next.push(...errors);
    }
    level = next;
  }
  return codes;
}

/** The first failure the table knows on `e`'s chain, or null (a bug, a constraint, anything else). */
export function dbFailureOf(e: unknown): DbFailure | null {
  for (const code of codesOf(e)) {
    const f = Object.hasOwn(DB_FAILURES, code) ? DB_FAILURES[code] : undefined;
    if (f) return f;
  }
  return null;
}

/** The connection broke under a statement: a read may simply run again; a write must first ask whether it landed. */
export function connectionLost(e: unknown): boolean {
  return dbFailureOf(e) === 'connection_lost';
}

/** No connection could be had now (down, starting, stopping, full, unreachable): nothing ran, a later attempt may succeed. */
export function databaseUnavailable(e: unknown): boolean {
  return dbFailureOf(e) === 'unavailable';
}

/** The database does not exist or refuses the credentials: nothing ran; retrying will not help until an operator acts. */
export function databaseRefused(e: unknown): boolean {
  return dbFailureOf(e) === 'refused';
}

/** The server rolled the transaction back (serialization failure, deadlock): nothing was written. */
export function transactionConflict(e: unknown): boolean {
  return dbFailureOf(e) === 'conflict';
}

/**
 * The work failed for want of a working connection, not because of what it
 * asked: lost under it, or none to be had. The client's store tries such a
 * statement again (a write only after asking whether the lost one landed).
 */
export function connectionFailed(e: unknown): boolean {
  const f = dbFailureOf(e);
  return f === 'connection_lost' || f === 'unavailable';
}

/** Any failure of the table: the database, not the request, is at fault, so "retry later" is the honest answer. */
export function retryLater(e: unknown): boolean {
  return dbFailureOf(e) !== null;
}
