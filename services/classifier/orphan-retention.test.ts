import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../shared/db/migrate.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, finalHeights, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMetrics } from './metrics.js';
import { classifierMigrations } from './migrations.js';
import { buildTimeline, DST, LP, SRC, type TimelineSpec } from './swap-timeline.js';
import { classifierTables } from './tables.js';

/**
 * Orphans (events whose swap is not known) are removed once the event that would adopt them can no longer
 * come: every watched chain's clock past their expiry (orphan-retention.ts). Written out here rather than
 * imported, so that each test fails on a build without the rule instead of failing to load.
 */
const DAY = 86_400;
const WEEK = 7 * DAY;

type TransferIn = Extract<ChainEvent, { kind: 'TransferIn' }>;
const hex = (n: number) => '0x' + n.toString(16).padStart(64, '0');
const event = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });

let heightNo = 0;
/** One height of each chain's swap stream (`undefined`: that chain's clock does not move). */
const clocks = (src: number | undefined, dst: number | undefined): ClassifierInput[] =>
  (
    [
      [SRC.chainId, src],
      [DST.chainId, dst],
    ] as const
  ).flatMap(([chainId, blockTimestamp]) => {
    if (blockTimestamp === undefined) return [];
    const height = ++heightNo;
    return [
      {
        kind: 'height' as const,
        id: `${chainId}:height:${height}`,
        height: { chainId, stream: 'swap' as const, height, blockTimestamp, lastEventId: null },
      },
    ];
  });

/** The LP's TransferIn of a swap, naming a transfer that never existed (a new tx hash: a new event). */
const namingNothing = (tin: TransferIn, n: number, changes: Partial<TransferIn> = {}): TransferIn => ({
  ...tin,
  srcTransferId: hex(0xfa4e0000 + n),
  transferId: hex(0x1e0000 + n),
  txHash: hex(0x7e0000 + n),
  ...changes,
});

const lpTransferIn = (spec: TimelineSpec): TransferIn =>
  buildTimeline(spec).streams[DST.chainId]!.find(
    (e): e is TransferIn => e.kind === 'TransferIn' && e.sender === LP.address,
  )!;

