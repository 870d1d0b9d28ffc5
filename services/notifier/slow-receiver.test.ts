import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { outboxWithReceiver } from './test-harness.js';

/**
 * A receiver that answers 200, but only after 6 s (an n8n workflow set to "respond when the last node
 * finishes"): it took every notification, yet the notifier (a fixed 5 s bound) counted each post as failed and
 * sent it again and again, for ever (every 5 minutes at most), and the outbox never drained.
 */
describe('a receiver that answers 2xx slowly', () => {
  let outbox: Awaited<ReturnType<typeof outboxWithReceiver>>;
  beforeAll(async () => {
    outbox = await outboxWithReceiver({
      ids: ['violation:0x01'],
      answer: (_id, _post, response) => void setTimeout(() => response.writeHead(200).end('{}'), 6_000),
      sender: { baseBackoffMs: 100, maxBackoffMs: 100, pollMs: 100 },
    });
  });
  afterAll(() => outbox?.close());

  it('is delivered once, not sent again and again (notifier.timeoutSeconds, 30 by default)', async () => {
    const { db, sender, seen } = outbox;
    sender.start();
    const read = async () =>
      (
        await db.pool.query<{ delivered: boolean; last_error: string | null }>(
          'SELECT delivered_at IS NOT NULL AS delivered, last_error FROM notifier_outbox',
        )
      ).rows;
    await waitFor(async () => (await read())[0]?.delivered === true, 'delivered', 20_000);
    const rows = await read();
    expect({ row: rows[0], posts: seen.length }).toEqual({
      row: { delivered: true, last_error: null },
      posts: 1,
    });
  }, 60_000);
});
