import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { printSchemaSdl } from './graphql/schema.js';

/** Writes schema.graphql (npm run schema:print). Only when run directly, never on import. */
export const SCHEMA_FILE = fileURLToPath(new URL('../schema.graphql', import.meta.url));

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  fs.writeFileSync(SCHEMA_FILE, printSchemaSdl());
  console.log(`Wrote ${SCHEMA_FILE}`);
}
