import { describe, expect, it } from 'vitest';
import { createApp, type AppOptions } from '../src/app.js';
import { generateToken } from '../src/domain/api-keys.js';
import { MAX_REQUEST_BODY_BYTES } from '../src/domain/limits.js';
import { REQUEST_STAGES, type StageName } from '../src/http/pipeline.js';
import { createStore } from './support/builders.js';
import { useTestServer } from './support/server.js';
import { createKey } from './support/workspace-fixture.js';

/**
 * Every request passes the stages of src/http/pipeline.ts, whichever path it takes: the
 * same requests sent down the Yoga pipeline and the lean path, each without compiled reads
 * and with them, must pass the same stages in the same order, and get the same answer.
 * A stage added to one path only fails here.
 */

const server = useTestServer();

interface Exchange {
  name: string;
  body: string;
  token?: string | null;
  headers?: Record<string, string>;
  /** Sent this many times; the last answer and stages count (a rate limit refuses the second). */
  times?: number;
  /** Sent as a GET, the body's members as its parameters (variables as JSON). */
  get?: boolean;
}

type Arm = 'yoga' | 'lean' | 'compiled' | 'yogaCompiled';

const ARMS: Record<Arm, Partial<AppOptions>> = {
  yoga: { leanPath: false, compiledReads: false },
  lean: { compiledReads: false },
  compiled: {},
  yogaCompiled: { leanPath: false },
};

let requestNumber = 0;

/** Sends the exchange to a fresh app of the arm; the stages the last request passed, and its answer. */
async function follow(arm: Arm, exchange: Exchange, token: string) {
  const stages = new Map<string, StageName[]>();
  const app = createApp({
    config: { nodeEnv: 'test', graphiql: false, rateLimit: { perSecond: 0.001, burst: 1 } },
    database: server.database.handle,
    clock: () => 0,
    ...ARMS[arm],
    onStage: (request, stage) => {
      const id = request.headers.get('x-request-id')!;
      const seen = stages.get(id) ?? [];
      // A request the lean path hands to Yoga passes some stages twice; the first time counts.
      if (!seen.includes(stage)) seen.push(stage);
      stages.set(id, seen);
    },
  });
  let last: { id: string; response: Response } | undefined;
  for (let time = 0; time < (exchange.times ?? 1); time += 1) {
    const id = `pipeline-${(requestNumber += 1)}`;
    const given = exchange.token === undefined ? token : exchange.token;
    const credentials: Record<string, string> = given === null ? {} : { authorization: `Bearer ${given}` };
    const search = exchange.get
      ? new URLSearchParams(Object.entries(JSON.parse(exchange.body) as Record<string, unknown>).map(([name, value]): [string, string] => [name, typeof value === 'string' ? value : JSON.stringify(value)]))
      : null;
    const response = search
      ? await app.fetch(`http://memstore.test/graphql?${search}`, { method: 'GET', headers: { 'x-request-id': id, ...credentials, ...(exchange.headers ?? {}) } })
      : await app.fetch('http://memstore.test/graphql', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': id, ...credentials, ...exchange.headers },
          body: exchange.body,
        });
    last = { id, response };
  }
  const text = await last!.response.text();
  return { stages: stages.get(last!.id) ?? [], status: last!.response.status, body: text === '' ? text : JSON.parse(text) };
}

/**
 * A compiled read of a shape no key has answered yet, for a token its app has not seen,
 * looks the key up first (identify, then compiledRead: prepared-statement-texts.test.ts).
 * Whether a shape has been answered depends on the test files run before in the same worker
 * (where the kept texts may be full), so the two arms are compared without that lookup.
 */
function withoutLookupFirst<Followed extends { stages: StageName[] }>(followed: Followed): Followed {
  return { ...followed, stages: followed.stages.filter((stage, index) => !(stage === 'identify' && followed.stages[index + 1] === 'compiledRead')) };
}

/**
 * A compiled read's one statement stands for two stages: it identifies the key, and answers
 * when it may — unless the key is unknown (an error follows) or may not read it all (the
 * resolvers execute).
 */
function asResolverStages(stages: StageName[]): StageName[] {
  return stages.flatMap((stage, index): StageName[] => {
    if (stage !== 'compiledRead') return [stage];
    return ['execute', 'mask'].includes(stages[index + 1]!) ? ['identify'] : ['identify', 'execute'];
  });
}

