/**
 * How many streams each API key has open, against MEMSTORE_MAX_SUBSCRIPTIONS_PER_KEY. In one
 * process by default; with REDIS_URL the count is shared by every instance
 * (shared-limits.ts), so that a key's limit holds whichever instances its streams are on.
 */
export interface StreamSlots {
  readonly limit: number;
  /** Takes one of the key's slots; false when it has `limit` open already. */
  acquire(apiKeyId: string): Promise<boolean>;
  release(apiKeyId: string): void;
}

export class LocalStreamSlots implements StreamSlots {
  private readonly open = new Map<string, number>();
  constructor(readonly limit: number) {}

  async acquire(apiKeyId: string): Promise<boolean> {
    const count = this.open.get(apiKeyId) ?? 0;
    if (count >= this.limit) return false;
    this.open.set(apiKeyId, count + 1);
    return true;
  }

  release(apiKeyId: string): void {
    const count = (this.open.get(apiKeyId) ?? 0) - 1;
    if (count <= 0) this.open.delete(apiKeyId);
    else this.open.set(apiKeyId, count);
  }
}

export const unlimitedStreamSlots: StreamSlots = {
  limit: Number.POSITIVE_INFINITY,
  acquire: async () => true,
  release: () => {},
};
