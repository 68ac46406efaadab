import { parse, PGlite, protocol } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preparedStatements } from '../src/db/pglite-prepared.js';
import { oneStatementAtATime } from '../src/db/pglite-statements.js';
import { recordStatements } from '../src/db/statement-count.js';
import { createMemory, createStore } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { useTestServer } from './support/server.js';

const PROTOCOL = { serialize: protocol.serialize, Parser: protocol.Parser, ...parse };

/** The statements PGlite's one session has prepared (PostgreSQL's own view of them). */
async function preparedOf(client: PGlite): Promise<{ name: string; statement: string }[]> {
  return (await client.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements order by name')).rows;
}

/** Runs `work` on a PGlite of its own, closed afterwards. */
async function onFreshPglite(work: (fresh: PGlite) => Promise<void>): Promise<void> {
  const fresh = await PGlite.create();
  try {
    await work(fresh);
  } finally {
    await fresh.close();
  }
}

describe('statements prepared on PGlite\'s session', () => {
  let client: PGlite;
  beforeAll(async () => {
    client = await PGlite.create();
  });
  afterAll(async () => {
    await client.close();
  });

  it('parse a text once and then only bind it, giving its rows by column name, text as PostgreSQL writes it', async () => {
    const prepared = preparedStatements(client, PROTOCOL, 4);
    const text = 'select $1::int + 1 as next, $2::text as word, null::text as nothing, true as yes';
    expect(await prepared.rows(text, [1, 'één'])).toEqual([{ next: '2', word: 'één', nothing: null, yes: 't' }]);
    expect(await prepared.rows(text, [41, null])).toEqual([{ next: '42', word: null, nothing: null, yes: 't' }]);
    expect((await preparedOf(client)).map((row) => row.statement)).toEqual([text]);
    expect(await prepared.rows('select n from generate_series(1, $1::int) n', [3])).toEqual([{ n: '1' }, { n: '2' }, { n: '3' }]);
  });

  it('give the same rows as arrays of the bytes the session wrote, straight from its output: nulls, many rows, a value of megabytes', async () => {
    const prepared = preparedStatements(client, PROTOCOL, 4);
    const decoded = async (text: string, params: unknown[]) =>
      (await prepared.rawRows(text, params)).map((row) => row.map((value) => (value === null ? null : Buffer.from(value).toString('utf8'))));
    const text = 'select $1::int + 1 as next, $2::text as word, null::text as nothing, true as yes';
    expect(await decoded(text, [1, 'één'])).toEqual([['2', 'één', null, 't']]);
    expect(await decoded(text, [41, null])).toEqual([['42', null, null, 't']]);
    expect(await decoded('select n, repeat(\'é\', n) as word from generate_series(0, $1::int) n', [300])).toEqual(
      Array.from({ length: 301 }, (_, n) => [String(n), 'é'.repeat(n)]),
    );
    // Far more than the session writes out at once.
    const big = (await decoded('select repeat($1::text, $2::int) as big', ['ab🚀', 1_000_000]))[0]![0];
    expect(big).toBe('ab🚀'.repeat(1_000_000));
    expect(await decoded('select 1 as one where false', [])).toEqual([]);
  });

  it('throw the database\'s error from raw rows as from rows, and go on working', async () => {
    await onFreshPglite(async (fresh) => {
      const prepared = preparedStatements(fresh, PROTOCOL, 4);
      await expect(prepared.rawRows('select nothing from nowhere', [])).rejects.toMatchObject({ message: 'relation "nowhere" does not exist', code: '42P01' });
      await expect(prepared.rawRows('select $1::int as n', ['x'])).rejects.toMatchObject({ code: '22P02' });
      await expect(prepared.rawRows('select 1 / (n - 3) from generate_series(1, 5) n', [])).rejects.toMatchObject({ code: '22012' });
      expect((await prepared.rawRows('select $1::int as n', ['7'])).map((row) => row.map((value) => Buffer.from(value!).toString()))).toEqual([['7']]);
      expect((await fresh.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    });
  });

  it('throw the database\'s error; a text that failed to parse is not kept, one that failed to run is, and both go on working', async () => {
    await onFreshPglite(async (fresh) => {
    const prepared = preparedStatements(fresh, PROTOCOL, 4);
    await expect(prepared.rows('select nothing from nowhere', [])).rejects.toMatchObject({ message: 'relation "nowhere" does not exist', code: '42P01' });
    expect(await preparedOf(fresh)).toEqual([]);
    await expect(prepared.rows('select $1::int as n', ['x'])).rejects.toMatchObject({ code: '22P02' });
    expect(await preparedOf(fresh)).toHaveLength(1);
    expect(await prepared.rows('select $1::int as n', ['7'])).toEqual([{ n: '7' }]);
    expect(await preparedOf(fresh)).toHaveLength(1);
    // The session is usable as before.
    expect((await fresh.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    });
  });

  it('keep at most their limit of texts, closing the least recently used', async () => {
    await onFreshPglite(async (fresh) => {
    const prepared = preparedStatements(fresh, PROTOCOL, 2);
    expect(await prepared.rows('select 1 as a', [])).toEqual([{ a: '1' }]);
    expect(await prepared.rows('select 2 as b', [])).toEqual([{ b: '2' }]);
    expect(await prepared.rows('select 1 as a', [])).toEqual([{ a: '1' }]);
    expect(await prepared.rows('select 3 as c', [])).toEqual([{ c: '3' }]);
    expect((await preparedOf(fresh)).map((row) => row.statement).sort()).toEqual(['select 1 as a', 'select 3 as c']);
    expect(await prepared.rows('select 2 as b', [])).toEqual([{ b: '2' }]);
    expect((await preparedOf(fresh)).map((row) => row.statement).sort()).toEqual(['select 2 as b', 'select 3 as c']);
    expect(await preparedOf(fresh)).toHaveLength(2);
    // Many calls of one new text at once parse it once.
    const again = preparedStatements(fresh, PROTOCOL, 8);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => again.rows('select $1::int * 2 as twice', [index])));
    expect(answers.map((rows) => rows![0]!.twice)).toEqual(Array.from({ length: 20 }, (_, index) => String(index * 2)));
    expect((await preparedOf(fresh)).filter((row) => row.statement.includes('twice'))).toHaveLength(1);
    });
  });

  it('answer a statement as PGlite\'s query does: the same rows, parsed alike in either row mode and with the caller\'s parsers, the same fields and affected rows, also inside a transaction', async () => {
    await onFreshPglite(async (fresh) => {
    await fresh.exec(`create table kept (id int primary key, big bigint, flag boolean, doc jsonb, at timestamptz, amount numeric, tags text[], note text)`);
    const prepared = preparedStatements(fresh, PROTOCOL, 8);
    // As drizzle asks: instants as PostgreSQL's text.
    const asText = { [1184]: (value: string) => value };
    const statements: [string, unknown[], Parameters<PGlite['query']>[2]][] = [
      [`insert into kept values ($1, $2, $3, $4, $5, $6, '{a,"b c"}', $7), ($8, null, null, '{}', null, null, null, null)`, [1, '9007199254740993', true, '{"k":"v","n":[1,2]}', '2026-12-05T06:00:00.123Z', '12.50', 'één', 2], undefined],
      ['select * from kept where id = $1', [1], undefined],
      ['select * from kept where id >= $1 order by id', [1], { rowMode: 'array' }],
      ['select at, id from kept where id = $1', [1], { rowMode: 'array', parsers: asText }],
      ['update kept set note = $2 where id >= $1', [1, 'x'], undefined],
      ['select count(*) as n, $1::text as word from kept where note = $1', ['x'], undefined],
      ['delete from kept where id = $1 returning id, note', [2], undefined],
      // Each parameter written by PGlite's serializer for its type, as query writes it.
      ['select $1::timestamptz as at, $2::date as day, $3::text[] as list, $4::bigint as big, $5::float8 as nan, $6::jsonb as doc, $7::text as flag', [1700000000000, 20240101, ['a', 'b c'], 2n ** 40n, Number.NaN, { k: [1, 2] }, true], undefined],
      ['select $1::timestamptz as at, $2::bytea as bytes', [new Date('2026-12-05T06:00:00.123Z'), new Uint8Array([1, 2])], undefined],
    ];
    const copy = await PGlite.create();
    try {
      await copy.exec(`create table kept (id int primary key, big bigint, flag boolean, doc jsonb, at timestamptz, amount numeric, tags text[], note text)`);
      for (const [text, params, options] of statements) {
        const expected = await copy.query(text, params, options);
        expect(await prepared.query(text, params, options), text).toEqual(expected);
      }
      // Inside a transaction the statement runs in it, and does not wait for it to end.
      // A value query refuses for its type is refused alike, before anything is bound.
      for (const [text, params] of [['select $1::bytea as bytes', ['\\x0102']], ['select $1::boolean as yes', ['tru']]] as const) {
        const refusal = await copy.query(text, [...params]).then(() => null, (error: Error) => error.message);
        expect(refusal).not.toBeNull();
        await expect(prepared.query(text, [...params], undefined)).rejects.toThrow(refusal!);
      }
      const inside = await fresh.transaction(async (tx) => {
        await tx.query('insert into kept (id, note) values ($1, $2)', [3, 'in']);
        return prepared.query('select id, note from kept where id = $1', [3], undefined, tx);
      });
      expect(inside?.rows).toEqual([{ id: 3, note: 'in' }]);
    } finally {
      await copy.close();
    }
    });
  });

  it('lose no statement to a transaction that has failed: one it refused to close is still known, and none is left behind', async () => {
    await onFreshPglite(async (fresh) => {
    const prepared = preparedStatements(fresh, PROTOCOL, 1);
    expect(await prepared.rows('select 1 as a', [])).toEqual([{ a: '1' }]);
    await expect(
      fresh.transaction(async (tx) => {
        await expect(prepared.query('select 1 / $1::int as broken', [0], undefined, tx)).rejects.toMatchObject({ code: '22012' });
        // The limit is reached: this new text would close the oldest, in a transaction that refuses everything.
        await prepared.query('select $1::int as b', [2], undefined, tx);
      }),
    ).rejects.toMatchObject({ code: '25P02' });
    // What the session holds is what they know: every text runs again, none is held twice.
    expect((await preparedOf(fresh)).length).toBeLessThanOrEqual(1);
    for (const [text, params] of [['select 1 as a', []], ['select 1 / $1::int as broken', [1]], ['select $1::int as b', [2]], ['select 1 as a', []]] as const) {
      expect(await prepared.query(text, [...params], undefined)).toMatchObject({ rows: [expect.any(Object)] });
      expect((await preparedOf(fresh)).map((row) => row.statement)).toEqual([text]);
    }
    });
  });

  it('leave a statement of a transaction that has ended to query, which refuses it: it never runs after the rollback', async () => {
    await onFreshPglite(async (fresh) => {
      await fresh.exec('create table notes (n int)');
      const line = oneStatementAtATime(fresh, null, preparedStatements(fresh, PROTOCOL, 4));
      await expect(
        line.transaction(async (tx) => {
          await Promise.all([tx.query('select 1 / $1::int as broken', [0]), tx.query('insert into notes values ($1)', [42])]);
        }),
      ).rejects.toMatchObject({ code: '22012' });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await fresh.query('select n from notes')).rows).toEqual([]);
    });
  });

  it('wait for a transaction open on the session to end: never run inside it, nor see what it then rolls back', async () => {
    const fresh = await PGlite.create();
    let release = () => {};
    try {
      await fresh.exec('create table notes (n int)');
      const prepared = preparedStatements(fresh, PROTOCOL, 4);
      // Prepared before, so that the read below is only a bind.
      expect(await prepared.rows('select count(*)::int as n from notes', [])).toEqual([{ n: '0' }]);
      const held = new Promise<void>((resolve) => (release = resolve));
      let written!: () => void;
      const wrote = new Promise<void>((resolve) => (written = resolve));
      const transaction = fresh.transaction(async (tx) => {
        await tx.query('insert into notes values (1)');
        written();
        await held;
        await tx.rollback();
      });
      await wrote;
      let answered = false;
      const read = prepared.rows('select count(*)::int as n from notes', []).then((rows) => {
        answered = true;
        return rows;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(answered).toBe(false);
      release();
      await transaction;
      // Run inside the transaction, it would have counted the row that was rolled back.
      expect(await read).toEqual([{ n: '0' }]);
      expect((await fresh.query('select count(*)::int as n from notes')).rows).toEqual([{ n: 0 }]);
    } finally {
      release();
      await fresh.close();
    }
  });
});

describe.skipIf(postgresUrl !== undefined)('compiled reads on the embedded database', () => {
  const server = useTestServer();

  it('are parsed once and then bound: the same dashboard three times prepares one statement, on the second (once the first found its key), and answers alike', async () => {
    const admin = await server.newWorkspace();
    const store = await createStore(admin, { name: 'prepared' });
    await createMemory(admin, store.id, { path: 'a.md', content: 'one' });
    // A shape no other test asks for (other files' reads may share this database).
    const query = '{ memoryStores(first: 5) { totalCount edges { node { id name description memories(first: 4) { totalCount edges { node { path content contentSha256 } } } } } } }';
    const preparedNow = async () => (await server.database.handle.run('select name from pg_prepared_statements', [])).map((row) => String(row.name)).sort();
    const before = await preparedNow();
    const answers = [];
    const afterEach = [];
    for (let round = 0; round < 3; round += 1) {
      const { result, statements } = await recordStatements(() => admin.send({ query }));
      expect(statements).toHaveLength(1);
      answers.push(result.data);
      afterEach.push(await preparedNow());
    }
    expect(afterEach[0]).toEqual(before);
    expect(afterEach[1]!.filter((name) => !before.includes(name))).toHaveLength(1);
    expect(afterEach[2]).toEqual(afterEach[1]);
    expect(answers[0].memoryStores.edges[0].node.memories.edges[0].node).toMatchObject({ path: 'a.md', content: 'one' });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });
});