describe('orphans kept until nothing can adopt them', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });
  let n = 0;

  const setUp = async (resident?: 'keep') => {
    const schema = `orphans_${n++}`;
    const registry = new Registry();
    const { engine, tables } = await syntheticEngine(db.pool, schema, resident, {
      metrics: classifierMetrics(registry, db.pool, classifierTables(schema)),
    });
    const feed = async (...inputs: ClassifierInput[][]) => {
      for (const batch of inputs) await engine.handleBatch(batch, batchContext());
    };
    const orphans = async () =>
      (
        await db.pool.query<{ event_id: string }>(`SELECT event_id FROM ${tables.orphans} ORDER BY event_id`)
      ).rows.map((r) => r.event_id);
    const removed = async () =>
      (await registry.getSingleMetric('classifier_orphans_removed_total')?.get())?.values[0]?.value ?? 0;
    const verdicts = async () =>
      (
        await db.pool.query<{ verdict: SwapVerdict }>(
          `SELECT verdict FROM ${tables.verdicts} ORDER BY bid_id`,
        )
      ).rows.map((r) => r.verdict);
    return { engine, tables, feed, orphans, removed, verdicts };
  };

  // The honest swap's LP TransferIn: block time 1001, T 1000, E 3: its expiry is its own T+E (1003) + a day.
  const tin = lpTransferIn(HONEST_SWAP);

  describe('a TransferIn naming a transfer that never existed', () => {
    it('is removed once every watched chain’s clock passed its T+E + a day, not before', async () => {
      const { feed, orphans, removed } = await setUp();
      const fake = namingNothing(tin, 1);
      const expiry = 1003 + DAY;
      await feed([event(fake)]);
      await feed(clocks(expiry, expiry));
      expect(await orphans()).toEqual([chainEventId(fake)]);
      // The source chain's clock past it, the destination's (its own) not yet: a lock there may still come.
      await feed(clocks(expiry + 1, undefined));
      expect(await orphans()).toEqual([chainEventId(fake)]);
      await feed(clocks(undefined, expiry + 1));
      expect(await orphans()).toEqual([]);
      expect(await removed()).toBe(1);
    });

    it('naming a lock on a chain not watched: the same (no verdict can be formed without the lock)', async () => {
      const { feed, orphans, removed } = await setUp();
      const unwatched = namingNothing(tin, 2, { srcChainId: '12345' });
      await feed([event(unwatched)], clocks(1003 + DAY, 1003 + DAY));
      expect(await orphans()).toEqual([chainEventId(unwatched)]);
      await feed(clocks(1004 + DAY, 1004 + DAY));
      expect(await orphans()).toEqual([]);
      expect(await removed()).toBe(1);
    });

    it('is kept until its own T+E + a day when that is later (a lock on its times is taken until then)', async () => {
      const { feed, orphans } = await setUp();
      // T three days after it: a lock on these times may be mined until T+E.
      const T = 1001 + 3 * DAY;
      const early = namingNothing(tin, 3, { agreementReachedTime: String(T) });
      await feed([event(early)], clocks(1004 + DAY, 1004 + DAY), clocks(T + 3 + DAY, T + 3 + DAY));
      expect(await orphans()).toEqual([chainEventId(early)]);
      await feed(clocks(T + 4 + DAY, T + 4 + DAY));
      expect(await orphans()).toEqual([]);
    });

    it('is kept at most a week and a day past its block time (T in the far future keeps nothing for ever)', async () => {
      const { feed, orphans } = await setUp();
      const far = namingNothing(tin, 4, { agreementReachedTime: '18446744073709551000' });
      await feed([event(far)], clocks(1001 + WEEK + DAY, 1001 + WEEK + DAY));
      expect(await orphans()).toEqual([chainEventId(far)]);
      await feed(clocks(1002 + WEEK + DAY, 1002 + WEEK + DAY));
      expect(await orphans()).toEqual([]);
    });

    it('coming after every clock passed its expiry, is not kept at all (and counted)', async () => {
      const { feed, orphans, removed } = await setUp();
      await feed(clocks(1004 + DAY, 1004 + DAY), [event(namingNothing(tin, 5))]);
      expect(await orphans()).toEqual([]);
      expect(await removed()).toBe(1);
    });
  });

  describe('the soundness case: the TransferIn arrives before its TransferOut', () => {
    const t = buildTimeline(HONEST_SWAP);
    const source = t.streams[SRC.chainId]!;
    const destination = t.streams[DST.chainId]!;
    const outcome = (v: SwapVerdict[]) => v.map((x) => [x.bidId, x.outcome, x.case]);

    for (const resident of [undefined, 'keep'] as const) {
      it(`is kept while the source chain's clock is behind, however far the destination's${resident ? ' (replayed)' : ''}`, async () => {
        const { feed, orphans, verdicts } = await setUp(resident);
        await feed(destination.map(event), clocks(999, 1001 + 30 * DAY));
        if (!resident) expect(await orphans()).toHaveLength(destination.length);
        await feed(source.map(event), finalHeights(1001 + 31 * DAY));
        if (!resident) expect(await orphans()).toEqual([]);
        expect(outcome(await verdicts())).toEqual([[t.bidId, 'normal', null]]);
      });

      it(`is kept, and adopted, when the TransferOut comes with the source clock just inside the margin${resident ? ' (replayed)' : ''}`, async () => {
        const { feed, orphans, verdicts, removed } = await setUp(resident);
        // The TransferIn's expiry is its own T+E (1003) + a day; every clock exactly there keeps it. The
        // TransferOut then comes after its chain's clock passed it (the Connector's late path).
        await feed(destination.map(event), clocks(1003 + DAY, 1003 + DAY));
        if (!resident) expect(await orphans()).toHaveLength(destination.length);
        await feed(source.map(event), finalHeights(1003 + DAY));
        expect(outcome(await verdicts())).toEqual([[t.bidId, 'normal', null]]);
        expect(await removed()).toBe(0);
      });
    }

    it('an LP answer made before the lock on the lock’s times counts until the lock’s T+E (a week at most)', async () => {
      // The LP locks eight days before the user, on an agreement whose T is then: its expiry is its block time
      // + a week + a day = the lock's block time, just inside.
      const T = 10 * DAY;
      const spec: TimelineSpec = {
        ...HONEST_SWAP,
        T,
        out: { kind: 'ok', at: T },
        in: { kind: 'ok', at: T - WEEK - DAY },
        confirmOut: { by: 'user', at: T + 1 },
        confirmIn: { by: 'lp', at: T + 2 },
      };
      const early = buildTimeline(spec);
      for (const resident of [undefined, 'keep'] as const) {
        const { feed, verdicts } = await setUp(resident);
        await feed(
          early.streams[DST.chainId]!.map(event),
          clocks(T, T + 2),
          early.streams[SRC.chainId]!.map(event),
          finalHeights(T + 2 * WEEK),
        );
        expect(outcome(await verdicts())).toEqual([[early.bidId, 'normal', null]]);
      }
    });
  });

  /**
   * A TransferIn whose times differ from the lock it names (case 4 when it is the LP's by T+2E) and was mined so
   * long before that lock that the lock is past its expiry: arriving first, it was removed or not depending on
   * how the chains' clocks and the lock interleaved. It counts in no order, live or replayed.
   */
  describe('a TransferIn mined more than a day before the lock it names, on other times', () => {
    const T = 10 * DAY;
    const E = DAY;
    const spec = (lockAt: number): TimelineSpec => ({
      ...HONEST_SWAP,
      T,
      E,
      out: { kind: 'ok', at: lockAt },
      in: { kind: 'ok', at: T - DAY },
      confirmOut: undefined,
      confirmIn: undefined,
    });
    // Its own T one day earlier than the lock's: its own T+E is its block time, its expiry that + a day = T.
    const swap = (lockAt: number) => {
      const timeline = buildTimeline(spec(lockAt));
      const destination = timeline.streams[DST.chainId]!.map((e) =>
        e.kind === 'TransferIn' ? { ...e, agreementReachedTime: String(T - E - DAY) } : e,
      );
      return { bidId: timeline.bidId, source: timeline.streams[SRC.chainId]!, destination };
    };

    // The lock first; the TransferIn first with the clocks behind; the TransferIn first with every clock at the
    // lock's block time (past the TransferIn's expiry when the lock is later than it).
    const runs = (s: ReturnType<typeof swap>, lockAt: number) => [
      [s.source.map(event), s.destination.map(event)],
      [s.destination.map(event), clocks(T - DAY, T - DAY), s.source.map(event)],
      [s.destination.map(event), clocks(lockAt, lockAt + 1), s.source.map(event)],
    ];

    const decide = async (lockAt: number) => {
      const s = swap(lockAt);
      const seen: unknown[] = [];
      for (const batches of runs(s, lockAt))
        for (const resident of [undefined, 'keep'] as const) {
          const { feed, verdicts } = await setUp(resident);
          await feed(...batches, finalHeights(T + 10 * DAY));
          seen.push((await verdicts()).map((v) => [v.outcome, v.case, v.blockTime]));
        }
      return seen;
    };

    it('the lock at its expiry: case 4 (the LP answered, on other times) in every order', async () => {
      const seen = await decide(T);
      expect(seen).toEqual(seen.map(() => [['violation', 4, T - DAY]]));
    });

    it('the lock one second later: case 3 in every order, live and replayed', async () => {
      const seen = await decide(T + 1);
      expect(seen).toEqual(seen.map(() => [['violation', 3, T + 2 * E]]));
    });
  });

  describe('confirms and refunds', () => {
    it('a ConfirmOut naming no swap’s lock is removed once every clock passed its block time + a day', async () => {
      const { feed, orphans } = await setUp();
      const t = buildTimeline(HONEST_SWAP);
      const confirmOut = t.streams[SRC.chainId]!.find((e) => e.kind === 'ConfirmOut')!;
      const stray = { ...confirmOut, transferId: hex(0xc0), txHash: hex(0xc0e) };
      const { preimage: _preimage, ...rest } = stray as Extract<ChainEvent, { kind: 'ConfirmOut' }>;
      const refund: ChainEvent = { ...rest, kind: 'RefundOut', txHash: hex(0xc1e) };
      await feed([event(stray), event(refund)], clocks(1002 + DAY, 1002 + DAY));
      expect(await orphans()).toHaveLength(2);
      await feed(clocks(1003 + DAY, 1003 + DAY));
      expect(await orphans()).toEqual([]);
    });

    it('a ConfirmIn is kept while the TransferIn it names may still join a swap, then a week and a day past it', async () => {
      const { feed, orphans, removed } = await setUp();
      const t = buildTimeline(HONEST_SWAP);
      const fake = namingNothing(tin, 6, { agreementReachedTime: String(1000 + 3 * DAY) });
      const confirmIn = t.streams[DST.chainId]!.find((e) => e.kind === 'ConfirmIn')!;
      const itsConfirm = { ...confirmIn, transferId: fake.transferId, txHash: hex(0xc2e) };
      const { preimage: _preimage, ...rest } = confirmIn as Extract<ChainEvent, { kind: 'ConfirmIn' }>;
      // A RefundIn naming a transfer no TransferIn has.
      const refundIn: ChainEvent = { ...rest, kind: 'RefundIn', transferId: hex(0xdead), txHash: hex(0xc3e) };
      await feed([event(fake), event(itsConfirm), event(refundIn)]);
      // The TransferIn goes at its own T+E + a day; its ConfirmIn (block time 1003) is kept past it.
      const tinExpiry = 1000 + 3 * DAY + 3 + DAY;
      await feed(clocks(tinExpiry + 1, tinExpiry + 1));
      expect(await orphans()).toEqual([chainEventId(itsConfirm), chainEventId(refundIn)].sort());
      await feed(clocks(1003 + WEEK + DAY, 1003 + WEEK + DAY));
      expect(await orphans()).toHaveLength(2);
      await feed(clocks(1004 + WEEK + DAY, 1004 + WEEK + DAY));
      expect(await orphans()).toEqual([]);
      expect(await removed()).toBe(3);
    });
  });

  it('a replay removes many orphans naming one transfer in time linear in their number', async () => {
    // Anyone can send TransferIns naming one made-up transfer, paying only gas. A replay keeps them in memory
    // and removed each from its transfer's list by copying the rest: 40,000 took 23 s at one clock move
    // (quadratic); linear, well under a second. Timed with a wide margin: the quadratic cost is 40 times it.
    const { feed } = await setUp('keep');
    const many = Array.from({ length: 40_000 }, (_, i) =>
      event(namingNothing(tin, 100_000 + i, { srcTransferId: hex(0xfa4e) })),
    );
    for (let i = 0; i < many.length; i += 5_000) await feed(many.slice(i, i + 5_000));
    const started = performance.now();
    await feed(clocks(1004 + DAY, 1004 + DAY));
    expect(performance.now() - started).toBeLessThan(5_000);
  }, 120_000);

  it('a replay removes the same orphans and gives the live run’s verdicts', async () => {
    // Swaps of every order, events naming nothing among them, the clocks moving in between.
    const swaps = [0, 1, 2].map((id) => buildTimeline({ ...HONEST_SWAP, id }));
    const fakes = [7, 8, 9].map((k) => namingNothing(tin, k));
    const steps: ClassifierInput[][] = [
      swaps[0]!.streams[DST.chainId]!.map(event),
      [event(fakes[0]!)],
      clocks(999, 1500),
      swaps[0]!.streams[SRC.chainId]!.map(event),
      [event(fakes[1]!), ...swaps[1]!.streams[SRC.chainId]!.map(event)],
      swaps[2]!.streams[DST.chainId]!.map(event),
      swaps[1]!.streams[DST.chainId]!.map(event),
      // The source chain's clock behind: the third swap's TransferIn waits for its lock; the fakes stay.
      clocks(999, 2 * DAY),
      swaps[2]!.streams[SRC.chainId]!.map(event),
      clocks(2 * DAY, undefined),
      // After every clock passed its expiry: never kept.
      [event(fakes[2]!)],
      finalHeights(3 * DAY),
    ];
    const live = await setUp();
    const replay = await setUp('keep');
    for (const run of [live, replay]) {
      for (const step of steps) await run.feed(step);
      await run.engine.writeResident();
    }
    expect(await live.orphans()).toEqual([]);
    expect(await replay.orphans()).toEqual([]);
    expect(await live.removed()).toBe(3);
    expect(await replay.removed()).toBe(3);
    const liveVerdicts = await live.verdicts();
    expect(liveVerdicts.map((v) => v.outcome)).toEqual(['normal', 'normal', 'normal']);
    expect(await replay.verdicts()).toEqual(liveVerdicts);
  });
});

