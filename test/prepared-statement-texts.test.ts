import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { recordStatements } from '../src/db/statement-count.js';
import { MAX_PREPARED_STATEMENT_TEXT_LENGTH, MAX_PREPARED_STATEMENT_TEXTS } from '../src/domain/limits.js';
import { keepAnswered, keptStatementTexts, statementText } from '../src/read-compiler/statements.js';
import { createMemory, createStore } from './support/builders.js';
import { useTestServer } from './support/server.js';

/**
 * The compiled statements' texts a process keeps and prepares (MAX_PREPARED_STATEMENT_TEXTS)
 * are those that found a key: requests whose token no key has, which may send a new shape
 * each time, take no place, so the shapes a workspace asks are still prepared after them.
 */
const server = useTestServer();
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const strangerToken = () => `msk_${[...randomBytes(40)].map((byte) => BASE62[byte % 62]).join('')}`;
const MEMORY_FIELDS = ['id', 'memoryStoreId', 'path', 'content', 'contentSizeBytes', 'contentSha256', 'metadata', 'createdAt', 'updatedAt', '__typename'];
const isCompiled = (text: string) => / as data,$/m.test(text);
/**
 * Test files share a worker's process (vitest.config.ts), and with it the kept texts: a
 * shape of this run alone is made by the order of its fields (an alias is not part of a
 * statement's text, the order is), one of 10! orders.
 */
function fieldsInRandomOrder(): string {
  const fields = [...MEMORY_FIELDS];
  for (let index = fields.length - 1; index > 0; index -= 1) {
    const other = randomBytes(1)[0]! % (index + 1);
    [fields[index], fields[other]] = [fields[other]!, fields[index]!];
  }
  return fields.join(' ');
}

describe('the compiled statements of a process', () => {
  it(`leave their prepared places to keys: ${MAX_PREPARED_STATEMENT_TEXTS + 20} requests of new shapes from tokens no key has take none, and a key's new shape asked after them is kept once it found its key, while there is room`, async () => {
    const client = await server.newWorkspace();
    const memory = await createMemory(client, (await createStore(client)).id, { path: 'a.md', content: 'a' });
    const keptBefore = keptStatementTexts();
    for (let shape = 1; shape <= MAX_PREPARED_STATEMENT_TEXTS + 20; shape += 1) {
      const { result } = await recordStatements(() => server.anonymous(strangerToken()).send({ query: `{ memory(id: "mem_00000000000000000000") { ${fieldsInRandomOrder()} } }` }));
      expect(result.status).toBe(401);
    }
    expect(keptStatementTexts()).toBe(keptBefore);
    const query = `query ($id: ID!) { memory(id: $id) { ${fieldsInRandomOrder()} } }`;
    const { statements, result } = await recordStatements(() => client.send({ query, variables: { id: memory.id } }));
    expect(result.data?.memory).toMatchObject({ path: 'a.md', content: 'a' });
    const compiled = statements.find((statement) => isCompiled(statement.sql));
    expect(compiled).toBeDefined();
    expect(statementText(compiled!.sql).kept).toBe(keptBefore < MAX_PREPARED_STATEMENT_TEXTS);
  });

  it('keep a statement no key has answered from the database until the key is known: a token no key has is refused after the key lookup alone; a token new to the instance looks its key up first, once; a token that found its key lately runs a new shape as one statement', async () => {
    const client = await server.newWorkspace();
    await createMemory(client, (await createStore(client)).id, { path: 'a/b.md', content: 'b' });
    const ask = async (asker: ReturnType<typeof server.anonymous>, query: string) => {
      const { statements, result } = await recordStatements(() => asker.send({ query }));
      return { status: result.status, statements: statements.length, compiled: statements.filter((statement) => isCompiled(statement.sql)).length };
    };
    // Shapes of this run alone.
    const shape = `{ memoryStores(first: 3) { edges { node { name memories(first: 2, orderBy: UPDATED_AT_DESC) { edges { node { ${fieldsInRandomOrder()} } } } } } } }`;
    const another = `{ memoryStores(first: 2) { edges { node { memories(first: 2) { edges { node { ${fieldsInRandomOrder()} } } } } } } }`;
    const room = keptStatementTexts() < MAX_PREPARED_STATEMENT_TEXTS;
    const stranger = () => server.anonymous(strangerToken());
    expect(await ask(stranger(), shape)).toEqual({ status: 401, statements: 1, compiled: 0 });
    // The key has written already: its token is known.
    expect(await ask(client, shape)).toEqual({ status: 200, statements: 1, compiled: 1 });
    // A key whose token this instance has not seen yet, with a shape no key has answered.
    const newcomer = await server.newWorkspace();
    expect(await ask(newcomer, another)).toEqual({ status: 200, statements: 2, compiled: 1 });
    expect(await ask(newcomer, another)).toEqual({ status: 200, statements: 1, compiled: 1 });
    // Proven now (where there was room to keep it): a stranger's request is the one read, which finds no key.
    expect(await ask(stranger(), shape)).toEqual({ status: 401, statements: 1, compiled: room ? 1 : 0 });
  });

  it(`never keep a text longer than ${MAX_PREPARED_STATEMENT_TEXT_LENGTH.toLocaleString('en')} characters, even one that found its key, and keep a shorter one while there is room`, () => {
    const long = statementText(`select 1 -- ${'x'.repeat(MAX_PREPARED_STATEMENT_TEXT_LENGTH)}`);
    keepAnswered(long);
    expect([long.kept, statementText(long.text).kept]).toEqual([false, false]);
    const room = keptStatementTexts() < MAX_PREPARED_STATEMENT_TEXTS;
    const short = statementText(`select 1 -- ${randomBytes(4).toString('hex')}`);
    keepAnswered(short);
    expect([short.kept, statementText(short.text) === short]).toEqual([room, room]);
  });
});
