/** Test support for the sender's job tables, and a Sender against a fake node. Not used in production. */
import { Transaction, type Wallet } from 'ethers';
import type { Pool } from '../db/pool.js';
import { createLogger } from '../logging/logger.js';
import { RpcError, type RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import { OPEN_STATUSES, type SenderJob, type SenderStore } from './types.js';

/** An owner's job table with only the sender's columns (as the relay's and the Agent's have them), keyed by `job`. */
export const TEST_JOBS_TABLE = `
  CREATE TABLE test_jobs (
    job text PRIMARY KEY,
    status text NOT NULL,
    nonce bigint, raw_tx text, tx_hash text, txs jsonb NOT NULL DEFAULT '[]',
    reason text, attempts integer NOT NULL DEFAULT 0, refusals integer NOT NULL DEFAULT 0,
    mined_block bigint, cancel_reason text, block_number bigint, paid_failures integer NOT NULL DEFAULT 0,
    failures integer NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now()
  )`;

/**
 * A SenderStore over `jobs` in memory, as the relay's and the Agent's tables behave: a job is signed once, at the
 * wallet's next nonce (from `firstNonce`, by default the one after those the jobs hold); a replacement only while
 * its attempts are the ones known. `notes`: what the sender noted, in order.
 */
export function memoryStore(
  jobs: SenderJob[],
  options: { firstNonce?: number } = {},
): {
  store: SenderStore;
  notes: Array<{ id: string; problem: string; refused: boolean }>;
} {
  const notes: Array<{ id: string; problem: string; refused: boolean }> = [];
  const find = (id: string) => jobs.find((j) => j.id === id)!;
  let nextNonce = options.firstNonce ?? Math.max(-1, ...jobs.map((j) => j.nonce ?? -1)) + 1;
  const store: SenderStore = {
    open: async () =>
      jobs.filter((j) => OPEN_STATUSES.includes(j.status)).map((j) => ({ ...j, attempts: [...j.attempts] })),
    async signFirst(id, _wallet, sign) {
      const job = find(id);
      if (job.status !== 'scheduled') return undefined;
      const nonce = nextNonce++;
      const attempt = await sign(nonce);
      Object.assign(job, { status: 'signed', nonce, attempts: [attempt] });
      return { nonce, attempt };
    },
    async addAttempt(id, known, attempt, reason) {
      const job = find(id);
      if (job.attempts.length !== known) return false;
      job.attempts.push(attempt);
      if (attempt.kind === 'cancel')
        Object.assign(job, { status: 'cancelling', cancelReason: reason ?? null });
      return true;
    },
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
      Object.assign(find(id), {
        status: outcome.status,
        reason: 'reason' in outcome ? outcome.reason : null,
      });
    },
  };
  return { store, notes };
}

export const GWEI = 10n ** 9n;
/** Where a `testJob`'s call goes. */
export const TO = '0x000000000000000000000000000000000000dEaD';
/** The fake node's hash of block `n`. */
export const blockHash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

/**
 * A Sender (chain 97, 1 confirmation, maxRefusals 3) over `memoryStore(jobs)`, whose wallet's nonces start at 0
 * whatever the jobs hold, and a fake node whose head, mined counts and receipts the test sets. The node:
 * - `block`: its head (`passAt` moves it);
 * - `count`: the mined transaction count of every address, but those set in `counts` (by lower-case address);
 * - `receipts`: by hash (`mine` adds one);
 * - `pool`: the transactions broadcast, by hash (`getTransaction` answers from it); with `options.duplicate`, a
 *   broadcast of one it holds is refused in those words (as ethers words an error it cannot coalesce);
 * - `refuse`: while set, every broadcast is refused in those words, and not pooled;
 * - `broadcasts`: every broadcast it took, in order.
 * `options.bumpAfterBlocks`: 100 by default (no speed-up in a short test).
 */
export function fakeNodeSender(
  pool: Pool,
  wallet: Wallet,
  jobs: SenderJob[],
  options: { bumpAfterBlocks?: number; duplicate?: string } = {},
) {
  const node = {
    block: 10,
    count: 0,
    counts: new Map<string, number>(),
    receipts: new Map<string, { blockNumber: number; blockHash: string; hash: string; status: number }>(),
    pool: new Map<string, Transaction>(),
    refuse: undefined as string | undefined,
    broadcasts: [] as Transaction[],
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
    getTransactionCount: async (address: string) => node.counts.get(address.toLowerCase()) ?? node.count,
    getTransactionReceipt: async (hash: string) => node.receipts.get(hash) ?? null,
    getTransaction: async (hash: string) => node.pool.get(hash) ?? null,
    call: async () => '0x',
  };
  const rpc = {
    read: async (call: (p: unknown) => unknown) => call(provider),
    broadcast: async (raw: string) => {
      const tx = Transaction.from(raw);
      if (node.refuse !== undefined) throw new RpcError(node.refuse, new Error(node.refuse));
      if (options.duplicate !== undefined && node.pool.has(tx.hash!)) {
        const text = `could not coalesce error: ${options.duplicate}`;
        throw new RpcError(text, new Error(text));
      }
      node.pool.set(tx.hash!, tx);
      node.broadcasts.push(tx);
    },
  } as unknown as RpcPool;
  const { store, notes } = memoryStore(jobs, { firstNonce: 0 });
  const sender = new Sender({
    pool,
    store,
    rpc,
    wallet,
    chainId: 97,
    pollIntervalMs: 60_000,
    caps: { maxFeePerGas: 200n * GWEI, maxGasLimit: 300_000n },
    confirmations: 1,
    windowMarginSeconds: 0,
    bumpAfterBlocks: options.bumpAfterBlocks ?? 100,
    maxRefusals: 3,
    scrub: (t) => t,
    log: createLogger({ level: 'silent' }),
  });
  /** The head moves to `block`, and the sender makes a pass. */
  const passAt = async (block: number) => {
    node.block = block;
    await sender.tick();
  };
  /** `hash` is mined at `block` (status 1, or 0: reverted, gas paid). */
  const mine = (hash: string, block: number, status = 1) =>
    node.receipts.set(hash, { blockNumber: block, blockHash: blockHash(block), hash, status });
  return { sender, node, notes, passAt, mine };
}

/** A scheduled job with no window and a call to `TO`, with `fields` over it. */
export const testJob = (
  id: string,
  fields: Partial<SenderJob> = {},
): SenderJob & { reason?: string | null } => ({
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
  ...fields,
});

/**
 * A job `oldKey` signed and sent at its nonce 5 (a call to `TO`) before the service restarted with another key,
 * with `fields` over it; `hash` is its transaction's.
 */
export async function sentByOldKey(
  oldKey: Wallet,
  fields: Partial<SenderJob> = {},
): Promise<{ job: SenderJob & { reason?: string | null }; hash: string }> {
  const raw = await oldKey.signTransaction({
    to: TO,
    data: '0x',
    value: 0n,
    chainId: 97,
    nonce: 5,
    gasLimit: 65_000n,
    type: 2,
    maxFeePerGas: 3n * GWEI,
    maxPriorityFeePerGas: GWEI,
  });
  const hash = Transaction.from(raw).hash!;
  const job = testJob('rotated', {
    status: 'sent',
    nonce: 5,
    attempts: [
      {
        kind: 'call',
        hash,
        raw,
        fee: { type: 2, maxFeePerGas: (3n * GWEI).toString(), maxPriorityFeePerGas: GWEI.toString() },
        gasLimit: '65000',
        signedAtBlock: 9,
        signedAtMs: Date.now(),
      },
    ],
    ...fields,
  });
  return { job, hash };
}
