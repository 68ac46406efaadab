import fs from 'node:fs';
import { GraphQLError } from 'graphql';
import { INVALID_REQUEST } from '../graphql/query-limits.js';

/**
 * Trusted documents (MEMSTORE_PERSISTED_DOCUMENTS): a JSON map of hash → document text, the
 * manifest GraphQL Code Generator's client preset writes with `persistedDocuments: true`.
 * A client then sends `{"documentId": "<hash>", "variables": …}` (or `?documentId=` on a
 * GET) instead of the query text; with MEMSTORE_PERSISTED_DOCUMENTS_ONLY nothing else runs.
 * A hash may be sent bare or with its algorithm (`sha256:<hash>`), as the GraphQL over
 * HTTP draft writes it.
 */

export const PERSISTED_DOCUMENT_NOT_FOUND = 'PERSISTED_DOCUMENT_NOT_FOUND';
export const PERSISTED_DOCUMENT_REQUIRED = 'PERSISTED_DOCUMENT_REQUIRED';

/** The manifest cannot be used: the server does not start. */
export class PersistedDocumentsError extends Error {}

export class PersistedDocuments {
  private constructor(
    private readonly documents: ReadonlyMap<string, string>,
    /** Only trusted documents may run. */
    readonly only: boolean,
  ) {}

  static fromManifest(manifest: unknown, only: boolean, source = 'the manifest'): PersistedDocuments {
    if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) {
      throw new PersistedDocumentsError(`${source} must be a JSON object of document hashes to document texts`);
    }
    const documents = new Map<string, string>();
    for (const [hash, text] of Object.entries(manifest)) {
      if (typeof text !== 'string' || hash === '') throw new PersistedDocumentsError(`${source}: the entry "${hash}" must map a hash to a document text`);
      documents.set(hash, text);
    }
    return new PersistedDocuments(documents, only);
  }

  static load(file: string, only: boolean): PersistedDocuments {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (error) {
      throw new PersistedDocumentsError(`MEMSTORE_PERSISTED_DOCUMENTS: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(text);
    } catch {
      throw new PersistedDocumentsError(`MEMSTORE_PERSISTED_DOCUMENTS: ${file} is not JSON`);
    }
    return PersistedDocuments.fromManifest(manifest, only, `MEMSTORE_PERSISTED_DOCUMENTS: ${file}`);
  }

  get size(): number {
    return this.documents.size;
  }

  /**
   * The document text a request runs: the trusted document its `documentId` names, or its
   * own `query` (refused when only trusted documents may run). Undefined when it sends
   * neither (the request's parser says so).
   */
  documentOf(query: unknown, documentId: unknown): unknown {
    if (documentId == null) {
      if (this.only && query != null) {
        throw requestError(PERSISTED_DOCUMENT_REQUIRED, 'This server runs trusted documents only: send the documentId of a document it knows instead of the query text.');
      }
      return query;
    }
    if (query != null) throw requestError(INVALID_REQUEST, 'Send either a query or a documentId, not both.');
    if (typeof documentId !== 'string') throw requestError(INVALID_REQUEST, 'documentId must be a string.');
    const text = this.documents.get(documentId) ?? this.documents.get(documentId.slice(documentId.indexOf(':') + 1));
    if (text === undefined) throw requestError(PERSISTED_DOCUMENT_NOT_FOUND, 'No trusted document has this documentId.');
    return text;
  }
}

function requestError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code, http: { status: 400 } } });
}
