import type { Pool, PoolClient } from '../db/pool.js';
import { Statement } from '../db/statement.js';
import type { Archive, ArchivedDocument } from './port.js';
import { documentText, listLimit } from './rules.js';

/**
 * The embedded profile's archive: one table in the service database, each document the JSON text it was
 * written as (a json column, uncompressed: see migration 6).
 */
export class PostgresArchive implements Archive {
  readonly kind = 'postgres' as const;

  constructor(private readonly pool: Pool) {}

  async put(collection: string, id: string, document: unknown): Promise<boolean> {
    const result = await this.pool.query(
      `INSERT INTO archive_documents (collection, id, document) VALUES ($1, $2, $3::json) ON CONFLICT DO NOTHING`,
      [collection, id, documentText(collection, id, document)],
    );
    return result.rowCount === 1;
  }

  async putMany(
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
    options: { tx?: PoolClient } = {},
  ): Promise<number> {
    if (documents.length === 0) return 0;
    const statement = new Statement();
    const inserted = this.addPutMany(statement, collection, documents);
    statement.output('n', `(SELECT count(*) FROM ${inserted})`);
    const row = await statement.run<{ n: string }>(options.tx ?? this.pool);
    return Number(row.n);
  }

  /**
   * Adds putMany() to `statement`, so a caller writes its other rows and the documents in one statement;
   * `guard`: an SQL condition on the statement's other CTEs, nothing is stored when it is false. Returns the
   * name of the CTE holding one row per new document.
   */
  addPutMany(
    statement: Statement,
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
    guard?: string,
  ): string {
    const name = statement.name('archived');
    // The documents travel as one JSON array: pg would escape each ~7 KB body again as a text[] element.
    // json_array_elements gives each element's text as it is in the array, so each is stored as stringified.
    // Each is stringified alone, so that its size is checked (and a document that is not JSON refused) as on
    // MongoDB, before anything is written.
    const texts = documents.map((d) => documentText(collection, d.id, d.document));
    statement.with(
      name,
      `INSERT INTO archive_documents (collection, id, document)
       SELECT ${statement.param(collection, 'text')}, i, d
         FROM unnest(${statement.param(
           documents.map((d) => d.id),
           'text[]',
         )}) WITH ORDINALITY AS t(i, n)
         JOIN json_array_elements(${statement.param(`[${texts.join(',')}]`, 'json')})
              WITH ORDINALITY AS e(d, n) USING (n)
        ${guard ? `WHERE ${guard}` : ''}
        ORDER BY n
       ON CONFLICT DO NOTHING RETURNING 1`,
    );
    return name;
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
      [collection, options.after ?? null, listLimit(options.limit)],
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
