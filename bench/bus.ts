import { randomBytes } from 'node:crypto';
import { applyOnce, applyOnceBatch } from '../shared/bus/apply-once.js';
import { KafkaBus } from '../shared/bus/kafka/kafka-bus.js';
import type { BatchHandler, EventBus, Handler, SubscribeOptions } from '../shared/bus/port.js';
import { PostgresBus } from '../shared/bus/postgres/postgres-bus.js';
import { kafkaProblem, startKafka } from '../test/support/kafka.js';
import { createLogger } from '../shared/logging/logger.js';
import { partitionFor } from '../shared/bus/partitioner.js';
import type { BenchSection } from './report.js';
import { fmt, printTable, rate, scratchDatabase } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
/**
 * Messages of the batched measures. More than MESSAGES: at tens of thousands a second, 10,000 messages are
 * under half a second, mostly the first batches' start (their ratio swung between 8x and 11.5x across runs of 20,000).
 */
const BATCH_MESSAGES = Number(process.env.BENCH_BATCH_MESSAGES ?? 100_000);
const KEYS = 16;
const PUBLISH_BATCH = 100;
/** A producer that publishes bigger batches (the Classifier publishes at once what one batch decides). */
const BIG_PUBLISH = 500;
/** A value the size of a typical chain.events envelope. */
const VALUE = JSON.stringify({
  id: 'x',
  type: 'chain.event',
  version: 1,
  payload: randomBytes(300).toString('hex'),
});

/**
 * `npm run bench -- bus`: messages/s through the postgres log end to end (publish → handled and committed),
 * beside the raw INSERT rate of the same PostgreSQL in the same run, with the ratios; then the same through
 * Kafka (KAFKA_BROKERS, else a broker started from the Maven cache; SKIPPED when neither can be had).
 */
