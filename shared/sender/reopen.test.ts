import { Transaction, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { fakeNodeSender, sentByOldKey, testJob } from './test-harness.js';
import { type SenderJob } from './types.js';

/**
 * A job its owner re-opens (the relay's re-post of a failed command, the Agent's of a complaint) is signed
 * afresh: another nonce, by this service's wallet. What the sender remembered of the job's earlier signing
 * must not carry over to it: the wallet that signed it (a key changed since), or when its nonce was first seen
 * used with no receipt found (the grace for receipts lagging the mined count). Against a fake node; the devnet
 * cases of a key change and of lagging receipts are in services/relay/sender.test.ts.
 */
describe('the sender and a re-opened job', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** What the owner's re-open leaves of the job (the relay's CLEARED_TRANSACTION_STATE). */
  const reopen = (j: SenderJob) =>
    Object.assign(j, {
      status: 'scheduled',
      nonce: null,
      attempts: [],
      refusals: 0,
      minedBlock: null,
      cancelReason: null,
    });

  it("a job signed by the old key, then re-opened, is signed, broadcast and followed as the new wallet's", async () => {
    const oldKey = new Wallet(Wallet.createRandom().privateKey);
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    // Signed by the old key at its nonce 5 before the service restarted with the new one.
    const { job: j, hash } = await sentByOldKey(oldKey);
    const { sender, node, passAt, mine } = fakeNodeSender(db.pool, wallet, [j], { bumpAfterBlocks: 3 });
    const oldCount = oldKey.address.toLowerCase();
    const newCount = wallet.address.toLowerCase();
    try {
      // Unmined: the old key's transaction is only followed (re-broadcast as it is).
      node.counts.set(oldCount, 5);
      await passAt(10);
      expect(node.broadcasts.map((t) => t.hash)).toEqual([hash]);
      // It mines and reverts (gas paid): the job fails.
      node.counts.set(oldCount, 6);
      mine(hash, 11, 0);
      await passAt(11);
      expect(j.status).toBe('failed');

      // Re-opened: signed with this service's wallet at its nonce 0, and broadcast in the same pass.
      reopen(j);
      node.broadcasts.length = 0;
      await passAt(20);
      expect([j.status, j.nonce]).toEqual(['sent', 0]);
      expect(Transaction.from(j.attempts[0]!.raw).from).toBe(wallet.address);
      expect(node.broadcasts.map((t) => t.hash)).toEqual([j.attempts[0]!.hash]);
      // Unmined for bumpAfterBlocks: sped up at the same nonce, as only the wallet's own job is (the old
      // key's count, past nonce 0, says nothing of it).
      for (const block of [21, 22, 23]) await passAt(block);
      expect(j.status).toBe('sent');
      expect(j.attempts.map((a) => a.kind)).toEqual(['call', 'call']);
      expect(node.broadcasts.every((t) => t.from === wallet.address && t.nonce === 0)).toBe(true);
      // It mines: confirmed.
      node.counts.set(newCount, 1);
      mine(j.attempts[1]!.hash, 24);
      await passAt(24);
      expect(j.status).toBe('confirmed');
    } finally {
      await sender.stop();
    }
  });

  it('a re-opened job whose receipt lags the mined count gets the whole grace again, and confirms', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const j = testJob('reopened');
    const { sender, node, passAt, mine } = fakeNodeSender(db.pool, wallet, [j], { bumpAfterBlocks: 3 });
    const count = wallet.address.toLowerCase();
    try {
      await passAt(10);
      expect([j.status, j.nonce]).toEqual(['sent', 0]);
      // Nonce 0 mined, its receipt not indexed yet (a node a block behind): the grace starts.
      node.counts.set(count, 1);
      await passAt(11);
      expect(j.status).toBe('sent');
      // The receipt comes (reverted, gas paid): the job fails on chain.
      mine(j.attempts[0]!.hash, 11, 0);
      await passAt(12);
      expect(j.status).toBe('failed');

      // Re-opened: signed at nonce 1, which mines while its receipt lags for the 3 blocks of the grace.
      reopen(j);
      await passAt(20);
      expect([j.status, j.nonce]).toEqual(['sent', 1]);
      node.counts.set(count, 2);
      for (const block of [21, 22, 23]) {
        await passAt(block);
        expect([block, j.status]).toEqual([block, 'sent']);
      }
      // The receipt comes: the job confirms on it, never failed as "used by another transaction".
      mine(j.attempts[0]!.hash, 21);
      await passAt(24);
      expect(j.status).toBe('confirmed');
    } finally {
      await sender.stop();
    }
  });
});
