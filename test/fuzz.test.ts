import fc from 'fast-check';
import {
  getNamedType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  isCompositeType,
  isLeafType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLOutputType,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateToken } from '../src/domain/api-keys.js';
import { schema } from '../src/graphql/schema.js';
import { createMemory, createStore } from './support/builders.js';
import { createKey, idsInSnapshot, seedWorkspace, tenantSnapshot, type SeededWorkspace } from './support/workspace-fixture.js';
import { useTestServer } from './support/server.js';

/**
 * HTTP fuzzing: well over 10,000 generated requests through real HTTP handling
 * (`app.fetch`) — operations built from the schema with right and wrong arguments, odd
 * variables, malformed bodies, wrong content types, GET query strings, deep nesting, many
 * aliases, bad credentials and batches — against two seeded workspaces.
 *
 * Whatever arrives, the server answers without a 5xx, never leaks SQL, stack frames or
 * file paths, sends parseable JSON wherever it sends JSON, and is still alive at the end.
 * Every 4xx is acceptable here (limits, 413, 415, 429 …): this file checks robustness,
 * the behaviour tests check the exact answers.
 *
 * Each property runs with a fixed seed; a failure prints the seed, the path and the
 * shrunk request, and the first failing request is also printed as soon as it is seen.
 * `FUZZ_SEED=<n>` replaces the base seed, `FUZZ_SCALE=<x>` multiplies every run count.
 */

const server = useTestServer();

const BASE_SEED = Number(process.env.FUZZ_SEED ?? 20260814);
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (count: number) => Math.max(1, Math.round(count * SCALE));

// ---------------------------------------------------------------------------------------
// The requests

/** Who the request claims to be: a seeded key, or a raw Authorization header (or none). */
type Credential = { key: 'alice' | 'bob' | 'identity' | 'revoked' } | { raw: string | null };

interface FuzzRequest {
  kind: string;
  method: string;
  /** Path and query string, e.g. `/graphql?query=...`. */
  target: string;
  headers: Record<string, string>;
  credential: Credential;
  body?: string;
}

interface Seeded {
  alice: SeededWorkspace;
  bob: SeededWorkspace;
  tokens: Record<'alice' | 'bob' | 'identity' | 'revoked', string>;
  /** Real ids of both workspaces (every kind), minus the keys the fuzzer itself sends. */
  ids: string[];
  /** The same ids by workspace. */
  idsOf: Record<'alice' | 'bob', string[]>;
  paths: string[];
  cursors: string[];
  externalIds: string[];
  /** A store of alice's with memories of 100 KiB each: aliases of it would make a huge answer. */
  largeStoreId: string;
}

let seeded: Seeded;

