import { Transaction, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createLogger } from '../logging/logger.js';
import { loadFee, maxCost, storeFee, type Fee } from './fees.js';
import type { RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import { memoryStore } from './test-harness.js';
import { type SenderJob, type SignedAttempt } from './types.js';

const GWEI = 10n ** 9n;
/** The market of the fake node: base fee 1 gwei, tip 1 gwei, so the market's fee is 2 × 1 + 1 = 3 gwei. */
const MARKET_FEE = 3n * GWEI;
/** eth_estimateGas of every call; the sender signs 130 % of it. */
const ESTIMATE = 50_000n;
const GAS_LIMIT = 65_000n;

/**
 * The sender never holds the wallet's nonce on a transaction the wallet cannot pay. A node refuses one
 * ("insufficient funds"), which is no reason to give it up, so signed as asked (a client may ask for any gas
 * price up to maxFeePerGas) it can be neither mined, sped up nor outbid, and every later job waits behind its
 * nonce for good. Against a fake node whose balance the test sets; the devnet cases are in
 * services/relay/sender.test.ts.
 */
describe('the sender and the wallet balance', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A sender over an in-memory job store and a fake node holding `balance` for the wallet. */
  const setUp = (wallet: Wallet, jobs: SenderJob[], balance: bigint) => {
    const node = {
      balance,
      broadcasts: [] as Transaction[],
      refuse: undefined as string | undefined,
      /** A node behind the head's (a balancer's other node): the head block is unknown to it. */
      behind: false,
      timestamp: 1_000,
    };
    const provider = {
      send: async (method: string) => {
        if (method === 'eth_chainId') return '0x61';
        if (method === 'eth_gasPrice') return `0x${(2n * GWEI).toString(16)}`;
        if (method === 'eth_maxPriorityFeePerGas') return `0x${GWEI.toString(16)}`;
        throw new Error(`unexpected ${method}`);
      },
      getBlock: async () => ({ number: 10, timestamp: node.timestamp, baseFeePerGas: GWEI }),
      getBalance: async (_address: string, block: number | string) => {
        if (node.behind && block !== 'latest') throw new Error('header not found');
        return node.balance;
      },
      // A self-transfer (what frees a nonce) needs a plain transfer's 21,000, as on most chains.
      estimateGas: async (tx: { from?: string; to?: string }) => (tx.to === tx.from ? 21_000n : ESTIMATE),
      getTransactionCount: async () => 0,
      getTransactionReceipt: async () => null,
    };
    const rpc = {
      read: async (call: (p: unknown) => unknown) => call(provider),
      broadcast: async (raw: string) => {
        node.broadcasts.push(Transaction.from(raw));
        if (node.refuse !== undefined) throw new Error(node.refuse);
      },
    } as unknown as RpcPool;
    const { store, notes } = memoryStore(jobs);
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
      bumpAfterBlocks: 3,
      maxRefusals: 3,
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    return { sender, node, notes };
  };

  const job = (id: string, fields: Partial<SenderJob> = {}): SenderJob => ({
    id,
    status: 'scheduled',
    window: { start: 0, end: null },
    windowText: 'no window',
    call: { to: '0x000000000000000000000000000000000000dEaD', data: '0x', value: 0n },
    strategy: { percent: 100n },
    nonce: null,
    attempts: [],
    refusals: 0,
    minedBlock: null,
    cancelReason: null,
    ...fields,
  });

  const newWallet = () => new Wallet(Wallet.createRandom().privateKey);

  /** A call at `nonce` signed by an earlier pass whose maximum cost (65,000 gas × max fee) is `cost`. */
  const signed = async (wallet: Wallet, nonce: number, cost: number | bigint): Promise<SignedAttempt> => {
    const fee: Fee = { type: 2, maxFeePerGas: BigInt(cost) / GAS_LIMIT, maxPriorityFeePerGas: GWEI };
    const raw = await wallet.signTransaction({
      to: '0x000000000000000000000000000000000000dEaD',
      data: '0x',
      value: 0n,
      chainId: 97,
      nonce,
      gasLimit: GAS_LIMIT,
      ...fee,
    });
    return {
      kind: 'call',
      hash: Transaction.from(raw).hash!,
      raw,
      fee: storeFee(fee),
      gasLimit: GAS_LIMIT.toString(),
      signedAtBlock: 10,
      signedAtMs: Date.now(),
    };
  };

  const run = async (sender: Sender) => {
    try {
      await sender.tick();
    } finally {
      await sender.stop();
    }
  };

  it('signs a call at the highest fee the balance covers beside the other unmined transactions, not what was asked', async () => {
    const wallet = newWallet();
    // Another job's transaction, unmined, may cost 3e15 of the 5e15: 2e15 is left for the new one.
    const inFlight = job('in-flight', {
      status: 'sent',
      nonce: 0,
      attempts: [await signed(wallet, 0, 3e15)],
    });
    const asks = job('asks-the-cap', { strategy: { weiPerGas: 200n * GWEI } });
    const { sender, node } = setUp(wallet, [inFlight, asks], 5n * 10n ** 15n);
    await run(sender);
    const tx = node.broadcasts.find((t) => t.nonce === 1)!;
    expect(tx.gasLimit).toBe(GAS_LIMIT);
    const reserved = maxCost(loadFee(inFlight.attempts[0]!.fee), GAS_LIMIT);
    expect(tx.maxFeePerGas).toBe((5n * 10n ** 15n - reserved) / GAS_LIMIT);
    expect(reserved + tx.maxFeePerGas! * GAS_LIMIT).toBeLessThanOrEqual(5n * 10n ** 15n);
    expect(asks.status).toBe('sent');
  });

  it("a node that does not know the head's block yet: the balance is read at 'latest', and the job is signed", async () => {
    const wallet = newWallet();
    const asks = job('behind');
    const { sender, node } = setUp(wallet, [asks], 10n ** 18n);
    node.behind = true;
    await run(sender);
    expect([asks.status, asks.nonce]).toEqual(['sent', 0]);
    expect(node.broadcasts).toHaveLength(1);
  });

  it('a job that waited for funds until its window closed says so in its reason', async () => {
    const wallet = newWallet();
    const waiting = job('unfunded', { window: { start: 0, end: 2_000 } });
    const { sender, node } = setUp(wallet, [waiting], 1n);
    await sender.tick();
    expect(waiting.status).toBe('scheduled');
    node.timestamp = 2_000;
    await run(sender);
    expect(waiting.status).toBe('failed');
    expect((waiting as unknown as { reason: string }).reason).toMatch(
      /^window closed: no window; the chain is at block time 2000; it was waiting for funds/,
    );
  });

  it('a job the balance cannot pay at the market fee waits unsigned: it takes no nonce, and says why once', async () => {
    const wallet = newWallet();
    const first = job('first');
    const second = job('second');
    // Enough for one call at the market's fee, not two.
    const { sender, node, notes } = setUp(wallet, [first, second], GAS_LIMIT * MARKET_FEE + 1n);
    await sender.tick();
    await sender.tick();
    await sender.stop();
    expect([first.status, first.nonce]).toEqual(['sent', 0]);
    expect([second.status, second.nonce, second.attempts]).toEqual(['scheduled', null, []]);
    expect(node.broadcasts.every((t) => t.nonce === 0)).toBe(true);
    const told = notes.filter((n) => n.id === 'second');
    expect(told).toHaveLength(1);
    expect(told[0]!.problem).toMatch(
      new RegExp(
        `^waiting for funds: the wallet's balance of ${GAS_LIMIT * MARKET_FEE + 1n} wei \\(${GAS_LIMIT * MARKET_FEE} wei of it reserved for its other unmined transactions\\) cannot pay 65000 gas at ${MARKET_FEE} wei per gas`,
      ),
    );
    expect(told[0]!.refused).toBe(false);
  });

  it('re-signs a call the balance no longer covers at the same nonce, lower; below the market fee its nonce is freed', async () => {
    const wallet = newWallet();
    // Signed at the cap before the sender checked the balance (or before funds went elsewhere).
    const covered = job('covered', {
      status: 'sent',
      nonce: 0,
      attempts: [await signed(wallet, 0, 200n * GWEI * GAS_LIMIT)],
    });
    const first = setUp(wallet, [covered], 5n * 10n ** 15n);
    await run(first.sender);
    expect(covered.attempts.map((a) => a.kind)).toEqual(['call', 'call']);
    const lowered = Transaction.from(covered.attempts[1]!.raw);
    expect([lowered.nonce, lowered.maxFeePerGas]).toEqual([0, (5n * 10n ** 15n) / GAS_LIMIT]);
    expect(first.node.broadcasts.at(-1)!.hash).toBe(lowered.hash);

    const uncovered = job('uncovered', {
      status: 'sent',
      nonce: 0,
      attempts: [await signed(wallet, 0, 200n * GWEI * GAS_LIMIT)],
    });
    // Less than the call at the market's fee, more than a self-transfer at it.
    const second = setUp(wallet, [uncovered], GAS_LIMIT * MARKET_FEE - 1n);
    await run(second.sender);
    expect(uncovered.status).toBe('cancelling');
    expect(uncovered.cancelReason).toMatch(
      /^nonce 0 freed by a 0-value self-transfer: the wallet's balance no longer pays the call at the market's fee of 3000000000 wei per gas$/,
    );
    const cancel = Transaction.from(uncovered.attempts.at(-1)!.raw);
    expect([cancel.to, cancel.nonce, cancel.gasLimit, cancel.maxFeePerGas]).toEqual([
      wallet.address,
      0,
      21_000n,
      MARKET_FEE,
    ]);
  });

  it('counts a node\'s "insufficient funds" for a call the balance it read covers as a refusal (so its nonce is freed)', async () => {
    const wallet = newWallet();
    const calls = job('call', {
      status: 'sent',
      nonce: 0,
      attempts: [await signed(wallet, 0, MARKET_FEE * GAS_LIMIT)],
    });
    const { sender, node, notes } = setUp(wallet, [calls], 10n ** 18n);
    node.refuse = 'insufficient funds for gas * price + value: balance 1, tx cost 195000000000000';
    await run(sender);
    expect(notes.map((n) => n.refused)).toEqual([true]);
    expect(calls.refusals).toBe(1);
  });
});
