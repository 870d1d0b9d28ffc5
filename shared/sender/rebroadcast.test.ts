import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { blockHash, fakeNodeSender, testJob } from './test-harness.js';

/**
 * The sender broadcasts a job's latest transaction again on every pass until its receipt is found. A node that
 * already holds it answers so, each client in its own words: geth "already known", Erigon "INTERNAL_ERROR:
 * existing tx with same hash", Nethermind "AlreadyKnown". Taken for an outright refusal, each pass a
 * transaction waits (a busy block, an earlier nonce of the wallet still pending) counted toward maxRefusals,
 * and after three passes the call was cancelled with a paid self-transfer: a command that would have been
 * made failed, and a paid failure was counted against its re-posts. Against a fake node with a pool.
 */
describe('the sender and a node that already holds the transaction', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  for (const [client, duplicate] of [
    ['geth', 'already known'],
    ['Erigon', 'INTERNAL_ERROR: existing tx with same hash'],
    ['Nethermind', 'AlreadyKnown'],
  ] as const) {
    it(`a call waiting in the pool of a node that says so as ${client} does ("${duplicate}") is never cancelled as refused`, async () => {
      const wallet = new Wallet(Wallet.createRandom().privateKey);
      const j = testJob(`pooled-${client}`);
      const { sender, node, notes, passAt } = fakeNodeSender(db.pool, wallet, [j], { duplicate });
      try {
        await passAt(10);
        expect([j.status, j.nonce]).toEqual(['sent', 0]);
        // Six more passes while it waits in the pool: each broadcast again is answered "already held".
        for (let block = 11; block <= 16; block++) await passAt(block);
        expect(j.refusals).toBe(0);
        expect(notes.filter((n) => n.refused)).toEqual([]);
        expect([j.status, j.attempts.map((a) => a.kind)]).toEqual(['sent', ['call']]);
        // It mines: confirmed, the wallet paid for the call only.
        node.count = 1;
        node.receipts.set(j.attempts[0]!.hash, {
          blockNumber: 17,
          blockHash: blockHash(17),
          hash: j.attempts[0]!.hash,
          status: 1,
        });
        await passAt(17);
        expect(j.status).toBe('confirmed');
      } finally {
        await sender.stop();
      }
    });
  }

  it('a transaction the node refuses and does not hold is still counted, and its nonce freed after maxRefusals', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const j = testJob('refused');
    const { sender, node, passAt } = fakeNodeSender(db.pool, wallet, [j], { duplicate: 'already known' });
    node.refuse = 'transaction rejected by policy';
    try {
      for (const block of [10, 11, 12]) await passAt(block);
      expect(j.refusals).toBe(3);
      node.refuse = undefined;
      await passAt(13);
      expect([j.status, j.attempts.map((a) => a.kind)]).toEqual(['cancelling', ['call', 'cancel']]);
    } finally {
      await sender.stop();
    }
  });
});
