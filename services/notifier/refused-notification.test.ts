import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { outboxWithReceiver } from './test-harness.js';

type Outbox = Awaited<ReturnType<typeof outboxWithReceiver>>;
const ids = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}-${String(i).padStart(2, '0')}`);

/**
 * One notification the receiver refuses for good (its workflow fails on that payload: 500 for it alone) while
 * it accepts the others. That row's back-off must hold; the others must flow.
 */
describe('one notification the receiver keeps refusing', () => {
  let outbox: Outbox;
  beforeAll(async () => {
    // The refused row is the oldest; 15 good ones were queued after it (a burst of violations).
    outbox = await outboxWithReceiver({
      ids: ['a-refused', ...ids('b', 15)],
      answer: (id, _post, response) => void response.writeHead(id === 'a-refused' ? 500 : 200).end(''),
      sender: { baseBackoffMs: 60_000, maxBackoffMs: 300_000, pollMs: 500 }, // a minute after its first failure
    });
  });
  afterAll(() => outbox?.close());

  it('keeps its back-off, does not hold back the others, and is not logged as an outage per delivery', async () => {
    const { db, sender, seen, logs } = outbox;
    const started = Date.now();
    sender.start();
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
  let outbox: Outbox;
  beforeAll(async () => {
    outbox = await outboxWithReceiver({
      ids: ids('c', 12),
      answer: (_id, post, response) => void response.writeHead(post === 1 ? 200 : 500).end(''),
      sender: { baseBackoffMs: 60_000, maxBackoffMs: 300_000, pollMs: 60_000 }, // one pass in this test
    });
  });
  afterAll(() => outbox?.close());

  it('ends the pass as an outage at the second refusal in a row, the other rows untried', async () => {
    const { sender, seen, logs } = outbox;
    sender.start();
    await waitFor(() => logs.some((l) => l.includes('n8n receiver failing')), 'the outage told', 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toHaveLength(3); // one delivered, one refused, the next refused: an outage
    expect(logs.filter((l) => l.includes('n8n receiver failing'))).toHaveLength(1);
    expect(logs.filter((l) => l.includes('refused a notification'))).toHaveLength(1);
  }, 30_000);
});

/**
 * The receiver goes down (503 for everything) right after taking the first post of a pass. That is an outage,
 * not one refused payload: the pass ends at the first failure (one probe, the outage logged once). With
 * 602f5cf every queued row was posted in the same pass, each failing, each spending an attempt and growing its
 * back-off, each logged as "refused a notification", and the outage was not logged.
 */
describe('an outage that starts in the middle of a pass', () => {
  let outbox: Outbox;
  beforeAll(async () => {
    outbox = await outboxWithReceiver({
      ids: ids('n', 20),
      answer: (_id, post, response) => void response.writeHead(post === 1 ? 200 : 503).end(''),
      sender: { baseBackoffMs: 60_000, maxBackoffMs: 300_000, pollMs: 60_000 }, // one pass only within the test
    });
  });
  afterAll(() => outbox?.close());

  it('ends the pass within a failure or two and logs the outage, instead of posting every queued row', async () => {
    const { db, sender, seen, logs } = outbox;
    sender.start();
    await waitFor(async () => seen.length >= 2, 'the receiver went down', 20_000);
    await new Promise((r) => setTimeout(r, 1_500));
    const posts = seen.length;
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
