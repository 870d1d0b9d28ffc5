import { Transaction, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createLogger } from '../logging/logger.js';
import type { RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import { memoryStore } from './test-harness.js';
import { type SenderJob } from './types.js';

const GWEI = 10n ** 9n;
const TO = '0x000000000000000000000000000000000000dEaD';
const blockHash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

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

  const setUp = (wallet: Wallet, jobs: SenderJob[]) => {
    const node = {
      block: 10,
      count: 0,
      receipts: new Map<string, { blockNumber: number; blockHash: string; hash: string; status: number }>(),
    };
    const provider = {
      send: async (method: string) => {
        if (method === 'eth_chainId') return '0x61';
        if (method === 'eth_gasPrice') return `0x${(2n * GWEI).toString(16)}`;
        if (method === 'eth_maxPriorityFeePerGas') return `0x${GWEI.toString(16)}`;
        throw new Error(`unexpected ${method}`);
      },
      getBlock: async (tag: number | string) => {
        const n = tag === 'latest' ? node.block : Number(tag);
        return { number: n, timestamp: 1_000 + n, baseFeePerGas: GWEI, hash: blockHash(n) };
      },
      getBalance: async () => 10n ** 18n,
      estimateGas: async (tx: { from?: string; to?: string }) => (tx.to === tx.from ? 21_000n : 50_000n),
      getTransactionCount: async () => node.count,
      getTransactionReceipt: async (hash: string) => node.receipts.get(hash) ?? null,
      call: async () => '0x',
    };
    const rpc = {
      read: async (call: (p: unknown) => unknown) => call(provider),
      broadcast: async (raw: string) => void Transaction.from(raw),
    } as unknown as RpcPool;
    const { store } = memoryStore(jobs, { firstNonce: 0 });
    const sender = new Sender({
      pool: db.pool,
      store,
      rpc,
      wallet,
      chainId: 97,
      pollIntervalMs: 60_000,
      caps: { maxFeePerGas: 200n * GWEI, maxGasLimit: 300_000n },
      confirmations: 1,
      windowMarginSeconds: 0,
      bumpAfterBlocks: 100,
      maxRefusals: 3,
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    const passAt = async (block: number) => {
      node.block = block;
      await sender.tick();
    };
    return { sender, node, passAt };
  };

  const job = (id: string): SenderJob & { reason?: string | null } => ({
    id,
    status: 'scheduled',
    window: { start: 0, end: null },
    windowText: 'no window',
    call: { to: TO, data: '0x', value: 0n },
    strategy: { percent: 100n },
    nonce: null,
    attempts: [],
    refusals: 0,
    minedBlock: null,
    cancelReason: null,
  });

  it('a call mined, reorged out and mined again, whose receipt lags both times, confirms', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const j = job('reorged');
    const { sender, node, passAt } = setUp(wallet, [j]);
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
