import {
  ConflictError,
  DomainError,
  InvalidRequestError,
  NotFoundError,
  PermissionError,
  PreconditionFailedError,
  type ValidationIssue,
} from '../../domain/errors.js';
import { builder } from '../builder.js';

export const ErrorCodeEnum = builder.enumType('ErrorCode', {
  description: 'What kind of failure an Error is (in the Forward REST API: HTTP 400, 404, 409, 409 on a content check, 403).',
  values: {
    INVALID_REQUEST: { description: 'The input breaks a rule; `issues` says which fields.' },
    NOT_FOUND: { description: 'The object does not exist, or belongs to another workspace.' },
    CONFLICT: { description: 'The object\'s state does not allow the change (archived, mounted, taken, …).' },
    PRECONDITION_FAILED: { description: '`expectedContentSha256` does not match the stored content.' },
    FORBIDDEN: { description: 'The API key may not do this.' },
  } as const,
});

export const ErrorInterface = builder.interfaceRef<DomainError>('Error').implement({
  description: 'Every expected failure of a mutation implements Error; unexpected failures are top-level errors instead.',
  fields: (t) => ({
    code: t.field({ type: ErrorCodeEnum, description: 'The kind of failure.', resolve: (error) => error.code }),
    message: t.exposeString('message', { description: 'A human-readable explanation.' }),
  }),
});

const ValidationIssueRef = builder.objectRef<ValidationIssue>('ValidationIssue').implement({
  description: 'One problem with a mutation\'s input.',
  fields: (t) => ({
    field: t.stringList({
      description: 'The path of the offending input field from the argument on, e.g. ["input", "metadata", "team"]; ["input"] for the input as a whole.',
      resolve: (issue) => ['input', ...issue.field.map(String)],
    }),
    message: t.exposeString('message', { description: 'What is wrong with the field.' }),
  }),
});

builder.objectType(InvalidRequestError, {
  name: 'InvalidRequestError',
  description: 'The input breaks one or more rules (HTTP 400 in the Forward REST API). Nothing was changed.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    issues: t.field({ type: [ValidationIssueRef], description: 'Every problem found, each with its field.', resolve: (error) => error.issues }),
  }),
});

builder.objectType(NotFoundError, {
  name: 'NotFoundError',
  description: 'The object does not exist or is not visible to the caller (HTTP 404). Nothing was changed.',
  interfaces: [ErrorInterface],
});

builder.objectType(ConflictError, {
  name: 'ConflictError',
  description: 'The object\'s current state does not allow the change (HTTP 409). Nothing was changed.',
  interfaces: [ErrorInterface],
});

builder.objectType(PreconditionFailedError, {
  name: 'PreconditionFailedError',
  description: 'The stored content no longer matches `expectedContentSha256` (HTTP 409 on a content check). Nothing was changed.',
  interfaces: [ErrorInterface],
  fields: (t) => ({
    currentContentSha256: t.exposeString('currentContentSha256', { description: 'The SHA-256 of the content stored now.' }),
  }),
});

builder.objectType(PermissionError, {
  name: 'PermissionError',
  description: 'The API key may not perform this operation (HTTP 403). Nothing was changed.',
  interfaces: [ErrorInterface],
});
