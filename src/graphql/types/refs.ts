import type { MemorySummary } from '../../domain/memories/records.js';
import type { MountRecord } from '../../domain/mounts.js';
import type { SessionRecord } from '../../domain/sessions.js';
import type { MemoryStoreRecord } from '../../domain/stores.js';
import type { MemoryVersionSummary } from '../../domain/versions.js';
import { builder } from '../builder.js';

/**
 * The object references the type modules share. Each is implemented in its own module
 * (memory-store.ts, memory.ts, memory-version.ts, mount.ts, session.ts); keeping the references here lets those
 * modules point at each other without circular imports.
 */
export const MemoryStoreRef = builder.objectRef<MemoryStoreRecord>('MemoryStore');
export const MemoryRef = builder.objectRef<MemorySummary>('Memory');
export const MemoryVersionRef = builder.objectRef<MemoryVersionSummary>('MemoryVersion');
export const MemoryStoreMountRef = builder.objectRef<MountRecord>('MemoryStoreMount');
export const SessionRef = builder.objectRef<SessionRecord>('Session');
