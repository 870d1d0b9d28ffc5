import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { outboxWithReceiver } from './test-harness.js';

/**
 * One notification the receiver never answers in time (its n8n workflow, set to "respond when the last node
 * finishes", hangs on that payload) while it answers the others at once. Its timeout ended the pass as an
 * outage, so the next delivery ("reachable again") put it due again, it was posted right after and timed out
 * again: it was posted once per other notification delivered (its workflow run each time), and each pass
 * delivered a single other row behind a whole timeout. It must wait out its own back-off instead.
 */
describe('one notification the receiver never answers in time', () => {
  let outbox: Awaited<ReturnType<typeof outboxWithReceiver>>;
  beforeAll(async () => {
    outbox = await outboxWithReceiver({
      ids: ['a-hangs', ...Array.from({ length: 12 }, (_, i) => `b-${String(i).padStart(2, '0')}`)],
      answer: (id, _post, response) => {
        if (id !== 'a-hangs') response.writeHead(200).end('');
        else setTimeout(() => response.writeHead(200).end(''), 2_000).unref();
      },
      // A minute's back-off after its first failure; each post of it costs a whole timeout. The timeout is well
      // under its 2 s, and well over what an answer at once takes on a loaded machine: one of the others timed
      // out there is an outage after a delivery, and waits out a minute's back-off too.
      sender: { baseBackoffMs: 60_000, maxBackoffMs: 300_000, pollMs: 100, timeoutMs: 1_000 },
    });
  });
  afterAll(() => outbox?.close());

  it('waits out its back-off; the others are delivered without it being posted again per delivery', async () => {
    const { db, sender, seen } = outbox;
    sender.start();
    const delivered = async () =>
      Number(
        (await db.pool.query(`SELECT count(*) AS n FROM notifier_outbox WHERE delivered_at IS NOT NULL`))
          .rows[0].n,
      );
    await waitFor(async () => (await delivered()) === 12, 'the 12 others delivered', 30_000);
    const hungPosts = seen.filter((id) => id === 'a-hangs').length;
    // Tried when first due, and at most once more at the first delivery after it (the outage's recovery).
    expect({ hungPostsAtMost2: hungPosts <= 2, hungPosts }).toEqual({
      hungPostsAtMost2: true,
      hungPosts: expect.any(Number),
    });
  }, 60_000);
});
