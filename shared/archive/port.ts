import type { PoolClient } from '../db/pool.js';

/**
 * The archive of raw chain documents (chain-client bodies, receipts, blocks) as they arrived, for audit and
 * re-normalisation. Adapters: postgres (JSONB, embedded profile) and MongoDB (production). Both pass
 * test/conformance/archive.ts.
 */
export interface ArchivedDocument<T = unknown> {
  id: string;
  document: T;
  storedAt: Date;
}

export interface Archive {
  readonly kind: 'postgres' | 'mongodb';
  /**
   * Stores a document under (collection, id) unless one is there: the first write wins. Returns whether it was
   * new. Any JSON value; it reads back as its JSON text would (shared/archive/rules.ts), and one whose text is
   * over MAX_DOCUMENT_BYTES is refused (ArchiveDocumentTooLarge; putMany: the batch, before any write).
   */
  put(collection: string, id: string, document: unknown): Promise<boolean>;
  /**
   * put() for many documents in one round trip; returns how many were new. `tx`: the postgres archive writes
   * inside that transaction (atomic with the caller's other writes); MongoDB writes at once.
   */
  putMany(
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
    options?: { tx?: PoolClient },
  ): Promise<number>;
  get<T = unknown>(collection: string, id: string): Promise<ArchivedDocument<T> | undefined>;
  /**
   * Documents of a collection in the order they were first stored, `after` an id returned before ('' is an id;
   * an id never stored: from the start). `limit`: an integer ≥ 0, 100 by default; anything else throws.
   */
  list<T = unknown>(
    collection: string,
    options?: { after?: string; limit?: number },
  ): Promise<ArchivedDocument<T>[]>;
  count(collection: string): Promise<number>;
  close(): Promise<void>;
}
