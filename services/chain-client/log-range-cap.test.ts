/**
 * Providers cap the block range of eth_getLogs. The range was fixed at 100 blocks and a failed one never
 * narrowed: on a node refusing more than 50 blocks, the follower (and every history task) retried the same
 * range for ever once it was over 50 blocks behind, and delivered nothing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';

let db: TestDatabase;
const log = createLogger({ level: 'silent' });
beforeAll(async () => {
  db = await createTestDatabase([chainClientMigrations]);
});
afterAll(async () => {
  await db?.drop();
});

const post = async (port: number, path: string, body: unknown) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { code: number; message: string } };
};

/** A server answering every request with `handle`; records method, url, authorization and body. */
async function serve(handle: (body: string, response: http.ServerResponse) => void) {
  const seen: { method?: string; url?: string; authorization?: string; body: string }[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (c) => (body += c));
    request.on('end', () => {
      seen.push({
        method: request.method,
        url: request.url,
        authorization: request.headers.authorization,
        body,
      });
      handle(body, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    seen,
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('an RPC node that caps eth_getLogs ranges', () => {
  it('a node refusing eth_getLogs over more than 50 blocks still lets the follower move on', async () => {
    let head = 0;
    const rpc = await serve((text, response) => {
      const parsed = JSON.parse(text);
      const calls: { id: number; method: string; params: any[] }[] = Array.isArray(parsed)
        ? parsed
        : [parsed];
      const answers = calls.map((c) => {
        if (c.method === 'eth_getLogs') {
          const span = Number(c.params[0].toBlock) - Number(c.params[0].fromBlock) + 1;
          if (span > 50)
            return { jsonrpc: '2.0', id: c.id, error: { code: -32005, message: 'block range is too large' } };
          return { jsonrpc: '2.0', id: c.id, result: [] };
        }
        const result =
          (
            {
              eth_chainId: '0x61',
              eth_blockNumber: `0x${head.toString(16)}`,
              eth_getBlockByNumber: { number: c.params[0], timestamp: '0x10', hash: '0x' + '11'.repeat(32) },
            } as Record<string, unknown>
          )[c.method] ?? null;
        return { jsonrpc: '2.0', id: c.id, result };
      });
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
    });
    const heights: number[] = [];
    const receiver = await serve((body, response) => {
      heights.push(JSON.parse(body).height);
      response.writeHead(200).end('{"code":200}');
    });
    const client = await startChainClient(
      { db: db.pool, log, metrics: new Registry() },
      {
        port: 0,
        rpc: `http://127.0.0.1:${rpc.port}`,
        systemChainId: 'range1',
        contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        confirmations: 0,
        startBlock: 0,
        pollIntervalMs: 100,
        deliveryAttempts: 11,
        keepSettledDays: 7,
      },
    );
    try {
      const answer = await post(client.port, '/support/register', {
        callback: { on_height_update: `http://127.0.0.1:${receiver.port}/cb` },
        merge: true,
      });
      expect(answer.body.code).toBe(200);
      await waitFor(() => heights.includes(0), 'block 0', 10_000);
      // The node moves on by 1,000 blocks (a restart of the chain client, a catch-up from startBlock).
      head = 1_000;
      await waitFor(() => heights.some((h) => h >= 100), 'height 100', 10_000);
    } finally {
      await client.stop();
      await rpc.close();
      await receiver.close();
    }
  }, 30_000);
});
