import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { withTransaction } from '../../db/pool.js';
import { writeOutboxMany } from './outbox.js';

/** The Kafka outbox is a PostgreSQL table (no broker needed here): its key column is text. */
describe('Kafka outbox keys', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  }, 60_000);
  afterAll(() => db?.drop());

  it('stores a key with U+0000 with it as the six characters \\u0000 (text cannot hold U+0000)', async () => {
    await withTransaction(db.pool, (tx) =>
      writeOutboxMany(tx, [
        { topic: 'violations', messages: [{ key: 'lp:lp\u0000x', value: '"v\\u0000"' }] },
      ]),
    );
    const { rows } = await db.pool.query<{ key: string; value: string }>('SELECT key, value FROM bus_outbox');
    expect(rows).toEqual([{ key: 'lp:lp\\u0000x', value: '"v\\u0000"' }]);
  });
});
