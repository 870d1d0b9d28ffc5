import type { Pool, PoolClient } from '../db/pool.js';
import type { Archive, ArchivedDocument } from './port.js';

/** The embedded profile's archive: one JSONB table in the service database. */
export class PostgresArchive implements Archive {
  readonly kind = 'postgres' as const;

  constructor(private readonly pool: Pool) {}

  async put(collection: string, id: string, document: unknown): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO archive_documents (collection, id, document) VALUES ($1, $2, $3::jsonb) ON CONFLICT DO NOTHING`,
      [collection, id, JSON.stringify(document)],
    );
    return result.rowCount === 1;
  }

  async putMany(
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
    options: { tx?: PoolClient } = {},
  ): Promise<number> {
    if (documents.length === 0) return 0;
    const result = await (options.tx ?? this.pool).query(
      `INSERT INTO archive_documents (collection, id, document)
       SELECT $1, i, d::jsonb FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS t(i, d, n) ORDER BY n
       ON CONFLICT DO NOTHING`,
      [collection, documents.map((d) => d.id), documents.map((d) => JSON.stringify(d.document))],
    );
    return result.rowCount ?? 0;
  }

  async get<T>(collection: string, id: string): Promise<ArchivedDocument<T> | undefined> {
    const { rows } = await this.pool.query<{ id: string; document: T; stored_at: Date }>(
      'SELECT id, document, stored_at FROM archive_documents WHERE collection = $1 AND id = $2',
      [collection, id],
    );
    const row = rows[0];
    return row && { id: row.id, document: row.document, storedAt: row.stored_at };
  }

  async list<T>(
    collection: string,
    options: { after?: string; limit?: number } = {},
  ): Promise<ArchivedDocument<T>[]> {
    const { rows } = await this.pool.query<{ id: string; document: T; stored_at: Date }>(
      `SELECT id, document, stored_at FROM archive_documents
       WHERE collection = $1
         AND seq > COALESCE((SELECT seq FROM archive_documents WHERE collection = $1 AND id = $2), 0)
       ORDER BY seq LIMIT $3`,
      [collection, options.after ?? null, options.limit ?? 100],
    );
    return rows.map((r) => ({ id: r.id, document: r.document, storedAt: r.stored_at }));
  }

  async count(collection: string): Promise<number> {
    const { rows } = await this.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM archive_documents WHERE collection = $1',
      [collection],
    );
    return Number(rows[0]!.n);
  }

  async close(): Promise<void> {
    // The pool belongs to the runtime.
  }
}
