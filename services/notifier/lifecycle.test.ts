import { createServer, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DLQ_HEADERS, deadLetterTopic } from '../../shared/bus/port.js';
import { freePort } from '../../shared/net/free-port.js';
import { swapVerdicts } from '../../topics/swap.verdicts.js';
import { violations } from '../../topics/violations.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { startNotifier } from './index.js';
import { notifierMigrations } from './migrations.js';
import { enqueue } from './outbox.js';

/**
 * The notifier's start and stop own everything they begin: a stop returns only once the dead-letter look in
 * flight is over (it would otherwise write through a pool its caller closes next), and a start that fails
 * half-way stops what it had started (the sender, the watch, the subscription) instead of leaving them running.
 */
describe('notifier: start and stop', () => {
  let db: TestDatabase;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let receiver: Server;
  let receiverPort: number;
  const posted: string[] = [];

  beforeEach(async () => {
    db = await createTestDatabase([notifierMigrations]);
    receiverPort = await freePort();
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        posted.push((JSON.parse(body) as { id: string }).id);
        response.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(receiverPort, '127.0.0.1', resolve));
    ctx = await serviceContext(db, `n8nUrl = "http://127.0.0.1:${receiverPort}/webhook"`, ['n8nUrl']);
    posted.length = 0;
  });
  afterEach(async () => {
    await new Promise((resolve) => receiver.close(resolve));
    await ctx.close();
    await db.drop();
  });

  it('stop waits for the dead-letter look in flight', async () => {
    await ctx.bus.publish(deadLetterTopic(swapVerdicts.name), [
      { key: 'a', value: '{}', headers: { [DLQ_HEADERS.error]: 'bad' } },
    ]);
    // The bus read of the look is held until the stop returned (or 1 s passed, so a stop that waits ends).
    let entered!: () => void;
    const lookStarted = new Promise<void>((resolve) => (entered = resolve));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lag = ctx.bus.lag.bind(ctx.bus);
    ctx.bus.lag = async (group, topics) => {
      entered();
      await gate;
      return lag(group, topics);
    };
    const notifier = await startNotifier(ctx, { url: ctx.config.n8nUrl!, pollMs: 50, watchIntervalMs: 50 });
    await lookStarted;
    const timer = setTimeout(release, 1_000);
    await notifier.stop();
    const { rows } = await db.pool.query<{ id: string }>(
      `SELECT id FROM notifier_outbox WHERE kind = 'message_dead_lettered'`,
    );
    release();
    clearTimeout(timer);
    // The look was over when stop returned: its notification is written (before: written after, or never).
    expect(rows.map((r) => r.id)).toEqual([`message_dead_lettered:${deadLetterTopic(swapVerdicts.name)}:1`]);
  });

  it('a start that fails after its sender started stops the sender, the watch and the subscription', async () => {
    // notifier.port taken: the HTTP service, started last, fails.
    const taken = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    let lagCalls = 0;
    const lag = ctx.bus.lag.bind(ctx.bus);
    ctx.bus.lag = (group, topics) => {
      lagCalls++;
      return lag(group, topics);
    };
    try {
      await expect(
        startNotifier(ctx, { url: ctx.config.n8nUrl!, pollMs: 50, watchIntervalMs: 50, port }),
      ).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    const looksAtFailure = lagCalls;
    // What comes after the failed start is left alone: a queued row, a violation on the bus.
    await enqueue(db.pool, { id: 'violation:after-failed-start', kind: 'violation', payload: {} });
    await ctx.bus.publish(violations.name, [{ key: 'k', value: '{}' }]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(posted).toEqual([]); // the sender stopped
    expect(lagCalls).toBe(looksAtFailure); // the watch stopped
    const { rows } = await db.pool.query<{ group_id: string; next_offset: string }>(
      `SELECT group_id, next_offset FROM bus_group_offsets WHERE topic = $1 AND next_offset > 0`,
      [violations.name],
    );
    expect(rows).toEqual([]); // the subscription stopped: nothing consumed the violation
  });

  it('a started notifier still delivers (the harness above is sound)', async () => {
    const notifier = await startNotifier(ctx, { url: ctx.config.n8nUrl!, pollMs: 50, watchIntervalMs: 50 });
    try {
      await enqueue(db.pool, { id: 'violation:delivered', kind: 'violation', payload: {} });
      await waitFor(() => posted.includes('violation:delivered'), 'the queued row posted');
    } finally {
      await notifier.stop();
    }
  });
});