const JSON_CONTENT = { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' };

const asJsonPost = (kind: string, body: string, credential: Credential = { key: 'alice' }): FuzzRequest => ({
  kind,
  method: 'POST',
  target: '/graphql',
  headers: { ...JSON_CONTENT },
  credential,
  body,
});

// ---------------------------------------------------------------------------------------
// Sending and checking

const counts = new Map<string, number>();
/** Statuses per request kind, for the summary: `kind → status → count`. */
const statuses = new Map<string, Map<number, number>>();
const maskedErrors: { request: FuzzRequest; body: string }[] = [];
const slowest: { ms: number; kind: string }[] = [];
let totalRequests = 0;
/** Result types seen in answers (`CreateMemorySuccess`, `ConflictError` …): which paths the writes reached. */
const resultTypes = new Map<string, number>();

function resolveAuthorization(credential: Credential): string | null {
  if ('key' in credential) return `Bearer ${seeded.tokens[credential.key]}`;
  return credential.raw;
}

async function send(request: FuzzRequest): Promise<Response> {
  const headers = new Headers(request.headers);
  const authorization = resolveAuthorization(request.credential);
  if (authorization !== null) headers.set('authorization', authorization);
  totalRequests += 1;
  counts.set(request.kind, (counts.get(request.kind) ?? 0) + 1);
  return server.app.fetch(`http://memstore.test${request.target}`, {
    method: request.method,
    headers,
    body: request.method === 'GET' || request.method === 'HEAD' ? undefined : request.body,
  });
}

/**
 * What a leak looks like: SQL and driver text, stack frames, source paths. A pattern that
 * the request itself contains is allowed (GraphQL echoes bad input in its messages).
 */
const LEAK_PATTERNS: RegExp[] = [
  /\bselect\b/i,
  /\binsert\b/i,
  /\bupdate\s+"/i,
  /\brelation\b/i,
  /\bviolates\b/i,
  /syntax error at/i,
  /duplicate key/i,
  /\bworkspace_id\b/i,
  /\bmemory_(?:stores|versions|store_mounts)\b/i,
  /\bpglite\b/i,
  /\bpostgres(?:ql)?\b/i,
  /\bdrizzle\b/i,
  / {4}at /,
  /\bat [\w.<>]+ \(/,
  /\.ts:\d/,
  /\.m?js:\d/,
  /node_modules/,
  /file:\/\//,
  /\bTypeError\b|\bRangeError\b|\bReferenceError\b/,
  /Maximum call stack/i,
  /Cannot read propert/i,
  /\bundefined is not\b|\bis not a function\b|\bis not iterable\b/,
];

function requestText(request: FuzzRequest): string {
  return `${request.target}\n${decodeSafely(request.target)}\n${request.body ?? ''}\n${JSON.stringify(request.body ?? '')}\n${resolveAuthorization(request.credential) ?? ''}`;
}

function decodeSafely(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

function summarize(request: FuzzRequest, limit = 1500): string {
  const clip = (text: string) => (text.length > limit ? `${text.slice(0, limit)}… (${text.length} chars)` : text);
  return JSON.stringify(
    {
      kind: request.kind,
      method: request.method,
      target: clip(request.target),
      headers: request.headers,
      credential: request.credential,
      body: request.body === undefined ? undefined : clip(request.body),
    },
    null,
    1,
  );
}

/** Collects every error object of a GraphQL response (single or batched). */
function errorsOf(payload: unknown): { message?: unknown; extensions?: Record<string, unknown> }[] {
  const results = Array.isArray(payload) ? payload : [payload];
  return results.flatMap((result) => {
    const errors = (result as { errors?: unknown } | null)?.errors;
    return Array.isArray(errors) ? errors : [];
  });
}

/** Returns what is wrong with the answer to a request, or null when nothing is. */
async function problemWith(request: FuzzRequest, response: Response): Promise<string | null> {
  const text = request.method === 'HEAD' ? '' : await response.text();
  if (response.status >= 500) return `HTTP ${response.status}: ${text.slice(0, 2000)}`;
  if (response.status < 200) return `HTTP ${response.status}`;
  // A 304 needs the current tag of the key's own answer, which no fuzzed request holds.
  if (response.status === 304) return `304 for If-None-Match ${JSON.stringify(request.headers['if-none-match'] ?? null)}`;
  const ofKind = statuses.get(request.kind) ?? new Map<number, number>();
  ofKind.set(response.status, (ofKind.get(response.status) ?? 0) + 1);
  statuses.set(request.kind, ofKind);

  const sent = requestText(request).toLowerCase();
  for (const pattern of LEAK_PATTERNS) {
    const match = pattern.exec(text);
    if (match && !sent.includes(match[0].toLowerCase())) return `leaked ${JSON.stringify(match[0])} in: ${text.slice(0, 2000)}`;
  }

  const contentType = response.headers.get('content-type') ?? '';
  const isGraphQLRequest = new URL(`http://x${request.target}`).pathname === '/graphql';
  const shouldBeJson = /json/i.test(contentType) || (isGraphQLRequest && request.method !== 'HEAD' && response.status === 200 && !/text\/(html|event-stream)|multipart\/mixed/i.test(contentType));
  if (!shouldBeJson || text === '') {
    if (shouldBeJson && response.status === 200) return `empty 200 answer with content-type ${contentType}`;
    return null;
  }
  let payload: unknown;
  try {
    payload = JSON.parse(text);
  } catch {
    return `unparseable JSON (${contentType}): ${text.slice(0, 2000)}`;
  }
  for (const match of text.matchAll(/"__typename":"(\w+(?:Success|Error))"/g)) resultTypes.set(match[1]!, (resultTypes.get(match[1]!) ?? 0) + 1);
  for (const error of errorsOf(payload)) {
    if (typeof error?.message !== 'string') return `an error without a message: ${JSON.stringify(error).slice(0, 500)}`;
    if (error.extensions?.code === 'INTERNAL_SERVER_ERROR') {
      if (error.message !== 'Unexpected error.') return `an internal error with an unmasked message: ${text.slice(0, 2000)}`;
      maskedErrors.push({ request, body: text.slice(0, 2000) });
    }
    const extensionKeys = Object.keys(error.extensions ?? {});
    if (extensionKeys.some((key) => /stack|originalError|exception/i.test(key))) return `error extensions expose ${extensionKeys.join(', ')}: ${text.slice(0, 2000)}`;
  }
  return null;
}

const reported = new Set<string>();

/** Sends one request and throws (for fast-check) when the answer breaks a rule. */
async function sendAndCheck(testName: string, request: FuzzRequest): Promise<void> {
  const startedAt = performance.now();
  const response = await send(request);
  const problem = await problemWith(request, response);
  const ms = performance.now() - startedAt;
  if (slowest.length < 8 || ms > slowest.at(-1)!.ms) {
    slowest.push({ ms: Math.round(ms), kind: request.kind });
    slowest.sort((a, b) => b.ms - a.ms).splice(8);
  }
  if (problem !== null) {
    if (!reported.has(testName)) {
      // Printed before shrinking starts, so that a timeout during shrinking loses nothing.
      reported.add(testName);
      console.error(`[fuzz] ${testName}: first failing request (base seed ${BASE_SEED}; fast-check reports the property's seed and path):\n${summarize(request)}\n→ ${problem}`);
    }
    throw new Error(`${problem}\nrequest: ${summarize(request)}`);
  }
}

/** Runs a property over generated requests with a fixed seed. */
async function fuzz(testName: string, seedOffset: number, numRuns: number, requests: fc.Arbitrary<FuzzRequest>): Promise<void> {
  // Counterexamples print clipped: some requests are hundreds of kilobytes long.
  const printable = requests.map((request) => Object.assign(request, { [fc.toStringMethod]: () => summarize(request, 600) }));
  await fc.assert(
    fc.asyncProperty(printable, (request) => sendAndCheck(testName, request)),
    { seed: BASE_SEED + seedOffset, numRuns: runs(numRuns) },
  );
}

// ---------------------------------------------------------------------------------------
// Values

/** A GraphQL enum value (printed bare in documents, as a string in variables). */
class EnumLiteral {
  constructor(readonly name: string) {}
}

/** A number written exactly as given (beyond what a JS number holds), in documents and JSON. */
class RawNumber {
  constructor(readonly text: string) {}
}

/** A string written raw into the document (control characters and all), not escaped. */
class RawString {
  constructor(readonly text: string) {}
}

type FuzzValue = null | boolean | number | string | EnumLiteral | RawNumber | RawString | FuzzValue[] | { [key: string]: FuzzValue };

const oddStrings = [
  '',
  ' ',
  '   \t ',
  'a',
  'notes/live.md',
  'notes/',
  'notes',
  '/absolute.md',
  'a//b.md',
  './a.md',
  '../etc/passwd',
  'a/../b.md',
  'trailing /x.md',
  'a\\b.md',
  '\u0000',
  'nul\u0000inside',
  '\u0001\u0007\u001b[31m',
  '\ud800',
  '\udfff',
  'lone \ud83d high',
  'lone \ude00 low',
  '😀',
  '👩‍👩‍👧‍👦',
  '\u202eevil.md',
  '\ufeffbom',
  '\uffff\ufffe',
  'Ω≈ç√∫',
  'ß',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
  'e\u0301',
  '\u2028\u2029',
  "' or '1'='1",
  "'; drop table x; --",
  '%00%ff',
  '${process.env}',
  '{{7*7}}',
  '<script>alert(1)</script>',
  '"quoted"',
  '\\u0000',
  'memstore_',
  'mem_0000000000aaaaaaaaaa',
  'memstore_zzzzzzzzzzzzzzzzzzzz',
  'memstore_0000000000AAAAAAAAAA',
  'memver_',
  'sesn_!!!',
  'key_0000000000aaaaaaaaaa',
  'idn_',
  'idn_a',
  'idn_ü',
  'tmpl_x y',
  'tmpl_' + 'a'.repeat(65),
  'W10',
  'WyJ4Il0',
  'eyJ9',
  '!!!',
  'null',
  'undefined',
  'NaN',
  '-1',
  '2026-08-14T10:00:00.000Z',
  '2026-02-30T10:00:00Z',
  '2026-08-14T25:61:61Z',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999999+14:00',
  '+275760-09-13T00:00:00Z',
  '2026-08-14',
  'ACTIVE',
  '__proto__',
  'constructor',
  'toString',
];

/** One UTF-16 code unit at random: lone surrogates, NUL and control characters included. */
const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

const oddString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...oddStrings), weight: 6 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: anyCodeUnit, maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  {
    // Huge strings, around the limits (255, 1024, 102400 bytes) and beyond.
    arbitrary: fc
      .tuple(fc.constantFrom(255, 256, 1024, 1025, 25_600, 102_400, 102_401, 300_000), fc.constantFrom('a', 'é', '😀', '/', 'ab/', '\u0000'))
      .map(([length, unit]) => unit.repeat(Math.ceil(length / unit.length))),
    weight: 1,
  },
);

const oddNumber: fc.Arbitrary<number | RawNumber> = fc.oneof(
  fc.constantFrom(-1, -0, 0.5, 1.5, -2.5, 101, 1000, 2 ** 31, 2 ** 31 - 1, -(2 ** 31) - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e21, 1e300, -1e300, Number.MIN_VALUE),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom('1e999', '-1e999', '123456789012345678901234567890', '0.0000000000000000000001', '1.0', '-0').map((text) => new RawNumber(text)),
);

/** Any value at all, of any type (used where a value of another type belongs). */
const wrongValue: fc.Arbitrary<FuzzValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  oddNumber,
  oddString,
  fc.constantFrom('ACTIVE', 'NOPE', 'true', 'null').map((name) => new EnumLiteral(name)),
  fc.array(fc.oneof(fc.integer(), oddString, fc.constant(null)), { maxLength: 4 }),
  fc.dictionary(fc.constantFrom('id', 'name', 'x', 'input', '__proto__', 'first'), fc.oneof(fc.integer(), oddString, fc.constant(null)), { maxKeys: 3 }),
);

/** Values that no real cursor key holds: out-of-range instants and integers, NUL, lone surrogates, other types. */
const oddCursorValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('0000-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '-000001-01-01T00:00:00.000Z', '1', '2026-13-01T00:00:00Z', 'a\u0000b', '\ud800', '', 'x'.repeat(5000)),
  fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, 2 ** 53 + 2, 1.5, -1, 0, 1e300),
  fc.constantFrom(null, true, [], {}, ['nested']),
  fc.string({ unit: anyCodeUnit, maxLength: 10 }),
);

/**
 * Near misses of real cursors: a real cursor of the seeded lists, decoded, with one value
 * replaced (or one added or dropped), encoded again. Defined lazily: the cursors exist
 * only once the workspaces are seeded.
 */
