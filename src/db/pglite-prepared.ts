import type { parse as pgliteParse, PGlite, protocol, QueryOptions, Results } from '@electric-sql/pglite';

type BackendMessage = Parameters<typeof pgliteParse.parseResults>[0][number];

/** The most statement texts kept prepared on PGlite's session; past them the least recently used is closed. */
export const PGLITE_PREPARED_TEXTS = 256;

/** Names are numbered across the process: two sets of prepared statements on one session never share a name. */
let statementNumber = 0;

/** PGlite's own protocol helpers, passed in: the server loads PGlite only when it is used. */
export interface PgliteProtocol {
  serialize: typeof protocol.serialize;
  Parser: typeof protocol.Parser;
  parseDescribeStatementResults: typeof pgliteParse.parseDescribeStatementResults;
}

/** The transaction a statement belongs to: PGlite's, which refuses statements once it has ended. */
export interface OpenTransaction {
  readonly closed: boolean;
}

export interface PreparedStatements {
  /** A statement's rows by column name, every value as PostgreSQL's text (it waits for a transaction open on the session to end). */
  rows(text: string, params: readonly unknown[]): Promise<Record<string, unknown>[]>;
  /**
   * The same rows as arrays of their values' bytes, as the session wrote them (null for SQL
   * null), read straight from its output: a large JSON answer goes to the client without
   * being parsed twice and decoded into a string on the way (see rawRowsOf).
   */
  rawRows(text: string, params: readonly unknown[]): Promise<(Uint8Array | null)[][]>;
  /**
   * A statement's result as PGlite's `query` answers it (rows parsed by the same parsers, in
   * the same row mode), or null when it was not run: the caller then sends it through `query`.
   * `transaction`: the transaction open on the session that the statement belongs to (it must
   * not wait for that transaction to end); once it has ended, the statement is not run here.
   */
  query(text: string, params: readonly unknown[], options: QueryOptions | undefined, transaction?: OpenTransaction): Promise<Results | null>;
}

/**
 * Prepared statements on PGlite. Its `query` sends each statement unnamed, so PostgreSQL
 * parses and plans it on every call: for a compiled read, planning costs several times what
 * running it does (a memory by id: 2.7 ms a call against 0.5 ms prepared), and so it does for
 * a write. A statement is parsed once under a name of its own, on PGlite's one session, with
 * its parameters' types, and then only bound and executed; each parameter is written by
 * PGlite's serializer for its type, as `query` writes it. At most `limit` texts are kept: a
 * new one past them closes the least recently used in the same exchange.
 *
 * A statement outside a transaction waits, as `query` does, for a transaction open on the
 * session to end: never run inside another's transaction (where it would read what that has
 * not committed, and an error of its own would abort it). One that belongs to a transaction
 * that has ended is left to `query`, which refuses it. Each call runs exclusively, nothing
 * between its messages. The caller keeps statements one at a time.
 */
