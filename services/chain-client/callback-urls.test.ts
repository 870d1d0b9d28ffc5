/**
 * What a callback URL may be, and what is never written of it. A value that is not a URL, or a very long one,
 * answered 500 (zod ran the link-local check on what failed to parse; a long URL failed the unique index). A URL
 * with user:password@ was taken and never delivered to (fetch refuses it), and fetch's error, which quotes the
 * URL, went to the log and last_error. A history request's merge was not checked, so `"true"` ran unmerged.
 */
import Fastify from 'fastify';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { Deliverer } from './deliverer.js';
import type { Follower } from './follower.js';
import { startChainClient } from './index.js';
import { registerSupportRoutes } from './routes.js';
import { ChainClientStore } from './store.js';
import { chainClientMigrations } from './migrations.js';

/** A reputation contract address: these instances take the reputation routes. */
const REPUTATION_CONTRACT = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';

let db: TestDatabase;
const log = createLogger({ level: 'silent' });
beforeAll(async () => {
  db = await createTestDatabase([chainClientMigrations]);
});
afterAll(async () => {
  await db?.drop();
});

/** A chain client on an RPC that is never read (a long poll): its routes only. */
const startIdle = (systemChainId: string) =>
  startChainClient(
    { db: db.pool, log, metrics: new Registry() },
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
      allowIps: [],
    },
  );

const post = async (port: number, path: string, body: unknown) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as { code: number; message: string } };
};

describe('callback URLs at the support routes', () => {
  it('a callback value that is not a URL at all is a 400 / 30209, not a 500', async () => {
    const client = await startIdle('r1');
    try {
      for (const bad of ['not a url', 'http://', 'http://a b/', 'http://[::1']) {
        for (const route of ['/support/register', '/support/unregister', '/support/history']) {
          const body =
            route === '/support/history'
              ? { start: 0, end: 0, callback: { on_height_update: bad } }
              : { callback: { on_height_update: bad } };
          const answer = await post(client.port, route, body);
          expect([bad, route, answer.status, answer.body.code]).toEqual([bad, route, 400, 30209]);
        }
      }
    } finally {
      await client.stop();
    }
  });

  it('a URL longer than 1,000 characters is refused (400 / 30209), not a 500', async () => {
    const client = await startIdle('r2');
    try {
      const url = `http://127.0.0.1:9/cb?token=${'ab'.repeat(3_000)}`;
      const answer = await post(client.port, '/support/register', { callback: { on_height_update: url } });
      expect([answer.status, answer.body.code]).toEqual([400, 30209]);
      expect(answer.body.message).toMatch(/at most 1000 characters/);
    } finally {
      await client.stop();
    }
  });

  it('a URL with user:password@ is refused at registration (fetch would refuse every post)', async () => {
    const client = await startIdle('r3');
    try {
      const answer = await post(client.port, '/support/register', {
        callback: { on_height_update: 'http://user:secret@127.0.0.1:9/cb' },
      });
      expect([answer.status, answer.body.code]).toEqual([400, 30209]);
      expect(answer.body.message).toMatch(/user:password/);
      expect(answer.body.message).not.toMatch(/secret/);
    } finally {
      await client.stop();
    }
  });
});

describe('a delivery to a URL stored with a secret in it (before the refusal, or a path token)', () => {
  it("never writes the URL's password or path token into the log or the database", async () => {
    const lines: string[] = [];
    const capture = pino({ level: 'debug' }, { write: (line: string) => void lines.push(line) });
    const url = 'http://user:PASSWORD-123@127.0.0.1:9/callback/SECRET-TOKEN/9006';
    await db.pool.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body) VALUES ('creds2', 'reg:1', $1, '{"height":5}')`,
      [url],
    );
    const deliverer = new Deliverer({ pool: db.pool, instance: 'creds2', maxAttempts: 11, log: capture });
    deliverer.start();
    try {
      await waitFor(
        async () =>
          (
            await db.pool.query(
              `SELECT 1 FROM chain_client_deliveries WHERE instance = 'creds2' AND attempts >= 1`,
            )
          ).rowCount === 1,
        'one attempt',
        10_000,
      );
    } finally {
      await deliverer.stop();
    }
    const stored = await db.pool.query<{ last_error: string | null }>(
      `SELECT last_error FROM chain_client_deliveries WHERE instance = 'creds2'`,
    );
    expect(lines.join('\n')).not.toMatch(/PASSWORD-123|SECRET-TOKEN/);
    expect(String(stored.rows[0]!.last_error)).not.toMatch(/PASSWORD-123|SECRET-TOKEN/);
  }, 30_000);
});

describe('a history request', () => {
  it('a history request whose merge is not a boolean is refused as register refuses it, not run unmerged', async () => {
    const app = Fastify();
    const store = new ChainClientStore(db.pool, 'merge1');
    registerSupportRoutes(app, {
      systemChainId: '9006',
      reputationContract: REPUTATION_CONTRACT,
      store,
      follower: { confirmedHead: async () => 1_000, wake: () => undefined } as unknown as Follower,
      log,
    });
    await app.ready();
    try {
      const callback = { on_height_update: 'http://10.0.0.1/cb' };
      const register = await app.inject({
        method: 'POST',
        url: '/support/register',
        payload: { callback, merge: 'true' },
      });
      expect(register.statusCode).toBe(400); // register refuses it
      const history = await app.inject({
        method: 'POST',
        url: '/support/history',
        payload: { start: 1, end: 10, callback, merge: 'true' },
      });
      // Run unmerged, an on_height_update-only callback got data: [] for every chunk: "no events in 1…10".
      expect(history.statusCode).toBe(400);
      expect(history.json().message).toBe('merge must be a boolean');
      expect(await store.historyTasks()).toEqual([]);
    } finally {
      await app.close();
    }
  });
});
