import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { fakeNodeSender, sentByOldKey } from './test-harness.js';

/**
 * A job signed by another wallet (the service restarted with a new key while it was in flight) is only followed:
 * its transaction re-broadcast, never replaced or cancelled. Once its window has closed with its nonce unused,
 * the call would revert if mined, and nothing can end it: followed for ever, its command never ended (and stayed
 * unconfirmed for good once the old wallet could not pay). It is now missed after the grace a lagging count gets.
 */
describe('the sender and a job another wallet signed, past its window', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A job the old key signed at its nonce 5; its window ends at block time 1015 (the fake node's block 15). */
  const signedByOldKey = (oldKey: Wallet) =>
    sentByOldKey(oldKey, { window: { start: 0, end: 1_015 }, windowText: 'until 1015' });

  it('is missed once its window closed with the nonce unused, after the grace for a lagging count', async () => {
    const oldKey = new Wallet(Wallet.createRandom().privateKey);
    const { job, hash } = await signedByOldKey(oldKey);
    const { sender, node, passAt } = fakeNodeSender(db.pool, new Wallet(Wallet.createRandom().privateKey), [
      job,
    ]);
    node.counts.set(oldKey.address.toLowerCase(), 5);
    try {
      // Inside its window (block 15 is at time 1015): followed, re-broadcast as it is.
      for (const block of [10, 15]) await passAt(block);
      expect(job.status).toBe('sent');
      expect(node.broadcasts.map((t) => t.hash)).toEqual([hash, hash]);
      // Past it: still followed for three blocks (a count from a node behind may not show it mined yet).
      for (const block of [16, 17, 18]) await passAt(block);
      expect(job.status).toBe('sent');
      await passAt(19);
      expect(job).toMatchObject({
        status: 'failed',
        reason: expect.stringMatching(/^window closed: until 1015/),
      });
    } finally {
      await sender.stop();
    }
  });

  it('still settles on its receipt when it was mined in its window and the receipt came late', async () => {
    const oldKey = new Wallet(Wallet.createRandom().privateKey);
    const { job, hash } = await signedByOldKey(oldKey);
    const { sender, node, passAt, mine } = fakeNodeSender(
      db.pool,
      new Wallet(Wallet.createRandom().privateKey),
      [job],
    );
    node.counts.set(oldKey.address.toLowerCase(), 5);
    try {
      for (const block of [16, 17]) await passAt(block);
      // Mined at block 14 (time 1014, in its window); the node shows it only now.
      node.counts.set(oldKey.address.toLowerCase(), 6);
      mine(hash, 14);
      await passAt(18);
      expect(job.status).toBe('confirmed');
    } finally {
      await sender.stop();
    }
  });
});
