import { graphql } from '../generated/gql.js';

/** Operations shared by several test files. File-specific ones live in their test file. */

export const StoreFields = graphql(`
  fragment StoreFields on MemoryStore {
    id
    name
    description
    status
    entryCount
    totalSize
    metadata
    systemManaged
    identityId
    createdAt
    updatedAt
    archivedAt
    bindingInfo {
      identityTemplateCount
    }
  }
`);

export const CreateStore = graphql(`
  mutation CreateStore($input: CreateMemoryStoreInput!) {
    createMemoryStore(input: $input) {
      __typename
      ... on CreateMemoryStoreSuccess {
        memoryStore {
          ...StoreFields
        }
      }
      ... on Error {
        code
        message
      }
      ... on InvalidRequestError {
        issues {
          field
          message
        }
      }
    }
  }
`);

export const GetStore = graphql(`
  query GetStore($id: ID!) {
    memoryStore(id: $id) {
      ...StoreFields
    }
  }
`);

export const ListStores = graphql(`
  query ListStores(
    $first: Int
    $last: Int
    $after: String
    $before: String
    $status: MemoryStoreStatus
    $systemManaged: Boolean
    $namePrefix: String
    $createdAfter: DateTime
    $createdBefore: DateTime
  ) {
    memoryStores(
      first: $first
      last: $last
      after: $after
      before: $before
      status: $status
      systemManaged: $systemManaged
      namePrefix: $namePrefix
      createdAfter: $createdAfter
      createdBefore: $createdBefore
    ) {
      totalCount
      edges {
        cursor
        node {
          id
          name
          createdAt
        }
      }
      pageInfo {
        hasNextPage
        hasPreviousPage
        startCursor
        endCursor
      }
    }
  }
`);
