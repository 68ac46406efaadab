import { InvalidRequestError, type ValidationIssue } from './errors.js';
import {
  IDEMPOTENCY_KEY_MAX_CHARACTERS,
  METADATA_KEY_MAX_CHARACTERS,
  METADATA_VALUE_MAX_CHARACTERS,
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

/** Length in Unicode code points ("characters" in API.md), not UTF-16 units. */
export function characterCount(value: string): number {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
}

/** C0 controls and DEL, except tab, newline and carriage return (the seed's rule). */
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
