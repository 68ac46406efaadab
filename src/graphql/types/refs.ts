import type { MemorySummary } from '../../domain/memories.js';
import type { MemoryStoreRecord } from '../../domain/stores.js';
import type { MemoryVersionSummary } from '../../domain/versions.js';
import { builder } from '../builder.js';

/**
 * The object references the type modules share. Each is implemented in its own module
 * (memory-store.ts, memory.ts, memory-version.ts); keeping the references here lets those
 * modules point at each other without circular imports.
 */
export const MemoryStoreRef = builder.objectRef<MemoryStoreRecord>('MemoryStore');
export const MemoryRef = builder.objectRef<MemorySummary>('Memory');
export const MemoryVersionRef = builder.objectRef<MemoryVersionSummary>('MemoryVersion');
