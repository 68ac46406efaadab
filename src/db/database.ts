import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type * as schema from './schema.js';

/** A database handle or an open transaction: domain functions accept either. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;
