import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printSchemaSdl } from '../src/graphql/schema.js';
import { SCHEMA_FILE } from '../src/print-schema.js';
import { buildSchema, isInputObjectType, isInterfaceType, isObjectType } from 'graphql';

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