describe('migration 6: the orphans kept before it', () => {
  it('get the expiry their event gives', async () => {
    const before = { ...classifierMigrations, migrations: classifierMigrations.migrations.slice(0, 5) };
    const db = await createTestDatabase([before]);
    try {
      const { orphanExpiry } = await import('./orphan-retention.js');
      const { jsonbText } = await import('./jsonb-nul.js');
      const t = buildTimeline(HONEST_SWAP);
      const tin = lpTransferIn(HONEST_SWAP);
      const confirmIn = t.streams[DST.chainId]!.find((e) => e.kind === 'ConfirmIn')!;
      const confirmOut = t.streams[SRC.chainId]!.find((e) => e.kind === 'ConfirmOut')!;
      const { preimage: _p, ...refund } = confirmOut;
      const events: ChainEvent[] = [
        tin,
        namingNothing(tin, 10, { agreementReachedTime: String(1000 + 2 * DAY) }),
        namingNothing(tin, 11, { agreementReachedTime: '18446744073709551615' }),
        namingNothing(tin, 12, { expectedSingleStepTime: '18446744073709551615' }),
        confirmIn,
        { ...refund, kind: 'RefundIn', txHash: hex(0xf1) },
        confirmOut,
        { ...refund, kind: 'RefundOut', txHash: hex(0xf2) },
      ];
      const tables = classifierTables();
      await db.pool.query(
        `INSERT INTO ${tables.orphans} (event_id, ref, event)
         SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[])`,
        [events.map((e) => chainEventId(e)), events.map(() => 'ref'), events.map((e) => jsonbText(e))],
      );
      await migrate(db.pool, [classifierMigrations]);
      const { rows } = await db.pool.query<{ event_id: string; expires_at: string }>(
        `SELECT event_id, expires_at FROM ${tables.orphans}`,
      );
      const stored = new Map(rows.map((r) => [r.event_id, Number(r.expires_at)]));
      expect(events.map((e) => stored.get(chainEventId(e)))).toEqual(events.map((e) => orphanExpiry(e)));
      expect(events.map((e) => orphanExpiry(e))).toEqual([
        1001 + 2 + DAY,
        1000 + 2 * DAY + 3 + DAY,
        1001 + WEEK + DAY,
        1001 + WEEK + DAY,
        1003 + WEEK + DAY,
        1002 + WEEK + DAY,
        1002 + DAY,
        1002 + DAY,
      ]);
    } finally {
      await db.drop();
    }
  });
});
