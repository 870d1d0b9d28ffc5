import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { withTransaction } from '../../db/pool.js';
import { createLogger } from '../../logging/logger.js';
import { tcpProxy, throughProxy } from '../../../test/support/tcp-proxy.js';
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

  it('sets aside the rows of a topic that does not exist on the cluster; the others go on, in order', async () => {
    await withTransaction(db.pool, (tx) =>
      writeOutboxMany(tx, [
        { topic: 'ok', messages: [{ key: 'a', value: '1' }] },
        { topic: 'gone', messages: [{ key: 'b', value: '2' }] },
        { topic: 'ok', messages: [{ key: 'c', value: '3' }] },
      ]),
    );
    const sent: string[] = [];
    const setAside: string[] = [];
    const relay = new OutboxRelay({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
      // As kafkajs fails a send naming a topic the cluster does not have.
      send: async (batches) => {
        if (batches.some((b) => b.topic === 'gone'))
          throw Object.assign(new Error('This server does not host this topic-partition'), {
            type: 'UNKNOWN_TOPIC_OR_PARTITION',
          });
        sent.push(...batches.flatMap((b) => b.messages.map((m) => m.value)));
      },
      missingTopics: async (topics) => topics.filter((t) => t === 'gone'),
      missingTopicGraceMs: 200,
      refused: (topic) => void setAside.push(topic),
    });
    // Missing once is not enough (a topic created a moment ago may not be in the metadata yet).
    await expect(relay.relayOnce()).rejects.toThrow('does not host');
    expect(sent).toEqual([]);
    await new Promise((r) => setTimeout(r, 250));
    while ((await relay.relayOnce()) > 0);
    expect(sent).toEqual(['1', '3']);
    expect(setAside).toEqual(['gone']);
    const { rows } = await db.pool.query<{ topic: string; value: string; error: string }>(
      'SELECT topic, value, error FROM bus_outbox_refused',
    );
    expect(rows).toEqual([
      {
        topic: 'gone',
        value: '2',
        error: 'UNKNOWN_TOPIC_OR_PARTITION: topic gone does not exist on the cluster',
      },
    ]);
    expect((await db.pool.query('SELECT 1 FROM bus_outbox')).rows).toHaveLength(0);
  });

  it('keeps every row when the topic exists after all (a send failing for another reason)', async () => {
    await withTransaction(db.pool, (tx) =>
      writeOutboxMany(tx, [{ topic: 'ok', messages: [{ key: 'a', value: '1' }] }]),
    );
    const relay = new OutboxRelay({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
      send: async () => {
        throw Object.assign(new Error('unknown topic (stale metadata)'), {
          type: 'UNKNOWN_TOPIC_OR_PARTITION',
        });
      },
      missingTopics: async () => [],
    });
    await expect(relay.relayOnce()).rejects.toThrow('stale metadata');
    expect((await db.pool.query('SELECT 1 FROM bus_outbox')).rows).toHaveLength(1);
  });

  it.each([
    { when: 'listening', connecting: false },
    { when: 'connecting', connecting: true },
  ])(
    'stops at once when its listening connection is dropped silently while $when',
    async ({ connecting }) => {
      const proxy = await tcpProxy(new URL(db.url));
      const relay = new OutboxRelay({
        pool: db.pool,
        connectionString: throughProxy(db.url, proxy),
        log: createLogger({ level: 'silent' }),
        send: async () => undefined,
      });
      try {
        if (connecting) proxy.blackHoleNew();
        relay.start();
        if (connecting) await new Promise((resolve) => setTimeout(resolve, 300));
        else {
          // Polled past expect.poll's default 1 s (a connect and a LISTEN through the proxy on a loaded
          // machine), and before the listener's first heartbeat (10 s) makes its last statement SELECT 1.
          await expect
            .poll(
              async () =>
                (
                  await db.pool.query(
                    `SELECT 1 FROM pg_stat_activity WHERE application_name = 'otmoic-outbox'
                      AND datname = current_database() AND state = 'idle' AND query = 'LISTEN otmoic_outbox'`,
                  )
                ).rowCount,
              { timeout: 8_000 },
            )
            .toBe(1);
          proxy.freeze();
        }
        const started = performance.now();
        await relay.stop();
        // Before, stop() waited for ever for the server's answer to its end, or to the connect.
        expect(performance.now() - started).toBeLessThan(3_000);
      } finally {
        proxy.close();
      }
    },
  );
});
