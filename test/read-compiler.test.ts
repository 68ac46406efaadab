import { getNamedType, getNullableType, isListType, isObjectType, isScalarType, parse, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { kindsAllowedToTakeAll } from '../src/domain/access.js';
import { DEFAULT_PAGE_SIZE, MAX_RESPONSE_BYTES, SEARCH_QUERY_MAX_CHARACTERS } from '../src/domain/limits.js';
import { EXPOSED_FIELDS, MEMORY_STORE_FIELDS } from '../src/graphql/exposed-fields.js';
import { schema } from '../src/graphql/schema.js';
import { MAX_KEYS_PER_OBJECT, planRead, type ReadPlan } from '../src/read-compiler/plan.js';
import { keyKindsOf } from '../src/read-compiler/compile.js';
import { SEARCH_FIELD, SEARCH_SHAPE } from '../src/read-compiler/search-plan.js';
import { searchCursorOf, searchName } from '../src/domain/search.js';
import { statementOf, TOKEN_PLACEHOLDER } from '../src/read-compiler/sql.js';

// The read compiler without a database: the plan step's structure and refusals, the SQL
// step's text, and the declarations both share held to the schema.

const STORE_ID = 'memstore_0123456789abcdefghij';
const MEMORY_ID = 'mem_0123456789abcdefghij';

function plan(query: string, variables: Record<string, unknown> = {}): ReadPlan | null {
  const document = parse(query);
  const operation = document.definitions.find((definition) => definition.kind === 'OperationDefinition') as OperationDefinitionNode;
  return planRead(document, operation, variables);
}

function statement(query: string, variables: Record<string, unknown> = {}) {
  const read = plan(query, variables);
  if (!read) throw new Error('not planned');
  const { allowed, marked } = keyKindsOf(read);
  return statementOf(read, allowed, marked).toQuery();
}

const DASHBOARD = `
  query CompiledDashboard {
    memoryStores(first: 10) {
      totalCount
      pageInfo { hasNextPage }
      edges { node { id name status entryCount updatedAt memories(first: 5, pathPrefix: "notes/") { totalCount edges { node { path contentSizeBytes } } } } }
    }
  }
`;

describe('the plan step of the read compiler', () => {
  it('plans a dashboard query as nested connections of exposed fields, with the actions it reads', () => {
    const read = plan(DASHBOARD)!;
    expect(read).not.toBeNull();
    expect(read.fields).toHaveLength(1);
    const stores = read.fields[0]!;
    expect(stores).toMatchObject({ key: { name: 'memoryStores', alias: null }, kind: 'list' });
    if (stores.kind !== 'list') throw new Error('not a list');
    expect(stores.connection.size).toBe(10);
    expect(stores.connection.typeName).toBe('MemoryStoreConnection');
    expect(stores.connection.fields.map((field) => field.kind)).toEqual(['totalCount', 'pageInfo', 'edges']);
    const edges = stores.connection.fields[2]!;
    if (edges.kind !== 'edges') throw new Error('no edges');
    const node = edges.fields[0]!;
    if (node.kind !== 'node') throw new Error('no node');
    expect(node.object.typeName).toBe('MemoryStore');
    expect(node.object.fields.map((field) => field.key.name)).toEqual(['id', 'name', 'status', 'entryCount', 'updatedAt', 'memories']);
    const memories = node.object.fields[5]!;
    if (memories.kind !== 'connection') throw new Error('no memories');
    expect(memories.connection.size).toBe(5);
    expect(memories.connection.pathFilter?.range).toEqual({ kind: 'range', from: 'notes/', below: 'notes0' });
    // A prefix filter: the store's counter does not answer totalCount.
    expect(memories.connection.keptCount).toBeNull();
    expect(read.actions.map((action) => action.type).sort()).toEqual(['memories.read', 'memoryStores.read']);
  });

  it('answers totalCount of a store\'s unfiltered memories from its kept counter', () => {
    const read = plan(`{ memoryStores { edges { node { memories { totalCount } } } } }`)!;
    const stores = read.fields[0]!;
    if (stores.kind !== 'list') throw new Error('not a list');
    expect(stores.connection.size).toBe(DEFAULT_PAGE_SIZE);
    const edges = stores.connection.fields[0]!;
    if (edges.kind !== 'edges' || edges.fields[0]!.kind !== 'node') throw new Error('no node');
    const memories = edges.fields[0]!.object.fields[0]!;
    if (memories.kind !== 'connection') throw new Error('no memories');
    expect(memories.connection.keptCount?.name).toBe('entry_count');
  });

  it('keeps aliases as response keys and inlines fragments on the same type', () => {
    const read = plan(`
      query { one: memoryStore(id: "${STORE_ID}") { ...Store label: name } }
      fragment Store on MemoryStore { id ... on MemoryStore { createdAt } }
    `)!;
    const single = read.fields[0]!;
    expect(single).toMatchObject({ kind: 'single', id: STORE_ID, key: { name: 'memoryStore', alias: 'one' } });
    if (single.kind !== 'single') throw new Error('not single');
    expect(single.object.fields.map((field) => [field.key.name, field.key.alias])).toEqual([
      ['id', null],
      ['createdAt', null],
      ['name', 'label'],
    ]);
  });

  it('plans an id of another kind, or a malformed one, as null without a read', () => {
    expect(plan(`{ memoryStore(id: "${MEMORY_ID}") { id } }`)!.fields[0]).toMatchObject({ kind: 'none' });
    expect(plan(`{ memory(id: "not-an-id") { id } }`)!.fields[0]).toMatchObject({ kind: 'none' });
    expect(plan(`query ($id: ID!) { memory(id: $id) { id } }`, { id: MEMORY_ID })!.fields[0]).toMatchObject({ kind: 'single', id: MEMORY_ID });
  });

  it.each([
    ['a mutation', `mutation { archiveMemoryStore(id: "${STORE_ID}") { __typename } }`],
    ['a subscription-like root field it does not know', `{ viewer { __typename } }`],
    ['a cursor', `{ memoryStores(after: "abc") { edges { node { id } } } }`],
    ['paging backwards', `{ memoryStores(last: 2) { edges { node { id } } } }`],
    ['a filter it does not cover', `{ memoryStores(first: 2, includeArchived: true) { edges { node { id } } } }`],
    ['a field outside the declarations', `{ memoryStore(id: "${STORE_ID}") { id mounts { totalCount } } }`],
    ['a field with arguments', `{ memoryStore(id: "${STORE_ID}") { memoryAt(path: "a") { id } } }`],
    ['an edge cursor', `{ memoryStores { edges { cursor node { id } } } }`],
    ['pageInfo cursors', `{ memoryStores { pageInfo { endCursor } } }`],
    ['a directive on a field', `{ memoryStore(id: "${STORE_ID}") { id @include(if: true) } }`],
    ['a directive on the operation', `query @deprecated { memoryStores { totalCount } }`],
    ['a response key repeated for different selections', `{ memoryStore(id: "${STORE_ID}") { id: name id } }`],
    ['a connection repeated under one key', `{ memoryStores { totalCount } memoryStores { totalCount } }`],
    ['a fragment on another type', `{ memoryStore(id: "${STORE_ID}") { ... on Memory { id } } }`],
    ['a page size out of range', `{ memoryStores(first: 101) { totalCount } }`],
    ['an unknown order', `{ memoryStore(id: "${STORE_ID}") { memories(orderBy: SIDEWAYS) { totalCount } } }`],
  ])('leaves %s to the resolvers (no plan)', (_what, query) => {
    expect(plan(query)).toBeNull();
  });

  it('leaves aliases longer than the worst bytes count to the resolvers', () => {
    expect(plan(`{ memoryStores(first: 100) { edges { node { ${'a'.repeat(32)}: id } } } }`)).not.toBeNull();
    expect(plan(`{ memoryStores(first: 100) { edges { node { ${'a'.repeat(33)}: id } } } }`)).toBeNull();
    expect(plan(`{ searchMemories(query: "fox") { edges { ${'e'.repeat(33)}: score } } }`)).toBeNull();
  });

  it(`leaves objects of more than ${MAX_KEYS_PER_OBJECT} keys to the resolvers`, () => {
    const fields = (count: number) => Array.from({ length: count }, (_, index) => `k${index}: id`).join(' ');
    expect(plan(`{ memoryStore(id: "${STORE_ID}") { ${fields(MAX_KEYS_PER_OBJECT)} } }`)).not.toBeNull();
    expect(plan(`{ memoryStore(id: "${STORE_ID}") { ${fields(MAX_KEYS_PER_OBJECT + 1)} } }`)).toBeNull();
  });

  it('counts the worst bytes of an answer by the pages around each field', () => {
    const one = plan(`{ memoryStores(first: 1) { edges { node { description } } } }`)!.worstBytes;
    const ten = plan(`{ memoryStores(first: 10) { edges { node { description } } } }`)!.worstBytes;
    expect(ten - one).toBe(9 * MEMORY_STORE_FIELDS.description.worstBytes);
    // 100 memories' content can pass the response budget: such a query is left to the resolvers.
    expect(plan(`{ memoryStore(id: "${STORE_ID}") { memories(first: 100) { edges { node { content } } } } }`)!.worstBytes).toBeGreaterThan(MAX_RESPONSE_BYTES);
  });

  it('plans the first page of a search: its filter, size and selection, its nodes as any memory, snippets only when shown', () => {
    const searched = plan(`query ($q: String!) { __typename searchMemories(query: $q, first: 3, memoryStoreId: "${STORE_ID}", pathPrefix: "notes/") {
      totalCount pageInfo { hasNextPage endCursor } edges { cursor score snippet { text matches { start end } } node { id path } } } }`, { q: 'fox dog' })!;
    expect(searched.actions.map((action) => action.type)).toEqual(['memories.read']);
    const field = searched.fields[1]!;
    if (field.kind !== 'search') throw new Error(`planned as ${field.kind}`);
    expect(field.search.filter).toEqual({ query: 'fox dog', memoryStoreId: STORE_ID, pathPrefix: 'notes/' });
    expect(field.search.size).toBe(3);
    expect(field.search.snippets).toBe(true);
    expect(field.search.fields.map((selected) => [selected.key.name, selected.kind])).toEqual([['totalCount', 'leaf'], ['pageInfo', 'object'], ['edges', 'object']]);
    const bare = plan('{ searchMemories(query: "fox") { edges { node { id } } } }')!.fields[0]!;
    expect(bare.kind === 'search' && bare.search.snippets).toBe(false);
    expect(bare.kind === 'search' && bare.search.size).toBe(DEFAULT_PAGE_SIZE);
    expect(bare.kind === 'search' && bare.search.after).toBeNull();
    // A later page: after a cursor of the same search (another search's is the resolvers' to refuse).
    const cursor = searchCursorOf(searchName({ query: 'fox' }), 1.5, 'a.md', MEMORY_ID);
    const later = plan('query ($after: String) { searchMemories(query: "fox", after: $after) { edges { node { id } } } }', { after: cursor })!.fields[0]!;
    expect(later.kind === 'search' && later.search.after).toEqual({ score: 1.5, path: 'a.md', id: MEMORY_ID });
    expect(plan('query ($after: String) { searchMemories(query: "dog", after: $after) { edges { node { id } } } }', { after: cursor })).toBeNull();
  });

  it('leaves to the resolvers a search they refuse, a later page, and what the search plan does not cover', () => {
    for (const query of [
      '{ searchMemories(query: "") { totalCount } }',
      `{ searchMemories(query: "${'x'.repeat(SEARCH_QUERY_MAX_CHARACTERS + 1)}") { totalCount } }`,
      '{ searchMemories(query: "fox", memoryStoreId: "mem_0123456789abcdefghij") { totalCount } }',
      '{ searchMemories(query: "fox", first: 101) { totalCount } }',
      '{ searchMemories(query: "fox", after: "c2VhcmNo") { totalCount } }',
      '{ searchMemories(query: "fox") { edges { node { latestVersion { id } } } } }',
      '{ searchMemories(query: "fox") { edges { snippet { text @include(if: true) } } } }',
      '{ searchMemories(query: "fox") { edges { snippet } } }',
      '{ searchMemories(query: "fox") { totalCount { x } } }',
    ]) expect(plan(query), query).toBeNull();
  });

  it('counts the worst bytes of a search by its page: 100 hits\' content can pass the response budget', () => {
    const one = plan('{ searchMemories(query: "fox", first: 1) { edges { snippet { text } } } }')!.worstBytes;
    const ten = plan('{ searchMemories(query: "fox", first: 10) { edges { snippet { text } } } }')!.worstBytes;
    expect(ten - one).toBe(9 * (ten - plan('{ searchMemories(query: "fox", first: 9) { edges { snippet { text } } } }')!.worstBytes));
    expect(ten - one).toBeGreaterThan(9 * 1200);
    expect(plan('{ searchMemories(query: "fox", first: 100) { edges { node { content } } } }')!.worstBytes).toBeGreaterThan(MAX_RESPONSE_BYTES);
  });
});

describe('the SQL step of the read compiler', () => {
  it('writes the dashboard as one statement (snapshot)', () => {
    const { text, params } = statement(DASHBOARD);
    expect(text).toMatchSnapshot();
    expect(params.filter((param) => param === TOKEN_PLACEHOLDER)).toHaveLength(1);
  });

  it('writes a memory with its versions as one statement (snapshot)', () => {
    const { text } = statement(`{ memory(id: "${MEMORY_ID}") { path content metadata versions(first: 3) { totalCount pageInfo { hasNextPage hasPreviousPage } edges { node { operation redacted content createdAt } } } } }`);
    expect(text).toMatchSnapshot();
  });

  it('writes ids, sizes, prefixes and aliases as parameters, so the text depends only on the shape', () => {
    const one = statement(`{ a: memoryStore(id: "${STORE_ID}") { x: name memories(first: 2, pathPrefix: "a/") { totalCount } } }`);
    const other = statement(`{ b: memoryStore(id: "memstore_zzzzzzzzzzzzzzzzzzzz") { y: name memories(first: 2, pathPrefix: "zz/") { totalCount } } }`);
    expect(other.text).toBe(one.text);
    expect(other.params).not.toEqual(one.params);
    // No value of the query appears in the text itself.
    for (const value of [STORE_ID, 'a/', '"x"']) expect(one.text).not.toContain(value);
  });

  it('lets only the kinds of key the access policy allows read the data', () => {
    const { text } = statement(`{ memoryStores { totalCount } }`);
    const allowed = kindsAllowedToTakeAll([{ type: 'memoryStores.read' }]);
    expect(allowed.length).toBeGreaterThan(0);
    expect(text).toContain(`in (${allowed.map((kind) => `'${kind}'`).join(', ')})`);
    expect(statementOf(plan(`{ memoryStores { totalCount } }`)!, [], []).toQuery().text).toContain('case when false then');
  });
});

describe('the declared fields of compiled reads', () => {
  const entries = Object.entries(EXPOSED_FIELDS).flatMap(([typeName, fields]) => Object.entries(fields).map(([name, field]) => [typeName, name, field] as const));

  it.each(entries)('%s.%s exists in the schema with the declared type', (typeName, name, field) => {
    const type = schema.getType(typeName);
    if (!isObjectType(type)) throw new Error(`${typeName} is not an object type`);
    const schemaField = type.getFields()[name];
    expect(schemaField, `${typeName}.${name}`).toBeDefined();
    expect(String(schemaField!.type)).toBe(field.type);
    expect(schemaField!.args).toEqual([]);
  });

  it('declares every enum it renders with the schema enum\'s values', () => {
    for (const [, , field] of entries) {
      if (field.rendering.kind !== 'enum') continue;
      const type = getNamedType(schema.getType(field.rendering.enumeration.name)!);
      expect(type.toString()).toBe(field.rendering.enumeration.name);
      const values = (type as import('graphql').GraphQLEnumType).getValues().map((value) => [value.name, value.value]);
      const declared = Object.entries(field.rendering.enumeration.values).map(([name, { value }]) => [name, value]);
      // The schema is printed in sorted order.
      expect(values.sort()).toEqual(declared.sort());
    }
  });

  it('declares every enum it renders with exactly the values its column can hold (the statement compares them as the column\'s type: a value the column lacks would fail every statement)', () => {
    const rendered = entries.filter(([, , field]) => field.rendering.kind === 'enum');
    expect(rendered.length).toBeGreaterThan(0);
    for (const [typeName, name, field] of rendered) {
      if (field.rendering.kind !== 'enum') continue;
      const stored = Object.values(field.rendering.enumeration.values).map(({ value }) => value);
      const { enumValues } = field.column as unknown as { enumValues?: string[] };
      expect(enumValues, `${typeName}.${name}: not an enum column`).toBeDefined();
      expect([...stored].sort(), `${typeName}.${name}`).toEqual([...enumValues!].sort());
    }
  });
});

describe('the declared shape of compiled searches', () => {
  it('names each field of MemorySearchConnection it covers with the schema\'s type: objects and lists as declared, leaves as scalars, nodes as Memory', () => {
    const check = (typeName: string, fields: NonNullable<typeof SEARCH_SHAPE.fields>) => {
      const type = schema.getType(typeName);
      if (!isObjectType(type)) throw new Error(`${typeName} is not an object type`);
      for (const [name, shape] of Object.entries(fields)) {
        const field = type.getFields()[name];
        expect(field, `${typeName}.${name}`).toBeDefined();
        expect(field!.args, `${typeName}.${name}`).toEqual([]);
        const named = getNamedType(field!.type);
        expect(isListType(getNullableType(field!.type)), `${typeName}.${name}`).toBe(shape.list !== undefined);
        if (shape.node) expect(named.name).toBe('Memory');
        else if (shape.fields) {
          expect(named.name, `${typeName}.${name}`).toBe(shape.typeName);
          check(shape.typeName!, shape.fields);
        } else expect(isScalarType(named), `${typeName}.${name}`).toBe(true);
      }
    };
    const search = schema.getQueryType()!.getFields()[SEARCH_FIELD]!;
    expect(getNamedType(search.type).name).toBe(SEARCH_SHAPE.typeName);
    check(SEARCH_SHAPE.typeName!, SEARCH_SHAPE.fields!);
  });
});
