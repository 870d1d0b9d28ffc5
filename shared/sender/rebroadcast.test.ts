import { Transaction, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createLogger } from '../logging/logger.js';
import { RpcError, type RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import { memoryStore } from './test-harness.js';
import { type SenderJob } from './types.js';

const GWEI = 10n ** 9n;
const TO = '0x000000000000000000000000000000000000dEaD';
const blockHash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

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

  /**
   * A fake node with a pool: a broadcast of a transaction it holds is answered `duplicate` (as ethers words an
   * error it cannot coalesce); `refuse` refuses every transaction without pooling it.
   */
  const setUp = (wallet: Wallet, jobs: SenderJob[], duplicate: string) => {
    const node = {
      block: 10,
      count: 0,
      pool: new Map<string, Transaction>(),
      receipts: new Map<string, { blockNumber: number; blockHash: string; hash: string; status: number }>(),
      refuse: undefined as string | undefined,
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
      getTransaction: async (hash: string) => node.pool.get(hash) ?? null,
      call: async () => '0x',
    };
    const rpc = {
      read: async (call: (p: unknown) => unknown) => call(provider),
      broadcast: async (raw: string) => {
        const tx = Transaction.from(raw);
        if (node.refuse !== undefined) throw new RpcError(node.refuse, new Error(node.refuse));
        if (node.pool.has(tx.hash!)) {
          const text = `could not coalesce error: ${duplicate}`;
          throw new RpcError(text, new Error(text));
        }
        node.pool.set(tx.hash!, tx);
      },
    } as unknown as RpcPool;
    const { store, notes } = memoryStore(jobs, { firstNonce: 0 });
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
      // No speed-up in these tests: only the re-broadcasts of the one call.
      bumpAfterBlocks: 100,
      maxRefusals: 3,
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    const passAt = async (block: number) => {
      node.block = block;
      await sender.tick();
    };
    return { sender, node, notes, passAt };
  };

  const job = (id: string): SenderJob => ({
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

  for (const [client, duplicate] of [
    ['geth', 'already known'],
    ['Erigon', 'INTERNAL_ERROR: existing tx with same hash'],
    ['Nethermind', 'AlreadyKnown'],
  ] as const) {
    it(`a call waiting in the pool of a node that says so as ${client} does ("${duplicate}") is never cancelled as refused`, async () => {
      const wallet = new Wallet(Wallet.createRandom().privateKey);
      const j = job(`pooled-${client}`);
      const { sender, node, notes, passAt } = setUp(wallet, [j], duplicate);
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
    const j = job('refused');
    const { sender, node, passAt } = setUp(wallet, [j], 'already known');
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
