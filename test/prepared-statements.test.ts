import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, type App } from '../src/app.js';
import { createDb, type DatabaseHandle } from '../src/db/client.js';
import { ensureAdminKey, generateToken } from '../src/domain/api-keys.js';
import { MAX_PREPARED_STATEMENT_TEXTS } from '../src/domain/limits.js';
import { createScratchPostgresDatabase, postgresUrl } from './support/database.js';

/**
 * PostgreSQL keeps a session's prepared statements until the session ends, and each costs
 * the backend memory: requests that differ only in their aliases, or in the fields they
 * pick, must not make a connection prepare ever more of them.
 */

describe.skipIf(postgresUrl === undefined)('prepared statements on PostgreSQL', { timeout: 120_000 }, () => {
  let scratch: Awaited<ReturnType<typeof createScratchPostgresDatabase>>;
  let database: DatabaseHandle;
  let app: App;
  const token = generateToken();

  beforeAll(async () => {
    scratch = await createScratchPostgresDatabase();
    // One connection: every statement of the test is prepared (or not) on the same session.
    database = await createDb({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 1 });
    await ensureAdminKey(database.db, 'prepared', token, new Date(), 'key');
    app = createApp({ config: { nodeEnv: 'test', graphiql: false }, database });
  });

  afterAll(async () => {
    await database?.close();
    await scratch?.drop();
  });

  const read = async (query: string) => {
    const response = await app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { data: Record<string, unknown> };
  };
  const preparedOnTheConnection = async () => ((await database.run('select count(*)::int as prepared from pg_prepared_statements', [])) as { prepared: number }[])[0]!.prepared;

  it('5,000 reads with different aliases leave the connection with a fixed number of prepared statements', async () => {
    const before = await preparedOnTheConnection();
    for (let batch = 0; batch < 50; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, async (_, index) => {
          const request = batch * 100 + index;
          const answer = await read(`{ a${request}: memoryStores(first: 1) { n${request}: totalCount } b${request}: __typename }`);
          expect(answer.data).toEqual({ [`a${request}`]: { [`n${request}`]: 0 }, [`b${request}`]: 'Query' });
        }),
      );
    }
    // The same shape with other aliases is one statement text.
    expect(await preparedOnTheConnection()).toBeLessThanOrEqual(before + 3);
  });

  it(`reads of a thousand different shapes prepare at most ${MAX_PREPARED_STATEMENT_TEXTS} statement texts, and still answer`, async () => {
    const fields = ['id', 'name', 'description', 'status', 'entryCount', 'totalSize', 'metadata', 'systemManaged', 'identityId', 'createdAt', 'updatedAt', 'archivedAt'];
    for (let batch = 0; batch < 10; batch += 1) {
      await Promise.all(
        Array.from({ length: 100 }, async (_, index) => {
          const shape = batch * 100 + index + 1;
          const picked = fields.filter((_, field) => shape & (1 << field));
          const answer = await read(`{ memoryStores(first: 1) { totalCount edges { node { ${picked.join(' ')} } } } }`);
          expect(answer.data).toEqual({ memoryStores: { totalCount: 0, edges: [] } });
        }),
      );
    }
    expect(await preparedOnTheConnection()).toBeLessThanOrEqual(MAX_PREPARED_STATEMENT_TEXTS + 50);
  });
});
