import type { parse as pgliteParse, PGlite, protocol, QueryOptions, Results } from '@electric-sql/pglite';

type BackendMessage = Parameters<typeof pgliteParse.parseResults>[0][number];

/** The most statement texts kept prepared on PGlite's session; past them the least recently used is closed. */
export const PGLITE_PREPARED_TEXTS = 256;

/** Names are numbered across the process: two sets of prepared statements on one session never share a name. */
let statementNumber = 0;

/** PGlite's own protocol helpers, passed in: the server loads PGlite only when it is used. */
export interface PgliteProtocol {
  serialize: typeof protocol.serialize;
  parseResults: typeof pgliteParse.parseResults;
}

export interface PreparedStatements {
  /** A statement's rows by column name, every value as PostgreSQL's text, or null when it was not run. */
  rows(text: string, params: readonly unknown[]): Promise<Record<string, unknown>[] | null>;
  /**
   * A statement's result as PGlite's `query` answers it (rows parsed by the same parsers, in
   * the same row mode), or null when it was not run. `inTransaction`: the statement belongs to
   * the transaction open on the session (it must not wait for that transaction to end).
   */
  query(text: string, params: readonly unknown[], options: QueryOptions | undefined, inTransaction: boolean): Promise<Results | null>;
}

/**
 * Prepared statements on PGlite. Its `query` sends each statement unnamed, so PostgreSQL
 * parses and plans it on every call: for a compiled read, planning costs several times what
 * running it does (a memory by id: 2.7 ms a call against 0.5 ms prepared), and so it does for
 * a write. A statement is parsed once under a name of its own, on PGlite's one session, and
 * then only bound and executed. At most `limit` texts are kept: a new one past them closes
 * the least recently used in the same exchange. Parameters that are not plain values (arrays,
 * objects, dates) are left to the caller (null), which sends the statement as before: plain
 * values are written as PGlite's own serializers write them for every type.
 *
 * A statement outside a transaction waits, as `query` does, for a transaction open on the
 * session to end: never run inside another's transaction (where it would read what that has
 * not committed, and an error of its own would abort it). Each exchange runs exclusively,
 * nothing between its messages. The caller keeps statements one at a time.
 */
export function preparedStatements(client: PGlite, { serialize, parseResults }: PgliteProtocol, limit: number): PreparedStatements {
  /** Text → name, least recently used first. */
  const names = new Map<string, string>();

  const exchange = (text: string, values: (string | null)[], inTransaction: boolean): Promise<BackendMessage[]> => {
    const run = () =>
      client.runExclusive(async () => {
        const parts: Uint8Array[] = [];
        // Looked up in its turn: a call queued beside another of the same new text finds it parsed.
        let name = names.get(text);
        const parsing = name === undefined;
        let closing: [string, string] | undefined;
        if (parsing) {
          if (names.size >= limit) {
            closing = names.entries().next().value!;
            names.delete(closing[0]);
            parts.push(serialize.close({ type: 'S', name: closing[1] }));
          }
          parts.push(serialize.parse({ name: (name = `memstore_${(statementNumber += 1)}`), text }));
        } else {
          names.delete(text);
          names.set(text, name!);
        }
        parts.push(serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync());
        // Inside a transaction the session's files are written at its commit, as `query` does.
        const { messages } = await client.execProtocol(Buffer.concat(parts), { throwOnError: false, syncToFs: !inTransaction });
        // A statement parsed is kept under its name even when binding or running it failed; one
        // not closed (a transaction that had failed refuses it) is still held, and kept in mind.
        if (closing && !messages.some((message) => message.name === 'closeComplete')) names.set(...closing);
        if (parsing && messages.some((message) => message.name === 'parseComplete')) names.set(text, name!);
        const failure = messages.find((message) => message.name === 'error');
        if (failure) throw failure;
        return messages;
      });
    return inTransaction ? run() : client._runExclusiveTransaction(run);
  };

  return {
    async rows(text, params) {
      const values = plainValues(params);
      if (values === null) return null;
      const messages = await exchange(text, values, false);
      let columns: string[] = [];
      const rows: Record<string, unknown>[] = [];
      for (const message of messages) {
        if (message.name === 'rowDescription') columns = (message as unknown as { fields: { name: string }[] }).fields.map((field) => field.name);
        else if (message.name === 'dataRow') {
          const { fields } = message as unknown as { fields: (string | null)[] };
          rows.push(Object.fromEntries(columns.map((column, index) => [column, fields[index] ?? null])));
        }
      }
      return rows;
    },
    async query(text, params, options, inTransaction) {
      const values = plainValues(params);
      if (values === null) return null;
      const messages = await exchange(text, values, inTransaction);
      return parseResults(messages, client.parsers, options)[0] ?? { rows: [], fields: [], affectedRows: 0 };
    },
  };
}

/** Parameters as the text PGlite's serializers write for them whatever their type, or null when one is not such a plain value. */
function plainValues(params: readonly unknown[]): (string | null)[] | null {
  const values: (string | null)[] = [];
  for (const value of params) {
    if (value === null || value === undefined) values.push(null);
    else if (typeof value === 'string') values.push(value);
    // The text PGlite writes for them as text and as JSON, and that a number's or a boolean's
    // input reads alike; a bigint it would write into JSON as a string, a NaN as null.
    else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') values.push(String(value));
    else return null;
  }
  return values;
}
