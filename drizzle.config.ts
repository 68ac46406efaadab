import { defineConfig } from 'drizzle-kit';

// Generates migrations only (`npm run db:generate`); it never connects to a database.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './drizzle',
});
