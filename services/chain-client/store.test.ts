import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainClientMigrations } from './migrations.js';
import { ChainClientStore } from './store.js';

const CALLBACK = { on_height_update: 'http://127.0.0.1:9/cb' };

/**
 * An unregister answered "unregister succeed" must leave nothing to post to that callback, whenever it lands
 * during a follower step: after the step read the registrations (its planned posts are then for a lane that
 * is gone), or while the step commits.
 */
describe('chain client store: unregister against a follower step', () => {
  let db: TestDatabase;
  let store: ChainClientStore;
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
    store = new ChainClientStore(db.pool, '77');
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await db.pool.query(
      `TRUNCATE chain_client_deliveries, chain_client_registrations, chain_client_progress RESTART IDENTITY`,
    );
    await store.commitRange(undefined, 5, []);
  });
  const pending = async () =>
    (
      await db.pool.query<{ lane: string }>(
        `SELECT lane FROM chain_client_deliveries WHERE instance = '77' AND status = 'pending'`,
      )
    ).rows.map((r) => r.lane);

  it('a step that read the registrations before the unregister queues nothing for it', async () => {
    expect(await store.register('swap', CALLBACK, true, 10)).toBe('created');
    const [registration] = await store.registrations();
    // The step read it; the unregister is answered; the step commits what it planned.
    expect(await store.unregister('swap', CALLBACK, true)).toBe(true);
    await store.commitRange(5, 10, [
      { lane: registration!.lane, url: CALLBACK.on_height_update, body: '{}' },
    ]);
    expect(await pending()).toEqual([]);
    expect(await store.progress()).toBe(10);
  });

  it('an unregister during a step waits for its commit, then removes the posts it queued', async () => {
    expect(await store.register('swap', CALLBACK, true, 10)).toBe('created');
    const [registration] = await store.registrations();
    // A step in its transaction: progress moved (its row locked), its posts not queued yet.
    const step = await db.pool.connect();
    try {
      await step.query('BEGIN');
      await step.query(`UPDATE chain_client_progress SET last_block = 10 WHERE instance = '77'`);
      const unregistered = store.unregister('swap', CALLBACK, true);
      await new Promise((r) => setTimeout(r, 200));
      await step.query(
        `INSERT INTO chain_client_deliveries (instance, lane, url, body) VALUES ('77', $1, $2, '{}')`,
        [registration!.lane, CALLBACK.on_height_update],
      );
      await step.query('COMMIT');
      expect(await unregistered).toBe(true);
    } finally {
      step.release();
    }
    expect(await pending()).toEqual([]);
  });

  it('history lanes are queued whatever the registrations', async () => {
    await store.commitRange(5, 10, [{ lane: 'history:x', url: CALLBACK.on_height_update, body: '{}' }]);
    expect(await pending()).toEqual(['history:x']);
  });
});

/**
 * A register of a callback already registered, raced by its unregister between the register's two statements
 * (its INSERT met the row; the row was gone when it looked for it): it was answered "full" (429, "holds its
 * limit") though the instance held one registration of ten.
 */
describe('chain client store: register raced by an unregister', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([chainClientMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('registers the callback again instead of answering "full"', async () => {
    let raced = false;
    // The pool as the store sees it: the unregister lands right after the register's first statement.
    const racing = new Proxy(db.pool, {
      get(target, property, receiver) {
        if (property !== 'query') return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof target.query>) => {
          const result = await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          if (!raced && String(args[0]).includes('INSERT INTO chain_client_registrations')) {
            raced = true;
            expect(await new ChainClientStore(db.pool, '78').unregister('swap', CALLBACK, true)).toBe(true);
          }
          return result;
        };
      },
    });
    const store = new ChainClientStore(racing, '78');
    expect(await new ChainClientStore(db.pool, '78').register('swap', CALLBACK, true, 10)).toBe('created');
    expect(await store.register('swap', CALLBACK, true, 10)).toBe('created');
    expect(raced).toBe(true);
    expect((await store.registrations()).length).toBe(1);
  });

  it('still answers "exists" and "full" when nothing races', async () => {
    const store = new ChainClientStore(db.pool, '79');
    expect(await store.register('swap', CALLBACK, true, 1)).toBe('created');
    expect(await store.register('swap', CALLBACK, true, 1)).toBe('exists');
    expect(await store.register('swap', { on_height_update: 'http://127.0.0.1:9/other' }, true, 1)).toBe(
      'full',
    );
  });
});