const forgedCursor: fc.Arbitrary<string> = fc
  .tuple(fc.nat(), fc.nat(), fc.constantFrom('replace', 'append', 'drop'), oddCursorValue)
  .map(([which, position, change, value]) => {
    const real = seeded.cursors[which % seeded.cursors.length]!;
    const parts = JSON.parse(Buffer.from(real, 'base64url').toString('utf8')) as unknown[];
    if (change === 'append') parts.push(value);
    else if (change === 'drop') parts.splice(1 + (position % Math.max(1, parts.length - 1)), 1);
    else parts[1 + (position % Math.max(1, parts.length - 1))] = value;
    return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
  });

/** Deeply nested lists or objects (50–500 levels). */
const deepValue: fc.Arbitrary<FuzzValue> = fc.tuple(fc.integer({ min: 50, max: 500 }), fc.boolean(), oddString).map(([depth, asList, leaf]) => {
  let value: FuzzValue = leaf;
  for (let level = 0; level < depth; level += 1) value = asList ? [value] : { a: value };
  return value;
});

function printValue(value: FuzzValue): string {
  if (value === null) return 'null';
  if (value instanceof EnumLiteral) return value.name;
  if (value instanceof RawNumber) return value.text;
  if (value instanceof RawString) return `"${value.text}"`;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map(printValue).join(', ')}]`;
  // Keys that are not GraphQL names cannot be written in a document: they get stand-ins.
  return `{${Object.entries(value)
    .map(([key, inner], index) => `${/^[_A-Za-z][_0-9A-Za-z]*$/.test(key) ? key : `key${index}`}: ${printValue(inner)}`)
    .join(', ')}}`;
}

/** JSON text of a value, with raw numbers written as given. */
function toJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, inner: unknown) => {
    if (inner instanceof EnumLiteral) return inner.name;
    if (inner instanceof RawString) return inner.text;
    if (inner instanceof RawNumber) {
      raws.push(inner.text);
      return `\u0000raw${raws.length - 1}\u0000`;
    }
    return inner;
  });
  return text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_match, index: string) => raws[Number(index)]!);
}

// ---------------------------------------------------------------------------------------
// Operations built from the schema

type Gen = fc.GeneratorValue;

const chance = (g: Gen, probability: number) => g(fc.integer, { min: 0, max: 999 }) < probability * 1000;
const choose = <T>(g: Gen, items: readonly T[]): T => items[g(fc.nat, { max: items.length - 1 })]!;

/** Which kind of id an argument wants, from its name and its field's or input's name. */
const ID_KINDS: [RegExp, string][] = [
  [/memoryVersion|MemoryVersionInput\.id/i, 'memver_'],
  [/memoryStoreId|MemoryStoreInput\.id|^memoryStore\.id/i, 'memstore_'],
  [/memoryId|MemoryInput\.id|^memory\.id/i, 'mem_'],
  [/session/i, 'sesn_'],
  [/apiKey/i, 'key_'],
];

/**
 * A plausible value of a scalar (a real id of the right kind, a small page size, a metadata
 * map …). `argumentName` is `field.argument` or `InputType.field`.
 */
function rightScalar(g: Gen, type: GraphQLScalarType | GraphQLEnumType, argumentName: string): FuzzValue {
  if (type instanceof GraphQLEnumType) return new EnumLiteral(choose(g, type.getValues()).name);
  switch (type.name) {
    case 'ID':
      if (/identityId/i.test(argumentName) || /templateId/i.test(argumentName)) {
        return chance(g, 0.8) ? choose(g, seeded.externalIds.filter((id) => id.startsWith(/identity/i.test(argumentName) ? 'idn_' : 'tmpl_'))) : g(() => oddString);
      }
      {
        const prefix = ID_KINDS.find(([pattern]) => pattern.test(argumentName))?.[1];
        const pick = g(fc.nat, { max: 19 });
        if (prefix !== undefined && pick < 14) {
          // Mostly the caller's own objects (writes can succeed), sometimes the other workspace's.
          const pool = pick < 11 ? callerIds : seeded.ids;
          return choose(g, pool.filter((id) => id.startsWith(prefix)));
        }
        return pick < 17 ? choose(g, seeded.ids) : g(() => oddString);
      }
    case 'Int':
    case 'SafeInt':
      return chance(g, 0.8) ? g(fc.integer, { min: 0, max: 5 }) : choose(g, [0, 1, 20, 99, 100, 101, -1]);
    case 'Float':
      return g(fc.double, { noNaN: true, noDefaultInfinity: true });
    case 'Boolean':
      return g(fc.boolean);
    case 'DateTime':
      return chance(g, 0.7)
        ? g(fc.date, { min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).toISOString()
        : choose(g, oddStrings.filter((text) => /^\d|^\+/.test(text)));
    case 'JSONObject':
      return g(fc.dictionary, fc.oneof(fc.constantFrom('team', 'topic', 'created_by', 'source', ''), fc.string({ maxLength: 70 })), fc.oneof(fc.string({ maxLength: 20 }), oddString), { maxKeys: chance(g, 0.1) ? 20 : 3 }) as FuzzValue;
    case 'String':
    default:
      if (/after|before/.test(argumentName)) {
        const pick = g(fc.nat, { max: 9 });
        return pick < 4 ? choose(g, seeded.cursors) : pick < 7 ? g(() => forgedCursor) : g(() => oddString);
      }
      // History and browsing: folders of the seeded stores, search words, diff context.
      if (/entries\.folder/.test(argumentName)) return choose(g, ['', 'notes/', 'agent/', 'shared/', 'notes', '/', '../', 'a//', g(() => oddString)]);
      if (/searchMemories\.query/.test(argumentName)) {
        return choose(g, ['second', 'notes live', '"read only" guide', 'agent -wrote', 'guide or gone', 'café', 'привет', '记忆', '', '-only', '!!!', g(() => oddString)]);
      }
      if (/path/i.test(argumentName)) {
        const pick = g(fc.nat, { max: 9 });
        if (pick < 4) return choose(g, seeded.paths);
        // A fresh valid path, so that creates and renames can succeed.
        if (pick < 7) return `fuzz/${g(fc.stringMatching, /^[a-z0-9]{1,12}$/)}.md`;
        return g(() => oddString);
      }
      if (/sha256/i.test(argumentName)) return chance(g, 0.5) ? g(fc.stringMatching, /^[0-9a-f]{64}$/) : g(() => oddString);
      return chance(g, 0.5) ? g(fc.string, { maxLength: 30 }) : g(() => oddString);
  }
}

/**
 * How often a value, variable type or selection is wrong in the operation being built: 0
 * for half of the operations (so that they reach the resolvers and the database), a few
 * percent for the others. Set by `schemaOperation` before each build (generation is synchronous).
 */
let wrongRate = 0;

/** The ids of the workspace whose credential the request being built sends. Set by `schemaRequest`. */
let callerIds: readonly string[] = [];

/** A value for an input type: mostly right, sometimes wrong (of another type, null for non-null, deep, unknown fields). */
function inputValue(g: Gen, type: GraphQLInputType, argumentName: string, depth: number): FuzzValue | undefined {
  if (chance(g, wrongRate)) return g(() => wrongValue);
  if (chance(g, wrongRate / 5)) return g(() => deepValue);
  if (type instanceof GraphQLNonNull) return inputValue(g, type.ofType, argumentName, depth);
  if (type instanceof GraphQLList) {
    const length = chance(g, wrongRate / 2) ? g(fc.integer, { min: 100, max: 1000 }) : g(fc.integer, { min: 0, max: 4 });
    return Array.from({ length }, () => inputValue(g, type.ofType, argumentName, depth + 1) ?? null);
  }
  if (type instanceof GraphQLInputObjectType) {
    const object: Record<string, FuzzValue> = {};
    for (const field of Object.values(type.getFields())) {
      const required = field.type instanceof GraphQLNonNull;
      if (required ? !chance(g, wrongRate / 2) : chance(g, 0.5)) {
        const value = inputValue(g, field.type, `${type.name}.${field.name}`, depth + 1);
        if (value !== undefined) object[field.name] = value;
      }
    }
    if (chance(g, wrongRate / 2)) object[choose(g, ['unknownField', 'clientMutationId', 'workspaceId'])] = g(() => wrongValue);
    return object;
  }
  return rightScalar(g, type as GraphQLScalarType | GraphQLEnumType, argumentName);
}

/** A variable type written for a type, sometimes a wrong one. */
function typeText(g: Gen, type: GraphQLInputType): string {
  if (chance(g, wrongRate / 2)) return choose(g, ['String', 'Int', 'ID!', '[ID]', 'JSONObject', 'Boolean!', 'Nope', 'CreateMemoryInput']);
  return String(type);
}

interface OperationParts {
  variableDefinitions: string[];
  variables: Record<string, FuzzValue>;
}

function argumentsText(g: Gen, field: GraphQLField<unknown, unknown>, parts: OperationParts): string {
  const written: string[] = [];
  for (const argument of field.args) {
    const required = argument.type instanceof GraphQLNonNull;
    if (!(required ? !chance(g, wrongRate / 2) : chance(g, 0.35))) continue;
    const value = inputValue(g, argument.type, `${field.name}.${argument.name}`, 0);
    if (value === undefined) continue;
    if (chance(g, 0.4)) {
      const name = `v${parts.variableDefinitions.length}`;
      parts.variableDefinitions.push(`$${name}: ${typeText(g, argument.type)}`);
      if (!chance(g, wrongRate / 2)) parts.variables[name] = value;
      written.push(`${argument.name}: $${name}`);
    } else {
      written.push(`${argument.name}: ${printValue(value)}`);
    }
  }
  if (chance(g, wrongRate / 3)) written.push(`${choose(g, ['bogus', 'first', 'id'])}: ${printValue(g(() => wrongValue))}`);
  return written.length === 0 ? '' : `(${written.join(', ')})`;
}

/** A selection set for an output type, `depth` levels deep at most. */
function selectionText(g: Gen, type: GraphQLOutputType, depth: number, parts: OperationParts): string {
  const named = getNamedType(type) as GraphQLNamedType;
  if (isLeafType(named)) return '';
  if (!isCompositeType(named)) return '';
  if (depth <= 0) return ' { __typename }';
  if (!(named instanceof GraphQLObjectType)) {
    const possible = schema.getPossibleTypes(named);
    const fragments = ['__typename'];
    const count = g(fc.integer, { min: 0, max: Math.min(3, possible.length) });
    for (let index = 0; index < count; index += 1) {
      const target = choose(g, possible);
      fragments.push(`... on ${target.name}${selectionText(g, target, depth - 1, parts)}`);
    }
    if ('getFields' in named && chance(g, 0.5)) {
      const field = choose(g, Object.values(named.getFields()));
      fragments.push(`${field.name}${argumentsText(g, field, parts)}${selectionText(g, field.type, depth - 1, parts)}`);
    }
    return ` { ${fragments.join(' ')} }`;
  }
  const fields = Object.values(named.getFields());
  const count = g(fc.integer, { min: 1, max: Math.min(6, fields.length) });
  const selections: string[] = [];
  // A field is selected once per set: the same field twice with other arguments would only
  // make a "fields conflict" validation error.
  const chosen = new Set<string>();
  for (let index = 0; index < count; index += 1) {
    const field = choose(g, fields);
    if (chosen.has(field.name)) continue;
    chosen.add(field.name);
    const alias = chance(g, 0.1) ? `a${index}: ` : '';
    selections.push(`${alias}${field.name}${argumentsText(g, field, parts)}${selectionText(g, field.type, depth - 1, parts)}`);
  }
  if (chance(g, wrongRate / 3)) selections.push(choose(g, ['nope', 'password', '__schema { types { name } }', '__type(name: "MemoryStore") { name fields { name } }', 'id { id }']));
  return ` { ${selections.join(' ')} }`;
}

interface Operation {
  query: string;
  variables: Record<string, FuzzValue>;
  operationName?: string;
}

/** A random operation on real Query or Mutation fields, with right and wrong arguments. */
const schemaOperation: fc.Arbitrary<Operation> = fc.gen().map((g) => {
  wrongRate = chance(g, 0.5) ? 0 : 0.12;
  const isMutation = chance(g, 0.4);
  const root = (isMutation ? schema.getMutationType() : schema.getQueryType())!;
  const fields = Object.values(root.getFields());
  const parts: OperationParts = { variableDefinitions: [], variables: {} };
  const selections: string[] = [];
  const rootCount = chance(g, 0.8) ? 1 : g(fc.integer, { min: 2, max: 4 });
  for (let index = 0; index < rootCount; index += 1) {
    const field = choose(g, fields);
    const depth = g(fc.integer, { min: 1, max: 5 });
    selections.push(`r${index}: ${field.name}${argumentsText(g, field, parts)}${selectionText(g, field.type, depth, parts)}`);
  }
  const name = chance(g, 0.5) ? 'Fuzz' : '';
  const operationName = name === '' ? undefined : chance(g, 1 - wrongRate) ? name : 'Other';
  const definitions = parts.variableDefinitions.length > 0 ? `(${parts.variableDefinitions.join(', ')})` : '';
  const keyword = isMutation ? 'mutation' : chance(g, 0.8) ? 'query' : '';
  const head = keyword === '' && definitions === '' && name === '' ? '' : `${keyword || 'query'} ${name}${definitions}`;
  return { query: `${head} { ${selections.join(' ')} }`, variables: parts.variables, operationName };
});

const credential: fc.Arbitrary<Credential> = fc.oneof(
  { arbitrary: fc.constant<Credential>({ key: 'alice' }), weight: 12 },
  { arbitrary: fc.constant<Credential>({ key: 'bob' }), weight: 3 },
  { arbitrary: fc.constant<Credential>({ key: 'identity' }), weight: 3 },
  { arbitrary: fc.constant<Credential>({ key: 'revoked' }), weight: 1 },
  { arbitrary: fc.constant<Credential>({ raw: null }), weight: 1 },
);

// ---------------------------------------------------------------------------------------
// Headers that Headers() accepts (Latin-1, no CR, LF or NUL)

const headerSafe = (text: string) => text.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');

const badAuthorization: fc.Arbitrary<string | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom('', 'Bearer', 'Bearer ', 'Bearer  ', 'bearer', 'Basic dXNlcjpwYXNz', 'Token abc', 'Bearer msk_', 'Bearer msk_short', 'Bearer null', 'Bearer undefined', 'Bearer a b', 'Bearer msk_' + 'A'.repeat(40) + ' extra', 'Digest username="x"', 'Bearer ' + 'x'.repeat(10_000), 'Bearer \u00ff\u00fe', 'Bearer msk_' + 'é'.repeat(40)),
  fc.string({ maxLength: 80 }).map((text) => headerSafe(text)),
  fc.string({ maxLength: 80 }).map((text) => `Bearer ${headerSafe(text)}`),
  fc.constant(null).map(() => `Bearer ${generateToken()}`),
);

// ---------------------------------------------------------------------------------------
// The categories

const schemaRequest: fc.Arbitrary<FuzzRequest> = fc.gen().map((g) => {
  const who = g(() => credential);
  callerIds = seeded.idsOf['key' in who && who.key === 'bob' ? 'bob' : 'alice'];
  const operation = g(() => schemaOperation);
  const style = g(fc.nat, { max: 99 });
  const body: Record<string, unknown> = { query: operation.query };
  if (style < 85) body.variables = operation.variables;
  else if (style < 90) body.variables = null;
  if (operation.operationName !== undefined) body.operationName = operation.operationName;
  return asJsonPost('schema operation', toJson(body), who);
});

/** A query with declared variables, sent with arbitrary variables JSON. */
const variablesRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom(
      'query Q($id: ID!) { memoryStore(id: $id) { id name } }',
      'query Q($ids: [ID!]!) { nodes(ids: $ids) { id } }',
      'query Q($first: Int, $after: String, $status: MemoryStoreStatus, $createdAfter: DateTime) { memoryStores(first: $first, after: $after, status: $status, createdAfter: $createdAfter) { totalCount edges { cursor node { id } } } }',
      'mutation M($input: CreateMemoryStoreInput!) { createMemoryStore(input: $input) { __typename ... on Error { code message } } }',
      'mutation M($input: UpdateMemoryInput!) { updateMemory(input: $input) { __typename ... on Error { code message } } }',
      'mutation M($input: CreateMemoryInput!) { createMemory(input: $input) { __typename ... on Error { code message } } }',
      'mutation M($m: JSONObject, $name: String!) { createMemoryStore(input: { name: $name, metadata: $m }) { __typename } }',
      'query Q($id: ID!, $p: String!) { memoryStore(id: $id) { memory(path: $p) { id content } } }',
      'query Q($i: ID!, $t: ID!, $first: Int) { memoryStoreMounts(identityId: $i, templateId: $t, first: $first) { totalCount } }',
      'query Q($id: ID!, $against: ID, $context: Int!) { memoryVersion(id: $id) { number restoredFrom { id } diff(against: $against) { additions deletions unified(context: $context) hunks { oldStart lines { kind text } } } } }',
      'mutation M($input: RestoreMemoryVersionInput!) { restoreMemoryVersion(input: $input) { __typename ... on Error { code message } } }',
      'query Q($id: ID!, $folder: String!, $first: Int, $last: Int, $after: String, $before: String) { memoryStore(id: $id) { entries(folder: $folder, first: $first, last: $last, after: $after, before: $before) { totalCount edges { cursor node { __typename } } } } }',
      'query Q($query: String!, $id: ID, $prefix: String, $first: Int, $after: String) { searchMemories(query: $query, memoryStoreId: $id, pathPrefix: $prefix, first: $first, after: $after) { totalCount edges { cursor score snippet { text matches { start end } } } } }',
    ),
    fc.oneof(
      { arbitrary: fc.jsonValue({ maxDepth: 4 }), weight: 4 },
      {
        arbitrary: fc.dictionary(
          fc.constantFrom('id', 'ids', 'first', 'after', 'status', 'createdAfter', 'input', 'm', 'name', 'p', 'i', 't', 'against', 'context', 'folder', 'query', 'last', 'before', 'prefix', '__proto__', 'constructor'),
          fc.oneof(wrongValue, deepValue, fc.jsonValue({ maxDepth: 3 }), fc.record({ name: oddString, metadata: wrongValue, content: oddString, path: oddString, id: fc.constantFrom('x', 'memstore_zzzzzzzzzzzzzzzzzzzz') })),
        ),
        weight: 6,
      },
    ),
    fc.boolean(),
    credential,
  )
  .map(([query, variables, asText, who]) => {
    const body = asText ? `{"query": ${JSON.stringify(query)}, "variables": ${JSON.stringify(toJson(variables))}}` : toJson({ query, variables });
    return asJsonPost('random variables', body, who);
  });

const VALID_BODY = '{"query":"{ memoryStores(first: 2) { totalCount edges { node { id name } } } }"}';

/** Bodies that are not valid JSON, or JSON of the wrong shape. */
const malformedBody: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '{',
    '}',
    '[',
    '[]',
    '[[]]',
    'null',
    'true',
    '0',
    '-1e999',
    '"query"',
    '{}',
    '{"query":}',
    '{"query": null}',
    '{"query": 42}',
    '{"query": ["{ __typename }"]}',
    '{"query": {"a": 1}}',
    '{"query": ""}',
    '{"query": "   "}',
    '{"query": "{ __typename }", "variables": "not json"}',
    '{"query": "{ __typename }", "variables": "{\\"a\\": 1}"}',
    '{"query": "{ __typename }", "variables": [1, 2]}',
    '{"query": "{ __typename }", "variables": 5}',
    '{"query": "{ __typename }", "extensions": 5}',
    '{"query": "{ __typename }", "extensions": {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}}',
    '{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "abc"}}}',
    '{"query": "{ __typename }", "operationName": 7}',
    '{"query": "{ __typename }", "operationName": "Nope"}',
    '{"query": "query A { __typename } query B { __typename }"}',
    '{"query": "{ __typename }"} trailing',
    '{"query": "{ __typename }",}',
    "{'query': '{ __typename }'}",
    '{"query": "{ __typename }", "query": "{ nope }"}',
    '{"__proto__": {"query": "{ __typename }"}}',
    '{"constructor": {"prototype": {"query": 1}}}',
    '\ufeff{"query": "{ __typename }"}',
    '\u0000',
    '{"query": "\\u0000"}',
    '{"query": "\\ud800"}',
    '{"query": "{ memoryStore(id: \\"\\ud800\\") { id } }"}',
    '{"query": "subscription { x }"}',
    '{"query": "mutation { __typename }"}',
    '{"query": "{ __schema { queryType { name } } }"}',
    '{"query": "{ __typename @skip(if: true) }"}',
    '{"query": "{ memoryStores @include(if: \\"x\\") { totalCount } }"}',
    '{"query": "{ __typename @unknown }"}',
    '{"query": "fragment F on Query { ...F } { ...F }"}',
    '{"query": "{ ...F } fragment F on Query { ...G } fragment G on Query { ...F }"}',
    '{"query": "#only a comment"}',
    '{"query": "\\"\\"\\"block\\"\\"\\""}',
    '{"query": "{ memoryStores(first: 1, first: 2) { totalCount } }"}',
  ),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: anyCodeUnit, maxLength: 60 }),
  fc.nat({ max: VALID_BODY.length - 1 }).map((cut) => VALID_BODY.slice(0, cut)),
  fc.tuple(fc.nat({ max: VALID_BODY.length - 1 }), fc.string({ maxLength: 5 })).map(([at, insert]) => VALID_BODY.slice(0, at) + insert + VALID_BODY.slice(at)),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.integer({ min: 50, max: 5000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.integer({ min: 50, max: 5000 }).map((depth) => `{"query": "{ __typename }", "variables": ${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`),
  fc.integer({ min: 50, max: 2000 }).map((depth) => '{"a":'.repeat(depth)),
);

const malformedRequest: fc.Arbitrary<FuzzRequest> = fc.tuple(malformedBody, credential).map(([body, who]) => asJsonPost('malformed JSON', body, who));

const GRAPHQL_QUERY = '{ memoryStores(first: 2) { totalCount edges { node { id name } } } }';

/** Right and wrong content types, with bodies that match them or not. */
const contentTypeRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom(
      null,
      'text/plain',
      'text/plain;charset=utf-8',
      'application/graphql',
      'application/graphql+json',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/JSON',
      'application/json;',
      'application/x-www-form-urlencoded',
      'multipart/form-data',
      'multipart/form-data; boundary=fuzz',
      'multipart/mixed; boundary=fuzz',
      'application/xml',
      'application/octet-stream',
      '*/*',
      'json',
      '',
      ';;;',
    ),
    fc.constantFrom('json', 'graphql', 'form', 'multipart', 'multipart-upload', 'binary', 'empty'),
    fc.constantFrom(
      'application/graphql-response+json, application/json',
      'application/json',
      'application/graphql-response+json',
      '*/*',
      'text/html',
      'text/event-stream',
      'multipart/mixed',
      'application/xml',
      'image/png',
      '',
      'application/json;q=0, text/plain',
    ),
    credential,
  )
  .map(([contentType, shape, accept, who]) => {
    const bodies: Record<string, string> = {
      json: JSON.stringify({ query: GRAPHQL_QUERY }),
      graphql: GRAPHQL_QUERY,
      form: `query=${encodeURIComponent(GRAPHQL_QUERY)}&variables=%7B%7D`,
      multipart: `--fuzz\r\nContent-Disposition: form-data; name="query"\r\n\r\n${GRAPHQL_QUERY}\r\n--fuzz--\r\n`,
      'multipart-upload': `--fuzz\r\nContent-Disposition: form-data; name="operations"\r\n\r\n{"query":"mutation($f: Upload) { createMemoryStore(input: {name: $f}) { __typename } }","variables":{"f":null}}\r\n--fuzz\r\nContent-Disposition: form-data; name="map"\r\n\r\n{"0":["variables.f"]}\r\n--fuzz\r\nContent-Disposition: form-data; name="0"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--fuzz--\r\n`,
      binary: '\u0000\u0001\u00ff\u00fe garbage',
      empty: '',
    };
    const headers: Record<string, string> = {};
    if (contentType !== null) headers['content-type'] = contentType;
    if (accept !== '') headers.accept = accept;
    return { kind: 'content type', method: 'POST', target: '/graphql', headers, credential: who, body: bodies[shape]! };
  });

/** GET requests (and other methods) with query strings, well and badly formed. */
const getRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.oneof(
      schemaOperation.map((operation) => {
        const params = new URLSearchParams({ query: operation.query, variables: toJson(operation.variables) });
        if (operation.operationName) params.set('operationName', operation.operationName);
        return `/graphql?${params.toString()}`;
      }),
      fc.constantFrom(
        '/graphql',
        '/graphql?',
        '/graphql?query=',
        '/graphql?query=%7B__typename%7D',
        '/graphql?query={__typename}',
        '/graphql?query=%7B__typename%7D&variables=%7B',
        '/graphql?query=%7B__typename%7D&variables=%7B%22a%22%3A',
        '/graphql?query=query(%24id%3AID!)%7Bnode(id%3A%24id)%7Bid%7D%7D&variables=%7B%22id%22%3A%5B1%5D%7D',
        '/graphql?query=%7B__typename%7D&variables=null',
        '/graphql?query=%7B__typename%7D&variables=%5B%5D',
        '/graphql?query=%7B__typename%7D&extensions=%7B',
        '/graphql?query=%7B__typename%7D&query=%7Bnope%7D',
        '/graphql?query=%E0%A4%A',
        '/graphql?query=%',
        '/graphql?query=%00',
        '/graphql?query=%ED%A0%80',
        '/graphql?query=%FF%FE',
        '/graphql?query=mutation%7BcreateMemoryStore(input%3A%7Bname%3A%22via%20get%22%7D)%7B__typename%7D%7D',
        '/graphql?query=query%20A%7B__typename%7Dquery%20B%7B__typename%7D&operationName=B',
        '/graphql?operationName=%5B%5D',
        '/graphql?query=%7BmemoryStores(first%3A1000)%7BtotalCount%7D%7D',
        '/graphql/',
        '/graphql/extra',
        '/GRAPHQL?query=%7B__typename%7D',
        '//graphql',
        '/graphql;jsessionid=1',
        '/graphql?query=' + 'x'.repeat(20_000),
        '/healthz',
        '/healthz?x=1',
        '/readyz',
        '/graphiql/0000000000000000/yoga-graphiql.js',
        '/graphiql/../../package.json',
        '/%2e%2e/%2e%2e/etc/passwd',
        '/nope',
        '/',
        '/favicon.ico',
      ),
      fc.string({ maxLength: 40 }).map((text) => `/graphql?query=${encodeURIComponent(text)}`),
      fc.string({ unit: anyCodeUnit, maxLength: 40 }).map((text) => `/graphql?${text.replace(/[^\x21-\x7e]/g, (character) => `%${(character.charCodeAt(0) & 0xff).toString(16).padStart(2, '0')}`)}`),
    ),
    fc.oneof({ arbitrary: fc.constant('GET'), weight: 10 }, { arbitrary: fc.constantFrom('HEAD', 'OPTIONS', 'PUT', 'PATCH', 'DELETE', 'TRACE_NOT', 'POST'), weight: 2 }),
    fc.constantFrom('application/graphql-response+json, application/json', 'application/json', 'text/html', 'text/event-stream', '*/*', 'application/xml', ''),
    // Sometimes as a page of another site would send it (an Origin, fetch metadata), or as a
    // cache revalidating an answer (If-None-Match, well formed or not).
    fc.oneof(
      { arbitrary: fc.constant<Record<string, string>>({}), weight: 8 },
      { arbitrary: fc.constant({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }), weight: 2 },
      {
        arbitrary: fc
          .oneof(
            fc.constantFrom('*', 'W/"x"', '"a,W/"b"', 'W/', '"', '"'.repeat(20_000), `W/"${'a'.repeat(43)}", "b"`),
            fc.string({ maxLength: 200 }).map((text) => text.replace(/[^\x20-\x7e]/g, '"')),
          )
          .map((tag) => ({ 'if-none-match': tag })),
        weight: 2,
      },
    ),
    credential,
  )
  .map(([target, method, accept, extra, who]) => ({
    kind: 'GET and other methods',
    method: method === 'TRACE_NOT' ? 'PROPFIND' : method,
    target,
    headers: { ...(accept === '' ? {} : { accept }), ...extra },
    credential: who,
    body: method === 'GET' || method === 'HEAD' ? undefined : '',
  }));

/** Deep nesting: selections, fragments, list and object values, 50–500 levels. */
const deepRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.oneof({ arbitrary: fc.integer({ min: 50, max: 500 }), weight: 9 }, { arbitrary: fc.integer({ min: 5000, max: 20_000 }), weight: 1 }),
    fc.constantFrom('store chain', 'memory chain', 'node chain', 'connection chain', 'inline fragments', 'fragment chain', 'list argument', 'object argument', 'unclosed', 'metadata variable', 'ids variable'),
    credential,
  )
  .map(([depth, shape, who]) => {
    const { alice } = seeded;
    const storeId = alice.store.id;
    const path = alice.memory.path;
    let query = '';
    let variables: string | undefined;
    switch (shape) {
      case 'store chain':
        query = `{ memoryStore(id: ${JSON.stringify(storeId)}) ${'{ memory(path: "notes/live.md") { memoryStore '.repeat(depth)}{ id }${' } }'.repeat(depth)} }`;
        break;
      case 'memory chain':
        query = `{ memory(id: ${JSON.stringify(alice.memory.id)}) ${'{ latestVersion { memory '.repeat(depth)}{ id path }${' } }'.repeat(depth)} }`;
        break;
      case 'node chain':
        query = `{ node(id: ${JSON.stringify(alice.memory.id)}) ${'{ ... on Memory { memoryStore { memory(path: ' + JSON.stringify(path) + ') '.repeat(depth)}{ id }${' } } }'.repeat(depth)} }`;
        break;
      case 'connection chain':
        query = `{ memoryStore(id: ${JSON.stringify(storeId)}) ${'{ memories(first: 1) { edges { node { memoryStore '.repeat(depth)}{ id }${' } } } }'.repeat(depth)} }`;
        break;
      case 'inline fragments':
        query = `{ ${'... on Query { '.repeat(depth)}__typename${' }'.repeat(depth)} }`;
        break;
      case 'fragment chain':
        query = `{ ...F0 } ${Array.from({ length: depth }, (_, index) => `fragment F${index} on Query { __typename ...F${index + 1} }`).join(' ')} fragment F${depth} on Query { memoryStores(first: 1) { totalCount } }`;
        break;
      case 'list argument':
        query = `{ nodes(ids: ${'['.repeat(depth)}"x"${']'.repeat(depth)}) { id } }`;
        break;
      case 'object argument':
        query = `mutation { createMemoryStore(input: { name: "deep", metadata: ${'{ a: '.repeat(depth)}"x"${' }'.repeat(depth)} }) { __typename ... on Error { code message } } }`;
        break;
      case 'unclosed':
        query = `{ ${'memoryStores { edges { node { '.repeat(depth)}`;
        break;
      case 'metadata variable':
        // Written as text: JSON.stringify itself overflows the stack on the deepest ones.
        query = 'mutation M($m: JSONObject) { createMemoryStore(input: { name: "deep variables", metadata: $m }) { __typename ... on Error { code message } } }';
        variables = `{"m": ${'{"a":'.repeat(depth)}"x"${'}'.repeat(depth)}}`;
        break;
      case 'ids variable':
        query = 'query Q($ids: [ID!]!) { nodes(ids: $ids) { id } }';
        variables = `{"ids": ${'['.repeat(depth)}"x"${']'.repeat(depth)}}`;
        break;
    }
    const body = typeof variables === 'string' ? `{"query": ${JSON.stringify(query)}, "variables": ${variables}}` : JSON.stringify({ query });
    return asJsonPost(`deep nesting (${shape})`, body, who);
  });

/** Many aliases and fields in one operation. */
const aliasRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom('typename', 'store by id', 'store list', 'node', 'content', 'mutation', 'duplicate field', 'introspection'),
    fc.oneof(fc.integer({ min: 5, max: 40 }), fc.integer({ min: 100, max: 3000 })),
    credential,
  )
  .map(([shape, wanted, who]) => {
    const { alice, bob } = seeded;
    let count = wanted;
    let field: (index: number) => string;
    let keyword = 'query';
    switch (shape) {
      case 'typename':
        field = (index) => `a${index}: __typename`;
        break;
      case 'store by id':
        field = (index) => `a${index}: memoryStore(id: ${JSON.stringify(index % 2 === 0 ? alice.store.id : bob.store.id)}) { id name entryCount }`;
        break;
      case 'store list':
        count = Math.min(wanted, Math.ceil(wanted / 20) + 20);
        field = (index) => `a${index}: memoryStores(first: ${index % 101}) { totalCount edges { node { id memories(first: 3) { edges { node { path } } } } } }`;
        break;
      case 'node':
        field = (index) => `a${index}: node(id: ${JSON.stringify(seeded.ids[index % seeded.ids.length])}) { id }`;
        break;
      case 'content':
        count = Math.min(wanted, Math.ceil(wanted / 10) + 20);
        field = (index) => `a${index}: memory(id: ${JSON.stringify(alice.memory.id)}) { content versions(first: 100) { edges { node { content } } } }`;
        break;
      case 'mutation':
        keyword = 'mutation';
        count = Math.min(wanted, Math.ceil(wanted / 60) + 10);
        field = (index) => `a${index}: createMemoryStore(input: { name: "alias ${index}" }) { __typename }`;
        break;
      case 'duplicate field':
        field = () => 'memoryStores(first: 1) { totalCount }';
        break;
      default:
        count = Math.min(wanted, Math.ceil(wanted / 100) + 3);
        field = (index) => `a${index}: __schema { types { name fields { name args { name } } } }`;
    }
    const query = `${keyword} { ${Array.from({ length: count }, (_, index) => field(index)).join(' ')} }`;
    return asJsonPost(`many aliases (${shape})`, JSON.stringify({ query }), who);
  });

/**
 * Requests built to cost the most while staying under the limits: aliases of content-heavy
 * lists (the answer's budget), counts under every filter (the count cost), compiled reads
 * whose aliases all differ (prepared statements), and variables of the wrong types.
 */
const costlyRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.constant('aliases × content' as const), weight: 1 },
      { arbitrary: fc.constant('counts × filters' as const), weight: 3 },
      { arbitrary: fc.constant('alias-varied compiled reads' as const), weight: 3 },
      { arbitrary: fc.constant('coercion errors' as const), weight: 3 },
    ),
    fc.integer({ min: 1, max: 30 }),
    fc.integer({ min: 0, max: 100 }),
    fc.string({ minLength: 1, maxLength: 12 }).map((text) => text.replace(/[^_0-9A-Za-z]/g, '_')),
    fc.oneof(oddString, oddNumber.map((value) => (value instanceof RawNumber ? value.text : value)), fc.constantFrom<unknown>(['a'], { a: 1 }, true, null, 'abc', -1, 101, 1.5)),
    credential,
  )
  .map(([shape, aliases, page, aliasSeed, wrong, who]) => {
    const { alice } = seeded;
    const alias = (index: number) => `${/^[_A-Za-z]/.test(aliasSeed) ? aliasSeed : `a${aliasSeed}`}${index}`;
    let query: string;
    let variables: Record<string, unknown> = {};
    switch (shape) {
      case 'aliases × content':
        query = `{ ${Array.from({ length: aliases }, (_, index) => `${alias(index)}: memoryStore(id: ${JSON.stringify(seeded.largeStoreId)}) { memories(first: ${page}) { edges { node { content metadata } } } }`).join(' ')} }`;
        break;
      case 'counts × filters': {
        const filters = ['', 'operation: UPDATED', 'createdAfter: "2026-01-01T00:00:00Z"', `memoryId: ${JSON.stringify(alice.memory.id)}`, 'operation: DELETED, createdBefore: "2030-01-01T00:00:00Z"'];
        query = `query ($id: ID!) { memoryStore(id: $id) { ${Array.from({ length: aliases }, (_, index) => `${alias(index)}: versions(first: ${page % 3}${filters[index % filters.length] ? `, ${filters[index % filters.length]}` : ''}) { totalCount } m${index}: memories(first: 0${index % 2 ? ', pathPrefix: "notes/"' : ''}) { totalCount }`).join(' ')} } }`;
        variables = { id: alice.store.id };
        break;
      }
      case 'alias-varied compiled reads':
        query = `{ ${alias(0)}: memoryStores(first: ${Math.min(page, 20)}) { ${alias(1)}: totalCount edges { ${alias(2)}: node { ${alias(3)}: id ${alias(4)}: name memories(first: 3) { edges { node { ${alias(5)}: path } } } } } } ${alias(6)}: memory(id: ${JSON.stringify(alice.memory.id)}) { ${alias(7)}: content } }`;
        break;
      default:
        query = 'query ($n: Int, $m: JSONObject, $o: MemoryOrder, $at: DateTime, $id: ID!) { memoryStore(id: $id) { memories(first: $n, orderBy: $o) { totalCount } versions(createdAfter: $at) { totalCount } } }';
        variables = { id: alice.store.id, [['n', 'm', 'o', 'at', 'id'][aliases % 5]!]: wrong };
    }
    return asJsonPost(`costly (${shape})`, toJson({ query, variables }), who);
  });

/** Valid and invalid operations with missing, malformed, unknown and foreign credentials. */
const authorizationRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.oneof(
      { arbitrary: badAuthorization.map((raw): Credential => ({ raw })), weight: 4 },
      { arbitrary: fc.constantFrom<Credential>({ key: 'bob' }, { key: 'identity' }, { key: 'revoked' }), weight: 2 },
      { arbitrary: fc.constantFrom('Bearer', 'bearer', 'BEARER', 'BeArEr').map((scheme): Credential => ({ raw: `${scheme}  TOKEN ` })), weight: 1 },
    ),
    fc.oneof(schemaOperation, fc.constant<Operation>({ query: GRAPHQL_QUERY, variables: {} })),
    fc.oneof(
      fc.constant<Record<string, string>>({}),
      fc.record({ 'x-request-id': fc.string({ maxLength: 200 }).map(headerSafe) }),
      fc.constant<Record<string, string>>({ cookie: 'session=abc', origin: 'https://evil.example' }),
      // A revalidation with a tag the server never gave (by any key): never a 304.
      fc.record({ 'if-none-match': fc.oneof(fc.constant('*'), fc.string({ maxLength: 200 }).map(headerSafe)) }),
    ),
  )
  .map(([who, operation, extra]) => {
    const resolved: Credential = 'raw' in who && who.raw !== null && who.raw.includes('TOKEN') ? { raw: who.raw.replace('TOKEN', '__ALICE__') } : who;
    return { ...asJsonPost('authorization', toJson({ query: operation.query, variables: operation.variables }), resolved), headers: { ...JSON_CONTENT, ...extra } };
  });

/** Batches: arrays of operations (valid, invalid and not operations at all). */
const batchRequest: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.array(
      fc.oneof(
        schemaOperation.map((operation) => ({ query: operation.query, variables: operation.variables }) as unknown),
        fc.constant<unknown>({ query: GRAPHQL_QUERY }),
        fc.constantFrom<unknown>(null, 1, 'x', [], {}, [{ query: '{ __typename }' }], { query: null }),
      ),
      { minLength: 0, maxLength: 12 },
    ),
    fc.integer({ min: 0, max: 9 }),
    credential,
  )
  .map(([operations, big, who]) => {
    // One batch in ten is large: the same valid operation a few hundred times.
    const items = big === 0 ? Array.from({ length: 300 }, () => ({ query: '{ __typename }' })) : operations;
    return asJsonPost('batched array', toJson(items), who);
  });

// ---------------------------------------------------------------------------------------
// The tests

beforeAll(async () => {
  const alice = await seedWorkspace(server);
  const bob = await seedWorkspace(server);
  // A second IDENTITY key, revoked: a credential that once worked.
  const revoked = await createKey(alice.admin, 'IDENTITY', alice.pair.identityId, 'revoked key');
  await alice.admin.send({ query: 'mutation($id: ID!) { revokeApiKey(input: { id: $id }) { __typename } }', variables: { id: revoked.id } });
  // A decoy ADMIN key the fuzzer may revoke; the keys it sends are kept out of the id pool.
  await createKey(alice.admin, 'ADMIN', undefined, 'decoy');
  // More stores with a memory each: archiving or deleting one (the fuzzer does) leaves others to write to.
  for (const workspace of [alice, bob]) {
    for (let index = 0; index < 4; index += 1) {
      const store = await createStore(workspace.admin, { name: `fuzz target ${index}`, metadata: { team: 'fuzz' } });
      await createMemory(workspace.admin, store.id, { path: `fuzz/seed-${index}.md`, content: `seed ${index}`, metadata: { topic: 'seed' } });
    }
  }
  const large = await createStore(alice.admin, { name: 'fuzz large contents' });
  for (let index = 0; index < 40; index += 1) {
    await createMemory(alice.admin, large.id, { path: `large/${index}.md`, content: `${index} ${'L'.repeat(100 * 1024 - 8)}`, metadata: { size: 'large' } });
  }
  // Kept out of the id pool: the keys the fuzzer sends, and the large store (a write of the fuzzer could delete it).
  const ownKeys = new Set([alice.adminKeyId, bob.adminKeyId, alice.identityKey.id, large.id]);
  const idsOfWorkspace = async (workspace: SeededWorkspace) =>
    [...idsInSnapshot(await tenantSnapshot(server.db, workspace.admin.workspaceId))].filter((id) => !ownKeys.has(id)).sort();
  const idsOf = { alice: await idsOfWorkspace(alice), bob: await idsOfWorkspace(bob) };
  seeded = {
    alice,
    bob,
    tokens: { alice: alice.admin.token!, bob: bob.admin.token!, identity: alice.identityKey.token, revoked: revoked.token },
    ids: [...idsOf.alice, ...idsOf.bob].sort(),
    idsOf,
    paths: [alice.memory.path, alice.deletedMemory.path, alice.agentPath, 'shared/guide.md', 'notes/', 'agent'],
    cursors: [...Object.values(alice.cursors), ...Object.values(bob.cursors)],
    externalIds: [alice.pair.identityId, alice.pair.templateId, bob.pair.identityId, bob.pair.templateId, 'idn_other', 'tmpl_other'],
    largeStoreId: large.id,
  };
});

afterAll(() => {
  const byKind = [...counts.entries()].sort(([a], [b]) => a.localeCompare(b));
  const statusesOf = (kind: string) =>
    [...(statuses.get(kind) ?? new Map<number, number>()).entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}×${count}`)
      .join(' ');
  console.log(
    [
      `[fuzz] ${totalRequests} requests (seed ${BASE_SEED}):`,
      ...byKind.map(([kind, count]) => `  ${String(count).padStart(6)}  ${kind.padEnd(36)} ${statusesOf(kind)}`),
      `  result types: ${[...resultTypes.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, count]) => `${name}×${count}`).join(' ')}`,
      `  masked internal errors: ${maskedErrors.length}`,
      `  slowest: ${slowest.map((entry) => `${entry.ms} ms ${entry.kind}`).join('; ')}`,
    ].join('\n'),
  );
});

