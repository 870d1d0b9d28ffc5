import { Transaction, Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { createLogger } from '../logging/logger.js';
import { storeFee, type Fee } from './fees.js';
import { RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import { OPEN_STATUSES, type SenderJob, type SenderStore, type SignedAttempt } from './types.js';

const GWEI = 10n ** 9n;
const GAS_LIMIT = 65_000n;

/**
 * A stop that cuts the sender's RPC calls off (RpcPool's stopSignal: the runner's ServiceContext.stopSignal)
 * is no failure of the job: no refusal is counted, nothing is noted, the job is neither failed nor moved on,
 * and the pass ends at once rather than at the RPC timeout. A real RpcPool whose provider answers from memory
 * and never answers the call the test hangs.
 */
describe('the sender when the stop aborts its RPC calls', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const setUp = (wallet: Wallet, jobs: SenderJob[], hang: 'broadcast' | 'estimate') => {
    const stop = new AbortController();
    // Nothing listens there: every call is answered by the methods below.
    const rpc = new RpcPool({
      urls: ['http://127.0.0.1:9/'],
      chainId: 97,
      timeoutMs: 20_000,
      scrub: (t) => t,
      stopSignal: stop.signal,
    });
    const asked = { broadcast: 0, estimate: 0 };
    const never = new Promise<never>(() => undefined);
    Object.assign(rpc.providers[0]!, {
      send: async (method: string) => {
        if (method === 'eth_chainId') return '0x61';
        if (method === 'eth_gasPrice') return `0x${(2n * GWEI).toString(16)}`;
        if (method === 'eth_maxPriorityFeePerGas') return `0x${GWEI.toString(16)}`;
        throw new Error(`unexpected ${method}`);
      },
      getBlock: async () => ({ number: 10, timestamp: 1_000, baseFeePerGas: GWEI }),
      getBalance: async () => 10n ** 18n,
      estimateGas: async () => {
        asked.estimate++;
        return hang === 'estimate' ? never : 50_000n;
      },
      getTransactionCount: async () => 0,
      getTransactionReceipt: async () => null,
      broadcastTransaction: async () => {
        asked.broadcast++;
        return hang === 'broadcast' ? never : undefined;
      },
    });
    const notes: Array<{ id: string; problem: string; refused: boolean }> = [];
    const finished: string[] = [];
    const find = (id: string) => jobs.find((j) => j.id === id)!;
    const store: SenderStore = {
      open: async () =>
        jobs
          .filter((j) => OPEN_STATUSES.includes(j.status))
          .map((j) => ({ ...j, attempts: [...j.attempts] })),
      async signFirst(id, _wallet, sign) {
        const job = find(id);
        if (job.status !== 'scheduled') return undefined;
        const attempt = await sign(0);
        Object.assign(job, { status: 'signed', nonce: 0, attempts: [attempt] });
        return { nonce: 0, attempt };
      },
      addAttempt: async () => false,
      async markSent(id) {
        const job = find(id);
        if (job.status === 'signed') job.status = 'sent';
      },
      async note(id, problem, refused = false) {
        notes.push({ id, problem, refused });
        if (refused) find(id).refusals += 1;
      },
      async setMinedBlock(id, block) {
        find(id).minedBlock = block;
      },
      async finish(id, outcome) {
        finished.push(id);
        find(id).status = outcome.status;
      },
    };
    const settled: string[] = [];
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
      maxRefusals: 1,
      onSettled: (job) => settled.push(job.id),
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    return { sender, stop, asked, notes, finished, settled, rpc };
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

  const signedAttempt = async (wallet: Wallet): Promise<SignedAttempt> => {
    const fee: Fee = { type: 2, maxFeePerGas: 3n * GWEI, maxPriorityFeePerGas: GWEI };
    const raw = await wallet.signTransaction({
      to: '0x000000000000000000000000000000000000dEaD',
      data: '0x',
      value: 0n,
      chainId: 97,
      nonce: 0,
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

  /** Starts a pass, aborts the stop signal once `reached` holds, and returns how long the pass took after. */
  const passCutOff = async (sender: Sender, stop: AbortController, reached: () => boolean) => {
    const pass = sender.tick();
    const deadline = Date.now() + 5_000;
    while (!reached() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(reached()).toBe(true);
    const abortedAt = Date.now();
    stop.abort();
    await pass;
    return Date.now() - abortedAt;
  };

  it('a broadcast cut off by the stop counts no refusal, notes nothing, and leaves the job signed', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const pending = job('broadcast-cut-off', {
      status: 'signed',
      nonce: 0,
      attempts: [await signedAttempt(wallet)],
    });
    const { sender, stop, asked, notes, finished, settled } = setUp(wallet, [pending], 'broadcast');
    try {
      const took = await passCutOff(sender, stop, () => asked.broadcast > 0);
      expect(took).toBeLessThan(1_000);
      expect(notes).toEqual([]);
      // maxRefusals is 1: a counted refusal would free the nonce on the next pass.
      expect(pending.refusals).toBe(0);
      // Not marked sent (whether a node got it is unknown): broadcast again after the restart.
      expect(pending.status).toBe('signed');
      expect(finished).toEqual([]);
      expect(settled).toEqual([]);
    } finally {
      await sender.stop();
    }
  });

  it('an estimate cut off by the stop fails nothing and takes no nonce; later calls fail at once', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const scheduled = job('estimate-cut-off');
    const { sender, stop, asked, notes, finished, rpc } = setUp(wallet, [scheduled], 'estimate');
    try {
      const took = await passCutOff(sender, stop, () => asked.estimate > 0);
      expect(took).toBeLessThan(1_000);
      expect(notes).toEqual([]);
      expect(finished).toEqual([]);
      expect([scheduled.status, scheduled.nonce, scheduled.attempts]).toEqual(['scheduled', null, []]);
      // A pass after the stop (the service not told yet) records nothing either.
      expect(rpc.stopped).toBe(true);
      await sender.tick();
      expect(notes).toEqual([]);
      expect(asked.estimate).toBe(1);
    } finally {
      await sender.stop();
    }
  });
});