export async function run(): Promise<BenchSection[]> {
  const database = await scratchDatabase();
  const { pool, url } = database;
  try {
    await pool.query('CREATE TABLE raw_insert (id bigserial, key text, value text)');
    await pool.query('CREATE TABLE effects (event_id text, key text)');

    // Baselines: what this PostgreSQL does with plain INSERTs, one commit each and batched like the publisher.
    // One row per commit waits on the disk, which other work on the machine slows: it is measured in bursts
    // at the start, in the middle and at the end, and the best burst is the baseline (the hardest to beat).
    const singleCommits = () =>
      time(async () => {
        const n = Math.min(MESSAGES, 1_000);
        for (let i = 0; i < n; i++)
          await pool.query('INSERT INTO raw_insert (key, value) VALUES ($1, $2)', [`k${i % KEYS}`, VALUE]);
        return n;
      });
    const singleBursts = [await singleCommits()];
    const rawBatched = await time(async () => {
      for (let i = 0; i < MESSAGES; i += PUBLISH_BATCH) {
        await pool.query('INSERT INTO raw_insert (key, value) SELECT k, $2 FROM unnest($1::text[]) AS k', [
          Array.from({ length: PUBLISH_BATCH }, (_, j) => `k${(i + j) % KEYS}`),
          VALUE,
        ]);
      }
      return MESSAGES;
    });

    const log = createLogger({ level: 'warn' });
    const bus = new PostgresBus({ pool, connectionString: url, log });
    await bus.ensureTopics([
      { name: 'bench.plain', partitions: 8, retentionMs: null },
      { name: 'bench.e2e', partitions: 8, retentionMs: null },
      { name: 'bench.once', partitions: 8, retentionMs: null },
      { name: 'bench.batches', partitions: 8, retentionMs: null },
      { name: 'bench.backlog', partitions: 8, retentionMs: null },
      { name: 'bench.big-batches', partitions: 8, retentionMs: null },
    ]);

    // The publisher beside a raw multi-row INSERT of the same rows (key, value, headers, partition, offset
    // computed here) into the same table, batch by batch in turn so both see the same table size and load.
    const rawLog = { count: 0, ms: 0 };
    const publishOnly = { count: 0, ms: 0 };
    const rawOffsets = new Map<number, number>();
    for (let i = 0; i < MESSAGES; i += PUBLISH_BATCH) {
      const batch = Array.from({ length: PUBLISH_BATCH }, (_, j) => ({
        key: `key-${(i + j) % KEYS}`,
        value: VALUE,
      }));
      const partitions = batch.map((m) => partitionFor(m.key, 8));
      const offsets = partitions.map((p) => {
        const next = rawOffsets.get(p) ?? 0;
        rawOffsets.set(p, next + 1);
        return next;
      });
      let started = performance.now();
      await pool.query(
        `INSERT INTO bus_messages (topic, partition, "offset", key, value, headers)
         SELECT 'bench.rawlog', t.p, t.o, t.k, t.v, t.h
         FROM unnest($1::int[], $2::bigint[], $3::text[], $4::text[], $5::jsonb[]) AS t(p, o, k, v, h)`,
        [partitions, offsets, batch.map((m) => m.key), batch.map((m) => m.value), batch.map(() => '{}')],
      );
      rawLog.ms += performance.now() - started;
      rawLog.count += batch.length;
      started = performance.now();
      await bus.publish('bench.plain', batch);
      publishOnly.ms += performance.now() - started;
      publishOnly.count += batch.length;
    }
    const consumeOnly = await consume(bus, 'bench.plain', { handler: async () => undefined }, 'backlog');
    // End to end: producer and consumer running together, as in the pipeline (publish → handled, committed).
    const endToEnd = await consume(bus, 'bench.e2e', { handler: async () => undefined }, PUBLISH_BATCH);
    const endToEndOnce = await consume(
      bus,
      'bench.once',
      { handler: oncePerMessage(pool, 'bench') },
      PUBLISH_BATCH,
    );
    const endToEndBatches = await consume(
      bus,
      'bench.batches',
      { batchHandler: onceInBatches(pool, 'bench-batches') },
      PUBLISH_BATCH,
      BATCH_MESSAGES,
    );
    // The same with a producer that publishes BIG_PUBLISH messages at a time.
    const endToEndBigBatches = await consume(
      bus,
      'bench.big-batches',
      { batchHandler: onceInBatches(pool, 'bench-big-batches') },
      BIG_PUBLISH,
      BATCH_MESSAGES,
    );
    // The same consumer on a backlog (what a replay or a consumer catching up does): full batches.
    await publishAll(bus, 'bench.backlog', PUBLISH_BATCH, BATCH_MESSAGES);
    const backlogBatches = await consume(
      bus,
      'bench.backlog',
      { batchHandler: onceInBatches(pool, 'bench-backlog') },
      'backlog',
      BATCH_MESSAGES,
    );
    await bus.close();
    singleBursts.push(await singleCommits());
    const kafka = await kafkaFigures(pool, url);
    singleBursts.push(await singleCommits());

    const bursts = singleBursts.map((b) => rate(b.count, b.ms));
    const single = Math.max(...bursts);
    const burstNote = `best of ${bursts.length} bursts: ${bursts.map(fmt).join(', ')} rows/s`;
    const batched = rate(rawBatched.count, rawBatched.ms);
    const e2e = rate(endToEnd.count, endToEnd.ms);
    const consumed = rate(consumeOnly.count, consumeOnly.ms);
    const e2eOnce = rate(endToEndOnce.count, endToEndOnce.ms);
    const e2eBatches = rate(endToEndBatches.count, endToEndBatches.ms);
    const e2eBigBatches = rate(endToEndBigBatches.count, endToEndBigBatches.ms);
    const backlogOnce = rate(backlogBatches.count, backlogBatches.ms);
    const rawLogRate = rate(rawLog.count, rawLog.ms);
    const published = rate(publishOnly.count, publishOnly.ms);
    const title = `bus benchmark (${fmt(MESSAGES)} messages, ${fmt(BATCH_MESSAGES)} in the batched measures, ${KEYS} keys, 8 partitions, ${database.source})`;
    printTable(title, [
      ['raw INSERT, 1 row per commit', `${fmt(single)} rows/s   (baseline A, ${burstNote})`],
      ['raw INSERT, 100 rows per statement', `${fmt(batched)} rows/s   (baseline B)`],
      ['raw INSERT into bus_messages, the same 100 rows', `${fmt(rawLogRate)} rows/s   (baseline C)`],
      [
        'postgres log: publish, batches of 100',
        `${fmt(published)} msg/s   = ${(published / batched).toFixed(2)}x B = ${(published / rawLogRate).toFixed(2)}x C (target ≥ 0.5x C)`,
      ],
      [
        'postgres log: consume a backlog, commit each',
        `${fmt(consumed)} msg/s   = ${(consumed / single).toFixed(2)}x A`,
      ],
      ['postgres log end to end: publish → handled', `${fmt(e2e)} msg/s   = ${(e2e / single).toFixed(2)}x A`],
      [
        'end to end with an exactly-once effect (applyOnce)',
        `${fmt(e2eOnce)} msg/s   = ${(e2eOnce / single).toFixed(2)}x A`,
      ],
      [
        'end to end, exactly-once effects per batch (applyOnceBatch)',
        `${fmt(e2eBatches)} msg/s   = ${(e2eBatches / single).toFixed(2)}x A (target ≥ 10x A), ${meanBatch(endToEndBatches)}`,
      ],
      [
        `the same, the producer publishing ${BIG_PUBLISH} at a time`,
        `${fmt(e2eBigBatches)} msg/s   = ${(e2eBigBatches / single).toFixed(2)}x A (target ≥ 10x A), ${meanBatch(endToEndBigBatches)}`,
      ],
      [
        'consume a backlog, exactly-once effects per batch',
        `${fmt(backlogOnce)} msg/s   = ${(backlogOnce / single).toFixed(2)}x A, ${meanBatch(backlogBatches)}`,
      ],
    ]);
    const msgs = (n: number) => `${fmt(n)} msg/s`;
    const rows = (n: number) => `${fmt(n)} rows/s`;
    const sections: BenchSection[] = [
      {
        title,
        rows: [
          { measure: 'raw INSERT, 1 row per commit', value: rows(single), note: `baseline A, ${burstNote}` },
          { measure: 'raw INSERT, 100 rows per statement', value: rows(batched), note: 'baseline B' },
          {
            measure: 'raw INSERT into bus_messages of the same 100 rows per statement',
            value: rows(rawLogRate),
            note: 'baseline C',
          },
          {
            measure: 'postgres log: publish, batches of 100, vs C',
            value: msgs(published),
            baseline: rows(rawLogRate),
            ratio: published / rawLogRate,
            target: 0.5,
          },
          {
            measure: 'postgres log: publish, batches of 100, vs B',
            value: msgs(published),
            baseline: rows(batched),
            ratio: published / batched,
          },
          {
            measure: 'postgres log: consume a backlog, commit each',
            value: msgs(consumed),
            baseline: rows(single),
            ratio: consumed / single,
          },
          {
            measure: 'postgres log end to end: publish → handled',
            value: msgs(e2e),
            baseline: rows(single),
            ratio: e2e / single,
          },
          {
            measure: 'end to end with an exactly-once effect (applyOnce)',
            value: msgs(e2eOnce),
            baseline: rows(single),
            ratio: e2eOnce / single,
          },
          {
            measure: 'end to end, exactly-once effects per batch of one partition (applyOnceBatch)',
            value: msgs(e2eBatches),
            baseline: rows(single),
            ratio: e2eBatches / single,
            target: 10,
            note: meanBatch(endToEndBatches),
          },
          {
            measure: `the same, the producer publishing ${BIG_PUBLISH} at a time`,
            value: msgs(e2eBigBatches),
            baseline: rows(single),
            ratio: e2eBigBatches / single,
            target: 10,
            note: meanBatch(endToEndBigBatches),
          },
          {
            measure: 'consume a backlog, exactly-once effects per batch (applyOnceBatch)',
            value: msgs(backlogOnce),
            baseline: rows(single),
            ratio: backlogOnce / single,
            note: meanBatch(backlogBatches),
          },
        ],
      },
    ];
    if ('skipped' in kafka) {
      console.log(`\nKafka bus: SKIPPED (${kafka.skipped})`);
      sections.push({
        title: 'Kafka bus, same run',
        rows: [{ measure: 'Kafka bus', value: 'SKIPPED', note: kafka.skipped }],
      });
    } else {
      const k = (r: { count: number; ms: number }) => rate(r.count, r.ms);
      printTable(
        `Kafka bus, same run (${kafka.source}; positions, attempts and effects in the same PostgreSQL)`,
        [
          ['kafka: publish, batches of 100, warm', `${fmt(k(kafka.publish))} msg/s`],
          [
            'kafka: consume a backlog, commit each',
            `${fmt(k(kafka.consume))} msg/s   = ${(k(kafka.consume) / consumed).toFixed(2)}x postgres log`,
          ],
          [
            'kafka end to end: publish → handled',
            `${fmt(k(kafka.e2e))} msg/s   = ${(k(kafka.e2e) / e2e).toFixed(2)}x postgres log`,
          ],
          [
            'kafka end to end, exactly-once effect (applyOnce)',
            `${fmt(k(kafka.once))} msg/s   = ${(k(kafka.once) / e2eOnce).toFixed(2)}x postgres log`,
          ],
          [
            'kafka end to end, exactly-once effects per batch (applyOnceBatch)',
            `${fmt(k(kafka.batches))} msg/s   = ${(k(kafka.batches) / single).toFixed(2)}x A (target ≥ 10x A), ${meanBatch(kafka.batches)}`,
          ],
          [
            `kafka, the same, the producer publishing ${BIG_PUBLISH} at a time`,
            `${fmt(k(kafka.bigBatches))} msg/s   = ${(k(kafka.bigBatches) / single).toFixed(2)}x A (target ≥ 10x A), ${meanBatch(kafka.bigBatches)}`,
          ],
        ],
      );
      sections.push({
        title: `Kafka bus, same run (${kafka.source}; positions, attempts and effects in the same PostgreSQL)`,
        rows: [
          {
            measure: 'kafka: publish, batches of 100, warm',
            value: msgs(k(kafka.publish)),
            note: `${fmt(BATCH_MESSAGES)} messages after one untimed send`,
          },
          {
            measure: 'kafka: consume a backlog, commit each',
            value: msgs(k(kafka.consume)),
            baseline: `${msgs(consumed)} (postgres log)`,
            ratio: k(kafka.consume) / consumed,
          },
          {
            measure: 'kafka end to end: publish → handled',
            value: msgs(k(kafka.e2e)),
            baseline: `${msgs(e2e)} (postgres log)`,
            ratio: k(kafka.e2e) / e2e,
          },
          {
            measure: 'kafka end to end, exactly-once effect (applyOnce)',
            value: msgs(k(kafka.once)),
            baseline: `${msgs(e2eOnce)} (postgres log)`,
            ratio: k(kafka.once) / e2eOnce,
          },
          {
            measure: 'kafka end to end, exactly-once effects per batch of one partition (applyOnceBatch)',
            value: msgs(k(kafka.batches)),
            baseline: `${rows(single)} (raw INSERT, 1 row per commit)`,
            ratio: k(kafka.batches) / single,
            target: 10,
            note: meanBatch(kafka.batches),
          },
          {
            measure: `kafka, the same, the producer publishing ${BIG_PUBLISH} at a time`,
            value: msgs(k(kafka.bigBatches)),
            baseline: `${rows(single)} (raw INSERT, 1 row per commit)`,
            ratio: k(kafka.bigBatches) / single,
            target: 10,
            note: meanBatch(kafka.bigBatches),
          },
        ],
      });
    }
    return sections;
  } finally {
    await database.dispose();
  }
}

