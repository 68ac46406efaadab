import { parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { RunStatement } from '../src/db/client.js';
import { MAX_COMPILED_READ_CACHE_BYTES } from '../src/domain/limits.js';
import { schema } from '../src/graphql/schema.js';
import { createPipeline } from '../src/http/pipeline.js';
import { silentLogger } from '../src/logger.js';

/**
 * The pipeline keeps compiled reads and cost estimates by operation and variables
 * (MAX_COMPILED_READ_CACHE_BYTES). A read's statement text depends on its query's shape
 * alone, so it is kept once, and each kept read holds only its parameters: a dashboard
 * that opens memory after memory keeps them all compiled, instead of planning every one
 * again as each pushes an older one out.
 */

const IDS = 10_000;

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
  it(`keep a query asked for each of ${IDS.toLocaleString('en')} ids in turn: the second round plans nothing and estimates nothing`, () => {
    const texts = new Set<string>();
    const pipeline = pipelineWith(async (text) => {
      texts.add(text);
      return [];
    });
    const first = Array.from({ length: IDS }, (_, n) => pipeline.compile(document, operation, { id: memoryId(n) }));
    const firstCosts = first.map((_, n) => {
      const request = new Request('http://memstore.test/graphql');
      expect(pipeline.cost(request, document, operation, { id: memoryId(n) })).toBeNull();
      return pipeline.states.of(request).cost;
    });
    expect(first.every((compiled) => compiled !== null)).toBe(true);
    // One shape: its reads share one text, within the bound with room to spare.
    expect(new Set(first.map((compiled) => compiled!.shape.split(' ')[0])).size).toBe(1);
    expect(first.reduce((total, compiled) => total + compiled!.bytes + 2 * 64 + 256, 0)).toBeLessThan(MAX_COMPILED_READ_CACHE_BYTES);

    for (let n = 0; n < IDS; n += 1) {
      expect(pipeline.compile(document, operation, { id: memoryId(n) })).toBe(first[n]);
      const request = new Request('http://memstore.test/graphql');
      pipeline.cost(request, document, operation, { id: memoryId(n) });
      expect(pipeline.states.of(request).cost).toBe(firstCosts[n]);
    }
  });

  it('answer each id with its own parameters, and check a tag with one statement for every read of a kind of key', async () => {
    const statements: { text: string; params: unknown[] }[] = [];
    const pipeline = pipelineWith(async (text, params) => {
      statements.push({ text, params });
      return [];
    });
    const reads = [0, 1, 2].map((n) => pipeline.compile(document, operation, { id: memoryId(n) })!);
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
    expect(pipeline.compile(document, operation, { id: memoryId(1) })!.shape).toBe(reads[1]!.shape);
  });
});
