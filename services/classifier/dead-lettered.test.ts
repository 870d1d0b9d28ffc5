/**
 * A chain event dead-lettered in the middle of a chunk never applied, but the chunk's last event did, and the
 * chunk's height names that one: the height alone would move the chain's clock past the missing event, and the
 * swap it belonged to would be judged without it. With the LP's TransferIn missing, an honest LP was blamed
 * (case 3). The bus tells the Classifier of each dead letter in its transaction (dead-lettered.ts): the event
 * holds its stream's clock below its block until it is redriven and applied, or the operator releases it.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolClient } from 'pg';
import { PoisonMessageError } from '../../shared/bus/errors.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { BusMessage, Subscription } from '../../shared/bus/port.js';
import { redriveDeadLetters } from '../../shared/bus/redrive.js';
import { withTransaction } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import { databaseForSuite } from '../../test/support/database.js';
import {
  chainEventId,
  chainEvents,
  chainHeightId,
  chainHeights,
  encode,
  envelope,
  swapVerdicts,
  topicSpec,
  violations,
  type ChainEvent,
  type ChainHeight,
  type SwapVerdict,
} from '../../topics/index.js';
import { missingOf } from './dead-lettered.js';
import type { ClassifierInput } from './engine.js';
import { listMissingEvents, releaseMissingEvent } from './holds.js';
import { subscribeEngine, watchedChains } from './index.js';
import { batchContext, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { buildTimeline, DST, REPUTATION_CHAIN, SRC } from './swap-timeline.js';
import { SYNTHETIC_CHAIN_CLIENTS } from './synthetic-deployment.js';
import type { ClassifierTables } from './tables.js';

const chains = watchedChains(SYNTHETIC_CHAIN_CLIENTS);
const timeline = buildTimeline(HONEST_SWAP);
const src = timeline.streams[SRC.chainId]!;
const dst = timeline.streams[DST.chainId]!;
const transferIn = dst.find((e) => e.kind === 'TransferIn')!;
const confirmIn = dst.find((e) => e.kind === 'ConfirmIn')!;

const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
const heightOf = (
  chainId: string,
  stream: 'swap' | 'reputation',
  h: number,
  blockTimestamp: number,
  lastEventId: string | null,
): ChainHeight => ({ chainId, stream, height: h, blockTimestamp, lastEventId });
const height = (h: ChainHeight): ClassifierInput => ({ kind: 'height', id: chainHeightId(h), height: h });

/** The source chain done and the complaint stream seen far past every window. */
const sourceDone = (): ClassifierInput[] => [
  ...src.map(event),
  height(heightOf(SRC.chainId, 'swap', 100, 5_000, chainEventId(src.at(-1)!))),
  height(heightOf(REPUTATION_CHAIN, 'reputation', 100, 5_000, null)),
];
/** The destination chunk's height: its last event is the ConfirmIn, after the TransferIn. */
const dstChunkHeight = () =>
  height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber, 5_000, chainEventId(confirmIn)));

function busMessage(e: ChainEvent, offset = 7n): BusMessage {
  const m = encode(
    chainEvents,
    envelope(chainEvents, e, { occurredAt: e.blockTimestamp, source: 'test', id: chainEventId(e) }),
  );
  return { ...garbage(m.key, m.value, offset), headers: m.headers ?? {} };
}
function garbage(key: string, value: string, offset = 9n): BusMessage {
  return { topic: chainEvents.name, partition: 0, offset, key, value, headers: {}, timestamp: new Date() };
}

describe('missingOf: what a dead-lettered message holds', () => {
  it('an event holds its own stream of its chain from its block, under its envelope id', () => {
    expect(missingOf(busMessage(transferIn), chains)).toEqual([
      {
        chainId: DST.chainId,
        stream: 'swap',
        eventId: chainEventId(transferIn),
        block: transferIn.blockNumber,
      },
    ]);
  });

  it('a message that does not decode holds every stream of the chain its key names, from block 0', () => {
    expect(missingOf(garbage(DST.chainId, '{"id":"e-1","payload":1}'), chains)).toEqual([
      { chainId: DST.chainId, stream: 'swap', eventId: 'e-1', block: 0 },
      { chainId: DST.chainId, stream: 'reputation', eventId: 'e-1', block: 0 },
    ]);
    // Without an envelope id: a digest of its value, the same wherever a redrive puts it (the source chain
    // has no reputation stream).
    const digest = `chain.events:sha256:${createHash('sha256').update('not json').digest('hex')}`;
    expect(missingOf(garbage(SRC.chainId, 'not json', 12n), chains)).toEqual([
      { chainId: SRC.chainId, stream: 'swap', eventId: digest, block: 0 },
    ]);
    expect(missingOf(garbage(SRC.chainId, 'not json', 40n), chains)[0]!.eventId).toBe(digest);
  });

  it('an id PostgreSQL text cannot hold (U+0000) is written with \\u0000', () => {
    const message = garbage(DST.chainId, JSON.stringify({ id: 'a\u0000b', payload: 1 }));
    expect(missingOf(message, chains).map((m) => m.eventId)).toEqual(['a\\u0000b', 'a\\u0000b']);
  });

  it('holds nothing of a chain not watched, nor of a height', () => {
    expect(missingOf(garbage('77', 'not json'), chains)).toEqual([]);
    expect(missingOf({ ...busMessage(transferIn), topic: chainHeights.name }, chains)).toEqual([]);
  });
});

