import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * Typed documents for the operations the tests send (client preset). Run `npm run codegen`
 * after changing schema.graphql or an operation; CI runs it with --check.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['test/**/*.ts', '!test/generated/**'],
  ignoreNoDocuments: false,
  // Imports inside the generated files end in .js, as NodeNext resolution requires.
  emitLegacyCommonJSImports: false,
  generates: {
    'test/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        scalars: {
          DateTime: 'string',
          JSONObject: 'Record<string, unknown>',
          SafeInt: 'number',
        },
        enumsAsTypes: true,
        useTypeImports: true,
      },
    },
  },
};

export default config;
