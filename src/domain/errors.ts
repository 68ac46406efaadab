/**
 * Expected failures of the domain. The GraphQL layer maps each class to the error type of
 * the same name in the mutation's result union; anything else thrown is unexpected and
 * masked. Messages are written for API users: they never contain SQL or internals.
 */

export type ErrorCode = 'INVALID_REQUEST' | 'NOT_FOUND' | 'CONFLICT' | 'PRECONDITION_FAILED' | 'FORBIDDEN';

/** One problem with a request: `field` is the path inside the mutation's `input`. */
export interface ValidationIssue {
  field: (string | number)[];
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly code: ErrorCode;
}

export class InvalidRequestError extends DomainError {
  readonly code = 'INVALID_REQUEST' as const;
  readonly issues: ValidationIssue[];

  constructor(issues: ValidationIssue[], message?: string) {
    super(message ?? InvalidRequestError.summarize(issues));
    this.name = 'InvalidRequestError';
    this.issues = issues;
  }

  static summarize(issues: ValidationIssue[]): string {
    if (issues.length === 1) {
      const [issue] = issues as [ValidationIssue];
      return issue.field.length > 0 ? `${issue.field.join('.')}: ${issue.message}` : issue.message;
    }
    return `The request has ${issues.length} problems; see issues.`;
  }
}

export class NotFoundError extends DomainError {
  readonly code = 'NOT_FOUND' as const;
  constructor(message: string) {
    super(message);
    this.name = 'NotFoundError';
  }
}

/**
 * Why a request conflicts with the stored state, for transports that name the reason (the
 * Forward REST API's `error.code`); GraphQL answers every one as ConflictError.
 */
export type ConflictReason =
  /** Any other conflict (transports without a finer code answer it as such). */
  | 'conflict'
  | 'path_conflict'
  | 'store_archived'
  | 'store_mounted'
  | 'already_archived'
  | 'already_redacted'
  | 'mount_limit_exceeded'
  | 'default_slot'
  | 'idempotency_key_reused'
  | 'already_revoked'
  | 'last_admin_key';

export class ConflictError extends DomainError {
  readonly code = 'CONFLICT' as const;
  constructor(
    message: string,
    readonly reason: ConflictReason = 'conflict',
  ) {
    super(message);
    this.name = 'ConflictError';
  }
}

export class PreconditionFailedError extends DomainError {
  readonly code = 'PRECONDITION_FAILED' as const;
  readonly currentContentSha256: string;
  constructor(message: string, currentContentSha256: string) {
    super(message);
    this.name = 'PreconditionFailedError';
    this.currentContentSha256 = currentContentSha256;
  }
}

export class PermissionError extends DomainError {
  readonly code = 'FORBIDDEN' as const;
  constructor(message: string) {
    super(message);
    this.name = 'PermissionError';
  }
}
