import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, finalHeights, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMetrics } from './metrics.js';
import { classifierMigrations } from './migrations.js';
import { buildTimeline, DST, SRC } from './swap-timeline.js';
import { classifierTables } from './tables.js';

const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });

/**
 * A batch whose transaction rolls back (its commit fenced by a rebalance, a lost connection) is delivered
 * again: its verdicts were counted when they were reached, so classifier_verdicts_total counted them twice.
 * They are counted once the transaction committed.
 */
describe('classifier metrics of a batch that rolled back', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('count its verdicts once, when they are committed', async () => {
    const schema = 'metrics_once';
    const registry = new Registry();
    const { engine, tables } = await syntheticEngine(db.pool, schema, undefined, {
      metrics: classifierMetrics(registry, db.pool, classifierTables(schema)),
    });
    const t = buildTimeline(HONEST_SWAP);
    const inputs = [
      ...t.streams[SRC.chainId]!.map(event),
      ...t.streams[DST.chainId]!.map(event),
      ...finalHeights(100_000),
    ];
    const fenced = {
      ...batchContext(),
      commitIn: async () => {
        throw new Error('fenced: another member took the partition');
      },
    };
    await expect(engine.handleBatch(inputs, fenced)).rejects.toThrow(/fenced/);
    const verdicts = async () =>
      Number((await db.pool.query(`SELECT count(*) AS n FROM ${tables.verdicts}`)).rows[0].n);
    const counted = async () =>
      (await registry.getSingleMetric('classifier_verdicts_total')!.get()).values.reduce(
        (n, v) => n + v.value,
        0,
      );
    expect(await verdicts()).toBe(0);
    expect(await counted()).toBe(0);
    // Delivered again, message by message as the bus does after a failed batch.
    for (const input of inputs) await engine.handleBatch([input], batchContext());
    expect(await verdicts()).toBe(1);
    expect(await counted()).toBe(1);
  });
});

describe('classifier_orphan_events', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('counts the events waiting for their swap, and none once it came', async () => {
    const schema = 'metrics_orphans';
    const registry = new Registry();
    const { engine } = await syntheticEngine(db.pool, schema, undefined, {
      metrics: classifierMetrics(registry, db.pool, classifierTables(schema)),
    });
    const t = buildTimeline(HONEST_SWAP);
    const orphans = async () =>
      (await registry.getSingleMetric('classifier_orphan_events')!.get()).values[0]!.value;
    // The destination chain first: its TransferIn and ConfirmIn wait for the TransferOut.
    await engine.handleBatch(t.streams[DST.chainId]!.map(event), batchContext());
    expect(await orphans()).toBe(t.streams[DST.chainId]!.length);
    await engine.handleBatch(t.streams[SRC.chainId]!.map(event), batchContext());
    expect(await orphans()).toBe(0);
  });
});
