import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { notifierMigrations } from './migrations.js';
import { enqueue, OutboxSender } from './outbox.js';

/**
 * What counts as delivered: a 2xx from the webhook itself. A redirect followed by fetch turned the POST into a
 * GET without a body whose 2xx marked the row delivered, so the alert was lost. And once the receiver is back,
 * rows that failed during the outage go at once, oldest first, not after their back-off (up to 5 minutes).
 */
describe('notifier outbox: what delivered means', () => {
  let db: TestDatabase;
  let receiver: Server;
  let port: number;
  let sender: OutboxSender | undefined;
  let answer: (url: string) => { status: number; location?: string } = () => ({ status: 200 });
  const seen: Array<{ method: string; url: string; id?: string }> = [];

  beforeAll(async () => {
    db = await createTestDatabase([notifierMigrations]);
    port = await freePort();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (c) => (body += c));
      request.on('end', () => {
        seen.push({
          method: request.method!,
          url: request.url!,
          ...(body && { id: (JSON.parse(body) as { id: string }).id }),
        });
        const { status, location } = answer(request.url!);
        response.writeHead(status, location ? { location } : {}).end('');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await sender?.stop();
    await new Promise((resolve) => receiver?.close(resolve));
    await db?.drop();
  });
  beforeEach(async () => {
    await sender?.stop();
    await db.pool.query('TRUNCATE notifier_outbox');
    seen.length = 0;
  });
  const start = (baseBackoffMs: number) => {
    sender = new OutboxSender({
      pool: db.pool,
      url: `http://127.0.0.1:${port}/webhook/otmoic`,
      log: createLogger({ level: 'silent' }),
      baseBackoffMs,
      maxBackoffMs: 300_000,
      pollMs: 50,
    });
    sender.start();
  };
  const rows = async () =>
    (
      await db.pool.query<{ id: string; delivered: boolean; last_error: string | null }>(
        'SELECT id, delivered_at IS NOT NULL AS delivered, last_error FROM notifier_outbox ORDER BY id',
      )
    ).rows;

  it('a redirect is not followed, and the notification is not delivered by it', async () => {
    answer = (url) => (url === '/webhook/otmoic' ? { status: 302, location: '/moved' } : { status: 200 });
    await enqueue(db.pool, { id: 'violation:0x02', kind: 'violation', payload: { party: 'lp' } });
    start(50);
    await waitFor(async () => (await rows())[0]?.last_error !== null, 'a failed attempt', 10_000);
    expect(seen.filter((s) => s.url === '/moved')).toEqual([]);
    expect(await rows()).toEqual([
      {
        id: 'violation:0x02',
        delivered: false,
        last_error: expect.stringMatching(/^HTTP 302 \(a redirect, not followed/),
      },
    ]);
  });

  it('once the receiver answers again, the rows that failed meanwhile go at once, oldest first', async () => {
    answer = () => ({ status: 503 });
    // A minute's back-off after the first failure: without the reset, the old row waits it out.
    start(60_000);
    await enqueue(db.pool, { id: 'a-old', kind: 'violation', payload: {} });
    sender!.wake();
    await waitFor(async () => (await rows())[0]?.last_error === 'HTTP 503', 'the old row failed', 10_000);
    answer = () => ({ status: 200 });
    await enqueue(db.pool, { id: 'b-new', kind: 'violation', payload: {} });
    sender!.wake();
    await waitFor(async () => (await rows()).every((r) => r.delivered), 'both delivered', 10_000);
    expect(seen.map((s) => s.id)).toEqual(['a-old', 'b-new', 'a-old']);
  });
});
