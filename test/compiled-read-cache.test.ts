import fc from 'fast-check';
import { parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { RunStatement } from '../src/db/client.js';
import { newId } from '../src/domain/ids.js';
import { schema } from '../src/graphql/schema.js';
import { costsEstimatedSoFar, estimateCost } from '../src/graphql/query-limits.js';
import { createPipeline } from '../src/http/pipeline.js';
import { silentLogger } from '../src/logger.js';
import { compileRead, readsCompiledSoFar } from '../src/read-compiler/compile.js';

/**
 * The pipeline keeps compiled reads, as templates, and cost estimates by operation and
 * variables (MAX_COMPILED_READ_CACHE_BYTES). A read's plan depends on an ID variable's
 * value only through the kind of id it is, so one template serves every id of a kind: a
 * dashboard or an agent that opens memory after memory plans the query once, however many
 * memories it opens, and each read still runs with its own ids.
 */

const IDS = 10_000;

/** A read compiled for a request whose key is identified (compiling for an unknown token looks its key up first). */
function compileFor(pipeline: ReturnType<typeof pipelineWith>, ...[document, operation, variables]: Parameters<ReturnType<typeof pipelineWith>['compile']> extends [unknown, ...infer Rest] ? Rest : never) {
  const request = new Request('http://memstore.test/graphql');
  pipeline.states.of(request).viewer = { workspaceId: 'ws_cache', apiKeyId: 'key_cache', kind: 'admin', identityId: null };
  return pipeline.compile(request, document, operation, variables);
}

function pipelineWith(run: RunStatement) {
  return createPipeline({
    schema,
    introspection: true,
    maxBodyBytes: 1024,
    timeoutMs: 1000,
    db: {} as never,
    contexts: {} as never,
    rateLimiter: null,
    logger: silentLogger,
    run,
  });
}

const document = parse('query ($id: ID!) { memory(id: $id) { id path content metadata updatedAt } }');
const operation = document.definitions[0] as OperationDefinitionNode;
const memoryId = (n: number) => `mem_cache${String(n).padStart(15, '0')}`;

describe('the compiled reads a process keeps', () => {
  it(`plan a query asked for each of ${IDS.toLocaleString('en')} ids once, and estimate its cost once`, async () => {
    const pipeline = pipelineWith(async () => []);
    const before = readsCompiledSoFar();
    const plans = () => readsCompiledSoFar() - before;
    const estimatesBefore = costsEstimatedSoFar();
    const estimates = () => costsEstimatedSoFar() - estimatesBefore;
    const first = await Promise.all(Array.from({ length: IDS }, (_, n) => compileFor(pipeline, document, operation, { id: memoryId(n) })));
    const firstCosts = first.map((_, n) => {
      const request = new Request('http://memstore.test/graphql');
      expect(pipeline.cost(request, document, operation, { id: memoryId(n) })).toBeNull();
      return pipeline.states.of(request).cost;
    });
    expect(first.every((compiled) => compiled !== null)).toBe(true);
    expect(plans()).toBe(1);
    expect(estimates()).toBe(1);
    expect(new Set(firstCosts).size).toBe(1);
    // One shape: its reads share one text.
    expect(new Set(first.map((compiled) => compiled!.shape.split(' ')[0])).size).toBe(1);

    for (let n = 0; n < IDS; n += 1) {
      expect((await compileFor(pipeline, document, operation, { id: memoryId(n) }))!.shape).toBe(first[n]!.shape);
      const request = new Request('http://memstore.test/graphql');
      pipeline.cost(request, document, operation, { id: memoryId(n) });
      expect(pipeline.states.of(request).cost).toBe(firstCosts[n]);
    }
    expect(plans()).toBe(1);
    expect(estimates()).toBe(1);
    // Another kind of id (a store's, where a memory's is read), and a string that is no id of ours, are planned for themselves.
    (await compileFor(pipeline, document, operation, { id: newId('memoryStore') }));
    (await compileFor(pipeline, document, operation, { id: newId('memoryStore') }));
    (await compileFor(pipeline, document, operation, { id: 'mem_not-an-id' }));
    (await compileFor(pipeline, document, operation, { id: 'mem_not-an-id' }));
    expect(plans()).toBe(3);
  });

  it('keep a dashboard\'s read and estimate while more searches than either cache holds come and go, each search kept apart', async () => {
    const pipeline = pipelineWith(async () => []);
    const plans = ((before) => () => readsCompiledSoFar() - before)(readsCompiledSoFar());
    const estimates = ((before) => () => costsEstimatedSoFar() - before)(costsEstimatedSoFar());
    const ask = async (asked: typeof document, variables: Record<string, unknown>) => {
      const request = new Request('http://memstore.test/graphql');
      const askedOperation = asked.definitions[0] as OperationDefinitionNode;
      expect(pipeline.cost(request, asked, askedOperation, variables)).toBeNull();
      return (await compileFor(pipeline, asked, askedOperation, variables));
    };
    const dashboard = await ask(document, { id: memoryId(0) });
    expect([plans(), estimates()]).toEqual([1, 1]);
    // Searches of texts of 400 characters, half of them asked in a variable, a quarter written into the document and a
    // quarter through fragments: 12,000 of them fill the other reads' caches about four times (16 MiB) and one and a
    // half times (4 MiB of estimates) over.
    const search = parse('query ($q: String!) { searchMemories(query: $q, first: 10) { totalCount edges { cursor score node { id path } } } }');
    const SEARCHES = 12_000;
    const text = (n: number) => `notes ${String(n).padStart(6, '0')} `.repeat(30).slice(0, 400);
    const written = (n: number) =>
      n % 4 === 1
        ? parse(`{ searchMemories(query: ${JSON.stringify(text(n))}, first: 10) { totalCount edges { cursor node { id } } } }`)
        : parse(`query { ...found } fragment found on Query { ... on Query { searchMemories(query: ${JSON.stringify(text(n))}) { totalCount } } }`);
    for (let n = 0; n < SEARCHES; n += 1) expect(await ask(n % 2 === 0 ? search : written(n), n % 2 === 0 ? { q: text(n) } : {})).not.toBeNull();
    expect([plans(), estimates()]).toEqual([1 + SEARCHES, 1 + SEARCHES]);
    // The dashboard is neither planned nor estimated again; the latest search is kept, the first long gone.
    expect((await ask(document, { id: memoryId(1) }))!.shape.split(' ')[0]).toBe(dashboard!.shape.split(' ')[0]);
    await ask(search, { q: text(SEARCHES - 2) });
    expect([plans(), estimates()]).toEqual([1 + SEARCHES, 1 + SEARCHES]);
    await ask(search, { q: text(0) });
    expect([plans(), estimates()]).toEqual([2 + SEARCHES, 2 + SEARCHES]);
  });

  it('plan a search whose store comes in a variable once for each store and text, and answer each with its own', async () => {
    const pipeline = pipelineWith(async () => []);
    const plans = ((before) => () => readsCompiledSoFar() - before)(readsCompiledSoFar());
    const search = parse('query ($s: ID, $q: String!) { searchMemories(query: $q, memoryStoreId: $s) { edges { cursor node { id } } } }');
    const operation = search.definitions[0] as OperationDefinitionNode;
    const [one, two] = [newId('memoryStore'), newId('memoryStore')];
    const first = (await compileFor(pipeline, search, operation, { s: one, q: 'notes' }));
    expect((await compileFor(pipeline, search, operation, { s: one, q: 'notes' }))).toBe(first);
    expect(plans()).toBe(1);
    const other = (await compileFor(pipeline, search, operation, { s: two, q: 'notes' }));
    expect((await compileFor(pipeline, search, operation, { s: two, q: 'notes' }))).toBe(other);
    expect(plans()).toBe(2);
    // Each with its own store (in its parameters, and in its shape: its cursors name it).
    expect(first!.shape).toContain(one);
    expect(other!.shape).toContain(two);
    expect(other!.shape).not.toContain(one);
  });

  it('answer each id with its own parameters, and check a tag with one statement for every read of a kind of key', async () => {
    const statements: { text: string; params: unknown[] }[] = [];
    const pipeline = pipelineWith(async (text, params) => {
      statements.push({ text, params });
      return [];
    });
    const reads = (await Promise.all([0, 1, 2].map((n) => compileFor(pipeline, document, operation, { id: memoryId(n) })))).map((read) => read!);
    for (const read of reads) {
      await read.read('token-sha');
      await read.check('token-sha');
    }
    const [answers, checks] = [statements.filter((_, index) => index % 2 === 0), statements.filter((_, index) => index % 2 === 1)];
    expect(new Set(answers.map((statement) => statement.text)).size).toBe(1);
    expect(answers.map((statement) => statement.params.filter((value) => typeof value === 'string' && value.startsWith('mem_')))).toEqual([0, 1, 2].map((n) => [memoryId(n)]));
    expect(answers.every((statement) => statement.params.includes('token-sha'))).toBe(true);
    // The check reads the key and the mark only: the same statement, whatever the id.
    expect(new Set(checks.map((statement) => JSON.stringify(statement))).size).toBe(1);
    expect(checks[0]!.params).toEqual(['token-sha']);
    // Distinct answers have distinct shapes (their tags differ), equal ones the same.
    expect(new Set(reads.map((read) => read.shape)).size).toBe(3);
    expect((await compileFor(pipeline, document, operation, { id: memoryId(1) }))!.shape).toBe(reads[1]!.shape);
  });

  it('answer exactly as a read compiled for the very variables would, whatever the ids (same statement, parameters, shape and check), at the same cost', async () => {
    const documents = [
      document,
      parse('query ($id: ID) { memory(id: $id) { id path } }'),
      parse('query ($a: ID!, $b: ID!) { a: memory(id: $a) { id contentSha256 } b: memoryStore(id: $b) { id name memories(first: 3) { edges { node { id path } } } } }'),
      parse('query ($a: ID!, $b: ID!, $n: Int) { x: memory(id: $a) { id } y: memory(id: $b) { path } s: memoryStore(id: $a) { entries(first: $n) { edges { node { __typename } } } } }'),
      parse('query ($s: ID!, $p: String) { memoryStore(id: $s) { memories(first: 5, pathPrefix: $p) { totalCount edges { node { id } } } } }'),
      parse('query ($s: ID, $p: String!) { searchMemories(query: $p, memoryStoreId: $s, first: 3) { totalCount edges { cursor node { id } } } }'),
    ];
    const idLike = fc.oneof(
      fc.constantFrom('memory', 'memoryStore', 'memoryVersion', 'apiKey', 'session').map((kind) => newId(kind as never)),
      fc.constantFrom('mem_', 'memstore_', 'mem_0000000000000000000', 'memstore_zzzzzzzzzzzzzzzzzzzz', ''),
      fc.string({ maxLength: 30 }),
      fc.integer(),
      fc.constant(null),
    );
    let run: RunStatement = async () => [];
    const pipeline = pipelineWith((text, params, options) => run(text, params, options));
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: documents.length - 1 }), idLike, idLike, idLike, fc.option(fc.integer({ min: 0, max: 120 })), fc.option(fc.string({ maxLength: 8 })), async (which, a, b, c, n, p) => {
        const chosen = documents[which]!;
        const chosenOperation = chosen.definitions[0] as OperationDefinitionNode;
        const variables: Record<string, unknown> = { id: a, a, b, s: c };
        if (n !== null) variables.n = n;
        if (p !== null) variables.p = p;
        const sent: unknown[] = [];
        run = async (text, params) => {
          sent.push({ text, params });
          return [];
        };
        const viaPipeline = (await compileFor(pipeline, chosen, chosenOperation, variables));
        const byItself = compileRead(schema, chosen, chosenOperation, variables, run);
        const both = [];
        for (const read of [viaPipeline, byItself]) {
          sent.length = 0;
          if (!read) {
            both.push(null);
            continue;
          }
          await read.read('token-sha');
          await read.check('token-sha');
          both.push({ statements: [...sent], shape: read.shape });
        }
        expect(both[0]).toEqual(both[1]);
        // The cost kept for the read's template is the cost of these very variables, or the same refusal.
        // (A document that does not validate, as the second with a null id, throws in both.)
        const outcome = (estimate: () => { cost: unknown; errors: readonly Error[] | null }) => {
          try {
            const { cost, errors } = estimate();
            return { cost, errors: errors?.map((error) => error.message) ?? null };
          } catch (error) {
            return { threw: (error as Error).message };
          }
        };
        const request = new Request('http://memstore.test/graphql');
        const kept = outcome(() => ({ errors: pipeline.cost(request, chosen, chosenOperation, variables), cost: pipeline.states.of(request).cost ?? null }));
        expect(kept).toEqual(outcome(() => estimateCost(schema, chosen, chosenOperation, variables, true)));
      }),
      { numRuns: 400 },
    );
  });
});
