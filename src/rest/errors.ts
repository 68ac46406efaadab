import { GraphQLError } from 'graphql';
import { ConflictError, DomainError, InvalidRequestError, NotFoundError, PermissionError, PreconditionFailedError, type ValidationIssue } from '../domain/errors.js';
import { maskError } from '../graphql/error-masking.js';

/**
 * The error envelope of the Forward REST API (FORWARD-REST.md, "Errors"): every failure a
 * request can meet — the domain's typed errors, the request stages' errors (401, 413, 415,
 * 429, 503) and anything unexpected (masked as 500) — as one status, `error.type` and a
 * stable `error.code`.
 */

export type RestErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'api_error';

/** Every `error.code` the API answers with (the README lists them). */
export const REST_ERROR_CODES = [
  'validation_failed',
  'invalid_json',
  'idempotency_key_required',
  'idempotency_key_reused',
  'payload_too_large',
  'unsupported_media_type',
  'authentication_failed',
  'permission_denied',
  'not_found',
  'path_conflict',
  'store_archived',
  'store_mounted',
  'already_archived',
  'already_redacted',
  'mount_limit_exceeded',
  'default_slot',
  'content_sha256_mismatch',
  'conflict',
  'rate_limited',
  'request_timeout',
  'database_unavailable',
  'internal_error',
] as const;

export type RestErrorCode = (typeof REST_ERROR_CODES)[number];

/** A refusal of the REST layer itself (page arguments, a missing Idempotency-Key, bad JSON). */
export class RestRequestError extends Error {
  constructor(
    readonly status: number,
    readonly type: RestErrorType,
    readonly code: RestErrorCode,
    message: string,
    readonly issues?: ValidationIssue[],
  ) {
    super(message);
    this.name = 'RestRequestError';
  }
}

export function validationFailed(issues: ValidationIssue[]): RestRequestError {
  return new RestRequestError(400, 'invalid_request_error', 'validation_failed', InvalidRequestError.summarize(issues), issues);
}

export interface RestErrorAnswer {
  status: number;
  headers: Record<string, string>;
  error: { type: RestErrorType; code: RestErrorCode; message: string };
  issues?: ValidationIssue[];
  currentContentSha256?: string;
}

/** GraphQL's request-stage codes (http/), as REST answers them. */
const STAGE_ERRORS: Record<string, { status: number; type: RestErrorType; code: RestErrorCode }> = {
  UNAUTHENTICATED: { status: 401, type: 'authentication_error', code: 'authentication_failed' },
  RATE_LIMITED: { status: 429, type: 'rate_limit_error', code: 'rate_limited' },
  PAYLOAD_TOO_LARGE: { status: 413, type: 'invalid_request_error', code: 'payload_too_large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, type: 'invalid_request_error', code: 'unsupported_media_type' },
  CLIENT_CLOSED_REQUEST: { status: 400, type: 'invalid_request_error', code: 'validation_failed' },
  REQUEST_TIMEOUT: { status: 503, type: 'api_error', code: 'request_timeout' },
  DATABASE_UNAVAILABLE: { status: 503, type: 'api_error', code: 'database_unavailable' },
};

/** Lower snake case of a domain input name (`expectedContentSha256` → `expected_content_sha256`). */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/**
 * Issues as REST names their fields: the first segment is the domain's input name, renamed
 * by `fieldNames` or put in snake case; the rest (metadata keys) stay as given.
 */
function restIssues(issues: ValidationIssue[], fieldNames: Record<string, string>): ValidationIssue[] {
  return issues.map(({ field, message }) => {
    const [first, ...rest] = field;
    if (typeof first !== 'string') return { field, message };
    return { field: [fieldNames[first] ?? (/^[a-z][A-Za-z0-9]*$/.test(first) ? snakeCase(first) : first), ...rest], message };
  });
}

/**
 * The answer to a failure. `masked` is what the request pipeline made of an unexpected
 * error (it logs it): its code decides 500 or 503.
 */
export function restErrorOf(error: unknown, mask: (error: unknown) => GraphQLError, fieldNames: Record<string, string> = {}): RestErrorAnswer {
  const plain = (status: number, type: RestErrorType, code: RestErrorCode, message: string): RestErrorAnswer => ({ status, headers: {}, error: { type, code, message } });
  if (error instanceof RestRequestError) {
    return { ...plain(error.status, error.type, error.code, error.message), ...(error.issues ? { issues: restIssues(error.issues, fieldNames) } : {}) };
  }
  if (error instanceof DomainError) {
    if (error instanceof InvalidRequestError) {
      const issues = restIssues(error.issues, fieldNames);
      return { ...plain(400, 'invalid_request_error', 'validation_failed', InvalidRequestError.summarize(issues)), issues };
    }
    if (error instanceof NotFoundError) return plain(404, 'not_found_error', 'not_found', error.message);
    if (error instanceof PermissionError) return plain(403, 'permission_error', 'permission_denied', error.message);
    if (error instanceof PreconditionFailedError) {
      return { ...plain(409, 'conflict_error', 'content_sha256_mismatch', error.message), currentContentSha256: error.currentContentSha256 };
    }
    if (error instanceof ConflictError) return plain(409, 'conflict_error', error.reason === 'already_revoked' || error.reason === 'last_admin_key' ? 'conflict' : error.reason, error.message);
  }
  const masked = error instanceof GraphQLError ? maskError(error) : mask(error);
  const code = String(masked.extensions?.code ?? '');
  const known = STAGE_ERRORS[code];
  if (!known) return plain(500, 'api_error', 'internal_error', 'Unexpected error.');
  const http = masked.extensions?.http as { headers?: Record<string, string> } | undefined;
  const headers: Record<string, string> = { ...(http?.headers ?? {}) };
  if (headers['Retry-After'] !== undefined) headers['retry-after-ms'] = String(Number(headers['Retry-After']) * 1000);
  return { status: known.status, headers, error: { type: known.type, code: known.code, message: masked.message } };
}

/** The JSON body of an error answer. */
export function errorBody(answer: RestErrorAnswer, requestId: string) {
  return {
    type: 'error' as const,
    request_id: requestId,
    error: answer.error,
    ...(answer.issues ? { issues: answer.issues } : {}),
    ...(answer.currentContentSha256 !== undefined ? { current_content_sha256: answer.currentContentSha256 } : {}),
  };
}
