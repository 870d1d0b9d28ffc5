import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender } from './outbox.js';

/**
 * One notification the receiver refuses for good (its workflow fails on that payload: 500 for it alone) while
 * it accepts the others. That row's back-off must hold; the others must flow.
 */
describe('one notification the receiver keeps refusing', () => {
  let db: TestDatabase;
  let receiver: Server;
  let sender: OutboxSender | undefined;
  const seen: string[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    const port = await freePort();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (c) => (body += c));
      request.on('end', () => {
        const { id } = JSON.parse(body) as { id: string };
        seen.push(id);
        response.writeHead(id === 'a-refused' ? 500 : 200).end('');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    // The refused row is the oldest; 15 good ones were queued after it (a burst of violations).
    await enqueue(db.pool, { id: 'a-refused', kind: 'violation', payload: {} });
    for (let i = 0; i < 15; i++)
      await enqueue(db.pool, { id: `b-${String(i).padStart(2, '0')}`, kind: 'violation', payload: {} });
    sender = new OutboxSender({
      pool: db.pool,
      url: `http://127.0.0.1:${port}/webhook`,
      log: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
      baseBackoffMs: 60_000, // a minute after its first failure
      maxBackoffMs: 300_000,
      pollMs: 500,
    });
  });
  afterAll(async () => {
    await sender?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await db?.drop();
  });

  it('keeps its back-off, does not hold back the others, and is not logged as an outage per delivery', async () => {
    const started = Date.now();
    sender!.start();
    const delivered = async () =>
      Number(
        (await db.pool.query(`SELECT count(*) AS n FROM notifier_outbox WHERE delivered_at IS NOT NULL`))
          .rows[0].n,
      );
    await waitFor(async () => (await delivered()) === 15, 'the 15 good ones delivered', 30_000);
    const seconds = (Date.now() - started) / 1000;
    const refusedAttempts = seen.filter((id) => id === 'a-refused').length;
    const outageLines = logs.filter((l) => l.includes('n8n receiver failing')).length;
    // Within a minute's back-off the refused row is tried once (twice at most), not once per good delivery.
    expect({
      refusedAttemptsAtMost2: refusedAttempts <= 2,
      refusedAttempts,
      outageLines,
      fast: seconds < 5,
    }).toEqual({
      refusedAttemptsAtMost2: true,
      refusedAttempts: expect.any(Number),
      outageLines: 1,
      fast: true,
    });
  }, 60_000);
});

/**
 * The receiver takes one notification, then fails every other (its workflow broke): that is an outage, not a
 * refusal of each row. The pass ends after a few, rather than posting every due row against it.
 */
describe('a receiver that fails after one delivery', () => {
  let db: TestDatabase;
  let receiver: Server;
  let sender: OutboxSender | undefined;
  const seen: string[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    const port = await freePort();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (c) => (body += c));
      request.on('end', () => {
        seen.push((JSON.parse(body) as { id: string }).id);
        response.writeHead(seen.length === 1 ? 200 : 500).end('');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
    for (let i = 0; i < 12; i++)
      await enqueue(db.pool, { id: `c-${String(i).padStart(2, '0')}`, kind: 'violation', payload: {} });
    sender = new OutboxSender({
      pool: db.pool,
      url: `http://127.0.0.1:${port}/webhook`,
      log: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
      baseBackoffMs: 60_000,
      maxBackoffMs: 300_000,
      pollMs: 60_000, // one pass in this test
    });
  });
  afterAll(async () => {
    await sender?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await db?.drop();
  });

  it('ends the pass as an outage at the second refusal in a row, the other rows untried', async () => {
    sender!.start();
    await waitFor(() => logs.some((l) => l.includes('n8n receiver failing')), 'the outage told', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toHaveLength(3); // one delivered, one refused, the next refused: an outage
    expect(logs.filter((l) => l.includes('n8n receiver failing'))).toHaveLength(1);
    expect(logs.filter((l) => l.includes('refused a notification'))).toHaveLength(1);
  }, 30_000);
});
