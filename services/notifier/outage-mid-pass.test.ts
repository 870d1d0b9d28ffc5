import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender } from './outbox.js';

/**
 * The receiver goes down (503 for everything) right after taking the first post of a pass. That is an outage,
 * not one refused payload: the pass ends at the first failure (one probe, the outage logged once). With
 * 602f5cf every queued row was posted in the same pass, each failing, each spending an attempt and growing its
 * back-off, each logged as "refused a notification", and the outage was not logged.
 */
describe('an outage that starts in the middle of a pass', () => {
  let db: TestDatabase;
  let receiver: Server;
  let sender: OutboxSender | undefined;
  let posts = 0;
  const logs: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    const port = await freePort();
    receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        posts += 1;
        response.writeHead(posts === 1 ? 200 : 503).end('');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    for (let i = 0; i < 20; i++)
      await enqueue(db.pool, { id: `n-${String(i).padStart(2, '0')}`, kind: 'violation', payload: {} });
    sender = new OutboxSender({
      pool: db.pool,
      url: `http://127.0.0.1:${port}/webhook`,
      log: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
      baseBackoffMs: 60_000,
      maxBackoffMs: 300_000,
      pollMs: 60_000, // one pass only within the test
    });
  });
  afterAll(async () => {
    await sender?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await db?.drop();
  });

  it('ends the pass within a failure or two and logs the outage, instead of posting every queued row', async () => {
    sender!.start();
    await waitFor(async () => posts >= 2, 'the receiver went down', 20_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM notifier_outbox WHERE delivered_at IS NULL AND attempts > 0',
    );
    // At most one row may be taken for a refused payload before the outage is recognised.
    expect({
      postsAtMost3: posts <= 3,
      failedRowsAtMost2: rows[0]!.n <= 2,
      outageLogged: logs.some((l) => l.includes('n8n receiver failing')),
      refusedLinesAtMost1: logs.filter((l) => l.includes('refused a notification')).length <= 1,
    }).toEqual({
      postsAtMost3: true,
      failedRowsAtMost2: true,
      outageLogged: true,
      refusedLinesAtMost1: true,
    });
  }, 60_000);
});
