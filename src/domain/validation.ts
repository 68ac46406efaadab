import { InvalidRequestError, type ValidationIssue } from './errors.js';
import {
  CONTENT_MAX_BYTES,
  EXTERNAL_ID_BODY_MAX_CHARACTERS,
  IDEMPOTENCY_KEY_MAX_CHARACTERS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
  PATH_MAX_BYTES,
  PATH_MAX_SEGMENTS,
  PATH_SEGMENT_MAX_BYTES,
} from './limits.js';

type FieldPath = ValidationIssue['field'];

/**
 * Collects every problem of one request so that a client hears about all of them at
 * once; `throwIfAny` turns them into one InvalidRequestError.
 */
export class IssueList {
  readonly issues: ValidationIssue[] = [];

  add(field: FieldPath, message: string): void {
    this.issues.push({ field, message });
  }

  throwIfAny(): void {
    if (this.issues.length > 0) throw new InvalidRequestError(this.issues);
  }
}

/** Length in Unicode code points ("characters" in the schema's descriptions), not UTF-16 units. */
export function characterCount(value: string): number {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
}

/** C0 controls and DEL, except tab, newline and carriage return. */
const FORBIDDEN_CONTROL_CHARACTER = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F]/;

/**
 * The rule every stored text shares: valid Unicode (no lone surrogates, which cannot be
 * encoded as UTF-8) and no control characters other than `\n`, `\r` and `\t`.
 * Returns the problem, or null.
 */
