/* eslint-disable */
import * as types from './graphql.js';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  mutation UpdateStore($input: UpdateMemoryStoreInput!) {\n    updateMemoryStore(input: $input) {\n      __typename\n      ... on UpdateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n": typeof types.UpdateStoreDocument,
    "\n  mutation ArchiveStore($id: ID!) {\n    archiveMemoryStore(input: { id: $id }) {\n      __typename\n      ... on ArchiveMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n": typeof types.ArchiveStoreDocument,
    "\n  mutation DeleteStore($id: ID!) {\n    deleteMemoryStore(input: { id: $id }) {\n      __typename\n      ... on DeleteMemoryStoreSuccess {\n        deletedMemoryStoreId\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n": typeof types.DeleteStoreDocument,
    "\n  query GetNode($id: ID!) {\n    node(id: $id) {\n      __typename\n      id\n      ... on MemoryStore {\n        name\n      }\n    }\n  }\n": typeof types.GetNodeDocument,
    "\n  query GetNodes($ids: [ID!]!) {\n    nodes(ids: $ids) {\n      __typename\n      id\n    }\n  }\n": typeof types.GetNodesDocument,
    "\n  fragment StoreFields on MemoryStore {\n    id\n    name\n    description\n    status\n    entryCount\n    totalSize\n    metadata\n    systemManaged\n    identityId\n    createdAt\n    updatedAt\n    archivedAt\n    bindingInfo {\n      identityTemplateCount\n    }\n  }\n": typeof types.StoreFieldsFragmentDoc,
    "\n  mutation CreateStore($input: CreateMemoryStoreInput!) {\n    createMemoryStore(input: $input) {\n      __typename\n      ... on CreateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n": typeof types.CreateStoreDocument,
    "\n  query GetStore($id: ID!) {\n    memoryStore(id: $id) {\n      ...StoreFields\n    }\n  }\n": typeof types.GetStoreDocument,
    "\n  query ListStores(\n    $first: Int\n    $last: Int\n    $after: String\n    $before: String\n    $status: MemoryStoreStatus\n    $systemManaged: Boolean\n    $namePrefix: String\n    $createdAfter: DateTime\n    $createdBefore: DateTime\n  ) {\n    memoryStores(\n      first: $first\n      last: $last\n      after: $after\n      before: $before\n      status: $status\n      systemManaged: $systemManaged\n      namePrefix: $namePrefix\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n    ) {\n      totalCount\n      edges {\n        cursor\n        node {\n          id\n          name\n          createdAt\n        }\n      }\n      pageInfo {\n        hasNextPage\n        hasPreviousPage\n        startCursor\n        endCursor\n      }\n    }\n  }\n": typeof types.ListStoresDocument,
};
const documents: Documents = {
    "\n  mutation UpdateStore($input: UpdateMemoryStoreInput!) {\n    updateMemoryStore(input: $input) {\n      __typename\n      ... on UpdateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n": types.UpdateStoreDocument,
    "\n  mutation ArchiveStore($id: ID!) {\n    archiveMemoryStore(input: { id: $id }) {\n      __typename\n      ... on ArchiveMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n": types.ArchiveStoreDocument,
    "\n  mutation DeleteStore($id: ID!) {\n    deleteMemoryStore(input: { id: $id }) {\n      __typename\n      ... on DeleteMemoryStoreSuccess {\n        deletedMemoryStoreId\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n": types.DeleteStoreDocument,
    "\n  query GetNode($id: ID!) {\n    node(id: $id) {\n      __typename\n      id\n      ... on MemoryStore {\n        name\n      }\n    }\n  }\n": types.GetNodeDocument,
    "\n  query GetNodes($ids: [ID!]!) {\n    nodes(ids: $ids) {\n      __typename\n      id\n    }\n  }\n": types.GetNodesDocument,
    "\n  fragment StoreFields on MemoryStore {\n    id\n    name\n    description\n    status\n    entryCount\n    totalSize\n    metadata\n    systemManaged\n    identityId\n    createdAt\n    updatedAt\n    archivedAt\n    bindingInfo {\n      identityTemplateCount\n    }\n  }\n": types.StoreFieldsFragmentDoc,
    "\n  mutation CreateStore($input: CreateMemoryStoreInput!) {\n    createMemoryStore(input: $input) {\n      __typename\n      ... on CreateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n": types.CreateStoreDocument,
    "\n  query GetStore($id: ID!) {\n    memoryStore(id: $id) {\n      ...StoreFields\n    }\n  }\n": types.GetStoreDocument,
    "\n  query ListStores(\n    $first: Int\n    $last: Int\n    $after: String\n    $before: String\n    $status: MemoryStoreStatus\n    $systemManaged: Boolean\n    $namePrefix: String\n    $createdAfter: DateTime\n    $createdBefore: DateTime\n  ) {\n    memoryStores(\n      first: $first\n      last: $last\n      after: $after\n      before: $before\n      status: $status\n      systemManaged: $systemManaged\n      namePrefix: $namePrefix\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n    ) {\n      totalCount\n      edges {\n        cursor\n        node {\n          id\n          name\n          createdAt\n        }\n      }\n      pageInfo {\n        hasNextPage\n        hasPreviousPage\n        startCursor\n        endCursor\n      }\n    }\n  }\n": types.ListStoresDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateStore($input: UpdateMemoryStoreInput!) {\n    updateMemoryStore(input: $input) {\n      __typename\n      ... on UpdateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateStore($input: UpdateMemoryStoreInput!) {\n    updateMemoryStore(input: $input) {\n      __typename\n      ... on UpdateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ArchiveStore($id: ID!) {\n    archiveMemoryStore(input: { id: $id }) {\n      __typename\n      ... on ArchiveMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation ArchiveStore($id: ID!) {\n    archiveMemoryStore(input: { id: $id }) {\n      __typename\n      ... on ArchiveMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DeleteStore($id: ID!) {\n    deleteMemoryStore(input: { id: $id }) {\n      __typename\n      ... on DeleteMemoryStoreSuccess {\n        deletedMemoryStoreId\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation DeleteStore($id: ID!) {\n    deleteMemoryStore(input: { id: $id }) {\n      __typename\n      ... on DeleteMemoryStoreSuccess {\n        deletedMemoryStoreId\n      }\n      ... on Error {\n        code\n        message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query GetNode($id: ID!) {\n    node(id: $id) {\n      __typename\n      id\n      ... on MemoryStore {\n        name\n      }\n    }\n  }\n"): (typeof documents)["\n  query GetNode($id: ID!) {\n    node(id: $id) {\n      __typename\n      id\n      ... on MemoryStore {\n        name\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query GetNodes($ids: [ID!]!) {\n    nodes(ids: $ids) {\n      __typename\n      id\n    }\n  }\n"): (typeof documents)["\n  query GetNodes($ids: [ID!]!) {\n    nodes(ids: $ids) {\n      __typename\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment StoreFields on MemoryStore {\n    id\n    name\n    description\n    status\n    entryCount\n    totalSize\n    metadata\n    systemManaged\n    identityId\n    createdAt\n    updatedAt\n    archivedAt\n    bindingInfo {\n      identityTemplateCount\n    }\n  }\n"): (typeof documents)["\n  fragment StoreFields on MemoryStore {\n    id\n    name\n    description\n    status\n    entryCount\n    totalSize\n    metadata\n    systemManaged\n    identityId\n    createdAt\n    updatedAt\n    archivedAt\n    bindingInfo {\n      identityTemplateCount\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateStore($input: CreateMemoryStoreInput!) {\n    createMemoryStore(input: $input) {\n      __typename\n      ... on CreateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateStore($input: CreateMemoryStoreInput!) {\n    createMemoryStore(input: $input) {\n      __typename\n      ... on CreateMemoryStoreSuccess {\n        memoryStore {\n          ...StoreFields\n        }\n      }\n      ... on Error {\n        code\n        message\n      }\n      ... on InvalidRequestError {\n        issues {\n          field\n          message\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query GetStore($id: ID!) {\n    memoryStore(id: $id) {\n      ...StoreFields\n    }\n  }\n"): (typeof documents)["\n  query GetStore($id: ID!) {\n    memoryStore(id: $id) {\n      ...StoreFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ListStores(\n    $first: Int\n    $last: Int\n    $after: String\n    $before: String\n    $status: MemoryStoreStatus\n    $systemManaged: Boolean\n    $namePrefix: String\n    $createdAfter: DateTime\n    $createdBefore: DateTime\n  ) {\n    memoryStores(\n      first: $first\n      last: $last\n      after: $after\n      before: $before\n      status: $status\n      systemManaged: $systemManaged\n      namePrefix: $namePrefix\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n    ) {\n      totalCount\n      edges {\n        cursor\n        node {\n          id\n          name\n          createdAt\n        }\n      }\n      pageInfo {\n        hasNextPage\n        hasPreviousPage\n        startCursor\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query ListStores(\n    $first: Int\n    $last: Int\n    $after: String\n    $before: String\n    $status: MemoryStoreStatus\n    $systemManaged: Boolean\n    $namePrefix: String\n    $createdAfter: DateTime\n    $createdBefore: DateTime\n  ) {\n    memoryStores(\n      first: $first\n      last: $last\n      after: $after\n      before: $before\n      status: $status\n      systemManaged: $systemManaged\n      namePrefix: $namePrefix\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n    ) {\n      totalCount\n      edges {\n        cursor\n        node {\n          id\n          name\n          createdAt\n        }\n      }\n      pageInfo {\n        hasNextPage\n        hasPreviousPage\n        startCursor\n        endCursor\n      }\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;