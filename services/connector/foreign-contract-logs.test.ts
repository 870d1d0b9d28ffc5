import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { connectorMigrations } from './migrations.js';
import { clearConnectorTables, goldenEventBody, startTestConnector } from './test-harness.js';

/**
 * spec/otmoic.md §4: the original chain client reads logs without an address filter, so its chunks carry the
 * Otmoic-shaped logs of every contract on the chain (an older Otmoic deployment, a copycat anyone can deploy);
 * "a receiver must check event.address against the known contract". Refusing the whole chunk for such a log
 * refused our own events with it, and the history of those blocks too (the same chain client, the same log),
 * so one log every 5 blocks from anyone's contract stalled the stream (for good without an rpc-urls entry).
 * The foreign log is left out, counted and logged; the rest of the body is taken.
 */
describe("a body of the original chain client holding another contract's log", () => {
  let db: TestDatabase;
  let c: Awaited<ReturnType<typeof startTestConnector>>;
  const foreignAddress = '0x' + '42'.repeat(20);
  const foreignOf = (body: ReturnType<typeof goldenEventBody>) => ({
    ...body,
    event: { ...body.event, address: foreignAddress },
  });
  const post = (payload: unknown) =>
    c.app.inject({
      method: 'POST',
      url: '/callback/9006/swap',
      payload: payload as object,
      headers: { 'content-type': 'application/json' },
    });
  const published = async () =>
    (
      await db.pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY "offset"`,
      )
    ).rows.map((r) => JSON.parse(r.value).payload.blockNumber as number);
  const foreignCounted = async () =>
    (await c.registry.getSingleMetric('connector_foreign_events_total')!.get()).values.find(
      (v) => v.labels.chain === '9006',
    )?.value ?? 0;

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    c = await startTestConnector(db, { requestBackfill: () => undefined });
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await c.heights.init('9006', 'swap', 10);
  });
  afterAll(async () => {
    await c?.close();
    await db?.drop();
  });

  it('a chunk: publishes the configured contract events, leaves the foreign log out, counts it', async () => {
    const before = await foreignCounted();
    const chunk = {
      type: 'update_height',
      height: 15,
      data: [goldenEventBody('TransferOut', 12), foreignOf(goldenEventBody('TransferOut', 13))],
    };
    const first = await post(chunk);
    expect([first.statusCode, first.json()]).toEqual([200, { code: 200, message: 'processed' }]);
    expect(await published()).toEqual([12]);
    expect(await c.heights.get('9006', 'swap')).toBe(15);
    expect(await foreignCounted()).toBe(before + 1);
    // Its retry changes nothing.
    expect((await post(chunk)).json()).toEqual({ code: 200, message: 'already processed' });
    expect(await published()).toEqual([12]);
  });

  it('a single event (history without merge): answered skipped, nothing held', async () => {
    const answer = await post(foreignOf(goldenEventBody('TransferOut', 12)));
    expect([answer.statusCode, answer.json()]).toEqual([
      200,
      { code: 200, message: 'skipped: not a configured contract' },
    ]);
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
    expect(rows[0].n).toBe(0);
    expect((await post({ type: 'update_height', height: 15 })).json().message).toBe('processed');
    expect(await published()).toEqual([]);
  });
});
