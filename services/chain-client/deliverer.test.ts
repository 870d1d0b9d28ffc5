import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { Deliverer } from './deliverer.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';

/** A receiver that keeps the heights it is posted, answering `status`. */
async function receiver(status = 200) {
  const heights: number[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (c) => (body += c));
    request.on('end', () => {
      heights.push((JSON.parse(body) as { height: number }).height);
      response.writeHead(status).end('{"code":200}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    heights,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('chain client deliverer', () => {
  let db: TestDatabase;
  const log = createLogger({ level: 'silent' });
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });
  const queue = (instance: string, url: string, count: number) =>
    db.pool.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body)
       SELECT $1, 'reg:1', $2, json_build_object('height', g * 5)::text FROM generate_series(1, $3::int) g`,
      [instance, url, count],
    );
  const pendingOf = (instance: string) =>
    db.pool
      .query(`SELECT 1 FROM chain_client_deliveries WHERE instance = $1 AND status = 'pending'`, [instance])
      .then((r) => r.rowCount);

  it('two processes on one instance post each body once, in order: the second stands by', async () => {
    const callbacks = await receiver();
    await queue('two-processes', callbacks.url, 5);
    const deliverers = [1, 2].map(
      () => new Deliverer({ pool: db.pool, instance: 'two-processes', maxAttempts: 11, log }),
    );
    deliverers.forEach((d) => d.start());
    try {
      await waitFor(async () => (await pendingOf('two-processes')) === 0, 'all delivered', 10_000);
      expect(callbacks.heights).toEqual([5, 10, 15, 20, 25]);
      // The one that sent stops: the other takes over what is queued next.
      await deliverers[0]!.stop();
      await queue('two-processes', callbacks.url, 1);
      await waitFor(async () => (await pendingOf('two-processes')) === 0, 'taken over', 10_000);
      expect(callbacks.heights).toEqual([5, 10, 15, 20, 25, 5]);
    } finally {
      await Promise.all(deliverers.map((d) => d.stop()));
      await callbacks.close();
    }
  }, 30_000);

  it('shows what waits for a receiver that is gone on /metrics: how many posts, and the oldest one’s age', async () => {
    const gone = await receiver(503);
    const registry = new Registry();
    const client = await startChainClient(
      { db: db.pool, log, metrics: registry },
      {
        port: 0,
        rpc: 'http://127.0.0.1:9',
        systemChainId: '4242',
        contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        confirmations: 0,
        startBlock: 0,
        pollIntervalMs: 60_000,
        deliveryAttempts: 11,
        keepSettledDays: 7,
      },
    );
    const gauge = async (name: string) =>
      (await registry.getSingleMetric(name)!.get()).values.find((v) => v.labels.instance === '4242')?.value;
    try {
      expect(await gauge('chain_client_pending_deliveries')).toBe(0);
      expect(await gauge('chain_client_oldest_pending_seconds')).toBe(0);
      await queue('4242', gone.url, 3);
      await db.pool.query(
        `UPDATE chain_client_deliveries SET created_at = now() - interval '90 seconds' WHERE instance = '4242'`,
      );
      await waitFor(() => gone.heights.length > 0, 'a failed post', 10_000);
      expect(await gauge('chain_client_pending_deliveries')).toBe(3);
      expect(await gauge('chain_client_oldest_pending_seconds')).toBeGreaterThanOrEqual(90);
    } finally {
      await client.stop();
      await gone.close();
    }
  }, 30_000);
});