export function textProblem(value: string): string | null {
  if (!value.isWellFormed()) return 'must be valid Unicode (it contains a lone surrogate)';
  const control = FORBIDDEN_CONTROL_CHARACTER.exec(value);
  if (control) {
    const codePoint = control[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    return `must not contain control characters other than \\n, \\r and \\t (found U+${codePoint})`;
  }
  return null;
}

export interface TextRule {
  maxCharacters: number;
  /** When false, the text must contain at least one non-whitespace character. */
  allowBlank: boolean;
}

export function checkText(issues: IssueList, field: FieldPath, value: string, rule: TextRule): void {
  const problem = textProblem(value);
  if (problem) {
    issues.add(field, problem);
    return;
  }
  if (!rule.allowBlank && value.trim() === '') {
    issues.add(field, value === '' ? 'must not be empty' : 'must not be blank');
    return;
  }
  const length = characterCount(value);
  if (length > rule.maxCharacters) {
    issues.add(field, `must be at most ${rule.maxCharacters} characters (got ${length})`);
  }
}

export interface MetadataRule {
  maxKeys: number;
  /** A key callers may not supply (the server owns it). */
  reservedKey?: string;
}

/**
 * Metadata maps: at most `maxKeys` keys of 1–64 characters, string values of at most 512
 * characters, both under the shared text rule.
 */
export function checkMetadata(
  issues: IssueList,
  field: FieldPath,
  metadata: Record<string, unknown>,
  rule: MetadataRule,
): void {
  const keys = Object.keys(metadata);
  if (keys.length > rule.maxKeys) {
    issues.add(field, `must have at most ${rule.maxKeys} keys (got ${keys.length})`);
  }
  for (const key of keys) {
    const keyField = [...field, key];
    if (rule.reservedKey !== undefined && key === rule.reservedKey) {
      issues.add(keyField, `"${key}" is reserved: the server sets it`);
      continue;
    }
    const keyProblem = textProblem(key);
    const keyLength = characterCount(key);
    if (keyProblem) {
      issues.add(keyField, `key ${keyProblem}`);
    } else if (keyLength < 1 || keyLength > METADATA_KEY_MAX_CHARACTERS) {
      issues.add(keyField, `key must be 1 to ${METADATA_KEY_MAX_CHARACTERS} characters (got ${keyLength})`);
    }
    const value = metadata[key];
    if (typeof value !== 'string') {
      issues.add(keyField, `value must be a string (got ${value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value})`);
      continue;
    }
    checkText(issues, keyField, value, { maxCharacters: METADATA_VALUE_MAX_CHARACTERS, allowBlank: true });
  }
}

export function checkIdempotencyKey(issues: IssueList, field: FieldPath, key: string): void {
  checkText(issues, field, key, { maxCharacters: IDEMPOTENCY_KEY_MAX_CHARACTERS, allowBlank: false });
}

/** Size in UTF-8 bytes (for well-formed strings; others are refused before they are measured). */
export function utf8Bytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/** The path rules, each with the message that reports it. */
export const PATH_RULES = {
  unicode: 'must be valid Unicode (it contains a lone surrogate)',
  empty: 'must not be empty',
  forbiddenCharacter: 'must not contain "\\" or NUL',
  invisibleCharacter: 'must not contain control characters or invisible formatting characters (bidirectional controls, zero-width characters)',
  absolute: 'must be relative: it cannot start with "/"',
  tooLong: `must be at most ${PATH_MAX_BYTES} bytes of UTF-8`,
  tooManySegments: `must have at most ${PATH_MAX_SEGMENTS} segments`,
  emptySegment: 'must not contain empty segments ("//" or a trailing "/")',
  dotSegment: 'must not contain "." or ".." segments',
  paddedSegment: 'must not contain segments with leading or trailing whitespace',
  longSegment: `must not contain segments longer than ${PATH_SEGMENT_MAX_BYTES} bytes of UTF-8`,
} as const;

export type PathRule = keyof typeof PATH_RULES;

/**
 * What a path may not hold besides `\` and NUL: every other control character (C0, DEL,
 * C1), every invisible formatting character (Unicode category Cf: bidirectional marks,
 * embeddings, overrides and isolates, zero-width space, joiner and non-joiner, word joiner,
 * soft hyphen, byte order mark, tag characters) and the line and paragraph separators.
 * Such characters make two paths that look alike differ, or make a path display as
 * another (a right-to-left override turns "txt.exe" around).
 */
const INVISIBLE_PATH_CHARACTER = /[\u0001-\u001F\u007F-\u009F\p{Cf}\u2028\u2029]/u;

/** Whether a string can be sent to the database at all (PostgreSQL text holds no NUL; UTF-8 no lone surrogate). */
export function isStorableText(value: string): boolean {
  return value.isWellFormed() && !value.includes('\u0000');
}

/** Every path rule the path breaks (empty when it is valid). Paths are case-sensitive. */
export function pathViolations(path: string): PathRule[] {
  if (!path.isWellFormed()) return ['unicode'];
  if (path === '') return ['empty'];
  const broken = new Set<PathRule>();
  if (path.includes('\\') || path.includes('\u0000')) broken.add('forbiddenCharacter');
  if (INVISIBLE_PATH_CHARACTER.test(path)) broken.add('invisibleCharacter');
  if (path.startsWith('/')) broken.add('absolute');
  if (utf8Bytes(path) > PATH_MAX_BYTES) broken.add('tooLong');
  const segments = path.split('/');
  if (segments.length > PATH_MAX_SEGMENTS) broken.add('tooManySegments');
  // A leading "/" is reported as absolute, not also as an empty first segment.
  for (const [index, segment] of segments.entries()) {
    if (segment === '') {
      if (!(index === 0 && path.startsWith('/'))) broken.add('emptySegment');
      continue;
    }
    if (segment === '.' || segment === '..') broken.add('dotSegment');
    if (segment.trim() !== segment) broken.add('paddedSegment');
    if (utf8Bytes(segment) > PATH_SEGMENT_MAX_BYTES) broken.add('longSegment');
  }
  return [...broken];
}

export function checkPath(issues: IssueList, field: FieldPath, path: string): void {
  for (const rule of pathViolations(path)) issues.add(field, PATH_RULES[rule]);
}

/** The content rules: UTF-8 text of at most 100 KiB, no control characters but \n \r \t. */
export function checkContent(issues: IssueList, field: FieldPath, content: string): void {
  const problem = textProblem(content);
  if (problem) {
    issues.add(field, problem);
    return;
  }
  const bytes = utf8Bytes(content);
  if (bytes > CONTENT_MAX_BYTES) issues.add(field, `must be at most ${CONTENT_MAX_BYTES} bytes of UTF-8 (got ${bytes})`);
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

/** `expectedContentSha256`: a SHA-256 as 64 hex digits (compared in lower case). */
export function checkSha256(issues: IssueList, field: FieldPath, value: string): void {
  if (!SHA256_HEX.test(value)) issues.add(field, 'must be a SHA-256 written as 64 hex digits');
}

/** The prefixes of the external references the API accepts. */
export const EXTERNAL_ID_PREFIXES = { identity: 'idn_', template: 'tmpl_' } as const;
const EXTERNAL_ID_BODY = new RegExp(`^[A-Za-z0-9]{1,${EXTERNAL_ID_BODY_MAX_CHARACTERS}}$`);

/** Identity and template ids: the prefix plus 1–64 characters of [A-Za-z0-9]. */
export function checkExternalId(issues: IssueList, field: FieldPath, value: string, kind: keyof typeof EXTERNAL_ID_PREFIXES): void {
  const prefix = EXTERNAL_ID_PREFIXES[kind];
  if (!value.startsWith(prefix) || !EXTERNAL_ID_BODY.test(value.slice(prefix.length))) {
    issues.add(field, `must be "${prefix}" followed by 1 to ${EXTERNAL_ID_BODY_MAX_CHARACTERS} letters or digits`);
  }
}
