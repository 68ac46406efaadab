import { ReservedApplicationNameError } from './announcements.js';
import { DataDirInUseError } from './data-dir-lock.js';

/**
 * What an operator reads when the database cannot be opened at startup: one line that says
 * what is wrong and what to do, instead of the driver's stack ("Failed query: select
 * pg_advisory_lock…" said nothing of a database that does not exist). Failures not listed
 * here are bugs or rarities, and keep their stack.
 */

/** Where a DATABASE_URL points, for messages: never its password. */
export interface DatabaseTarget {
  host: string;
  port: string;
  database: string;
  user: string;
}

export function databaseTarget(databaseUrl: string): DatabaseTarget {
  const url = new URL(databaseUrl);
  return {
    host: url.hostname,
    port: url.port || '5432',
    database: decodeURIComponent(url.pathname.replace(/^\//, '')) || decodeURIComponent(url.username) || 'postgres',
    user: decodeURIComponent(url.username) || 'postgres',
  };
}

interface ErrorWithCode extends Error {
  code?: unknown;
}

/** The error itself and the errors it was caused by (drizzle wraps the driver's), innermost last. */
function causes(error: unknown): ErrorWithCode[] {
  const chain: ErrorWithCode[] = [];
  for (let current: unknown = error; current instanceof Error && chain.length < 6; current = current.cause) {
    chain.push(current);
    // A connection attempt to several addresses of one name, all failed: the first says why.
    if (current instanceof AggregateError && current.errors[0] instanceof Error) chain.push(current.errors[0] as ErrorWithCode);
  }
  return chain;
}

function codeOf(error: unknown): string | undefined {
  for (const cause of causes(error)) if (typeof cause.code === 'string') return cause.code;
  return undefined;
}

function serverMessage(error: unknown): string {
  const chain = causes(error);
  return (chain.find((cause) => typeof cause.code === 'string') ?? chain.at(-1))?.message ?? String(error);
}

/**
 * The one-line explanation of a failure to open the database, or null when it is not one
 * of the failures an operator can fix from the message alone.
 */
export function describeDatabaseOpenFailure(error: unknown, databaseUrl: string | undefined): string | null {
  if (error instanceof DataDirInUseError || error instanceof ReservedApplicationNameError) return error.message;
  if (databaseUrl === undefined) return null;
  const target = databaseTarget(databaseUrl);
  const at = `${target.host}:${target.port}`;
  switch (codeOf(error)) {
    case '3D000':
      return `The PostgreSQL database "${target.database}" does not exist on ${at}: create it (createdb -h ${target.host} -p ${target.port} -U ${target.user} ${target.database}) or correct DATABASE_URL.`;
    case '28P01':
      return `PostgreSQL on ${at} refused the password of user "${target.user}": correct the password in DATABASE_URL.`;
    case '28000':
      return `PostgreSQL on ${at} refused user "${target.user}" for database "${target.database}" (${serverMessage(error)}): correct the user in DATABASE_URL or create the role.`;
    case 'ECONNREFUSED':
      return `Cannot connect to PostgreSQL on ${at}: connection refused. Is PostgreSQL running and listening there? Check the host and port of DATABASE_URL.`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Cannot connect to PostgreSQL: the host name "${target.host}" of DATABASE_URL does not resolve.`;
    case 'CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `Cannot connect to PostgreSQL on ${at}: no answer (${codeOf(error)}). Check the host and port of DATABASE_URL and the network between.`;
    case '57P03':
    case '53300':
      return `PostgreSQL on ${at} does not accept connections now (${serverMessage(error)}): try again when it does.`;
    default:
      return null;
  }
}
