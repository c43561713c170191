/** Which database failures mean "try again later" (503) rather than a bug (500). */
const RETRYABLE_SQLSTATE: Record<string, string> = {
  '40001': 'serialization_failure',
  '40P01': 'deadlock_detected',
  '53300': 'too_many_connections',
  '57P01': 'admin_shutdown',
  '57P02': 'crash_shutdown',
  '57P03': 'cannot_connect_now',
  '08000': 'connection_exception',
  '08003': 'connection_does_not_exist',
  '08006': 'connection_failure',
  '08001': 'sqlclient_unable_to_establish_sqlconnection',
  '08004': 'sqlserver_rejected_establishment_of_sqlconnection',
  // the database is gone or refuses us: an operator problem, answered as "retry later", never a 500
  '3D000': 'invalid_catalog_name',
  '28000': 'invalid_authorization_specification',
  '28P01': 'invalid_password',
};

const RETRYABLE_CLIENT_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
]);

export function isUnavailable(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && (code in RETRYABLE_SQLSTATE || RETRYABLE_CLIENT_CODES.has(code))) return true;
  }
  return false;
}