export function preparedStatements(client: PGlite, pglite: PgliteProtocol, limit: number): PreparedStatements {
  const { serialize } = pglite;
  /** Text → name and parameter types, least recently used first. */
  const kept = new Map<string, { name: string; types: number[] }>();
  /**
   * Sends a statement's messages and collects the session's output as it comes. PGlite's own
   * execProtocol would copy it into a buffer of its own and parse it twice (once as it comes,
   * for notifications, which memstore's session never listens for; once whole).
   */
  const sendRaw = async (parts: Uint8Array[], syncToFs: boolean) => {
    const chunks: Buffer[] = [];
    // The chunks are views of the session's memory: copied as they come.
    await client.execProtocolRawStream(Buffer.concat(parts), { syncToFs, onRawData: (chunk) => chunks.push(Buffer.from(chunk)) });
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  };
  /** The output's messages, parsed once by PGlite's parser. */
  const messagesOf = (output: Uint8Array) => {
    const messages: BackendMessage[] = [];
    new pglite.Parser().parse(output, (message) => messages.push(message as BackendMessage));
    return messages;
  };
  const send = async (parts: Uint8Array[], syncToFs: boolean) => messagesOf(await sendRaw(parts, syncToFs));
  const failureIn = (messages: BackendMessage[]) => messages.find((message) => message.name === 'error');

  /** Parses a new text under a name (closing the least recently used past the limit) and learns its parameters' types. */
  const prepare = async (text: string, syncToFs: boolean) => {
    const parts: Uint8Array[] = [];
    const closing = kept.size >= limit ? kept.entries().next().value : undefined;
    if (closing) {
      kept.delete(closing[0]);
      parts.push(serialize.close({ type: 'S', name: closing[1].name }));
    }
    const name = `memstore_${(statementNumber += 1)}`;
    parts.push(serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync());
    const messages = await send(parts, syncToFs);
    // One a failed transaction refused to close is still held: it stays known.
    if (closing && !messages.some((message) => message.name === 'closeComplete')) kept.set(...closing);
    const failure = failureIn(messages);
    if (failure) throw failure;
    const statement = { name, types: pglite.parseDescribeStatementResults(messages) };
    kept.set(text, statement);
    return statement;
  };

  const exchange = async <Output>(
    text: string,
    params: readonly unknown[],
    options: QueryOptions | undefined,
    transaction: OpenTransaction | undefined,
    execute: (parts: Uint8Array[], syncToFs: boolean) => Promise<Output>,
  ): Promise<Output | null> => {
    const run = () =>
      client.runExclusive(async () => {
        if (transaction?.closed) return null;
        // Inside a transaction the session's files are written at its commit, as `query` does.
        const syncToFs = transaction === undefined;
        // Looked up in its turn: a call queued beside another of the same new text finds it parsed.
        let statement = kept.get(text);
        if (statement) {
          kept.delete(text);
          kept.set(text, statement);
        } else statement = await prepare(text, syncToFs);
        const { name, types } = statement;
        // As `query` writes them: a serializer's error is thrown before anything is bound.
        const values = params.map((value, index) => {
          if (value === null || value === undefined) return null;
          const write = options?.serializers?.[types[index]!] ?? client.serializers[types[index]!];
          return write ? write(value) : String(value);
        });
        return execute([serialize.bind({ statement: name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()], syncToFs);
      });
    return transaction ? run() : client._runExclusiveTransaction(run);
  };

  /** The messages PGlite parses from the output; throws the error among them. */
  const parsed = async (parts: Uint8Array[], syncToFs: boolean) => {
    const messages = await send(parts, syncToFs);
    const failure = failureIn(messages);
    if (failure) throw failure;
    return messages;
  };

  /** The output's rows; an error among its messages is thrown as PGlite's parser makes it. */
  const raw = async (parts: Uint8Array[], syncToFs: boolean) => {
    const output = await sendRaw(parts, syncToFs);
    const rows = rawRowsOf(output);
    if (rows === null) throw failureIn(messagesOf(output)) ?? new Error('PGlite answered with an error the parser did not find');
    return rows;
  };

  return {
    async rows(text, params) {
      // Outside a transaction a statement always runs.
      const messages = (await exchange(text, params, undefined, undefined, parsed))!;
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
    async rawRows(text, params) {
      return (await exchange(text, params, undefined, undefined, raw))!;
    },
    async query(text, params, options, transaction) {
      // Types asked for by the caller are PGlite's to apply.
      if (options?.paramTypes) return null;
      const messages = await exchange(text, params, options, transaction, parsed);
      return messages === null ? null : resultOf(messages, client.parsers, options);
    },
  };
}

/**
 * The rows of a statement's output (PostgreSQL's wire protocol: a type byte, then a 32-bit
 * length that counts itself, then the body), each DataRow's values as views of `output`
 * (null for SQL null); null when the output holds an ErrorResponse. The other messages
 * (ParseComplete, BindComplete, RowDescription, CommandComplete, ReadyForQuery, notices) say
 * nothing the caller needs.
 */
export function rawRowsOf(output: Uint8Array): (Uint8Array | null)[][] | null {
  const view = new DataView(output.buffer, output.byteOffset, output.byteLength);
  const rows: (Uint8Array | null)[][] = [];
  let at = 0;
  while (at + 5 <= output.length) {
    const type = output[at]!;
    const end = at + 1 + view.getInt32(at + 1);
    if (type === 0x45 /* E */) return null;
    if (type === 0x44 /* D */) {
      const count = view.getInt16(at + 5);
      const values: (Uint8Array | null)[] = new Array(count);
      let field = at + 7;
      for (let index = 0; index < count; index += 1) {
        const length = view.getInt32(field);
        field += 4;
        if (length < 0) values[index] = null;
        else {
          values[index] = output.subarray(field, field + length);
          field += length;
        }
      }
      rows.push(values);
    }
    at = end;
  }
  return rows;
}

type ValueParser = (value: string, typeId: number) => unknown;

/**
 * A statement's result from its messages, as PGlite's parseResults makes the first (rows in
 * the row mode asked for, each value through the caller's parser for its type, else the
 * session's; the fields; the command; affected rows), with each column's parser chosen once
 * per statement: parseResults merges the caller's parsers into a copy of the session's
 * hundreds on every call, and looks each value's up again. test/pglite-prepared.test.ts
 * holds the two to the same answers.
 */
export function resultOf(messages: readonly BackendMessage[], sessionParsers: Record<number, ValueParser>, options: QueryOptions | undefined): Results {
  let fields: { name: string; dataTypeID: number }[] = [];
  let parsers: (ValueParser | undefined)[] = [];
  const rows: unknown[] = [];
  const asArrays = options?.rowMode === 'array';
  for (const message of messages) {
    if (message.name === 'rowDescription') {
      fields = (message as unknown as { fields: { name: string; dataTypeID: number }[] }).fields.map(({ name, dataTypeID }) => ({ name, dataTypeID }));
      parsers = fields.map(({ dataTypeID }) => (options?.parsers?.[dataTypeID] as ValueParser | undefined) ?? sessionParsers[dataTypeID]);
    } else if (message.name === 'dataRow') {
      const values = (message as unknown as { fields: (string | null)[] }).fields.map((value, index) => {
        const parse = parsers[index];
        return value === null ? null : parse ? parse(value, fields[index]!.dataTypeID) : value;
      });
      rows.push(asArrays ? values : Object.fromEntries(values.map((value, index) => [fields[index]!.name, value])));
    } else if (message.name === 'commandComplete') {
      const words = (message as unknown as { text: string }).text.split(' ');
      const command = words[0]!;
      const count = parseInt(words[words.length - 1]!, 10);
      const affectedRows = ['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(command) ? count : 0;
      return { rows, fields, command, affectedRows, ...(Number.isNaN(count) ? {} : { rowCount: count }) } as Results;
    }
  }
  return { rows: [], fields: [], affectedRows: 0 };
}
