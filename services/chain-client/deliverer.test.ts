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

let db: TestDatabase;
const log = createLogger({ level: 'silent' });
beforeAll(async () => {
  db = await createTestDatabase([chainClientMigrations]);
});
afterAll(async () => {
  await db?.drop();
});

/** A chain client on an RPC that is never read (a long poll): its routes, deliverer and gauges. */
const startIdle = (systemChainId: string, registry = new Registry(), allowIps: string[] = []) =>
  startChainClient(
    { db: db.pool, log, metrics: registry },
    {
      port: 0,
      rpc: 'http://127.0.0.1:9',
      systemChainId,
      contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      confirmations: 0,
      startBlock: 0,
      pollIntervalMs: 60_000,
      deliveryAttempts: 11,
      keepSettledDays: 7,
      allowIps,
    },
  );

describe('chain client deliverer', () => {
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

  it('a post the stop cut off counts no attempt: the row stays pending as it was, and the stop is prompt', async () => {
    let posts = 0;
    const hung = http.createServer(() => void (posts += 1)); // takes the post, never answers
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    await queue('stop-cuts', `http://127.0.0.1:${(hung.address() as AddressInfo).port}/cb`, 1);
    const stop = new AbortController();
    const deliverer = new Deliverer({
      pool: db.pool,
      instance: 'stop-cuts',
      maxAttempts: 1, // one counted attempt would give the post up
      timeoutMs: 20_000,
      log,
      stopSignal: stop.signal,
    });
    deliverer.start();
    try {
      await waitFor(() => posts === 1, 'the post', 10_000);
      const stoppedAt = Date.now();
      stop.abort();
      await deliverer.stop();
      expect(Date.now() - stoppedAt).toBeLessThan(1_000);
      const { rows } = await db.pool.query(
        `SELECT status, attempts, last_error FROM chain_client_deliveries WHERE instance = 'stop-cuts'`,
      );
      expect(rows).toEqual([{ status: 'pending', attempts: 0, last_error: null }]);
    } finally {
      hung.closeAllConnections();
      await new Promise((resolve) => hung.close(resolve));
    }
  });

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
      // The lock is held on a connection of its own, outside the pool (whose slots the queries need).
      const locks = await db.pool.query(
        `SELECT 1 FROM pg_stat_activity WHERE application_name = 'otmoic-lock' AND datname = current_database()`,
      );
      expect(locks.rowCount).toBe(2);
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
    const client = await startIdle('4242', registry);
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

describe('chain client: who may register, and where posts may go', () => {
  const start = (allowIps: string[]) => startIdle(String(5000 + allowIps.length), new Registry(), allowIps);
  const register = async (port: number, url: string, path = '/support/register') => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ callback: { on_height_update: url }, merge: true }),
    });
    return { status: response.status, body: (await response.json()) as { code: number; message: string } };
  };

  it('chainClient.allowIps: a client outside it gets 403 on the support routes; /health stays open', async () => {
    const client = await start(['10.0.0.0/8']);
    try {
      const refused = await register(client.port, 'http://127.0.0.1:9/cb');
      expect(refused).toEqual({
        status: 403,
        body: { code: 403, message: 'this client IP may not use this route' },
      });
      // However its path is spelled: the router decodes %73 to the same route.
      expect(await register(client.port, 'http://127.0.0.1:9/cb', '/%73upport/register')).toEqual(refused);
      expect((await fetch(`http://127.0.0.1:${client.port}/health`)).status).not.toBe(403);
    } finally {
      await client.stop();
    }
    const open = await start([]);
    try {
      expect((await register(open.port, 'http://127.0.0.1:9/cb')).body.code).toBe(200);
    } finally {
      await open.stop();
    }
  });

  it('a link-local callback (a cloud metadata service) is refused', async () => {
    const client = await start(['127.0.0.1', '::1']);
    try {
      for (const url of [
        'http://169.254.169.254/latest/meta-data/',
        'http://[fe80::1]/x',
        'http://[fd00:ec2::254]/latest/meta-data/',
      ]) {
        const answer = await register(client.port, url);
        expect(answer.status, url).toBe(400);
        expect(answer.body.message).toMatch(/link-local/);
      }
    } finally {
      await client.stop();
    }
  });

  it('a redirect is not followed: the post is refused, not delivered by a bodyless GET elsewhere', async () => {
    const seen: string[] = [];
    const server = http.createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      if (request.url === '/cb') return void response.writeHead(302, { location: '/moved' }).end();
      response.writeHead(200).end('{"code":200}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`;
    await db.pool.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body) VALUES ('redirect', 'reg:1', $1, '{"height":5}')`,
      [url],
    );
    const deliverer = new Deliverer({ pool: db.pool, instance: 'redirect', maxAttempts: 11, log });
    deliverer.start();
    try {
      await waitFor(
        async () =>
          (
            await db.pool.query(
              `SELECT 1 FROM chain_client_deliveries WHERE instance = 'redirect' AND status = 'failed'`,
            )
          ).rowCount === 1,
        'the post refused',
        10_000,
      );
      expect(seen).toEqual(['POST /cb']);
    } finally {
      await deliverer.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
