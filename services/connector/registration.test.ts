import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { connectorMigrations } from './migrations.js';
import { connectorService } from './index.js';

/** A chain client that first fails, then says "already registered" (the original's 30209), then accepts. */
async function forgetfulChainClient() {
  const calls: Array<{ path: string; body: any; at: number }> = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const n = calls.filter((c) => c.path === req.url).length;
      calls.push({ path: req.url!, body: JSON.parse(data), at: Date.now() });
      if (n === 0) return res.writeHead(500).end('boom');
      const body =
        n === 1
          ? { code: 30209, message: 'callbackUrl is already registered' }
          : { code: 200, message: 'register succeed' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((r) => server.close(r)),
  };
}

describe('connector registration at chain clients', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase([connectorMigrations])));
  afterAll(async () => db?.drop());

  it('registers swap and reputation callbacks (the entry has a reputation contract) with merge, retries failures, takes 30209 as success, renews periodically', async () => {
    const client = await forgetfulChainClient();
    const port = await freePort();
    const context = await serviceContext(
      db,
      `[connector]\nport = ${port}\ncallbackUrl = "http://127.0.0.1:${port}/callback"\nreregisterIntervalMs = 1000
[rpc-urls]\n97 = "http://127.0.0.1:1"
[[chainClients]]\nurl = "${client.url}"\nhistoryUrl = "${client.url}"\ninitBlockHeight = 42\nchainId = "9006"\nnativeChainId = "97"
registerPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
reputationContractAddr = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"`,
      ['connector', 'chainClients', 'rpc-urls'],
    );
    const service = await connectorService.start(context);
    try {
      await waitFor(
        () => client.calls.filter((c) => c.path === '/support/register').length >= 4,
        '4 swap registrations',
        15_000,
      );
      const swap = client.calls.filter((c) => c.path === '/support/register');
      expect(swap[0]!.body).toEqual({
        callback: { on_height_update: `http://127.0.0.1:${port}/callback/9006/swap` },
        merge: true,
      });
      // After the 500: retried; after the 30209 and the 200: renewed on the interval, not hammered.
      const gaps = swap.slice(1).map((c, i) => c.at - swap[i]!.at);
      for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
      const reputation = client.calls.filter((c) => c.path === '/support/register_reputation');
      expect(reputation[0]!.body).toEqual({
        callback: { on_height_update: `http://127.0.0.1:${port}/callback/9006/reputation` },
        merge: true,
      });
      const counted = await context.metrics.getSingleMetricAsString('connector_registrations_total');
      expect(counted).toContain(
        'connector_registrations_total{chain="9006",stream="swap",outcome="failed"} 1',
      );
      expect(counted).toContain(
        'connector_registrations_total{chain="9006",stream="swap",outcome="already registered"} 1',
      );
      expect(counted).toMatch(
        /connector_registrations_total\{chain="9006",stream="swap",outcome="registered"\} [1-9]/,
      );
      // The stored height starts at initBlockHeight.
      const { rows } = await db.pool.query(`SELECT stream, height FROM connector_heights ORDER BY stream`);
      expect(rows).toEqual([
        { stream: 'reputation', height: '42' },
        { stream: 'swap', height: '42' },
      ]);
    } finally {
      await service.stop();
      await context.close();
      await client.close();
    }
  }, 30_000);
});