describe('classifier: an event dead-lettered in the middle of a chunk', () => {
  const db = databaseForSuite([classifierMigrations]);

  const verdictsOf = async (tables: ClassifierTables) =>
    (await db.pool.query<{ verdict: SwapVerdict }>(`SELECT verdict FROM ${tables.verdicts}`)).rows.map(
      (r) => [r.verdict.outcome, r.verdict.case, r.verdict.party],
    );
  const dstClock = async (tables: ClassifierTables) =>
    (
      await db.pool.query<{ block_time: string }>(
        `SELECT block_time FROM ${tables.clocks} WHERE chain_id = $1 AND stream = 'swap'`,
        [DST.chainId],
      )
    ).rows.map((r) => Number(r.block_time))[0];
  const inTransaction = <T>(work: (tx: PoolClient) => Promise<T>) => withTransaction(db.pool, work);

  it.each(['live', 'resident'] as const)(
    'holds its chain clock until it is redriven; the swap is then judged with it (%s)',
    async (mode) => {
      const { engine, tables } = await syntheticEngine(
        db.pool,
        `dead_${mode}`,
        mode === 'resident' ? 'keep' : undefined,
      );
      const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
      await run(...sourceDone());
      // The LP's TransferIn fails and is dead-lettered; the ConfirmIn after it applies, and the chunk's height
      // names the ConfirmIn.
      await inTransaction((tx) => engine.deadLettered(busMessage(transferIn), 'boom', tx));
      await run(event(confirmIn), dstChunkHeight());
      expect(await verdictsOf(tables)).toEqual([]); // not case 3 on the LP: its TransferIn never applied
      if (mode === 'live') {
        expect(await dstClock(tables)).toBeUndefined();
        expect((await listMissingEvents(db.pool, tables)).map((m) => [m.eventId, m.block, m.error])).toEqual([
          [chainEventId(transferIn), transferIn.blockNumber, 'boom'],
        ]);
      }
      // Redriven: the TransferIn applies, the clock moves on, the swap is normal.
      await run(event(transferIn));
      await engine.writeResident();
      expect(await verdictsOf(tables)).toEqual([['normal', null, null]]);
      expect(await dstClock(tables)).toBe(5_000);
      expect(await listMissingEvents(db.pool, tables)).toEqual([]);
    },
  );

  it('holds only heights at or above its block', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_below');
    const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
    await run(...sourceDone());
    await inTransaction((tx) => engine.deadLettered(busMessage(confirmIn), 'boom', tx));
    // A height of the TransferIn's block (below the ConfirmIn's) moves the clock; the chunk's height does not.
    await run(
      event(transferIn),
      height(heightOf(DST.chainId, 'swap', transferIn.blockNumber, 1_001, chainEventId(transferIn))),
      height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber + 5, 5_000, chainEventId(transferIn))),
    );
    expect(await dstClock(tables)).toBe(1_001);
    expect(await verdictsOf(tables)).toEqual([]); // not case 6 (the ConfirmIn never applied)
    await run(event(confirmIn));
    expect(await dstClock(tables)).toBe(5_000);
    expect(await verdictsOf(tables)).toEqual([['normal', null, null]]);
  });

  it('a copy of an event applied before holds nothing', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_copy');
    const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
    await run(...sourceDone(), event(transferIn));
    await inTransaction((tx) => engine.deadLettered(busMessage(transferIn), 'boom', tx));
    expect(await listMissingEvents(db.pool, tables)).toEqual([]);
    await run(event(confirmIn), dstChunkHeight());
    expect(await verdictsOf(tables)).toEqual([['normal', null, null]]);
  });

  it('one that never decodes holds its chain until the operator releases it', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_garbage');
    const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
    await run(...sourceDone());
    await inTransaction((tx) => engine.deadLettered(garbage(DST.chainId, 'not json'), 'not JSON', tx));
    await run(...dst.map(event), dstChunkHeight());
    expect(await dstClock(tables)).toBeUndefined();
    expect(await verdictsOf(tables)).toEqual([]);
    expect(await releaseMissingEvent(db.pool, tables, 'no-such-event')).toBe(0);
    const [held] = await listMissingEvents(db.pool, tables);
    expect(await releaseMissingEvent(db.pool, tables, held!.eventId)).toBe(2); // both streams
    // The next batch, whatever it holds, lets the clock pass it.
    await run(height(heightOf(REPUTATION_CHAIN, 'reputation', 101, 5_001, null)));
    expect(await dstClock(tables)).toBe(5_000);
    expect(await verdictsOf(tables)).toEqual([['normal', null, null]]);
    // Kept as a tombstone: redriven and dead-lettered again (from another offset), it holds nothing.
    expect((await listMissingEvents(db.pool, tables)).map((m) => m.released)).toEqual([true, true]);
    await inTransaction((tx) => engine.deadLettered(garbage(DST.chainId, 'not json', 40n), 'not JSON', tx));
    await run(height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber + 50, 6_000, null)));
    expect(await dstClock(tables)).toBe(6_000);
    expect(await listMissingEvents(db.pool, tables)).toHaveLength(2);
  });

  it('an event released by the operator holds nothing when it is dead-lettered again', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_rehold');
    const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
    await run(...sourceDone());
    await inTransaction((tx) => engine.deadLettered(busMessage(transferIn), 'boom', tx));
    await run(event(confirmIn), dstChunkHeight());
    expect(await releaseMissingEvent(db.pool, tables, chainEventId(transferIn))).toBe(1);
    await run(height(heightOf(REPUTATION_CHAIN, 'reputation', 101, 5_001, null)));
    expect(await dstClock(tables)).toBe(5_000);
    // Judged without it, as the operator chose: the LP's TransferIn never applied.
    expect(await verdictsOf(tables)).toEqual([['violation', 3, 'lp']]);
    // A later redrive sends its copy again, and it fails again: the clock goes on.
    await inTransaction((tx) => engine.deadLettered(busMessage(transferIn, 70n), 'boom', tx));
    await run(
      height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber + 50, 6_000, chainEventId(confirmIn))),
    );
    expect(await dstClock(tables)).toBe(6_000);
  });

  it.each(['live', 'resident'] as const)(
    'a released event that stays its stream’s last one: the heights naming it after the release move the clock (%s)',
    async (mode) => {
      const schema = `dead_release_last_${mode}`;
      const released = new Set([chainEventId(confirmIn)]);
      const { engine, tables } = await syntheticEngine(
        db.pool,
        schema,
        mode === 'resident' ? 'keep' : undefined,
        // A replay is told what the operator released live.
        mode === 'resident' ? { releasedHolds: released } : {},
      );
      const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
      await run(...sourceDone(), event(transferIn));
      // The ConfirmIn, the chunk's last event, never applies; the chunk's height names it.
      if (mode === 'live') {
        await inTransaction((tx) => engine.deadLettered(busMessage(confirmIn), 'boom', tx));
        await run(dstChunkHeight());
        expect(await releaseMissingEvent(db.pool, tables, chainEventId(confirmIn))).toBe(1);
        await run(height(heightOf(REPUTATION_CHAIN, 'reputation', 101, 5_001, null)));
        expect(await dstClock(tables)).toBe(5_000);
      } else {
        await engine.deadLettered(busMessage(confirmIn), 'malformed');
        await run(dstChunkHeight());
      }
      // The Connector's next chunks have no events: their heights name the released ConfirmIn, the stream's
      // last event, and the clock must pass them as it passed the first.
      await run(
        height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber + 5, 6_000, chainEventId(confirmIn))),
      );
      await run(
        height(heightOf(DST.chainId, 'swap', confirmIn.blockNumber + 10, 7_000, chainEventId(confirmIn))),
      );
      await engine.writeResident();
      expect(await dstClock(tables)).toBe(7_000);
      // Judged without it, as the operator chose: the LP's ConfirmIn never applied.
      expect(await verdictsOf(tables)).toEqual([['violation', 6, 'lp']]);
    },
  );

  it('an envelope id with U+0000 is held (escaped) and the dead letter commits', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_nul');
    const message = garbage(DST.chainId, JSON.stringify({ id: 'a\u0000b', payload: 1 }));
    await inTransaction((tx) => engine.deadLettered(message, 'not an envelope', tx));
    expect((await listMissingEvents(db.pool, tables)).map((m) => m.eventId)).toEqual([
      'a\\u0000b',
      'a\\u0000b',
    ]);
  });

  it('a replay: an event whose handling throws is applied when it is delivered again', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_resident_throw', 'keep');
    let fail = true;
    const failing = engine as unknown as { onEvent(w: unknown, id: string, e: ChainEvent): void };
    const onEvent = failing.onEvent.bind(engine);
    failing.onEvent = (w, id, e) => {
      if (fail && id === chainEventId(transferIn)) throw new Error('transient failure');
      onEvent(w, id, e);
    };
    const run = (...inputs: ClassifierInput[]) => engine.handleBatch(inputs, batchContext());
    await run(...sourceDone());
    await expect(run(event(transferIn))).rejects.toThrow('transient failure');
    fail = false;
    await run(event(transferIn)); // delivered again
    await run(event(confirmIn), dstChunkHeight());
    await engine.writeResident();
    expect(await verdictsOf(tables)).toEqual([['normal', null, null]]);
  });
});

