/** The large data set's shape (seed-large.ts seeds it; the scripts that read it share this). */
export const LARGE_WORKSPACE = 'large';
export const LARGE_SHAPE = { stores: 100, memoriesPerStore: 1000, versionsPerMemory: 5 } as const;
/** Empty stores besides those, so that the store list is long enough for its index to matter. */
export const EXTRA_EMPTY_STORES = 1900;
