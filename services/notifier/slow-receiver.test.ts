import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender } from './outbox.js';

/**
 * A receiver that answers 200, but only after 6 s (an n8n workflow set to "respond when the last node
 * finishes"): it took every notification, yet the notifier (a fixed 5 s bound) counted each post as failed and
 * sent it again and again, for ever (every 5 minutes at most), and the outbox never drained.
 */
describe('a receiver that answers 2xx slowly', () => {
  let db: TestDatabase;
  let receiver: Server;
  let sender: OutboxSender | undefined;
  const received: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    const port = await freePort();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (c) => (body += c));
      request.on('end', () => {
        received.push((JSON.parse(body) as { id: string }).id);
        setTimeout(() => response.writeHead(200).end('{}'), 6_000);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    await enqueue(db.pool, { id: 'violation:0x01', kind: 'violation', payload: {} });
    sender = new OutboxSender({
      pool: db.pool,
      url: `http://127.0.0.1:${port}/webhook`,
      log: createLogger({ level: 'silent' }),
      baseBackoffMs: 100,
      maxBackoffMs: 100,
      pollMs: 100,
    });
  });
  afterAll(async () => {
    await sender?.stop();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await db?.drop();
  });

  it('is delivered once, not sent again and again (notifier.timeoutSeconds, 30 by default)', async () => {
    sender!.start();
    const read = async () =>
      (
        await db.pool.query<{ delivered: boolean; last_error: string | null }>(
          'SELECT delivered_at IS NOT NULL AS delivered, last_error FROM notifier_outbox',
        )
      ).rows;
    await waitFor(async () => (await read())[0]?.delivered === true, 'delivered', 20_000);
    const rows = await read();
    expect({ row: rows[0], posts: received.length }).toEqual({
      row: { delivered: true, last_error: null },
      posts: 1,
    });
  }, 60_000);
});
