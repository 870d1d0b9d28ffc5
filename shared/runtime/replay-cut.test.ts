import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { announceSkip, kafkaForTests } from '../../test/support/external.js';
import { KafkaBus } from '../bus/kafka/kafka-bus.js';
import type { EventBus } from '../bus/port.js';
import { PostgresBus } from '../bus/postgres/postgres-bus.js';
import { createLogger } from '../logging/logger.js';
import { ReplayCut, replayRunId, settleAtLiveCut } from './replay-cut.js';
import { PoisonMessageError } from '../bus/errors.js';
import { waitFor } from '../../test/support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('replay cut on Kafka', kafka.skipReason);
const log = createLogger({ level: 'silent' });
/** Both buses: positions are in PostgreSQL on both, and the replay is sought back through the port. */
const buses: Array<[string, (db: TestDatabase) => EventBus, string | undefined]> = [
  ['postgres log', (db) => new PostgresBus({ pool: db.pool, connectionString: db.url, log }), undefined],
  [
    'kafka',
    (db) =>
      new KafkaBus({
        brokers: kafka.target!.brokers,
        clientId: 'replay-cut',
        log,
        pool: db.pool,
        connectionString: db.url,
        positionCheckMs: 200,
      }),
    kafka.skipReason,
  ],
];

/**
 * A "live" group whose position and table the test sets (no process moves them), and a replay group whose
 * subscription writes the numbers it is given into a table of its own: where does the comparison happen?
 */
