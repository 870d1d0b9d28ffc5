import { Wallet } from 'ethers';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { registerSenderGauges } from './metrics.js';
import type { RpcPool } from './rpc.js';
import { Sender } from './sender.js';

/**
 * A sender that lost its wallet lock to another process stands by: that process sends and tells. Its
 * `*_oldest_unconfirmed_seconds` kept the figure of when it sent and grew for ever, so an alert on it (and the
 * notifier's submission_stuck) fired without end.
 */
describe('the gauges of a sender that became standby', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('say nothing is waiting once another process holds the wallet', async () => {
    const wallet = new Wallet(Wallet.createRandom().privateKey);
    const provider = {
      send: async (method: string) => (method === 'eth_chainId' ? '0x61' : Promise.reject(new Error('no'))),
      getBlock: async () => ({ number: 10, timestamp: 1_000, baseFeePerGas: null }),
      getBalance: async () => 1n,
      getTransactionReceipt: async () => null,
      getTransactionCount: async () => 0,
    };
    const rpc = {
      read: async (call: (p: unknown) => unknown) => call(provider),
      broadcast: async () => undefined,
      wrap: (e: unknown) => e,
    } as unknown as RpcPool;
    // A job signed a minute ago and not confirmed.
    const job = {
      id: 'j1',
      status: 'sent',
      window: { start: 0, end: null },
      windowText: '',
      call: { to: wallet.address, data: '0x', value: 0n },
      strategy: 'eip1559',
      nonce: 0,
      attempts: [{ signedAtMs: Date.now() - 60_000, hash: `0x${'1'.repeat(64)}`, raw: '0x', fee: {} }],
      refusals: 0,
      minedBlock: null,
      cancelReason: null,
    };
    const store = { open: async () => [job], note: async () => undefined } as never;
    const sender = new Sender({
      pool: db.pool,
      store,
      rpc,
      wallet,
      chainId: 97,
      pollIntervalMs: 60_000,
      caps: { maxFeePerGas: 10n ** 12n, maxGasLimit: 10n ** 6n },
      confirmations: 1,
      windowMarginSeconds: 0,
      bumpAfterBlocks: 3,
      maxRefusals: 3,
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    const registry = new Registry();
    registerSenderGauges(
      registry,
      {
        prefix: 'relay',
        wallet: 'relay',
        transactions: 'relay',
        jobsByStatus: { name: 'relay_commands', help: 'x' },
      },
      {
        balanceWei: () => sender.state.balanceWei,
        oldestUnconfirmedSinceMs: () => sender.state.oldestUnconfirmedSinceMs,
        jobCounts: async () => ({ byStatus: {}, failures: 0, oldestSeconds: {} }),
        statuses: [],
        waitingStatuses: [],
      },
    );
    const oldest = async () =>
      (await registry.getSingleMetric('relay_oldest_unconfirmed_seconds')!.get()).values[0]!.value;
    await sender.tick().catch(() => undefined);
    expect(sender.state.active).toBe(true);
    expect(await oldest()).toBeGreaterThanOrEqual(59);

    // Its lock's session ends, and another process takes the wallet. Sessions of this test's database only (the
    // server's others are the files run beside this one), each waited for until it is gone with its locks.
    await db.pool.query(
      `SELECT pg_terminate_backend(pid, 10000) FROM pg_locks WHERE locktype = 'advisory'
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND pid <> pg_backend_pid()`,
    );
    const other = await db.pool.connect();
    try {
      const { rows } = await other.query<{ ok: boolean }>(
        'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok',
        [`otmoic:sender-wallet:97:${wallet.address}`],
      );
      expect(rows[0]!.ok).toBe(true);
      for (let i = 0; i < 3; i++) await sender.tick().catch(() => undefined);
      expect(sender.state.active).toBe(false);
      expect(await oldest()).toBe(0);
    } finally {
      other.release(true);
      await sender.stop();
    }
  });
});
