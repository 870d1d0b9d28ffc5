import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresArchive } from '../../shared/archive/postgres-archive.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { archiveConformanceSuite } from './archive.js';

archiveConformanceSuite('postgres (json)', async () => {
  const db = await createTestDatabase();
  return { archive: new PostgresArchive(db.pool), cleanup: () => db.drop() };
});

describe('postgres archive: documents kept as the JSON text written', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(() => db.drop());

  it('stores the exact text of each document (key order, escapes, \\u0000) and gives it back', async () => {
    const archive = new PostgresArchive(db.pool);
    const docs = [
      { z: 1, a: { y: '0xAbC', b: [3, 2, 1] }, nul: 'a\u0000b', uni: 'é😀', big: 12345678901234567890 },
      { event_raw: JSON.stringify({ q: '"quoted"', s: 'back\\slash' }), chain_id: 9006 },
      ['x', { '': null }, 1.5e300, true],
    ];
    await archive.put('verbatim', 'one', docs[0]);
    await archive.putMany('verbatim', [
      { id: 'two', document: docs[1] },
      { id: 'three', document: docs[2] },
    ]);
    const { rows } = await db.pool.query<{ id: string; text: string }>(
      `SELECT id, document::text AS text FROM archive_documents WHERE collection = 'verbatim' ORDER BY seq`,
    );
    expect(rows).toEqual([
      { id: 'one', text: JSON.stringify(docs[0]) },
      { id: 'two', text: JSON.stringify(docs[1]) },
      { id: 'three', text: JSON.stringify(docs[2]) },
    ]);
    expect((await archive.get('verbatim', 'one'))?.document).toEqual(docs[0]);
    expect((await archive.list('verbatim')).map((d) => d.document)).toEqual(docs);
  });
});
