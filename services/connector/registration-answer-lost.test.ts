import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { serviceContext } from '../../test/support/service-context.js';
import { waitFor } from '../../test/support/wait.js';
import { connectorMigrations } from './migrations.js';
import { connectorService } from './index.js';
import { clearConnectorTables } from './test-harness.js';

/**
 * A chain client that just restarted (it holds no registration). It keeps the registrations it is sent, but
 * the answer to the first one is lost (the connection drops after it stored it: a timeout, a proxy reset).
 * A repeat of a registration it holds is answered 30209 "already registered", as the original does.
 */
async function chainClientLosingFirstAnswer(loseFirstAnswer = true) {
  const registered = new Set<string>();
  const calls: Array<{ path: string; body: any }> = [];
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const body = JSON.parse(data);
      calls.push({ path: req.url!, body });
      if (req.url!.startsWith('/support/register')) {
        const key = `${req.url} ${JSON.stringify(body.callback)}`;
        if (registered.has(key))
          return res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ code: 30209, message: 'callbackUrl is already registered' }));
        registered.add(key); // taken as new: its live delivery starts after its head
        if (loseFirstAnswer) return req.socket.destroy(); // ...but the answer never reaches the Connector
        return res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ code: 200, message: 'register succeed' }));
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ code: 200, message: 'history task started' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise((r) => server.close(r)),
  };
}

describe('a registration the chain client took as new', () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase([connectorMigrations])));
  afterAll(async () => db?.drop());

  for (const [name, lose] of [
    ['whose answer was lost (the retry answers "already registered")', true],
    ['answered "registered", then renewed before its first live chunk came', false],
  ] as const)
    it(`a registration the chain client took as new, ${name}: its first live chunk is still asked through history`, async () => {
      await clearConnectorTables(db.pool);
      const client = await chainClientLosingFirstAnswer(lose);
      const port = await freePort();
      const context = await serviceContext(
        db,
        `[connector]\nport = ${port}\ncallbackUrl = "http://127.0.0.1:${port}/callback"\nreregisterIntervalMs = 1000
[rpc-urls]\n97 = "http://127.0.0.1:1"
[[chainClients]]\nurl = "${client.url}"\nhistoryUrl = "${client.url}"\ninitBlockHeight = 10\nchainId = "9006"\nnativeChainId = "97"
registerPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"`,
        ['connector', 'chainClients', 'rpc-urls'],
      );
      const service = await connectorService.start(context);
      try {
        // First registration: stored by the chain client, answer lost; the retry answers "already registered".
        await waitFor(
          () => client.calls.filter((c) => c.path === '/support/register').length >= 2,
          'the retried registration',
          15_000,
        );
        await new Promise((r) => setTimeout(r, 200));
        // The chain client's head was 12 when it took the registration: its first live chunk (height 15) holds
        // only blocks 13..15, although it says only "15". Blocks 11 and 12 were never delivered live.
        const reply = await fetch(`http://127.0.0.1:${port}/callback/9006/swap`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'update_height', height: 15, data: [] }),
        });
        const answer = await reply.json();
        const { rows } = await db.pool.query(
          `SELECT height FROM connector_heights WHERE chain_id = '9006' AND stream = 'swap'`,
        );
        // Taken whole, the stream moves to 15 and blocks 11..12 (any event in them) are skipped for good.
        expect({ answer, stored: rows[0].height }).toEqual({
          answer: { code: 200, message: 'gap: backfill requested' },
          stored: '10',
        });
      } finally {
        await service.stop();
        await context.close();
        await client.close();
      }
    }, 30_000);
});
