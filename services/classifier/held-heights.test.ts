/**
 * A height whose last event was not handled (dead-lettered, until it is redriven) holds its chain's clock,
 * and so does every later height of that chain stream, although later events of the chain were handled: the
 * clock says every event up to it was, so it must not pass the missing one and decide swaps without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { databaseForSuite } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMetrics } from './metrics.js';
import { classifierMigrations } from './migrations.js';
import { classifierTables } from './tables.js';
import { buildTimeline, DST, REPUTATION_CHAIN, SRC } from './swap-timeline.js';

// A normal swap: TransferOut at 1000, the LP's TransferIn at 1001, ConfirmOut 1002, ConfirmIn 1003.
const spec = HONEST_SWAP;

const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
const height = (
  chainId: string,
  stream: 'swap' | 'reputation',
  h: number,
  blockTimestamp: number,
  lastEventId: string | null,
): ClassifierInput => ({
  kind: 'height',
  id: `${chainId}:${stream}:${h}`,
  height: { chainId, stream, height: h, blockTimestamp, lastEventId },
});

describe('classifier: a held height holds every later height of its stream', () => {
  const db = databaseForSuite([classifierMigrations]);

  it.each([false, true])(
    'until the missing event comes; then the swap is judged with it (one batch: %s)',
    async (oneBatch) => {
      const timeline = buildTimeline(spec);
      const src = timeline.streams[SRC.chainId]!;
      const dst = timeline.streams[DST.chainId]!;
      const transferIn = dst.find((e) => e.kind === 'TransferIn')!;
      const confirmIn = dst.find((e) => e.kind === 'ConfirmIn')!;
      const schema = `held_${oneBatch ? 1 : 2}`;
      const registry = new Registry();
      const { engine, tables } = await syntheticEngine(db.pool, schema, undefined, {
        metrics: classifierMetrics(registry, db.pool, classifierTables(schema)),
      });
      const context = batchContext();
      const run = (...inputs: ClassifierInput[]) =>
        oneBatch
          ? engine.handleBatch(inputs, context)
          : inputs.reduce(
              (done, input) => done.then(() => engine.handleBatch([input], context)),
              Promise.resolve(),
            );
      const verdicts = async () =>
        (await db.pool.query<{ verdict: SwapVerdict }>(`SELECT verdict FROM ${tables.verdicts}`)).rows.map(
          (r) => [r.verdict.outcome, r.verdict.case, r.verdict.party],
        );
      const dstClock = async () =>
        (
          await db.pool.query<{ block_time: string }>(
            `SELECT block_time FROM ${tables.clocks} WHERE chain_id = $1 AND stream = 'swap'`,
            [DST.chainId],
          )
        ).rows[0]?.block_time;

      await run(
        ...src.map(event),
        height(SRC.chainId, 'swap', 100, 5_000, chainEventId(src.at(-1)!)),
        height(REPUTATION_CHAIN, 'reputation', 100, 5_000, null),
        // The LP's TransferIn is dead-lettered: the height naming it is held.
        height(DST.chainId, 'swap', 10, 1_001, chainEventId(transferIn)),
        // The chain's next event is handled, and the height after it names it: still held (behind height 10).
        event(confirmIn),
        height(DST.chainId, 'swap', 20, 5_000, chainEventId(confirmIn)),
      );
      expect(await verdicts()).toEqual([]); // not case 3: the TransferIn was never seen
      expect(await dstClock()).toBeUndefined();
      const held = await db.pool.query(`SELECT height FROM ${tables.pendingHeights} ORDER BY height`);
      expect(held.rows.map((r) => Number(r.height))).toEqual([10, 20]);

      // The dead letter is redriven: both heights are released, and the swap is judged with its TransferIn.
      await run(event(transferIn));
      expect(await verdicts()).toEqual([['normal', null, null]]);
      expect(Number(await dstClock())).toBe(5_000);
      expect((await db.pool.query(`SELECT 1 FROM ${tables.pendingHeights}`)).rows).toEqual([]);
      expect(await registry.getSingleMetricAsString('classifier_late_events_total')).not.toMatch(/chain=/);

      // An event whose block the clock passed long ago (the Connector's late path) joins the decided swap.
      await run(event({ ...transferIn, txHash: '0x' + '77'.repeat(32), logIndex: 9 } as ChainEvent));
      expect(await registry.getSingleMetricAsString('classifier_late_events_total')).toContain(
        `classifier_late_events_total{chain="${DST.chainId}",swap="decided"} 1`,
      );
      expect(await verdicts()).toEqual([['normal', null, null]]);
    },
  );

  it('a height released in the batch does not hide a higher one still held below a new height', async () => {
    // A stranger's TransferIn at 1004 follows the LP's ConfirmIn (1003) on the destination chain.
    const timeline = buildTimeline({ ...spec, griefIn: { at: 1004 } });
    const src = timeline.streams[SRC.chainId]!;
    const dst = timeline.streams[DST.chainId]!;
    const [transferIn, confirmIn, grief] = [
      dst.find((e) => e.kind === 'TransferIn' && e.blockTimestamp === 1001)!,
      dst.find((e) => e.kind === 'ConfirmIn')!,
      dst.find((e) => e.kind === 'TransferIn' && e.blockTimestamp === 1004)!,
    ];
    const { engine, tables } = await syntheticEngine(db.pool, 'held_3');
    const context = batchContext();
    const batch = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, context);
    for (const input of [
      ...src.map(event),
      height(SRC.chainId, 'swap', 100, 5_000, chainEventId(src.at(-1)!)),
      height(REPUTATION_CHAIN, 'reputation', 100, 5_000, null),
      height(DST.chainId, 'swap', 10, 1_001, chainEventId(transferIn)), // its event comes later
      height(DST.chainId, 'swap', 20, 1_003, chainEventId(confirmIn)), // dead-lettered
      event(grief),
    ])
      await batch(input);
    // One batch: the TransferIn releases height 10; height 30 names a handled event but 20 is still held.
    await batch(event(transferIn), height(DST.chainId, 'swap', 30, 5_000, chainEventId(grief)));
    const clock = await db.pool.query<{ block_time: string }>(
      `SELECT block_time FROM ${tables.clocks} WHERE chain_id = $1 AND stream = 'swap'`,
      [DST.chainId],
    );
    expect(Number(clock.rows[0]!.block_time)).toBe(1_001);
    const held = await db.pool.query(`SELECT height FROM ${tables.pendingHeights} ORDER BY height`);
    expect(held.rows.map((r) => Number(r.height))).toEqual([20, 30]);
    expect((await db.pool.query(`SELECT 1 FROM ${tables.verdicts}`)).rows).toEqual([]); // not case 6
    await batch(event(confirmIn));
    const verdicts = await db.pool.query<{ verdict: SwapVerdict }>(`SELECT verdict FROM ${tables.verdicts}`);
    expect(verdicts.rows.map((r) => r.verdict.outcome)).toEqual(['normal']);
  });
});
