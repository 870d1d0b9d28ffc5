import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { createPool } from '../db/pool.js';
import { createLogger } from '../logging/logger.js';
import { RpcPool } from './rpc.js';
import { Sender } from './sender.js';
import type { SenderStore } from './types.js';

const GWEI = 10n ** 9n;

/**
 * What the sender shows of an error reaches clients: `state.lastError` is in the relay's and the Agent's
 * /status and /health, a job's notes in their command and complaint status routes. A database driver's
 * message names the server's host and port (a login failure, the user): only its code is shown there.
 */
describe("the sender's errors as clients see them", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it("shows a database failure by its code, never the driver's message with the server's address", async () => {
    const proxy = await tcpProxy(new URL(db.url));
    const pool = createPool(throughProxy(db.url, proxy), { max: 2 });
    // An RPC answered from memory: the chain is fine, only the database goes away.
    const rpc = new RpcPool({
      urls: ['http://127.0.0.1:9/'],
      chainId: 97,
      timeoutMs: 5_000,
      scrub: (t) => t,
    });
    Object.assign(rpc.providers[0]!, {
      send: async (method: string) => {
        if (method === 'eth_chainId') return '0x61';
        throw new Error(`unexpected ${method}`);
      },
      getBlock: async () => ({ number: 10, timestamp: 1_000, baseFeePerGas: GWEI }),
      getBalance: async () => 10n ** 18n,
      getTransactionCount: async () => 0,
    });
    const store = { open: async () => [] } as unknown as SenderStore;
    const sender = new Sender({
      pool,
      store,
      rpc,
      wallet: new Wallet(Wallet.createRandom().privateKey),
      chainId: 97,
      pollIntervalMs: 50,
      caps: { maxFeePerGas: 200n * GWEI, maxGasLimit: 300_000n },
      confirmations: 1,
      windowMarginSeconds: 0,
      bumpAfterBlocks: 3,
      maxRefusals: 1,
      scrub: (t) => t,
      log: createLogger({ level: 'silent' }),
    });
    sender.start();
    try {
      await waitFor(async () => sender.state.active && sender.state.chainOk, 'the sender to hold its wallet');
      proxy.close();
      await waitFor(
        async () => sender.state.lastError?.includes('ECONNREFUSED') === true,
        'the database failure in the state',
        15_000,
      );
      expect(sender.state.lastError).not.toContain(`127.0.0.1:${proxy.port}`);
      expect(sender.state.lastError).toBe("failed (ECONNREFUSED); the service's log has the details");
    } finally {
      await sender.stop().catch(() => undefined);
      rpc.destroy();
      await pool.end().catch(() => undefined);
    }
  }, 60_000);
});