describe('the request pipeline', () => {
  it('runs the same stages in the same order on the Yoga pipeline and the lean path, with and without compiled reads, with the same answers', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client);
    const identity = await createKey(client, 'IDENTITY', 'idn_pipeline');
    const query = (text: string, variables?: Record<string, unknown>) => JSON.stringify({ query: text, variables });
    const exchanges: Exchange[] = [
      { name: 'a compiled read', body: query('{ memoryStores(first: 2) { totalCount edges { node { id name } } } }') },
      { name: 'a read only the resolvers answer', body: query('query ($id: ID!) { memoryStore(id: $id) { name bindingInfo { identityTemplateCount } } }', { id: store.id }) },
      { name: 'a mutation', body: query('mutation ($id: ID!) { updateMemoryStore(input: { id: $id, name: "renamed" }) { __typename } }', { id: store.id }) },
      { name: 'a resolver error', body: query('{ memoryStores(first: 1000) { totalCount } }') },
      { name: 'too costly', body: query('{ memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node { content } } } } } } }') },
      { name: 'variables of the wrong type', body: query('query ($first: Int) { memoryStores(first: $first) { totalCount } }', { first: 'many' }) },
      { name: 'a parse error', body: query('{ memoryStores(') },
      { name: 'a validation error', body: query('{ memoryStorez }') },
      { name: 'no credentials', token: null, body: query('{ memoryStores { totalCount } }') },
      { name: 'an IDENTITY key, which may not read stores', token: identity.token, body: query('{ memoryStores { totalCount } }') },
      { name: 'a key nobody has', token: generateToken(), body: query('{ memoryStores { totalCount } }') },
      { name: 'over the rate limit', times: 2, body: query('{ memoryStores { totalCount } }') },
      { name: 'a body over the limit', body: JSON.stringify({ query: `{ __typename }${' '.repeat(MAX_REQUEST_BODY_BYTES)}` }) },
      { name: 'a compiled read over GET', get: true, body: query('{ memoryStores(first: 2) { totalCount edges { node { id name } } } }') },
      { name: 'a read only the resolvers answer, over GET', get: true, body: query('query ($id: ID!) { memoryStore(id: $id) { name bindingInfo { identityTemplateCount } } }', { id: store.id }) },
      { name: 'a mutation over GET', get: true, body: query('mutation ($id: ID!) { updateMemoryStore(input: { id: $id, name: "renamed" }) { __typename } }', { id: store.id }) },
      { name: 'too costly, over GET', get: true, body: query('{ memoryStores(first: 100) { edges { node { memories(first: 100) { edges { node { content } } } } } } }') },
      { name: 'no credentials, over GET', get: true, token: null, body: query('{ memoryStores { totalCount } }') },
    ];
    const seen = new Set<StageName>();
    for (const exchange of exchanges) {
      const yoga = await follow('yoga', exchange, client.token!);
      const lean = await follow('lean', exchange, client.token!);
      const compiled = withoutLookupFirst(await follow('compiled', exchange, client.token!));
      const yogaCompiled = withoutLookupFirst(await follow('yogaCompiled', exchange, client.token!));
      for (const stage of [...yoga.stages, ...lean.stages, ...compiled.stages, ...yogaCompiled.stages]) seen.add(stage);
      expect(yogaCompiled.stages, `${exchange.name}: compiled reads through Yoga`).toEqual(compiled.stages);
      expect(lean.stages, `${exchange.name}: lean path`).toEqual(yoga.stages);
      expect(asResolverStages(compiled.stages), `${exchange.name}: compiled reads`).toEqual(yoga.stages);
      expect({ status: lean.status, body: lean.body }, `${exchange.name}: lean answer`).toEqual({ status: yoga.status, body: yoga.body });
      // The mutation renamed the store on the first arm already: the answers stay equal.
      expect({ status: compiled.status, body: compiled.body }, `${exchange.name}: compiled answer`).toEqual({ status: yoga.status, body: yoga.body });
      expect({ status: yogaCompiled.status, body: yogaCompiled.body }, `${exchange.name}: compiled answer through Yoga`).toEqual({ status: yoga.status, body: yoga.body });
    }
    // Every stage was exercised by some request.
    expect([...seen].sort()).toEqual([...REQUEST_STAGES].sort());
  });

  it('passes a plain read through every stage in the declared order', async () => {
    const client = await server.newWorkspace();
    const { stages } = await follow('lean', { name: 'read', body: JSON.stringify({ query: '{ memoryStores { totalCount } }' }) }, client.token!);
    expect(stages).toEqual(['arrive', 'readBody', 'parse', 'validate', 'admit', 'cost', 'deadline', 'identify', 'execute', 'depart']);
    expect(stages).toEqual(REQUEST_STAGES.filter((stage) => stages.includes(stage)));
  });
});
