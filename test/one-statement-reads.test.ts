import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApp } from '../src/app.js';
import type { DatabaseHandle } from '../src/db/client.js';
import { StatementScope } from '../src/db/deadline.js';
import { AttemptEndedError, SnapshotChoice, SnapshotNeededError } from '../src/db/snapshot-choice.js';
import { recordStatements } from '../src/db/statement-count.js';
import { QUERY_OUTCOME, ResponseBudget } from '../src/graphql/response-budget.js';
import { createMemory, createStore, updateMemory } from './support/builders.js';
import { RestClient } from './support/rest.js';
import { TestClient, useTestServer } from './support/server.js';

/**
 * A query the resolvers answer in one statement runs without a read snapshot (no BEGIN and
 * COMMIT around it) once it has been seen to; one that then needs a second statement is
 * answered from one snapshot, whole (db/snapshot-choice.ts).
 */

const server = useTestServer();

/** Runs a function outside every request's context: its statements are nobody's. */
const outside = AsyncLocalStorage.snapshot();

const SEARCH = `query ($query: String!) {
  searchMemories(query: $query, first: 5) {
    edges { node { id path contentSha256 versions(first: 1) { edges { node { contentSha256 } } } } }
  }
}`;

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** An app over the test database whose read snapshots are counted, and can be made to wait for a write first. */
function countingSnapshots(compiledReads = true) {
  const handle = server.database.handle;
  const seen = { snapshots: 0, beforeNext: null as (() => Promise<unknown>) | null };
  /** Counts a snapshot (and runs what is to come first) before `readSnapshot` takes it. */
  const counting =
    (readSnapshot: DatabaseHandle['readSnapshot']): DatabaseHandle['readSnapshot'] =>
    async (work) => {
      seen.snapshots += 1;
      const before = seen.beforeNext;
      seen.beforeNext = null;
      if (before) await outside(before);
      return readSnapshot(work);
    };
  const counted: DatabaseHandle = {
    ...handle,
    readSnapshot: counting((work) => handle.readSnapshot(work)),
    // A request's snapshots are taken by its scoped database.
    scoped: (scope) => {
      const scoped = handle.scoped(scope);
      const readSnapshot = counting((work) => scoped.readSnapshot(work));
      return {
        get db() {
          return scoped.db;
        },
        readSnapshot,
      };
    },
  };
  return { seen, app: createApp({ config: { nodeEnv: 'test', graphiql: false }, database: counted, compiledReads }) };
}

/** The statements a request sends besides the key's lookup. */
async function statementsOf(send: () => Promise<unknown>) {
  const { result, statements } = await recordStatements(send);
  return { result: result as any, statements: statements.map((statement) => statement.sql).filter((text) => !text.includes('"api_keys"')) };
}

