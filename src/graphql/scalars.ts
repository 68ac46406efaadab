import { GraphQLError, GraphQLScalarType, Kind, valueFromASTUntyped, type ValueNode } from 'graphql';
import { EARLIEST_INSTANT_MS, LATEST_INSTANT_MS } from '../domain/limits.js';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

function parseDateTime(value: unknown): Date {
  if (typeof value !== 'string' || !RFC3339.test(value)) {
    throw new GraphQLError('DateTime must be an RFC 3339 string such as "2026-08-14T10:00:00.000Z".');
  }
  const [, year, month, day, hour, minute, second] = RFC3339.exec(value)!.map(Number) as number[];
  const date = new Date(value);
  const calendarCheck = new Date(Date.UTC(year!, month! - 1, day!, hour, minute, second));
  if (
    Number.isNaN(date.getTime()) ||
    calendarCheck.getUTCMonth() !== month! - 1 ||
    calendarCheck.getUTCDate() !== day! ||
    hour! > 23 ||
    minute! > 59 ||
    second! > 59
  ) {
    throw new GraphQLError(`DateTime "${value}" is not a valid date and time.`);
  }
  if (!isSupportedInstant(date)) {
    // RFC 3339 allows year 0000, and an offset can carry 9999-12-31 into year 10000: the
    // database cannot read either, so they are refused here rather than failing there.
    throw new GraphQLError(`DateTime "${value}" is outside the supported range 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z.`);
  }
  return date;
}

/** Whether an instant lies in years 0001–9999 (UTC), the instants the database can compare with. */
export function isSupportedInstant(date: Date): boolean {
  const time = date.getTime();
  return time >= EARLIEST_INSTANT_MS && time <= LATEST_INSTANT_MS;
}

export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description:
    'An instant in RFC 3339 format, in UTC with millisecond precision on output (e.g. "2026-08-14T10:00:00.000Z"). Inputs may use any offset, and must fall within the years 0001–9999 in UTC.',
  serialize: (value) => {
    if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw new GraphQLError('DateTime cannot represent this value.');
    return value.toISOString();
  },
  parseValue: parseDateTime,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string.');
    return parseDateTime(ast.value);
  },
});

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function parseSafeInt(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new GraphQLError(`SafeInt must be a whole number between -${MAX_SAFE} and ${MAX_SAFE}.`);
  }
  return value;
}

export const SafeIntScalar = new GraphQLScalarType<number, number>({
  name: 'SafeInt',
  description: 'A whole number that may exceed 32 bits (byte totals), exactly representable in JSON and JavaScript: between -(2^53 - 1) and 2^53 - 1.',
  serialize: (value) => parseSafeInt(typeof value === 'string' ? Number(value) : value),
  parseValue: parseSafeInt,
  parseLiteral: (ast) => {
    if (ast.kind !== Kind.INT) throw new GraphQLError('SafeInt must be a whole number.');
    return parseSafeInt(Number(ast.value));
  },
});

function parseJsonObject(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new GraphQLError('JSONObject must be a JSON object such as {"team": "backend"}.');
  }
  return value as Record<string, unknown>;
}

export const JSONObjectScalar = new GraphQLScalarType<Record<string, unknown>, Record<string, unknown>>({
  name: 'JSONObject',
  description:
    'A metadata map: a JSON object whose values are strings. Key and value limits are checked by the field that takes it. In answers the keys come in one fixed order, whatever order they were given in: keys that are array indices (0, 1, 2, … up to 4294967294) first, ascending as numbers, then the others by their length in UTF-8 bytes, ties in byte order.',
  serialize: (value) => parseJsonObject(value),
  parseValue: parseJsonObject,
  parseLiteral: (ast: ValueNode, variables) => {
    if (ast.kind !== Kind.OBJECT) throw new GraphQLError('JSONObject must be an object.');
    // graphql-js builds object literals without a prototype, and drizzle fails on such a
    // value ("Cannot read properties of null") when it writes it: copy it into a plain
    // object. Own keys only, so a "__proto__" key stays a key. Nested values need no copy:
    // metadata values must be strings, and anything else is refused before it is written.
    return parseJsonObject(Object.fromEntries(Object.entries(valueFromASTUntyped(ast, variables) as object)));
  },
});
