import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printSchemaSdl } from '../src/graphql/schema.js';
import { SCHEMA_FILE } from '../src/print-schema.js';
import { buildSchema, isInputObjectType, isInterfaceType, isObjectType } from 'graphql';
import { standInHandle } from './support/database.js';

describe('schema.graphql', () => {
  it('matches the schema the server runs (run `npm run schema:print` after changing it)', () => {
    expect(fs.readFileSync(SCHEMA_FILE, 'utf8')).toBe(printSchemaSdl());
  });

  it('describes every type, field and argument of our own', () => {
    const schema = buildSchema(fs.readFileSync(SCHEMA_FILE, 'utf8'));
    const missing: string[] = [];
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__')) continue;
      if (!type.description) missing.push(type.name);
      if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
        for (const field of Object.values(type.getFields())) {
          if (!field.description) missing.push(`${type.name}.${field.name}`);
          for (const argument of 'args' in field ? field.args : []) {
            if (!argument.description) missing.push(`${type.name}.${field.name}(${argument.name})`);
          }
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('GET /schema.graphql', () => {
  it('serves exactly schema.graphql, with introspection off and without a key, and 304 for a client that has it', async () => {
    const { createApp } = await import('../src/app.js');
    const app = createApp({ config: { nodeEnv: 'production', graphiql: false, introspection: false }, database: standInHandle(null as never) });
    const response = await app.fetch('http://memstore.test/schema.graphql');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await response.text()).toBe(fs.readFileSync(SCHEMA_FILE, 'utf8'));
    const again = await app.fetch('http://memstore.test/schema.graphql', { headers: { 'if-none-match': response.headers.get('etag')! } });
    expect(again.status).toBe(304);
    expect((await app.fetch('http://memstore.test/schema.graphql', { method: 'POST' })).status).toBe(405);
  });
});
