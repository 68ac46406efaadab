/**
 * Which failures mean "the database cannot be reached right now" (an outage, a failover, a
 * dropped or refused connection, no connection slots left) rather than a bug: requests that
 * meet one answer 503 DATABASE_UNAVAILABLE with Retry-After instead of a masked 500, and the
 * client may retry. A write that met one may or may not have committed, as with any request
 * whose answer was lost.
 */

/** postgres.js' own connection errors (its `Errors.connection` codes). */
const DRIVER_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_DESTROYED', 'CONNECTION_ENDED', 'CONNECT_TIMEOUT']);

/** Socket and name-resolution errors of Node. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), the server shutting down or
 * starting (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), no
 * connection slots (53300), and a standby that cannot take writes after a failover (25006).
 */
function isUnavailableState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300' || code === '25006';
}

/** Whether an error, or any error it was caused by (drizzle wraps the driver's), says the database is unavailable. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (DRIVER_CODES.has(code) || NETWORK_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isUnavailableState(code)))) {
      return true;
    }
    // AggregateError: a connection attempt to several addresses, all refused.
    if (current instanceof AggregateError && current.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
  }
  return false;
}
