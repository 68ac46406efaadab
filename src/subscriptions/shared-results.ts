import { hash } from 'node:crypto';
import type { DocumentNode, ExecutionResult } from 'graphql';
import type { Viewer } from '../domain/viewer.js';

/**
 * One execution of an event for every stream that would answer it the same way. The poller
 * hands one payload object to every stream its event matches (event-hub.ts); streams whose
 * operation (the same document, operation name and variables) is run by keys that see the
 * same things (one workspace, one kind of key and identity: the access policy decides by nothing else)
 * would each compute the same result. The first of them executes it; the others take its
 * result. A thousand dashboards on one workspace then cost one execution per event, not a
 * thousand.
 *
 * A result with errors is not shared: errors carry what belongs to one request (its request
 * id, its log line), so each stream then executes the event on its own. A result is shared
 * for SHARED_RESULT_WINDOW_MS after it was made: a stream further behind (a slow consumer,
 * or one that resumes) executes the event itself, as it would without sharing, so that what
 * its selection reads beyond the event's own objects is not older than that, and results
 * are not kept alive by streams that lag.
 */

const documentIds = new WeakMap<DocumentNode, number>();
let nextDocumentId = 0;

/** The same text parsed twice is the same operation; a document without its text is itself. */
function documentKey(document: DocumentNode): string {
  const text = document.loc?.source.body;
  if (text !== undefined) return `t:${text}`;
  let id = documentIds.get(document);
  if (id === undefined) documentIds.set(document, (id = (nextDocumentId += 1)));
  return `d:${id}`;
}

/**
 * What makes two streams' answers to one event the same: the operation and who asks, as a
 * digest. Each stream holds its shape for its life (and its connection's sharing key holds it
 * again): a digest costs each stream 43 characters, where the text itself would be a copy of
 * the operation's document and variables per stream.
 */
export function sharedShapeKey(viewer: Viewer, document: DocumentNode, operationName: string | null | undefined, variables: unknown): string {
  return hash('sha256', JSON.stringify([viewer.workspaceId, viewer.kind, viewer.identityId, operationName ?? null, variables ?? null]) + documentKey(document), 'base64url');
}

/** How long an execution of an event is shared with the streams that ask the same of it. */
export const SHARED_RESULT_WINDOW_MS = 1_000;

export class SharedEventResults {
  /**
   * Per payload, oldest first (a Map keeps insertion order): when its first execution began,
   * and by shape the execution's result, or its promise while it runs. A result with errors
   * is never kept.
   */
  private readonly entries = new Map<object, { madeAt: number; executions: Map<string, ExecutionResult | Promise<ExecutionResult>> }>();
  /** When the oldest entry leaves the window (Infinity: no entry), so that most calls sweep nothing without looking. */
  private sweepAt = Number.POSITIVE_INFINITY;

  constructor(
    private readonly windowMs = SHARED_RESULT_WINDOW_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** How many events have results kept for sharing (tests). */
  get size(): number {
    return this.entries.size;
  }

  /** Forgets the results made longer than the window ago. */
  private sweep(now: number): void {
    if (now < this.sweepAt) return;
    this.sweepAt = Number.POSITIVE_INFINITY;
    for (const [payload, { madeAt }] of this.entries) {
      if (now - madeAt < this.windowMs) {
        this.sweepAt = madeAt + this.windowMs;
        break;
      }
      this.entries.delete(payload);
    }
  }

  /**
   * The result of `payload` for streams of `shape`: executed once (by the first asker), unless
   * it has errors or throws. An execution that needs no I/O is made at once, and its result
   * given without a promise, to every stream that asks: a thousand streams take it in one turn.
   */
  resultOf(payload: object, shape: string, execute: () => ExecutionResult | Promise<ExecutionResult>): ExecutionResult | Promise<ExecutionResult> {
    const now = this.now();
    this.sweep(now);
    let entry = this.entries.get(payload);
    if (!entry) {
      this.entries.set(payload, (entry = { madeAt: now, executions: new Map() }));
      if (this.entries.size === 1) this.sweepAt = now + this.windowMs;
    }
    const { executions } = entry;
    const shared = executions.get(shape);
    if (shared instanceof Promise) {
      return shared.then(
        (result) => (result.errors?.length ? execute() : result),
        () => execute(),
      );
    }
    if (shared) return shared;
    let answer: ExecutionResult | Promise<ExecutionResult>;
    try {
      answer = execute();
    } catch (error) {
      return Promise.reject(error);
    }
    if (answer instanceof Promise) {
      executions.set(shape, answer);
      // Once made, the result itself is shared; one with errors (or none) is not.
      answer.then(
        (result) => (result.errors?.length ? executions.delete(shape) : executions.set(shape, result)),
        () => executions.delete(shape),
      );
    } else if (!answer.errors?.length) {
      executions.set(shape, answer);
    }
    return answer;
  }
}
