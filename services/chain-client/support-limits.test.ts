/**
 * With `chainClient.allowIps` empty anyone may call the support routes, as the original. Each registration
 * costs a post per chunk for ever, each history task a read of its range through the RPC: an instance keeps
 * at most so many of each, and refuses more with 429 / 30209, not with a database growing without end.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { databaseForSuite } from '../../test/support/database.js';
import type { Follower } from './follower.js';
import { chainClientMigrations } from './migrations.js';
import { SUPPORT_ERROR } from './errors.js';
import { registerSupportRoutes, RESOLVE_TIMEOUT_MS } from './routes.js';
import { ChainClientStore } from './store.js';

/** A reputation contract address: these instances take the reputation routes. */
const REPUTATION_CONTRACT = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';

describe('chain client support routes: what an instance keeps at most', () => {
  const db = databaseForSuite([chainClientMigrations]);
  let app: FastifyInstance;
  beforeAll(async () => {
    app = Fastify();
    const follower = { confirmedHead: async () => 10_000_000, wake: () => undefined } as unknown as Follower;
    registerSupportRoutes(app, {
      systemChainId: '9006',
      reputationContract: REPUTATION_CONTRACT,
      store: new ChainClientStore(db.pool, '9006'),
      follower,
      log: createLogger({ level: 'silent' }),
      limits: { registrations: 3, historyTasks: 2 },
    });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
  });
  const post = async (url: string, payload: object) => {
    const answer = await app.inject({ method: 'POST', url, payload });
    return [answer.statusCode, answer.json()] as const;
  };
  const count = async (table: string) =>
    Number((await db.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);

  it('registrations: up to the limit; a repeat is still "already registered"; one more is refused', async () => {
    const register = (i: number) =>
      post('/support/register', { callback: { on_height_update: `http://10.0.0.1/r${i}` } });
    for (const i of [1, 2, 3])
      expect(await register(i)).toEqual([200, { code: 200, message: 'register succeed' }]);
    expect(await register(2)).toEqual([
      200,
      { code: SUPPORT_ERROR, message: 'callbackUrl is already registered' },
    ]);
    const [status, body] = await register(4);
    expect([status, body.code]).toEqual([429, SUPPORT_ERROR]);
    expect(body.message).toMatch(/holds 3 registrations, its limit/);
    expect(await count('chain_client_registrations')).toBe(3);
    // Room again once one is removed.
    expect(
      (await post('/support/unregister', { callback: { on_height_update: 'http://10.0.0.1/r1' } }))[0],
    ).toBe(200);
    expect((await register(4))[0]).toBe(200);
  });

  it('history tasks: up to the limit pending; one more is refused', async () => {
    const history = (i: number) =>
      post('/support/history', {
        start: 0,
        end: 9_999_990,
        callback: { on_height_update: `http://10.0.0.1/h${i}` },
      });
    for (const i of [1, 2]) expect((await history(i))[0]).toBe(200);
    const [status, body] = await history(3);
    expect([status, body.code]).toEqual([429, SUPPORT_ERROR]);
    expect(body.message).toMatch(/2 history tasks are pending, the limit/);
    expect(await count('chain_client_history_tasks')).toBe(2);
  });

  it('an identical history request while the task runs is that task: answered as the first, not started again', async () => {
    const store = new ChainClientStore(db.pool, '9008');
    const app = Fastify();
    registerSupportRoutes(app, {
      systemChainId: '9006',
      reputationContract: REPUTATION_CONTRACT,
      store,
      follower: { confirmedHead: async () => 1_000, wake: () => undefined } as unknown as Follower,
      log: createLogger({ level: 'silent' }),
    });
    const tasks = async () =>
      Number(
        (await db.pool.query(`SELECT count(*) AS n FROM chain_client_history_tasks WHERE instance = '9008'`))
          .rows[0].n,
      );
    try {
      const history = async (payload: object) => {
        const answer = await app.inject({ method: 'POST', url: '/support/history', payload });
        return [answer.statusCode, answer.json()] as const;
      };
      const request = {
        start: 10,
        end: 20,
        callback: { on_height_update: 'http://10.0.0.1/h' },
        merge: true,
      };
      const started = [200, { code: 200, message: 'history task started' }];
      // A client retrying after a lost answer: the same answer, and still one task (one delivery of each chunk).
      expect(await history(request)).toEqual(started);
      expect(await history(request)).toEqual(started);
      expect(await history({ ...request, callback: { on_height_update: 'http://10.0.0.1/h' } })).toEqual(
        started,
      );
      expect(await tasks()).toBe(1);
      // Its ranges all queued, its posts still going out: the task still runs.
      const [task] = await store.historyTasks();
      await store.commitHistoryRange(task!, 21, [
        { lane: task!.registration.lane, url: 'http://10.0.0.1/h', body: '{}' },
      ]);
      expect(await history(request)).toEqual(started);
      expect(await tasks()).toBe(1);
      expect(await store.historyTasks()).toEqual([]);
      // Another range, callback, merge or kind is another task.
      for (const other of [
        { ...request, end: 25 },
        { ...request, start: 11 },
        { ...request, callback: { on_height_update: 'http://10.0.0.1/other' } },
        { ...request, merge: false },
      ])
        expect(await history(other)).toEqual(started);
      expect(
        (await app.inject({ method: 'POST', url: '/support/history_reputation', payload: request }))
          .statusCode,
      ).toBe(200);
      expect(await tasks()).toBe(6);
      // Once its posts are out, the same request is a new task (a client asking again on purpose).
      await db.pool.query(`UPDATE chain_client_deliveries SET status = 'delivered' WHERE instance = '9008'`);
      expect(await history(request)).toEqual(started);
      expect((await store.historyTasks()).length).toBe(6);
    } finally {
      await app.close();
    }
  });

  it('refuses a callback host name that resolves to a link-local (metadata) address', async () => {
    const guarded = Fastify();
    const names: Record<string, string[]> = {
      '169-254-169-254.nip.io': ['169.254.169.254'],
      'metadata.google.internal': ['169.254.169.254'],
      'v6.example': ['fe80::1'],
      'connector.example': ['10.0.0.7'],
    };
    registerSupportRoutes(guarded, {
      systemChainId: '9006',
      reputationContract: REPUTATION_CONTRACT,
      store: new ChainClientStore(db.pool, '9007'),
      follower: { confirmedHead: async () => 100, wake: () => undefined } as unknown as Follower,
      log: createLogger({ level: 'silent' }),
      resolve: async (host) =>
        host === 'hung.example'
          ? new Promise<string[]>(() => undefined) // a resolver that never answers
          : (names[host] ?? Promise.reject(new Error('ENOTFOUND'))),
    });
    try {
      const post = async (url: string, payload: object) => {
        const answer = await guarded.inject({ method: 'POST', url, payload });
        return [answer.statusCode, answer.json()] as const;
      };
      for (const host of ['169-254-169-254.nip.io', 'metadata.google.internal', 'v6.example']) {
        const callback = { on_height_update: `http://${host}/latest/meta-data` };
        for (const [route, body] of [
          ['/support/register', { callback }],
          ['/support/history', { start: 1, end: 5, callback }],
        ] as const) {
          const [status, answer] = await post(route, body);
          expect([host, route, status, answer.code]).toEqual([host, route, 400, SUPPORT_ERROR]);
          expect(answer.message).toMatch(/resolves to a link-local address/);
        }
      }
      // A private address (the Connector's), and a name that does not resolve now, are taken.
      for (const host of ['connector.example', 'not-yet.example'])
        expect(
          (await post('/support/register', { callback: { on_height_update: `http://${host}/h` } }))[0],
        ).toBe(200);
      // A resolver that never answers holds the answer RESOLVE_TIMEOUT_MS at most.
      const started = Date.now();
      const hung = await post('/support/register', {
        callback: { on_height_update: 'http://hung.example/h' },
      });
      expect(hung[0]).toBe(200);
      expect(Date.now() - started).toBeLessThan(RESOLVE_TIMEOUT_MS + 1_000);
    } finally {
      await guarded.close();
    }
  });
});
