import { builder } from '../builder.js';
import { exposedValue, graphqlTypeOf, type EnumDeclaration, type ExposedField } from '../exposed-fields.js';

/**
 * The Pothos side of graphql/exposed-fields.ts: the enums and plain fields it declares,
 * made into schema types and fields that resolve through `exposedValue`, the same table
 * the read compiler renders in SQL.
 */

const enums = new Map<EnumDeclaration, unknown>();

function makeEnum<Declaration extends EnumDeclaration>(declaration: Declaration) {
  return builder.enumType(declaration.name, { description: declaration.description, values: declaration.values as Declaration['values'] });
}

/** The schema's enum of a declaration (made once). */
export function enumTypeOf<Declaration extends EnumDeclaration>(declaration: Declaration): ReturnType<typeof makeEnum<Declaration>> {
  let made = enums.get(declaration) as ReturnType<typeof makeEnum<Declaration>> | undefined;
  if (!made) enums.set(declaration, (made = makeEnum(declaration)));
  return made;
}

/**
 * Fields for the exposed fields named in `descriptions` (a description each: the SDL is the
 * reference manual), resolved from the loaded row.
 */
export function exposeFields<Names extends string>(
  t: { field: (options: any) => any },
  fields: Record<Names, ExposedField>,
  descriptions: Partial<Record<Names, string>>,
): Record<string, any> {
  const exposed: Record<string, any> = {};
  for (const [name, description] of Object.entries(descriptions) as [Names, string][]) {
    const field = fields[name];
    const { name: typeName, nullable } = graphqlTypeOf(field);
    const type = field.rendering.kind === 'enum' ? enumTypeOf(field.rendering.enumeration) : typeName;
    exposed[name] = t.field({ type, nullable, description, resolve: (row: Record<string, unknown>) => exposedValue(field, row) });
  }
  return exposed;
}