describe('fuzzing the HTTP API', { timeout: 180_000 }, () => {
  // The authorization arbitrary marks the spot where alice's token goes after a scheme.
  const withAliceToken = (request: FuzzRequest): FuzzRequest =>
    'raw' in request.credential && request.credential.raw?.includes('__ALICE__')
      ? { ...request, credential: { raw: request.credential.raw.replace('__ALICE__', seeded.tokens.alice) } }
      : request;

  it('operations built from the schema, with right and wrong arguments', async () => {
    await fuzz('schema operations', 1, 3000, schemaRequest);
  });

  it('random variables', async () => {
    await fuzz('random variables', 2, 1000, variablesRequest);
  });

  it('malformed JSON bodies', async () => {
    await fuzz('malformed JSON', 3, 1500, malformedRequest);
  });

  it('wrong content types and accept headers', async () => {
    await fuzz('content types', 4, 1200, contentTypeRequest);
  });

  it('GET requests with query strings, and other methods', async () => {
    await fuzz('GET and other methods', 5, 1200, getRequest);
  });

  it('deep nesting of selections, fragments and values (50–500 levels)', async () => {
    await fuzz('deep nesting', 6, 400, deepRequest);
  });

  it('many aliases and fields', async () => {
    await fuzz('many aliases', 7, 150, aliasRequest);
  });

  it('requests built to cost the most under the limits: aliases × content, counts × filters, alias-varied compiled reads, coercion errors', async () => {
    await fuzz('costly requests', 10, 500, costlyRequest);
  });

  it('missing, malformed, unknown and foreign credentials', async () => {
    await fuzz('authorization', 8, 1000, authorizationRequest.map(withAliceToken));
  });

  it('batched arrays of operations', async () => {
    await fuzz('batches', 9, 800, batchRequest);
  });

  it('leaves the server alive and answering', async () => {
    const health = await server.app.fetch('http://memstore.test/healthz');
    expect(health.status).toBe(200);
    const response = await server.app.fetch('http://memstore.test/graphql', {
      method: 'POST',
      headers: { ...JSON_CONTENT, authorization: `Bearer ${seeded.tokens.alice}` },
      body: JSON.stringify({ query: 'query Alive($id: ID!) { memoryStore(id: $id) { id memory(path: "notes/live.md") { id } } memoryStores(first: 1) { totalCount } }', variables: { id: seeded.alice.store.id } }),
    });
    expect(response.status).toBe(200);
    const { data, errors } = (await response.json()) as { data?: any; errors?: unknown };
    expect(errors).toBeUndefined();
    expect(data.memoryStore?.id === seeded.alice.store.id || data.memoryStore === null).toBe(true);
    expect(data.memoryStores.totalCount).toBeGreaterThanOrEqual(0);
  });

  it('sent at least 10,000 requests', () => {
    expect(totalRequests).toBeGreaterThanOrEqual(runs(10_000));
  });

  it('meets no masked internal error on the way', () => {
    expect(maskedErrors.map(({ request, body }) => `${summarize(request, 400)}\n→ ${body}`)).toEqual([]);
  });
});
