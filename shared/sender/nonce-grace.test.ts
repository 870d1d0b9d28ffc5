import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { blockHash, fakeNodeSender, testJob } from './test-harness.js';

/**
 * A job whose nonce the wallet's mined count shows used while none of its receipts is found is failed ("used by
 * another transaction") only once that has held for 3 blocks: receipts may lag the count. The grace is of one
 * sighting: once the count says the nonce is free again (a reorg took the block out, or the count came from a
 * node that was wrong), an earlier sighting says nothing of a later one. Kept, it failed the job at the first
 * pass of the next sighting whose receipt lagged: its own call, mined again after the reorg and confirmed on
 * chain, was reported "none of this job's transactions was mined".
 */
describe('the sender and the grace for receipts lagging the mined count', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a call mined, reorged out and mined again, whose receipt lags both times, confirms', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const j = testJob('reorged');
    const { sender, node, passAt } = fakeNodeSender(db.pool, wallet, [j]);
    try {
      await passAt(10);
      expect([j.status, j.nonce]).toEqual(['sent', 0]);
      // Mined at 11; the receipt not indexed yet: the grace starts.
      node.count = 1;
      await passAt(11);
      expect(j.status).toBe('sent');
      // A reorg takes block 11 out: the nonce is free again, the call back in the pool, for a while.
      node.count = 0;
      for (let block = 12; block <= 20; block++) await passAt(block);
      expect(j.status).toBe('sent');
      // Mined again at 21; the receipt lags one pass again: a new sighting, with a grace of its own.
      node.count = 1;
      await passAt(21);
      expect([j.status, j.reason ?? null]).toEqual(['sent', null]);
      // The receipt comes: its own call, confirmed.
      node.receipts.set(j.attempts[0]!.hash, {
        blockNumber: 21,
        blockHash: blockHash(21),
        hash: j.attempts[0]!.hash,
        status: 1,
      });
      await passAt(22);
      expect(j.status).toBe('confirmed');
    } finally {
      await sender.stop();
    }
  });
});
