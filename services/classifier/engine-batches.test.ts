import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SwapVerdict } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { ClassifierInput } from './engine.js';
import { classifierInput } from './index.js';
import { classifierMigrations } from './migrations.js';
import { model } from './reference-model.js';
import { DST } from './swap-timeline.js';
import { swapSpecs } from './synthetic-deployment.js';
import { batchContext, syntheticEngine } from './judge-test-kit.js';
import { swapTraffic } from './swap-traffic.js';

const SWAPS = 300;

/**
 * The engine over batches, against the reference model: the same swaps of every case, each chain's events
 * and heights in their own order (as their partitions deliver them) but interleaved across chains in
 * adversarial ways and cut into batches of random sizes, in transactions (live) and resident in memory
 * (replay). Every verdict must be the model's, whatever the cut: a read or a write the working set misses
 * shows up here as a wrong or missing verdict.
 */
describe('classifier engine over batches', () => {
  let db: TestDatabase;
  const specs = swapSpecs(SWAPS, 3);
  const traffic = swapTraffic(specs);
  const expected = new Map(specs.map((spec, i) => [traffic.bids[i]!, model(spec)]));
  // Per topic and chain, in publish order: what one partition hands a consumer.
  const partitions = new Map<string, ClassifierInput[]>();
  for (const stream of traffic.streams) {
    for (const { topic, message } of stream) {
      const input = classifierInput({
        topic,
        partition: 0,
        offset: 0n,
        key: message.key,
        value: message.value,
        headers: {},
        timestamp: new Date(0),
      });
      const chain = input.kind === 'event' ? input.event.chainId : input.height.chainId;
      const key = `${topic}/${chain}`;
      partitions.set(key, [...(partitions.get(key) ?? []), input]);
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  }, 60_000);
  afterAll(async () => {
    await db?.drop();
  });

  it.each([
    { order: 'destination chain first', resident: false, seed: 1 },
    { order: 'random', resident: false, seed: 2 },
    { order: 'destination chain first', resident: true, seed: 3 },
    { order: 'random', resident: true, seed: 4 },
  ])(
    'gives the model’s verdict to every swap: $order, resident $resident',
    async ({ order, resident, seed }) => {
      const schema = `batches_${seed}`;
      const { engine, tables } = await syntheticEngine(db.pool, schema, resident ? 'decisions' : undefined);
      const context = batchContext();
      let state = seed;
      const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
      const cursors = new Map([...partitions.keys()].map((k) => [k, 0]));
      let batches = 0;
      for (;;) {
        const open = [...partitions.keys()].filter((k) => cursors.get(k)! < partitions.get(k)!.length);
        if (open.length === 0) break;
        const key =
          order === 'random'
            ? open[Math.floor(random() * open.length)]!
            : (open.find((k) => k.endsWith(`/${DST.chainId}`)) ?? open[0]!);
        const at = cursors.get(key)!;
        const size = 1 + Math.floor(random() * 40);
        await engine.handleBatch(partitions.get(key)!.slice(at, at + size), context);
        cursors.set(key, at + size);
        batches++;
      }
      const { rows } = await db.pool.query<{ verdict: SwapVerdict }>(
        `SELECT verdict FROM ${tables.verdicts}`,
      );
      const got = rows.map(({ verdict: v }) => ({
        bid: v.bidId,
        outcome: v.outcome,
        case: v.case,
        blockTime: v.blockTime,
      }));
      const want = rows.map(({ verdict: v }) => {
        const w = expected.get(v.bidId)!;
        return { bid: v.bidId, outcome: w.outcome, case: w.case, blockTime: w.blockTime };
      });
      expect(batches).toBeGreaterThan(30);
      expect(rows).toHaveLength(SWAPS);
      expect(got).toEqual(want);
    },
    120_000,
  );
});
