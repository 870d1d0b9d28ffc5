import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, type Pool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { tcpProxy, throughProxy } from '../../test/support/tcp-proxy.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';

/**
 * The chain client's follower failing against its RPC: its height stops, every receiver catches up to it and
 * looks well, and /health said ok. It now says degraded, and chain_client_head shows where the chain is.
 */
describe('chain client /health: the follower check', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('is degraded once the follower has not read the chain for ten poll intervals, and ok again after', async () => {
    const rpc = await fakeRpc();
    const registry = new Registry();
    const client = await startOn(db.pool, rpc.url, registry);
    const health = async () =>
      (await (await fetch(`http://127.0.0.1:${client.port}/health`)).json()) as {
        status: string;
        checks: { follower: { ok: boolean; error?: string } };
      };
    const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    try {
      await waitFor(async () => (await gauge('chain_client_head')) !== undefined, 'the head read');
      expect(await health()).toMatchObject({ status: 'ok', checks: { follower: { ok: true } } });
      rpc.up = false;
      await waitFor(async () => (await health()).status === 'degraded', 'health to say degraded', 15_000);
      expect((await health()).checks.follower.error).toMatch(/^the chain has not been read for \d+ s: /);
      rpc.up = true;
      await waitFor(async () => (await health()).status === 'ok', 'health to say ok again', 15_000);
    } finally {
      await client.stop();
      rpc.close();
    }
  }, 60_000);

  it("never shows the database driver's message (hosts, ports, users): a step failing on the database shows its code", async () => {
    const rpc = await fakeRpc();
    // The database behind a proxy the test closes: the follower's queries then fail as with the server away.
    const proxy = await tcpProxy(new URL(db.url));
    const pool = createPool(throughProxy(db.url, proxy), { max: 4 });
    const registry = new Registry();
    const client = await startOn(pool, rpc.url, registry);
    const health = async () =>
      (await (await fetch(`http://127.0.0.1:${client.port}/health`)).json()) as {
        checks: { follower: { ok: boolean; error?: string } };
      };
    try {
      await waitFor(async () => (await health()).checks.follower.ok, 'the follower to read the chain');
      proxy.close();
      await waitFor(async () => !(await health()).checks.follower.ok, 'the follower check to fail', 15_000);
      const answer = await health();
      expect(JSON.stringify(answer)).not.toContain(`127.0.0.1:${proxy.port}`);
      expect(answer.checks.follower.error).toMatch(
        /^the chain has not been read for \d+ s: failed \(ECONNREFUSED\); the service's log has the details$/,
      );
    } finally {
      await client.stop();
      await pool.end();
      rpc.close();
    }
  }, 60_000);
});

/** A chain client on `db` following the fake RPC at `rpc` every 100 ms. */
function startOn(db: Pool, rpc: string, metrics: Registry) {
  return startChainClient(
    { db, log: createLogger({ level: 'silent' }), metrics },
    {
      port: 0,
      rpc,
      systemChainId: '9006',
      contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      confirmations: 0,
      startBlock: 0,
      pollIntervalMs: 100,
      deliveryAttempts: 10,
      keepSettledDays: 7,
    },
  );
}

/** A JSON-RPC node of an empty chain whose head moves on every read; `up = false` answers 503. */
async function fakeRpc() {
  let head = 100;
  const state = { up: true };
  const rpc = http.createServer((request, response) => {
    let body = '';
    request.on('data', (c) => (body += c));
    request.on('end', () => {
      if (!state.up) return response.writeHead(503).end('down');
      const calls = JSON.parse(body);
      const answer = (c: { id: number; method: string }) => ({
        jsonrpc: '2.0',
        id: c.id,
        result:
          c.method === 'eth_blockNumber'
            ? `0x${(head++).toString(16)}`
            : c.method === 'eth_chainId'
              ? '0x61'
              : [],
      });
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(Array.isArray(calls) ? calls.map(answer) : answer(calls)));
    });
  });
  await new Promise<void>((resolve) => rpc.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(rpc.address() as AddressInfo).port}`,
    close: () => rpc.close(),
  });
}
