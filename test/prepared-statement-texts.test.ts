import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { recordStatements } from '../src/db/statement-count.js';
import { MAX_PREPARED_STATEMENT_TEXT_LENGTH, MAX_PREPARED_STATEMENT_TEXTS } from '../src/domain/limits.js';
import { keepAnswered, statementText } from '../src/read-compiler/statements.js';
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

describe('the statement texts a process prepares', () => {
  it(`are not taken by ${MAX_PREPARED_STATEMENT_TEXTS + 20} requests of new shapes from tokens no key has: a key's shape asked after them is kept once it found its key`, async () => {
    const client = await server.newWorkspace();
    const memory = await createMemory(client, (await createStore(client)).id, { path: 'a.md', content: 'a' });
    for (let shape = 1; shape <= MAX_PREPARED_STATEMENT_TEXTS + 20; shape += 1) {
      const fields = MEMORY_FIELDS.filter((_, bit) => (shape >> bit) & 1);
      const { statements, result } = await recordStatements(() => server.anonymous(strangerToken()).send({ query: `{ memory(id: "mem_00000000000000000000") { ${fields.join(' ')} } }` }));
      expect(result.status).toBe(401);
      for (const statement of statements.filter((each) => isCompiled(each.sql))) expect(statementText(statement.sql).kept).toBe(false);
    }
    const query = 'query ($id: ID!) { memory(id: $id) { path content updatedAt } }';
    const { statements, result } = await recordStatements(() => client.send({ query, variables: { id: memory.id } }));
    expect(result.data).toEqual({ memory: { path: 'a.md', content: 'a', updatedAt: expect.any(String) } });
    const compiled = statements.find((statement) => isCompiled(statement.sql));
    expect(compiled).toBeDefined();
    expect(statementText(compiled!.sql).kept).toBe(true);
  });

  it(`never keeps a text longer than ${MAX_PREPARED_STATEMENT_TEXT_LENGTH.toLocaleString('en')} characters, even one that found its key`, () => {
    const long = statementText(`select 1 -- ${'x'.repeat(MAX_PREPARED_STATEMENT_TEXT_LENGTH)}`);
    keepAnswered(long);
    expect([long.kept, statementText(long.text).kept]).toEqual([false, false]);
    const short = statementText('select 1 -- short');
    keepAnswered(short);
    expect([short.kept, statementText(short.text)]).toEqual([true, short]);
  });
});