describe('a query the resolvers answer', () => {
  it('runs without a snapshot once it has answered in one statement, and in one snapshot, whole, once it needs a second', async () => {
    const admin = await server.newWorkspace();
    // The resolvers answer (compiled reads would answer a search's first page in their one statement).
    const { seen, app } = countingSnapshots(false);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const ask = () => statementsOf(() => client.send({ query: SEARCH, variables: { query: 'zebra' } }));

    // Nothing matches: one statement (the search), in a snapshot the first time, then alone.
    const first = await ask();
    expect(first.result.data.searchMemories.edges).toEqual([]);
    expect(first.statements).toHaveLength(1);
    expect(seen.snapshots).toBe(1);
    const second = await ask();
    expect(second.result.data.searchMemories.edges).toEqual([]);
    expect(second.statements).toHaveLength(1);
    expect(seen.snapshots).toBe(1);

    // Now a hit, whose versions are a second statement: the attempt alone is refused it and
    // thrown away, and the query runs again in a snapshot, after a write that lands in
    // between: the answer is the write's, in every part.
    const store = await createStore(admin);
    const memory = await createMemory(admin, store.id, { path: 'notes/zebra.md', content: 'zebra one' });
    seen.beforeNext = () => updateMemory(admin, { id: memory.id, content: 'zebra two' });
    const third = await ask();
    expect(third.result.errors).toBeUndefined();
    expect(third.result.data.searchMemories.edges).toEqual([
      { node: { id: memory.id, path: 'notes/zebra.md', contentSha256: sha256('zebra two'), versions: { edges: [{ node: { contentSha256: sha256('zebra two') } }] } } },
    ]);
    expect(seen.snapshots).toBe(2);
    // The attempt's search, then the snapshot's search and versions; the refused statement is never sent.
    expect(third.statements).toHaveLength(3);
    expect(third.statements[1]).toBe(third.statements[0]);

    // From then on it runs in a snapshot straight away.
    const fourth = await ask();
    expect(fourth.result.data).toEqual(third.result.data);
    expect(fourth.statements).toHaveLength(2);
    expect(seen.snapshots).toBe(3);
  });

  it('that needs no statement at all runs without a snapshot from its second time', async () => {
    const admin = await server.newWorkspace();
    // The resolvers answer (compiled reads would answer it in their one statement).
    const { seen, app } = countingSnapshots(false);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    // A memory id of the wrong kind is null without asking the database.
    const query = { query: 'query { memory(id: "nope") { id } }' };
    for (let round = 0; round < 3; round += 1) {
      const { result, statements } = await statementsOf(() => client.send(query));
      expect(result.data).toEqual({ memory: null });
      expect(statements).toEqual([]);
    }
    expect(seen.snapshots).toBe(1);
  });

  it('learns nothing from an answer with errors: bad input leaves the next request in a snapshot', async () => {
    const admin = await server.newWorkspace();
    // The resolvers answer (compiled reads would answer a search's first page in their one statement).
    const { seen, app } = countingSnapshots(false);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const query = 'query ($first: Int!) { searchMemories(query: "quagga", first: $first) { edges { node { id } } } }';
    const refused = await client.send({ query, variables: { first: 100_000 } });
    expect(refused.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
    expect(seen.snapshots).toBe(1);
    for (let round = 0; round < 3; round += 1) expect((await client.send({ query, variables: { first: 5 } })).data.searchMemories.edges).toEqual([]);
    // The first valid answer taught it; the next two ran alone.
    expect(seen.snapshots).toBe(2);
  });

  it('of several statements keeps its snapshot: a mutation never takes one', async () => {
    const admin = await server.newWorkspace();
    // The resolvers answer (compiled reads would answer a search's first page in their one statement).
    const { seen, app } = countingSnapshots(false);
    const client = new TestClient(app, admin.token, admin.workspaceId);
    const store = await createStore(admin);
    await createMemory(admin, store.id, { path: 'notes/a.md', content: 'alpha words' });
    for (let round = 0; round < 3; round += 1) {
      const { result, statements } = await statementsOf(() => client.send({ query: SEARCH, variables: { query: 'alpha' } }));
      expect(result.data.searchMemories.edges).toHaveLength(1);
      expect(statements).toHaveLength(2);
    }
    expect(seen.snapshots).toBe(3);
    const created = await client.send({ query: `mutation { createMemory(input: { memoryStoreId: "${store.id}", path: "notes/b.md", content: "b" }) { __typename } }` });
    expect(created.data.createMemory.__typename).toBe('CreateMemorySuccess');
    expect(seen.snapshots).toBe(3);
  });
});

describe('a Forward REST read', () => {
  it('of one statement runs without a snapshot from its second time; one of several keeps its snapshot', async () => {
    const admin = await server.newWorkspace();
    const store = await createStore(admin);
    const memory = await createMemory(admin, store.id, { path: 'notes/rest.md', content: 'rest' });
    // The handlers answer (a compiled read would answer getMemory in its one statement).
    const { seen, app } = countingSnapshots(false);
    const rest = new RestClient(app, admin.token);
    const bodies: unknown[] = [];
    for (let round = 0; round < 3; round += 1) {
      const { result, statements } = await statementsOf(() => rest.send('GET', `/memory_stores/${store.id}/memories/${memory.id}`));
      expect(result.status).toBe(200);
      expect(statements).toHaveLength(1);
      bodies.push(result.body);
    }
    expect(bodies[2]).toEqual(bodies[0]);
    expect(seen.snapshots).toBe(1);
    // The store, then its page: two statements, in a snapshot each time.
    for (let round = 0; round < 2; round += 1) {
      const { result, statements } = await statementsOf(() => rest.send('GET', `/memory_stores/${store.id}/memories`));
      expect(result.status).toBe(200);
      expect(result.body.data.map((item: { id: string }) => item.id)).toEqual([memory.id]);
      expect(statements.length).toBeGreaterThan(1);
    }
    expect(seen.snapshots).toBe(3);
  });
});

describe('SnapshotChoice', () => {
  it('keeps the answer of an attempt alone that stands although refused (its budget spent), and learns only from answers that teach', async () => {
    const choice = new SnapshotChoice<object>();
    const kind = {};
    const outcome = { teaches: (answer: string) => !answer.startsWith('error'), stands: (answer: string) => answer === 'too large' };
    const scope = new StatementScope();
    expect(await choice.read(scope, kind, sending(0, 'alone'), sending(0, 'error: bad input'), outcome)).toBe('error: bad input');
    expect(choice.needOf(kind)).toBeUndefined();
    expect(await choice.read(scope, kind, sending(0, 'alone'), sending(1, 'fine'), outcome)).toBe('fine');
    expect(choice.needOf(kind)).toBe('one');
    let snapshots = 0;
    const inSnapshot = async () => {
      snapshots += 1;
      return 'snapshot';
    };
    // Its second statement refused (and the refusal caught, as the executor catches a resolver's error).
    const tooLarge = async (part: StatementScope) => {
      part.admit();
      expect(() => part.admit()).toThrow(SnapshotNeededError);
      return 'too large';
    };
    expect(await choice.read(scope, kind, tooLarge, inSnapshot, outcome)).toBe('too large');
    expect(snapshots).toBe(0);
    expect(choice.needOf(kind)).toBe('several');
    // A budget's answer is one that stands; an execution's own does not.
    const budget = new ResponseBudget(10);
    expect(() => budget.spend(11)).toThrow();
    expect(QUERY_OUTCOME.stands!(budget.settle({ data: { a: 1 } }))).toBe(true);
    expect(QUERY_OUTCOME.stands!(new ResponseBudget().settle({ data: { a: 1 } }))).toBe(false);
  });

  /** A read that "sends" n statements under the part of the scope it is given (as the database handles count them), then answers. */
  const sending = (n: number, answer: string, gate?: Promise<void>) => async (scope: StatementScope) => {
    for (let index = 0; index < n; index += 1) {
      scope.admit();
      await gate;
    }
    return answer;
  };

  it('keeps a kind in snapshots once any of its reads sent several statements, whichever finishes last', async () => {
    const choice = new SnapshotChoice<object>();
    const kind = {};
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Two first reads of one kind at once (two requests): the one of several statements ends first, the one of one statement last.
    const [first, second, third] = [new StatementScope(), new StatementScope(), new StatementScope()];
    const several = choice.read(first, kind, sending(0, 'alone'), sending(2, 'snapshot of two'));
    const one = choice.read(second, kind, sending(0, 'alone'), sending(1, 'snapshot of one', gate));
    expect(await several).toBe('snapshot of two');
    open();
    expect(await one).toBe('snapshot of one');
    expect(choice.needOf(kind)).toBe('several');
    expect(await choice.read(third, kind, sending(1, 'alone'), sending(1, 'snapshot'))).toBe('snapshot');
  });

  it('refuses a second statement to a read alone, before it is sent, and answers from the snapshot instead', async () => {
    const choice = new SnapshotChoice<object>();
    const kind = {};
    const learning = new StatementScope();
    expect(await choice.read(learning, kind, sending(5, 'alone'), sending(1, 'learned'))).toBe('learned');
    expect(choice.needOf(kind)).toBe('one');
    const scope = new StatementScope();
    const sent: number[] = [];
    let refusedPart!: StatementScope;
    const alone = async (part: StatementScope) => {
      refusedPart = part;
      for (let index = 0; index < 3; index += 1) {
        part.admit();
        sent.push(index);
      }
      return 'alone';
    };
    let answeredPart!: StatementScope;
    const inSnapshot = async (part: StatementScope) => {
      answeredPart = part;
      part.admit();
      part.admit();
      return 'snapshot';
    };
    expect(await choice.read(scope, kind, alone, inSnapshot)).toBe('snapshot');
    expect(sent).toEqual([0]);
    expect(choice.needOf(kind)).toBe('several');
    // What either attempt would still send once it has ended (an answer cut short leaves
    // fields resolving) is refused; the request's own scope, outside a read, counts nothing.
    expect(() => refusedPart.admit()).toThrow(SnapshotNeededError);
    expect(() => answeredPart.admit()).toThrow(AttemptEndedError);
    expect(() => scope.admit()).not.toThrow();
    // The request's stop holds in its parts.
    const stopped = new StatementScope();
    let during!: StatementScope;
    await choice.read(stopped, kind, sending(0, 'alone'), async (part) => ((during = part), 'snapshot'));
    stopped.stop(new Error('out of time'));
    expect(() => stopped.part({ count: () => {} }).admit()).toThrow('out of time');
    expect(() => during.admit()).toThrow(AttemptEndedError);
    expect(new SnapshotNeededError()).toBeInstanceOf(Error);
  });
});
