import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { withTransaction } from '../../db/pool.js';
import { createLogger } from '../../logging/logger.js';
import { OutboxRelay, writeOutboxMany } from './outbox.js';

/**
 * The Kafka outbox is a PostgreSQL table and its relay's send a function (no broker needed here): its key
 * column is text, and its batches are bounded in bytes as well as rows.
 */
describe('Kafka outbox', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  }, 60_000);
  beforeEach(() => db.pool.query('DELETE FROM bus_outbox'));
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

  it('cuts a batch at batchBytes, in order, and sends a row larger than that alone', async () => {
    const sizes = [1_000, 1_000, 1_000, 3_000, 10, 10];
    await withTransaction(db.pool, (tx) =>
      writeOutboxMany(tx, [
        { topic: 't', messages: sizes.map((n, i) => ({ key: String(i), value: 'v'.repeat(n) })) },
      ]),
    );
    const batches: string[][] = [];
    const relay = new OutboxRelay({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
      batchBytes: 2_500,
      send: async (sent) => void batches.push(sent.flatMap((b) => b.messages.map((m) => m.key))),
    });
    while ((await relay.relayOnce()) > 0);
    expect(batches).toEqual([['0', '1'], ['2'], ['3'], ['4', '5']]);
    const { rows } = await db.pool.query('SELECT 1 FROM bus_outbox');
    expect(rows).toHaveLength(0);
  });
});
