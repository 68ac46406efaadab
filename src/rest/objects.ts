import type { MemoryRecord, MemorySummary } from '../domain/memories/records.js';
import type { MountRecord } from '../domain/mounts.js';
import type { MemoryStoreRecord } from '../domain/stores.js';
import type { MemoryVersionRecord, MemoryVersionSummary } from '../domain/versions.js';

/**
 * The objects of the Forward REST API (FORWARD-REST.md, "Objects"), made from the same
 * records GraphQL answers with: snake_case names, lower-case enums, RFC 3339 UTC instants,
 * every field present (null when unset). Metadata keeps the one key order the database
 * stores (jsonb), as GraphQL's JSONObject does.
 */

const instant = (value: Date) => value.toISOString();
const instantOrNull = (value: Date | null) => (value === null ? null : value.toISOString());

export function memoryStoreObject(store: MemoryStoreRecord, identityTemplateCount: number) {
  return {
    id: store.id,
    type: 'memory_store' as const,
    name: store.name,
    description: store.description,
    status: store.status,
    entry_count: store.entryCount,
    total_size: store.totalSize,
    metadata: store.metadata,
    system_managed: store.systemManaged,
    identity_id: store.identityId,
    created_at: instant(store.createdAt),
    updated_at: instant(store.updatedAt),
    archived_at: instantOrNull(store.archivedAt),
    binding_info: { identity_template_count: identityTemplateCount },
  };
}

/** A memory; `content` only when the record holds it (create, get, update), never in list items. */
export function memoryObject(memory: MemoryRecord | MemorySummary, withContent: boolean) {
  return {
    id: memory.id,
    type: 'memory' as const,
    memory_store_id: memory.memoryStoreId,
    path: memory.path,
    ...(withContent ? { content: memory.content ?? '' } : {}),
    content_size_bytes: memory.contentSizeBytes,
    content_sha256: memory.contentSha256,
    metadata: memory.metadata,
    created_at: instant(memory.createdAt),
    updated_at: instant(memory.updatedAt),
  };
}

/** A version; `content` (null once redacted) on get and redact, never in list items. */
export function memoryVersionObject(version: MemoryVersionRecord | MemoryVersionSummary, withContent: boolean) {
  const redacted = version.redactedAt !== null;
  return {
    id: version.id,
    type: 'memory_version' as const,
    memory_store_id: version.memoryStoreId,
    memory_id: version.memoryId,
    path: version.path,
    ...(withContent ? { content: redacted ? null : (version.content ?? null) } : {}),
    content_size_bytes: version.contentSizeBytes,
    content_sha256: version.contentSha256,
    operation: version.operation,
    redacted,
    redacted_at: instantOrNull(version.redactedAt),
    created_at: instant(version.createdAt),
    created_by: version.createdByApiKeyId !== null ? { type: 'api_key', api_key_id: version.createdByApiKeyId } : { type: 'session', session_id: version.createdBySessionId },
  };
}

/** The store's name, status and entry count as the mount shows them: read from the store, best effort ("", "", 0). */
export interface MountedStoreSummary {
  name: string;
  status: string;
  entryCount: number;
}

export function mountObject(mount: MountRecord, store: MountedStoreSummary | undefined) {
  return {
    memory_store_id: mount.memoryStoreId,
    identity_id: mount.identityId,
    template_id: mount.templateId,
    access: mount.access,
    system_managed: mount.systemManaged,
    name: store?.name ?? '',
    status: store?.status ?? '',
    entry_count: store?.entryCount ?? 0,
    created_at: instant(mount.createdAt),
  };
}

export type DeletionMarkerType = 'memory_store_deleted' | 'memory_deleted' | 'memory_store_binding_deleted';

export function deletionMarker(id: string, type: DeletionMarkerType) {
  return { id, type, deleted: true as const };
}

/** The page envelope of routes 2, 8 and 12: all four keys always; the ids null when `data` is empty. */
export function pageEnvelope<Item extends { id: string }>(data: Item[], hasMore: boolean) {
  return { data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}