/** The same four measurements through Kafka, or why they could not be made. */
async function kafkaFigures(
  pool: Parameters<typeof applyOnce>[0],
  url: string,
): Promise<
  | { skipped: string }
  | {
      source: string;
      publish: Timed;
      consume: Timed;
      e2e: Timed;
      once: Timed;
      batches: Timed;
      bigBatches: Timed;
    }
> {
  let brokers = process.env.KAFKA_BROKERS?.split(',');
  let stop = async () => undefined as void;
  let source = 'KAFKA_BROKERS';
  if (!brokers) {
    const problem = await kafkaProblem();
    if (problem) return { skipped: problem };
    const broker = await startKafka();
    brokers = broker.brokers;
    stop = () => broker.close();
    source = 'Kafka 3.9 started for this run';
  }
  const bus = new KafkaBus({
    brokers,
    clientId: 'bench',
    log: createLogger({ level: 'warn' }),
    pool,
    connectionString: url,
  });
  try {
    const suffix = randomBytes(3).toString('hex');
    const topics = ['publish', 'plain', 'e2e', 'once', 'batches', 'big-batches'].map(
      (t) => `bench.kafka.${t}.${suffix}`,
    );
    await bus.ensureTopics(topics.map((name) => ({ name, partitions: 8, retentionMs: null })));
    const [publishTopic, plain, e2eTopic, onceTopic, batchTopic, bigBatchTopic] = topics as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    // The producer's rate over BATCH_MESSAGES after one untimed send: its first sends in a process are slow
    // (metadata, compilation), and over 10,000 messages they made it about 10,000 msg/s against 30,000-36,000
    // once warm.
    await bus.publish(publishTopic, [{ key: 'warm-up', value: VALUE }]);
    const publish = await time(async () => {
      await publishAll(bus, publishTopic, PUBLISH_BATCH, BATCH_MESSAGES);
      return BATCH_MESSAGES;
    });
    await publishAll(bus, plain);
    const consumeBacklog = await consume(bus, plain, { handler: async () => undefined }, 'backlog');
    const e2e = await consume(bus, e2eTopic, { handler: async () => undefined }, PUBLISH_BATCH);
    const once = await consume(
      bus,
      onceTopic,
      { handler: oncePerMessage(pool, 'bench-kafka') },
      PUBLISH_BATCH,
    );
    const batches = await consume(
      bus,
      batchTopic,
      { batchHandler: onceInBatches(pool, 'bench-kafka-batches') },
      PUBLISH_BATCH,
      BATCH_MESSAGES,
    );
    const bigBatches = await consume(
      bus,
      bigBatchTopic,
      { batchHandler: onceInBatches(pool, 'bench-kafka-big-batches') },
      BIG_PUBLISH,
      BATCH_MESSAGES,
    );
    return { source, publish, consume: consumeBacklog, e2e, once, batches, bigBatches };
  } finally {
    await bus.close();
    await stop();
  }
}

