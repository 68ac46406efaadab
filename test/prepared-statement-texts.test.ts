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

describe('the compiled statements of a process', () => {
  it(`leave their prepared places to keys: ${MAX_PREPARED_STATEMENT_TEXTS + 20} requests of new shapes from tokens no key has take none, and a key's new shape asked after them is kept once it found its key, if there is room`, async () => {
    const client = await server.newWorkspace();
    const memory = await createMemory(client, (await createStore(client)).id, { path: 'a.md', content: 'a' });
    // Test files share a worker's process (vitest.config.ts): shapes of this run alone (an alias is part of the text), and counts relative to what is kept already.
    const run = randomBytes(4).toString('hex');
    const keptBefore = keptStatementTexts();
    for (let shape = 1; shape <= MAX_PREPARED_STATEMENT_TEXTS + 20; shape += 1) {
      const fields = MEMORY_FIELDS.filter((_, bit) => (shape >> bit) & 1);
      const { statements, result } = await recordStatements(() => server.anonymous(strangerToken()).send({ query: `{ m_${run}_${shape}: memory(id: "mem_00000000000000000000") { ${fields.join(' ')} } }` }));
      expect(result.status).toBe(401);
      for (const statement of statements.filter((each) => isCompiled(each.sql))) expect(statementText(statement.sql).kept).toBe(false);
    }
    expect(keptStatementTexts()).toBe(keptBefore);
    const query = `query ($id: ID!) { m_${run}: memory(id: $id) { path content updatedAt } }`;
    const { statements, result } = await recordStatements(() => client.send({ query, variables: { id: memory.id } }));
    expect(result.data).toEqual({ [`m_${run}`]: { path: 'a.md', content: 'a', updatedAt: expect.any(String) } });
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
    // Shapes of this run alone (an alias is part of the statement's text).
    const run = randomBytes(4).toString('hex');
    const shape = `{ s_${run}: memoryStores(first: 3) { edges { node { name memories(first: 2, orderBy: UPDATED_AT_DESC) { edges { node { path contentSizeBytes } } } } } } }`;
    const another = `{ t_${run}: memoryStores(first: 2) { edges { node { id entryCount } } } }`;
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
