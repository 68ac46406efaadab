import type { Database } from './db/client.js';
import type { Viewer } from './domain/viewer.js';
import type { Loaders } from './graphql/loaders.js';
import type { ResponseBudget } from './graphql/response-budget.js';

/** Everything a resolver may use, built once per request. */
export interface Context {
  viewer: Viewer;
  db: Database;
  loaders: Loaders;
  requestId: string;
  /** The request's one clock: every timestamp a request writes is this instant. */
  now: Date;
  /** The text its answer may still carry (response-budget.ts). */
  budget: ResponseBudget;
}