interface Timed {
  count: number;
  ms: number;
  /** Handler calls, where counted. */
  batches?: number;
}

async function time(fn: () => Promise<number>): Promise<Timed> {
  const start = performance.now();
  const count = await fn();
  return { count, ms: performance.now() - start };
}

/** "N messages a batch on average". */
const meanBatch = (t: Timed) => `${fmt(t.count / (t.batches ?? t.count))} a batch on average`;

async function publishAll(
  bus: EventBus,
  topic: string,
  batch = PUBLISH_BATCH,
  total = MESSAGES,
): Promise<void> {
  for (let i = 0; i < total; i += batch) {
    await bus.publish(
      topic,
      Array.from({ length: Math.min(batch, total - i) }, (_, j) => ({
        key: `key-${(i + j) % KEYS}`,
        value: VALUE,
      })),
    );
  }
}

/** An exactly-once effect per message: its id and its row in one transaction with the position (applyOnce). */
function oncePerMessage(pool: Parameters<typeof applyOnce>[0], consumer: string): Handler {
  return async (message, context) => {
    await applyOnce(pool, consumer, `${message.partition}:${message.offset}`, context, async (tx) => {
      await tx.query('INSERT INTO effects (event_id, key) VALUES ($1, $2)', [
        String(message.offset),
        message.key,
      ]);
    });
  };
}