for (const [name, makeBus, skip] of buses)
  describe.skipIf(skip !== undefined)(`comparing a replay at the live consumer's position (${name})`, () => {
    let db: TestDatabase;
    let bus: EventBus;
    const TOPIC = `cut.numbers.${randomBytes(4).toString('hex')}`;
    let round = 0;
    let replayGroup: string;
    let liveGroup: string;

    beforeAll(async () => {
      db = await createTestDatabase();
      bus = makeBus(db);
      await bus.ensureTopics([{ name: TOPIC, partitions: 1, retentionMs: null }]);
      await bus.publish(
        TOPIC,
        Array.from({ length: 8 }, (_, n) => ({ key: 'k', value: String(n) })),
      );
      await db.pool.query(
        'CREATE TABLE cut_live (n int PRIMARY KEY); CREATE TABLE cut_replay (n int PRIMARY KEY)',
      );
    });
    beforeEach(async () => {
      round++;
      replayGroup = `replay-${round}`;
      liveGroup = `live-${round}`;
      await db.pool.query('TRUNCATE cut_live, cut_replay');
    });
    afterAll(async () => {
      await bus?.close();
      await db?.drop();
    });

    /** The live consumer as having handled the first `count` numbers. */
    async function liveAt(count: number) {
      await db.pool.query('TRUNCATE cut_live');
      await db.pool.query('INSERT INTO cut_live SELECT generate_series(0, $1 - 1)', [count]);
      await bus.seek(liveGroup, TOPIC, { to: 'offset', partition: 0, offset: BigInt(count) });
    }

    /** The replay: a subscription writing each number it may take; runs until it has handled `count`. */
    function replay(cut: ReplayCut) {
      return () =>
        bus.subscribe({
          group: replayGroup,
          topics: [TOPIC],
          batchHandler: async (messages) => {
            for (const m of cut.filter(messages))
              await db.pool.query('INSERT INTO cut_replay VALUES ($1)', [Number(m.value)]);
          },
        });
    }
    const replayLag = async () => (await bus.lag(replayGroup, [TOPIC]))[0]!.lag;

    async function runReplayTo(cut: ReplayCut, count: number) {
      cut.set(new Map([[`${TOPIC}/0`, BigInt(count)]]));
      const subscription = await replay(cut)();
      while ((await bus.lag(replayGroup, [TOPIC]))[0]!.lag > BigInt(8 - count))
        await new Promise((r) => setTimeout(r, 20));
      await subscription.stop();
      await bus.seek(replayGroup, TOPIC, { to: 'offset', partition: 0, offset: BigInt(count) });
    }

    const settle = (cut: ReplayCut, timeoutMs = 5_000) =>
      settleAtLiveCut(
        {
          pool: db.pool,
          bus,
          topics: [TOPIC],
          liveGroup,
          replayGroup,
          cut,
          resume: replay(cut),
          timeoutMs,
          pollMs: 20,
        },
        {
          freeze: async (query) =>
            void (await query('CREATE TEMP TABLE frozen_live AS SELECT * FROM cut_live')),
          compare: async (query, frozen) => {
            const live = frozen ? 'pg_temp.frozen_live' : 'cut_live';
            const { rows } = await query<{ live: number[] | null; replay: number[] | null }>(
              `SELECT (SELECT array_agg(n ORDER BY n) FROM ${live}) AS live,
                    (SELECT array_agg(n ORDER BY n) FROM cut_replay) AS replay`,
            );
            return { live: rows[0]!.live ?? [], replay: rows[0]!.replay ?? [] };
          },
        },
      );

    it('where both are: compared on the live tables at once', async () => {
      const cut = new ReplayCut();
      await liveAt(5);
      await runReplayTo(cut, 5);
      const settled = await settle(cut);
      expect(settled).toMatchObject({ exact: true, frozen: false });
      expect(settled.result.replay).toEqual(settled.result.live);
    });

    it('live ahead: a comparison asking in parallel asks the session of the copies one statement at a time', async () => {
      // pg queues a statement asked while one runs on a client, deprecated (pg 9 drops it) with a warning.
      const warnings: string[] = [];
      const onWarning = (w: Error) => void warnings.push(w.message);
      process.on('warning', onWarning);
      try {
        const cut = new ReplayCut();
        await liveAt(6);
        await runReplayTo(cut, 3);
        const settled = await settleAtLiveCut(
          {
            pool: db.pool,
            bus,
            topics: [TOPIC],
            liveGroup,
            replayGroup,
            cut,
            resume: replay(cut),
            timeoutMs: 5_000,
            pollMs: 20,
          },
          {
            freeze: async (query) =>
              void (await query('CREATE TEMP TABLE frozen_live AS SELECT * FROM cut_live')),
            compare: (query) =>
              Promise.all(
                [0, 1, 2, 3].map(async (n) => {
                  const { rows } = await query<{ has: boolean }>(
                    'SELECT EXISTS (SELECT 1 FROM pg_temp.frozen_live WHERE n = $1) AS has',
                    [n],
                  );
                  return rows[0]!.has;
                }),
              ),
          },
        );
        expect(settled).toMatchObject({ exact: true, frozen: true, result: [true, true, true, true] });
        await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
        expect(warnings.filter((m) => m.includes('already executing a query'))).toEqual([]);
      } finally {
        process.off('warning', onWarning);
      }
    });

    it('live ahead: its tables copied at its position, the replay taken there and not a message further', async () => {
      const cut = new ReplayCut();
      await liveAt(6);
      await runReplayTo(cut, 3);
      const settled = await settle(cut);
      expect(settled).toMatchObject({ exact: true, frozen: true });
      expect(settled.result).toEqual({ live: [0, 1, 2, 3, 4, 5], replay: [0, 1, 2, 3, 4, 5] });
      // Sought back over what it passed over: a later replay run goes on from the 7th message.
      expect(await replayLag()).toBe(2n);
      // The copies were the session's own: gone.
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'frozen_live'`,
      );
      expect(rows[0].n).toBe(0);
    });

    it('live behind until the timeout: compared anyway, and said to be inexact', async () => {
      const cut = new ReplayCut();
      await liveAt(2);
      await runReplayTo(cut, 4);
      const settled = await settle(cut, 200);
      expect(settled).toMatchObject({ exact: false, frozen: false });
      expect(settled.result).toEqual({ live: [0, 1], replay: [0, 1, 2, 3] });
    });
  });

/**
 * A replay never dead-letters: the live consumer did already for a message that fails (a second copy would be
 * counted and re-sent by `npm run dead-letters`), or this build fails where live did not, which the replay says.
 */
/** The bus's attempts, 5 as its default: a replay has the live consumer's. */
const MAX_ATTEMPTS = 5;

describe("a replay's handler and a message that keeps failing", () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log, maxAttempts: MAX_ATTEMPTS });
  });
  afterAll(async () => {
    await bus?.close();
    await db?.drop();
  });

  /** `values` on a fresh topic, and a replay's subscription of it (the bus's attempts, as a replay has). */
  async function replayOf(
    values: string[],
    handle: Parameters<ReplayCut['handler']>[0],
    onSkipped: Parameters<ReplayCut['handler']>[2],
  ) {
    const topic = `cut.failing.${randomBytes(4).toString('hex')}`;
    await bus.ensureTopics([{ name: topic, partitions: 1, retentionMs: null }]);
    await bus.publish(
      topic,
      values.map((value) => ({ key: 'k', value })),
    );
    const cut = new ReplayCut();
    const sub = await bus.subscribe({
      group: `replay-${randomBytes(4).toString('hex')}`,
      topics: [topic],
      batchHandler: cut.handler(handle, log, onSkipped),
    });
    return { sub, cut };
  }

  it('passes over a malformed one at once and another at its last attempt, applying the rest; no dead letter', async () => {
    const applied: string[] = [];
    const skipped: Array<[string, string]> = [];
    const attempts = new Map<string, number>();
    const { sub, cut } = await replayOf(
      ['1', 'malformed', '2', 'failing', '3'],
      async (messages) => {
        for (const m of messages) attempts.set(m.value, (attempts.get(m.value) ?? 0) + 1);
        if (messages.some((m) => m.value === 'malformed')) throw new PoisonMessageError('not JSON');
        if (messages.some((m) => m.value === 'failing')) throw new Error('database refused it');
        applied.push(...messages.map((m) => m.value));
      },
      (message, err) =>
        void skipped.push([
          message.value,
          `${err instanceof PoisonMessageError ? 'malformed' : 'failed'}: ${err.message}`,
        ]),
    );
    try {
      await waitFor(() => applied.length === 3, 'the others applied');
    } finally {
      await sub.stop();
    }
    expect(applied).toEqual(['1', '2', '3']);
    expect(skipped).toEqual([
      ['malformed', 'malformed: not JSON'],
      ['failing', 'failed: database refused it'],
    ]);
    // The whole batch once, then alone: the malformed one once, the failing one at each of the bus's attempts.
    expect(attempts.get('malformed')).toBe(2);
    expect(attempts.get('failing')).toBe(1 + MAX_ATTEMPTS);
    expect(cut.skipped).toEqual({ malformed: 1, failed: 1 });
    const dead = await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic LIKE 'cut.failing.%.dlq'`);
    expect(dead.rowCount).toBe(0);
  });

  it('gives a transient failure the chances the live consumer gets: applied at its fourth attempt', async () => {
    const applied: string[] = [];
    const skipped: string[] = [];
    let alone = 0;
    const { sub } = await replayOf(
      ['1', 'flaky', '3'],
      async (messages) => {
        const flaky = messages.some((m) => m.value === 'flaky');
        // A database blip: the batch fails, then the message alone fails three times.
        if (flaky && (messages.length > 1 || ++alone <= 3)) throw new Error('connection terminated');
        applied.push(...messages.map((m) => m.value));
      },
      (message) => void skipped.push(message.value),
    );
    try {
      await waitFor(() => applied.includes('3'), 'the last applied');
    } finally {
      await sub.stop();
    }
    expect({ applied, skipped }).toEqual({ applied: ['1', 'flaky', '3'], skipped: [] });
  });
});

describe('replayRunId', () => {
  it('differs between replays started in the same millisecond, and fits a schema name', () => {
    // A millisecond stamp alone gave two replays started at once the same schema and consumer group.
    const ids = Array.from({ length: 1_000 }, () => replayRunId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 20)) expect(`classifier_replay_${id}`).toMatch(/^[a-z0-9_]{1,63}$/);
  });
});