describe('classifier on the bus: a poison event in the middle of a chunk', () => {
  const db = databaseForSuite([classifierMigrations]);
  let bus: PostgresBus;
  const subscriptions: Subscription[] = [];
  beforeAll(async () => {
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics([
      topicSpec(chainEvents, 2),
      topicSpec(chainHeights, 2),
      topicSpec(swapVerdicts, 1),
      topicSpec(violations, 1),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(subscriptions.map((s) => s.stop()));
    await bus?.close();
  });

  it('is dead-lettered and holds the clock: no violation; redriven, the swap is normal', async () => {
    const { engine, tables } = await syntheticEngine(db.pool, 'dead_bus', undefined, { bus });
    let poisoned = true;
    const transferInId = chainEventId(transferIn);
    const subscription = await subscribeEngine(bus, engine, {
      group: 'dead_bus',
      maxBatch: 500,
      wrap: (handler) => async (messages, context) => {
        if (poisoned && messages.some((m) => m.value.includes(transferInId)))
          throw new PoisonMessageError('cannot apply this TransferIn');
        return handler(messages, context);
      },
    });
    subscriptions.push(subscription);
    const publish = (inputs: ClassifierInput[]) =>
      bus.publish(
        inputs[0]!.kind === 'event' ? chainEvents.name : chainHeights.name,
        inputs.map((i) =>
          i.kind === 'event'
            ? encode(chainEvents, envelope(chainEvents, i.event, { occurredAt: 0, source: 'test', id: i.id }))
            : encode(
                chainHeights,
                envelope(chainHeights, i.height, { occurredAt: 0, source: 'test', id: i.id }),
              ),
        ),
      );
    const [srcEvents, srcHeights] = [sourceDone().slice(0, src.length), sourceDone().slice(src.length)];
    await publish(srcEvents);
    await publish(srcHeights);
    await publish(dst.map(event)); // one chunk: the TransferIn in its middle
    await publish([dstChunkHeight()]);

    const settled = async (what: string, done: () => Promise<boolean>) => {
      for (let i = 0; i < 200 && !(await done()); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await done(), what).toBe(true);
    };
    const lagOf = async () =>
      (await bus.lag('dead_bus', [chainEvents.name, chainHeights.name])).reduce((sum, p) => sum + p.lag, 0n);
    await settled('every message taken', async () => (await lagOf()) === 0n);
    expect((await listMissingEvents(db.pool, tables)).map((m) => m.eventId)).toEqual([transferInId]);
    expect(await verdictsOf()).toEqual([]);
    expect((await db.pool.query(`SELECT 1 FROM ${tables.violations}`)).rowCount).toBe(0);

    poisoned = false;
    const report = await redriveDeadLetters({ bus, pool: db.pool, topic: chainEvents.name, pollMs: 50 });
    expect(report.redriven).toBe(1);
    await settled('judged', async () => (await verdictsOf()).length > 0);
    expect(await verdictsOf()).toEqual([['normal', null, null]]);
    expect(await listMissingEvents(db.pool, tables)).toEqual([]);

    async function verdictsOf() {
      return (
        await db.pool.query<{ verdict: SwapVerdict }>(`SELECT verdict FROM ${tables.verdicts}`)
      ).rows.map((r) => [r.verdict.outcome, r.verdict.case, r.verdict.party]);
    }
  });
});
