import { useReadinessCheck, type Plugin } from 'graphql-yoga';
import { READINESS_TIMEOUT_MS } from '../domain/limits.js';
import type { Logger } from '../logger.js';

/** GET /readyz: 200 when the database answers within READINESS_TIMEOUT_MS, else 503 — within that time either way. */
export function useReadiness(ping: () => Promise<void>, logger: Logger): Plugin {
  return useReadinessCheck({
    endpoint: '/readyz',
    check: async () => {
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          ping(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(new Error(`the database did not answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
          }),
        ]);
        return true;
      } catch (error) {
        logger.warn('readiness check failed', { error });
        return false;
      } finally {
        clearTimeout(timer);
      }
    },
  });
}