/**
 * An exactly-once effect per batch of one partition: the ids and the rows of the whole batch in one
 * transaction with the position (applyOnceBatch), as the Classifier and Points consume.
 */
function onceInBatches(pool: Parameters<typeof applyOnceBatch>[0], consumer: string): BatchHandler {
  return async (messages, context) => {
    const ids = messages.map((m) => `${m.partition}:${m.offset}`);
    await applyOnceBatch(pool, consumer, ids, context, async (tx, fresh) => {
      const kept = messages.filter((m) => fresh.has(`${m.partition}:${m.offset}`));
      await tx.query('INSERT INTO effects (event_id, key) SELECT * FROM unnest($1::text[], $2::text[])', [
        kept.map((m) => String(m.offset)),
        kept.map((m) => m.key),
      ]);
    });
  };
}

/**
 * Subscribes a fresh group with `handling` (one message at a time, or batches) and resolves when every message
 * was handled; optionally publishes them meanwhile, in batches of `producer` (else they are a backlog). The clock
 * starts once the group has joined (subscribe() resolved: a one-off cost, not throughput) and stops at the
 * last message handled; `batches` counts the handler's calls.
 */
async function consume(
  bus: EventBus,
  topic: string,
  handling: Pick<SubscribeOptions, 'handler' | 'batchHandler'>,
  /** The producer's batch size when it publishes meanwhile; 'backlog': published before. */
  producer: number | 'backlog',
  total = MESSAGES,
): Promise<Timed> {
  let handled = 0;
  let batches = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const count = (n: number) => {
    batches++;
    if ((handled += n) === total) done();
  };
  const { handler, batchHandler } = handling;
  const subscription = await bus.subscribe({
    group: `bench-${topic}`,
    topics: [topic],
    ...(batchHandler
      ? {
          batchHandler: async (messages, context) => {
            await batchHandler(messages, context);
            count(messages.length);
          },
        }
      : {
          handler: async (message, context) => {
            await handler!(message, context);
            count(1);
          },
        }),
  });
  const start = performance.now();
  if (producer !== 'backlog') await publishAll(bus, topic, producer, total);
  await finished;
  const ms = performance.now() - start;
  await subscription.stop();
  return { count: handled, ms, batches };
}
