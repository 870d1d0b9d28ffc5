import net, { type LookupFunction } from 'node:net';
import { Wallet } from 'ethers';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { createPool, type Pool } from '../db/pool.js';
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

  /** A sender on `pool` (an RPC answered from memory: only the database goes away); `lastError` once it does. */
  async function lastErrorWhenGone(pool: Pool, proxy: { close(): void }): Promise<string | undefined> {
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
      expect(sender.state.lastError).toBeUndefined();
      proxy.close();
      await waitFor(
        async () => sender.state.lastError !== undefined,
        'the database failure in the state',
        15_000,
      );
      return sender.state.lastError;
    } finally {
      await sender.stop().catch(() => undefined);
      rpc.destroy();
      await pool.end().catch(() => undefined);
    }
  }

  it("shows a database failure by its code, never the driver's message with the server's address", async () => {
    const proxy = await tcpProxy(new URL(db.url));
    const lastError = await lastErrorWhenGone(createPool(throughProxy(db.url, proxy), { max: 2 }), proxy);
    expect(lastError).not.toContain(`127.0.0.1:${proxy.port}`);
    expect(lastError).toBe("failed (ECONNREFUSED); the service's log has the details");
  }, 60_000);

  it('shows it by its code too when the database host has two addresses (localhost on most systems)', async () => {
    // Node tries ::1 and 127.0.0.1 and fails with an AggregateError whose message is empty and which has no
    // syscall. This host's /etc/hosts gives localhost one address: the sockets resolve a name as a
    // dual-stack one resolves localhost (the proxy listens on 127.0.0.1; nothing on ::1).
    const proxy = await tcpProxy(new URL(db.url));
    const dualStack: LookupFunction = (_host, options, cb) => {
      const all = [
        { address: '::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ];
      process.nextTick(() => (options.all ? cb(null, all) : cb(null, all[1]!.address, all[1]!.family)));
    };
    const url = new URL(throughProxy(db.url, proxy));
    url.hostname = 'dual-stack.test';
    const pool = new pg.Pool({
      connectionString: url.toString(),
      max: 2,
      stream: () => {
        const socket = new net.Socket();
        const connect = socket.connect.bind(socket);
        // pg calls connect(port, host); the address is chosen as Node does for a name with two.
        return Object.assign(socket, {
          connect: (port: number, host: string) =>
            connect({ port, host, lookup: dualStack, autoSelectFamily: true }),
        });
      },
    });
    expect(await lastErrorWhenGone(pool, proxy)).toBe(
      "failed (ECONNREFUSED); the service's log has the details",
    );
  }, 60_000);
});
