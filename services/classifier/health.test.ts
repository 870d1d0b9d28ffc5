/**
 * What the Classifier tells GET /health: a chain whose clock a dead-lettered event holds, and a DID support
 * that has failed every lookup for minutes, are both "degraded"; and the DID names pending swaps wait for are
 * asked again periodically (an instance that stopped took its requests with it).
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { databaseForSuite } from '../../test/support/database.js';
import { HttpDidSource } from './did-source.js';
import { releaseMissingEvent } from './holds.js';
import { classifierMetrics } from './metrics.js';
import { Registry } from 'prom-client';
import { askPendingDidsEvery, classifierHealth, DID_FAILING_DEGRADED_SECONDS } from './health.js';
import { syntheticEngine } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { classifierTables } from './tables.js';

describe('classifier health', () => {
  const db = databaseForSuite([classifierMigrations]);

  it('is degraded while dead-lettered events hold chain clocks, by chain, and ok once they are gone', async () => {
    const tables = classifierTables();
    const answering = { failingForSeconds: () => undefined };
    const check = classifierHealth(db.pool, tables, answering, ['614', '9006']);
    expect(await check()).toEqual({ status: 'ok', deadLetteredEvents: {} });
    // One event that did not decode holds both streams of 614; one event of 9006.
    await db.pool.query(
      `INSERT INTO ${tables.missingEvents} (chain_id, stream, event_id, block_number, error)
       VALUES ('614', 'swap', 'e-1', 0, 'x'), ('614', 'reputation', 'e-1', 0, 'x'), ('9006', 'swap', 'e-2', 7, 'y')`,
    );
    expect(await check()).toEqual({ status: 'degraded', deadLetteredEvents: { '614': 1, '9006': 1 } });
    // Released by the operator: its row stays as a tombstone, and holds nothing (neither here nor in the gauge).
    expect(await releaseMissingEvent(db.pool, tables, 'e-2')).toBe(1);
    expect(await check()).toEqual({ status: 'degraded', deadLetteredEvents: { '614': 1 } });
    const registry = new Registry();
    classifierMetrics(registry, db.pool, tables);
    const gauge = await registry.getSingleMetricAsString('classifier_dead_lettered_events');
    expect(gauge).toContain('classifier_dead_lettered_events{chain="614",stream="swap"} 1');
    expect(gauge).not.toContain('chain="9006"');
    await db.pool.query(`DELETE FROM ${tables.missingEvents}`);
    expect((await check()).status).toBe('ok');
  });

  it('is degraded while pending swaps wait for the clock of a chain taken out of chainClients', async () => {
    const { tables } = await syntheticEngine(db.pool, 'unwatched');
    await db.pool.query(
      `INSERT INTO ${tables.swaps} (bid_id, facts, status, wait_kind, wait_chain, wait_until) VALUES
         ('0xb1', '{}', 'pending', 'clock', '614', 10), ('0xb2', '{}', 'pending', 'clock', '97', 10),
         ('0xb3', '{}', 'pending', 'clock', '97', 12), ('0xb4', '{}', 'decided', 'clock', '56', 10)`,
    );
    const check = (watched: string[]) =>
      classifierHealth(db.pool, tables, { failingForSeconds: () => undefined }, watched)();
    expect(await check(['614', '97'])).toEqual({ status: 'ok', deadLetteredEvents: {} });
    expect(await check(['614'])).toEqual({
      status: 'degraded',
      deadLetteredEvents: {},
      swapsWaitingForUnwatchedChains: { '97': 2 },
    });
  });

  it('is degraded once the DID support has failed every lookup for minutes, not after a blip', async () => {
    const check = (seconds: number | undefined) =>
      classifierHealth(db.pool, classifierTables(), { failingForSeconds: () => seconds }, [])();
    expect(await check(DID_FAILING_DEGRADED_SECONDS - 1)).toMatchObject({
      status: 'ok',
      didFailingSeconds: DID_FAILING_DEGRADED_SECONDS - 1,
    });
    expect(await check(DID_FAILING_DEGRADED_SECONDS)).toMatchObject({ status: 'degraded' });
  });

  it('the DID source says how long it has been failing, from its first failure to its next answer', async () => {
    let down = true;
    const app = Fastify();
    app.get('/find/owner/:address', async (_request, reply) =>
      down ? reply.code(503).send({ code: 503, message: 'down' }) : { data: [{ name: 'lp' }] },
    );
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const answered: string[] = [];
    const did = new HttpDidSource({
      url,
      ttlMs: 60_000,
      log: createLogger({ level: 'silent' }),
      onAnswer: async (address) => void answered.push(address),
    });
    try {
      expect(did.failingForSeconds()).toBeUndefined();
      const address = '0x' + '11'.repeat(20);
      did.request(address);
      await waitUntil(() => did.failingForSeconds() !== undefined);
      expect(did.failingForSeconds(Date.now() + 300_000)).toBeGreaterThanOrEqual(299);
      down = false; // the retry (after 0.5 s) is answered
      await waitUntil(() => answered.length > 0);
      expect(did.failingForSeconds()).toBeUndefined();
      expect(did.names(address)).toEqual(['lp']);
    } finally {
      did.stop();
      await app.close();
    }
  });

  it('asks again for the DID names that pending swaps wait for, every interval', async () => {
    const asked: string[] = [];
    const { engine, tables } = await syntheticEngine(db.pool, 'did_recheck', undefined, {
      did: { names: () => undefined, request: (a) => void asked.push(a), stop: () => undefined },
    });
    await db.pool.query(
      `INSERT INTO ${tables.swaps} (bid_id, facts, status, wait_kind, wait_address)
       VALUES ('0xb1', '{}', 'pending', 'did', '0xaa'), ('0xb2', '{}', 'decided', 'did', '0xbb')`,
    );
    const errors: Error[] = [];
    const asking = askPendingDidsEvery(
      20,
      () => engine.requestPendingDids(),
      (err) => errors.push(err),
    );
    try {
      await waitUntil(() => asked.length >= 2);
    } finally {
      asking.stop();
    }
    expect(new Set(asked)).toEqual(new Set(['0xaa'])); // the decided swap waits for nothing
    expect(errors).toEqual([]);
  });
});

async function waitUntil(done: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
