import { graphql } from '../generated/gql.js';

/** Operations shared by several test files. File-specific ones live in their test file. */

/** What list tests read of a page's position. */
export const PageFields = graphql(`
  fragment PageFields on PageInfo {
    hasNextPage
    hasPreviousPage
    startCursor
    endCursor
  }
`);

/** What every mutation test reads of an error: its code and message, and the details some carry. */
export const ErrorFields = graphql(`
  fragment ErrorFields on Error {
    code
    message
    ... on InvalidRequestError {
      issues {
        field
        message
      }
    }
    ... on PreconditionFailedError {
      currentContentSha256
    }
  }
`);

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
      ...ErrorFields
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
        ...PageFields
      }
    }
  }
`);

export const ArchiveStore = graphql(`
  mutation ArchiveStore($id: ID!) {
    archiveMemoryStore(input: { id: $id }) {
      __typename
      ... on ArchiveMemoryStoreSuccess {
        memoryStore {
          ...StoreFields
        }
      }
      ... on Error {
        code
        message
      }
    }
  }
`);

export const MemoryFields = graphql(`
  fragment MemoryFields on Memory {
    id
    memoryStoreId
    path
    content
    contentSizeBytes
    contentSha256
    metadata
    createdAt
    updatedAt
  }
`);

export const VersionFields = graphql(`
  fragment VersionFields on MemoryVersion {
    id
    memoryStoreId
    memoryId
    path
    content
    contentSizeBytes
    contentSha256
    operation
    redacted
    redactedAt
    createdAt
    createdBy {
      __typename
      ... on ApiKeyActor {
        apiKeyId
      }
    }
    redactedBy {
      __typename
      ... on ApiKeyActor {
        apiKeyId
      }
    }
  }
`);

export const CreateMemory = graphql(`
  mutation CreateMemory($input: CreateMemoryInput!) {
    createMemory(input: $input) {
      __typename
      ... on CreateMemorySuccess {
        memory {
          ...MemoryFields
        }
      }
      ...ErrorFields
    }
  }
`);

export const UpdateMemory = graphql(`
  mutation UpdateMemory($input: UpdateMemoryInput!) {
    updateMemory(input: $input) {
      __typename
      ... on UpdateMemorySuccess {
        memory {
          ...MemoryFields
        }
      }
      ...ErrorFields
    }
  }
`);

export const DeleteMemory = graphql(`
  mutation DeleteMemory($input: DeleteMemoryInput!) {
    deleteMemory(input: $input) {
      __typename
      ... on DeleteMemorySuccess {
        deletedMemoryId
        version {
          ...VersionFields
        }
      }
      ...ErrorFields
    }
  }
`);

export const GetMemory = graphql(`
  query GetMemory($id: ID!) {
    memory(id: $id) {
      ...MemoryFields
    }
  }
`);

export const MemoryAtPath = graphql(`
  query MemoryAtPath($storeId: ID!, $path: String!) {
    memoryStore(id: $storeId) {
      memory(path: $path) {
        id
        path
      }
    }
  }
`);

export const StoreVersions = graphql(`
  query StoreVersions(
    $storeId: ID!
    $first: Int
    $last: Int
    $after: String
    $before: String
    $memoryId: ID
    $operation: MemoryOperation
    $createdAfter: DateTime
    $createdBefore: DateTime
  ) {
    memoryStore(id: $storeId) {
      versions(
        first: $first
        last: $last
        after: $after
        before: $before
        memoryId: $memoryId
        operation: $operation
        createdAfter: $createdAfter
        createdBefore: $createdBefore
      ) {
        totalCount
        edges {
          cursor
          node {
            id
            memoryId
            path
            operation
            content
            createdAt
          }
        }
        pageInfo {
          ...PageFields
        }
      }
    }
  }
`);

export const MountFields = graphql(`
  fragment MountFields on MemoryStoreMount {
    memoryStoreId
    memoryStore {
      id
    }
    identityId
    templateId
    access
    systemManaged
    name
    status
    entryCount
    createdAt
  }
`);

export const MountStore = graphql(`
  mutation MountStore($input: MountMemoryStoreInput!) {
    mountMemoryStore(input: $input) {
      __typename
      ... on MountMemoryStoreSuccess {
        mount {
          ...MountFields
        }
      }
      ...ErrorFields
    }
  }
`);

export const UnmountStore = graphql(`
  mutation UnmountStore($input: UnmountMemoryStoreInput!) {
    unmountMemoryStore(input: $input) {
      __typename
      ... on UnmountMemoryStoreSuccess {
        unmountedMemoryStoreId
      }
      ...ErrorFields
    }
  }
`);

export const PairMounts = graphql(`
  query PairMounts($identityId: ID!, $templateId: ID!, $first: Int, $after: String, $last: Int, $before: String) {
    memoryStoreMounts(identityId: $identityId, templateId: $templateId, first: $first, after: $after, last: $last, before: $before) {
      totalCount
      edges {
        cursor
        node {
          ...MountFields
        }
      }
      pageInfo {
        ...PageFields
      }
    }
  }
`);

export const SessionFields = graphql(`
  fragment SessionFields on Session {
    id
    identityId
    templateId
    environment
    createdAt
    memoryInjected
    defaultMemoryStore {
      ...StoreFields
    }
    mounts {
      ...MountFields
    }
  }
`);

export const StartSession = graphql(`
  mutation StartSession($input: CreateSessionInput!) {
    createSession(input: $input) {
      __typename
      ... on CreateSessionSuccess {
        session {
          ...SessionFields
        }
      }
      ...ErrorFields
    }
  }
`);

export const GetSession = graphql(`
  query GetSession($id: ID!) {
    session(id: $id) {
      ...SessionFields
    }
  }
`);

export const DeleteStore = graphql(`
  mutation DeleteStore($id: ID!) {
    deleteMemoryStore(input: { id: $id }) {
      __typename
      ... on DeleteMemoryStoreSuccess {
        deletedMemoryStoreId
      }
      ... on Error {
        code
        message
      }
    }
  }
`);
