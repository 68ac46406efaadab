import { createHash } from 'node:crypto';
import type { RunOptions, RunStatement, RunStatementRaw } from '../db/client.js';
import type { StatementScope } from '../db/deadline.js';
import { KEY_LOOKUP, viewerOf } from '../domain/api-keys.js';
import { MAX_PREPARED_STATEMENT_TEXT_LENGTH, MAX_PREPARED_STATEMENT_TEXTS } from '../domain/limits.js';
import type { ApiKeyKind, Viewer } from '../domain/viewer.js';
import { checkStatementOf, TOKEN_PLACEHOLDER } from './sql.js';

/**
 * What every compiled read's statement shares: its text, kept once per process (and
 * prepared) while there are few; the runners of each database; the statement of a
 * conditional request (the key and the change mark; a search checks with its own, search.ts);
 * and how a row names the key.
 */

/** What a compiled statement says for a token's SHA-256 (null when no unrevoked key has it). */
export interface CompiledAnswer {
  viewer: Viewer;
  /** The response's `data` as JSON text; null for a key the access policy does not let read all of it (the resolvers must answer). */
  data: string | Uint8Array | null;
  /** The workspace's change mark (domain/events.ts) in the same snapshot; null whenever data is. */
  mark: string | null;
}

export interface CompiledRead {
  /** Runs the statement (under the request's `scope`): the key, the answer and the change mark. */
  read(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null>;
  /** The key and the change mark only (data is null), without building the answer: for a conditional request. */
  check(tokenSha256: string, scope?: StatementScope): Promise<CompiledAnswer | null>;
  /** Everything the answer depends on besides the data and the key: the statement's text and its other parameters. */
  readonly shape: string;
  /** About the memory it holds, in bytes. */
  readonly bytes: number;
  /** Whether its statement's text has found a key before (keepAnswered): a text that has not may be costly to plan, for a token no key has too. */
  readonly proven: boolean;
}

/**
 * The statement texts this process prepares, each kept once and shared by every compiled
 * read of it (a text depends only on the plan's shape: values are parameters, so a query
 * asked with ten thousand ids has one text). A text is kept once a statement of it has
 * authenticated a key (keepAnswered), up to MAX_PREPARED_STATEMENT_TEXTS texts of at most
 * MAX_PREPARED_STATEMENT_TEXT_LENGTH characters: the shapes clients send all day come first,
 * and requests whose token no key has (which may send a new shape each time) take no place.
 * The others belong to their compiled read alone and run unprepared, so that no connection
 * keeps ever more prepared statements.
 */
export interface StatementText {
  readonly text: string;
  /** Kept here, and prepared. */
  kept: boolean;
  /** The text's SHA-256, which stands for it in an answer's shape (made on first use). */
  digest?: string;
}

const statementTexts = new Map<string, StatementText>();

export function statementText(text: string): StatementText {
  return statementTexts.get(text) ?? { text, kept: false };
}

/** How many texts are kept (MAX_PREPARED_STATEMENT_TEXTS at most). */
export function keptStatementTexts(): number {
  return statementTexts.size;
}

/** A statement of this text found the key it was run for: the text is kept (and prepared) from now on, while there is room. */
export function keepAnswered(statement: StatementText): void {
  if (statement.kept) return;
  if (statementTexts.has(statement.text)) {
    statement.kept = true;
    return;
  }
  if (statementTexts.size >= MAX_PREPARED_STATEMENT_TEXTS || statement.text.length > MAX_PREPARED_STATEMENT_TEXT_LENGTH) return;
  statement.kept = true;
  statementTexts.set(statement.text, statement);
}

const digestOf = (statement: StatementText) => (statement.digest ??= createHash('sha256').update(statement.text).digest('base64url'));

const decoder = new TextDecoder();
const decode = (bytes: Uint8Array | null | undefined) => (bytes == null ? null : decoder.decode(bytes));
const LOOKUP_COLUMNS = Object.keys(KEY_LOOKUP.columns) as (keyof typeof KEY_LOOKUP.columns)[];

/** A database's statement runners, and its check statements by the kinds of key they answer (a handful of sets). */
export interface StatementRunners {
  run: RunStatement;
  runRaw: RunStatementRaw | undefined;
  checks: Map<string, { statement: StatementText; params: unknown[] }>;
}

const runnersByRun = new WeakMap<RunStatement, StatementRunners>();

export function runnersOf(run: RunStatement, runRaw: RunStatementRaw | undefined): StatementRunners {
  let runners = runnersByRun.get(run);
  if (!runners) runnersByRun.set(run, (runners = { run, runRaw, checks: new Map() }));
  return runners;
}

/** The key and the change mark alone, for a conditional request: one statement for each kinds of key (made on first use; most requests are not conditional). */
export function checkKey(runners: StatementRunners, allowed: readonly ApiKeyKind[], marked: readonly ApiKeyKind[], tokenSha256: string, scope: StatementScope | undefined): Promise<CompiledAnswer | null> {
  const kinds = `${allowed.join()} ${marked.join()}`;
  let check = runners.checks.get(kinds);
  if (!check) {
    const { text, params } = checkStatementOf(allowed, marked).toQuery();
    runners.checks.set(kinds, (check = { statement: statementText(text), params }));
  }
  return runStatement(runners, check.statement, check.params, tokenSha256, scope);
}

/** A compiled statement's parameters with the token's SHA-256 in its place. */
export const withToken = (params: readonly unknown[], tokenSha256: string) => params.map((value) => (value === TOKEN_PLACEHOLDER ? tokenSha256 : value));

/**
 * What a compiled read's parameters hold, about, in bytes: each its share of the read
 * (`each`), and a string its characters twice over (the value, and its copy in the read's
 * shape: statementShape), at two bytes a character.
 */
export function parametersBytes(params: readonly unknown[], each: number): number {
  let total = 0;
  for (const param of params) total += each + (typeof param === 'string' ? 4 * param.length : 0);
  return total;
}

/** A statement's part of an answer's shape: its text's digest and its parameters but the token. */
export const statementShape = (statement: StatementText, params: readonly unknown[]) =>
  `${digestOf(statement)} ${JSON.stringify(params.map((value) => (value === TOKEN_PLACEHOLDER ? null : value)))}`;

/** Runs a compiled statement's text with the token's SHA-256 in its place among the parameters. */
export async function runStatement(
  { run, runRaw }: StatementRunners,
  statement: StatementText,
  params: unknown[],
  tokenSha256: string,
  scope: StatementScope | undefined,
): Promise<CompiledAnswer | null> {
  const { text, kept } = statement;
  const values = withToken(params, tokenSha256);
  const options: RunOptions = { prepare: kept, scope };
  if (runRaw) {
    const [raw] = await runRaw(text, values, options);
    if (!raw) return null;
    keepAnswered(statement);
    const key = Object.fromEntries(LOOKUP_COLUMNS.map((name, index) => [name, decode(raw[index])]));
    return { viewer: viewerOf(key as never), data: raw[LOOKUP_COLUMNS.length] ?? null, mark: decode(raw[LOOKUP_COLUMNS.length + 1]) };
  }
  const [row] = await run(text, values, options);
  if (!row) return null;
  keepAnswered(statement);
  return { viewer: viewerOfRow(row), data: (row.data as string | null) ?? null, mark: (row.mark as string | null) ?? null };
}

/** The key a statement's row names (its key columns, by their names). */
export function viewerOfRow(row: Record<string, unknown>): Viewer {
  const key = Object.fromEntries(LOOKUP_COLUMNS.map((name) => [name, row[KEY_LOOKUP.columns[name].name] ?? null]));
  return viewerOf(key as never);
}

