import { PGlite, protocol } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { preparedStatements } from '../src/db/pglite-prepared.js';
import { recordStatements } from '../src/db/statement-count.js';
import { createMemory, createStore } from './support/builders.js';
import { postgresUrl } from './support/database.js';
import { useTestServer } from './support/server.js';

/** The statements PGlite's one session has prepared (PostgreSQL's own view of them). */
async function preparedOf(client: PGlite): Promise<{ name: string; statement: string }[]> {
  return (await client.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements order by name')).rows;
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
    const prepared = preparedStatements(client, protocol.serialize, 4);
    const text = 'select $1::int + 1 as next, $2::text as word, null::text as nothing, true as yes';
    expect(await prepared(text, [1, 'één'])).toEqual([{ next: '2', word: 'één', nothing: null, yes: 't' }]);
    expect(await prepared(text, [41, null])).toEqual([{ next: '42', word: null, nothing: null, yes: 't' }]);
    expect((await preparedOf(client)).map((row) => row.statement)).toEqual([text]);
    expect(await prepared('select n from generate_series(1, $1::int) n', [3])).toEqual([{ n: '1' }, { n: '2' }, { n: '3' }]);
  });

  it('throw the database\'s error; a text that failed to parse is not kept, one that failed to run is, and both go on working', async () => {
    const fresh = await PGlite.create();
    try {
      const prepared = preparedStatements(fresh, protocol.serialize, 4);
      await expect(prepared('select nothing from nowhere', [])).rejects.toMatchObject({ message: 'relation "nowhere" does not exist', code: '42P01' });
      expect(await preparedOf(fresh)).toEqual([]);
      await expect(prepared('select $1::int as n', ['x'])).rejects.toMatchObject({ code: '22P02' });
      expect(await preparedOf(fresh)).toHaveLength(1);
      expect(await prepared('select $1::int as n', ['7'])).toEqual([{ n: '7' }]);
      expect(await preparedOf(fresh)).toHaveLength(1);
      // The session is usable as before.
      expect((await fresh.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await fresh.close();
    }
  });

  it('prepare at most their limit of texts, and leave to the caller parameters that are not plain values (null: not run)', async () => {
    const fresh = await PGlite.create();
    try {
      const prepared = preparedStatements(fresh, protocol.serialize, 2);
      expect(await prepared('select 1 as a', [])).toEqual([{ a: '1' }]);
      expect(await prepared('select 2 as b', [])).toEqual([{ b: '2' }]);
      expect(await prepared('select 3 as c', [])).toBeNull();
      expect(await prepared('select 1 as a', [])).toEqual([{ a: '1' }]);
      expect(await prepared('select $1::text[] as list', [['a', 'b']])).toBeNull();
      expect(await preparedOf(fresh)).toHaveLength(2);
      // Many calls of one new text at once parse it once.
      const again = preparedStatements(fresh, protocol.serialize, 8);
      const answers = await Promise.all(Array.from({ length: 20 }, (_, index) => again('select $1::int * 2 as twice', [index])));
      expect(answers.map((rows) => rows![0]!.twice)).toEqual(Array.from({ length: 20 }, (_, index) => String(index * 2)));
      expect((await preparedOf(fresh)).filter((row) => row.statement.includes('twice'))).toHaveLength(1);
    } finally {
      await fresh.close();
    }
  });
});

describe.skipIf(postgresUrl !== undefined)('compiled reads on the embedded database', () => {
  const server = useTestServer();

  it('are parsed once and then bound: the same dashboard three times prepares one statement, on the first, and answers alike', async () => {
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
    expect(afterEach[0]!.filter((name) => !before.includes(name))).toHaveLength(1);
    expect(afterEach[1]).toEqual(afterEach[0]);
    expect(afterEach[2]).toEqual(afterEach[0]);
    expect(answers[0].memoryStores.edges[0].node.memories.edges[0].node).toMatchObject({ path: 'a.md', content: 'one' });
    expect(answers[1]).toEqual(answers[0]);
    expect(answers[2]).toEqual(answers[0]);
  });
});
