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
