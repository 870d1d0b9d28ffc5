import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { CHAIN_CLIENT_ERRORS } from './errors.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';

/**
 * A chain client configured without `reputationContractAddr` reads no complaint logs (its eth_getLogs address
 * filter has only the swap contract). It used to take register_reputation / history_reputation and post empty
 * update_height heartbeats to them: a Connector whose chainClients entry names a reputation contract for that
 * chain then moved its reputation stream's height past every complaint, for good.
 */
describe('a chain client without a reputation contract', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const start = (systemChainId: string, log = pino({ level: 'silent' })) =>
    startChainClient(
      { db: db.pool, log, metrics: new Registry() },
      {
        port: 0,
        rpc: 'http://127.0.0.1:9',
        systemChainId,
        contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
        confirmations: 0,
        startBlock: 0,
        pollIntervalMs: 1_000,
        deliveryAttempts: 1,
        keepSettledDays: 7,
      },
    );
  const post = async (port: number, path: string, body: unknown) => {
    const answer = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: answer.status, body: (await answer.json()) as { code: number; message: string } };
  };
  const count = async (table: string, instance: string) =>
    Number(
      (await db.pool.query(`SELECT count(*) AS n FROM ${table} WHERE instance = $1`, [instance])).rows[0].n,
    );

  it('warns about the refusals once per route, not at every renewal of a misconfigured caller', async () => {
    const lines: Array<{ level: number; msg: string; route?: string }> = [];
    const log = pino(
      { level: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) },
    );
    const client = await start('615', log);
    try {
      const callback = { on_height_update: 'http://127.0.0.1:1/cb' };
      for (let i = 0; i < 4; i++) {
        expect((await post(client.port, '/support/register_reputation', { callback })).status).toBe(400);
        expect(
          (await post(client.port, '/support/history_reputation', { start: 1, end: 5, callback })).status,
        ).toBe(400);
      }
      const refusals = lines.filter((l) => /reputation route refused/.test(l.msg));
      const warnings = refusals.filter((l) => l.level === 40);
      expect(warnings.map((l) => l.route).sort()).toEqual(['history_reputation', 'register_reputation']);
      expect(refusals.filter((l) => l.level === 20)).toHaveLength(6);
    } finally {
      await client.stop();
    }
  });

  it('refuses register_reputation and history_reputation with 30231 and registers nothing; swap routes still serve', async () => {
    const client = await start('614');
    try {
      const callback = { on_height_update: 'http://127.0.0.1:1/cb' };
      for (const [path, body] of [
        ['/support/register_reputation', { callback, merge: true }],
        ['/support/history_reputation', { start: 1, end: 5, callback, merge: true }],
      ] as const) {
        const answer = await post(client.port, path, body);
        expect([path, answer.status, answer.body.code]).toEqual([
          path,
          400,
          CHAIN_CLIENT_ERRORS.NO_REPUTATION_CONTRACT.code,
        ]);
        expect(answer.body.message).toMatch(/chain 614\) has no reputation contract configured/);
      }
      expect(CHAIN_CLIENT_ERRORS.NO_REPUTATION_CONTRACT.code).toBe(30231);
      expect(await count('chain_client_registrations', '614')).toBe(0);
      expect(await count('chain_client_history_tasks', '614')).toBe(0);
      // The swap stream is served as before.
      expect((await post(client.port, '/support/register', { callback, merge: true })).body).toEqual({
        code: 200,
        message: 'register succeed',
      });
    } finally {
      await client.stop();
    }
  });

  it('removes the reputation registrations and history tasks it took before, with their queued posts', async () => {
    const instance = '615';
    const callback = JSON.stringify({ on_height_update: 'http://127.0.0.1:1/rep' });
    const { rows } = await db.pool.query<{ id: string }>(
      `INSERT INTO chain_client_registrations (instance, kind, callback, merge)
       VALUES ($1, 'reputation', $2, true), ($1, 'swap', $3, true) RETURNING id`,
      [instance, callback, JSON.stringify({ on_height_update: 'http://127.0.0.1:1/swap' })],
    );
    await db.pool.query(
      `INSERT INTO chain_client_history_tasks (instance, kind, callback, merge, start_block, end_block, next_block, lane)
       VALUES ($1, 'reputation', $2, true, 1, 10, 1, 'history:old')`,
      [instance, callback],
    );
    const heartbeat = JSON.stringify({ type: 'update_height', height: 5, data: [] });
    await db.pool.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body)
       VALUES ($1, $2, 'http://127.0.0.1:1/rep', $4), ($1, 'history:old', 'http://127.0.0.1:1/rep', $4),
              ($1, $3, 'http://127.0.0.1:1/swap', $4)`,
      [instance, `reg:${rows[0]!.id}`, `reg:${rows[1]!.id}`, heartbeat],
    );
    const client = await start(instance);
    try {
      const left = await db.pool.query(
        `SELECT kind FROM chain_client_registrations WHERE instance = $1
         UNION ALL SELECT 'task' FROM chain_client_history_tasks WHERE instance = $1`,
        [instance],
      );
      expect(left.rows).toEqual([{ kind: 'swap' }]);
      const posts = await db.pool.query(`SELECT url FROM chain_client_deliveries WHERE instance = $1`, [
        instance,
      ]);
      expect(posts.rows).toEqual([{ url: 'http://127.0.0.1:1/swap' }]);
    } finally {
      await client.stop();
    }
  });
});
