import { describe, expect, it } from 'vitest';
import { newId } from '../src/domain/ids.js';
import { MAX_NODE_IDS } from '../src/domain/limits.js';
import { graphql } from './generated/gql.js';
import { createStore } from './support/builders.js';
import { GetStore } from './support/documents.js';
import { useTestServer } from './support/server.js';

const server = useTestServer();

const GetNode = graphql(`
  query GetNode($id: ID!) {
    node(id: $id) {
      __typename
      id
      ... on MemoryStore {
        name
      }
    }
  }
`);

const GetNodes = graphql(`
  query GetNodes($ids: [ID!]!) {
    nodes(ids: $ids) {
      __typename
      id
    }
  }
`);

describe('node and nodes', () => {
  it('answers a store by its prefixed id, used unchanged as the node id', async () => {
    const client = await server.newWorkspace();
    const store = await createStore(client, { name: 'by node' });
    const { node } = await client.data(GetNode, { id: store.id });
    expect(node).toEqual({ __typename: 'MemoryStore', id: store.id, name: 'by node' });
  });

  it('answers null for unknown prefixes, malformed ids, missing objects and other workspaces', async () => {
    const client = await server.newWorkspace();
    const other = await server.newWorkspace();
    const foreign = await createStore(other);
    for (const id of ['', 'x', 'memstore_', 'memstore_TOOSHORT', `${newId('memoryStore')}x`, 'idn_abc', newId('memoryStore'), foreign.id, 'mem_00000000000000000000']) {
      const response = await client.execute(GetNode, { id });
      expect(response.errors, id).toBeUndefined();
      expect(response.data?.node, id).toBeNull();
    }
  });

  it('answers nodes in the order asked, with null for each id node would not answer', async () => {
    const client = await server.newWorkspace();
    const first = await createStore(client);
    const second = await createStore(client);
    const { nodes } = await client.data(GetNodes, { ids: [second.id, 'bogus', first.id, second.id] });
    expect(nodes.map((node) => node?.id ?? null)).toEqual([second.id, null, first.id, second.id]);
  });

  it(`refuses more than ${MAX_NODE_IDS} ids as a request error`, async () => {
    const client = await server.newWorkspace();
    const ok = await client.execute(GetNodes, { ids: Array.from({ length: MAX_NODE_IDS }, () => 'x') });
    expect(ok.errors).toBeUndefined();
    const tooMany = await client.execute(GetNodes, { ids: Array.from({ length: MAX_NODE_IDS + 1 }, () => 'x') });
    expect(tooMany.errors?.[0]?.extensions?.code).toBe('INVALID_REQUEST');
  });

  it('memoryStore(id) answers null rather than an error for odd ids', async () => {
    const client = await server.newWorkspace();
    const response = await client.execute(GetStore, { id: 'mem_whatever' });
    expect(response.errors).toBeUndefined();
    expect(response.data?.memoryStore).toBeNull();
  });
});
