import { randomBytes } from 'node:crypto';
import { applyOnce } from '../shared/bus/apply-once.js';
import { PostgresBus } from '../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../shared/logging/logger.js';
import { fmt, printTable, rate, scratchDatabase } from './support.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 10_000);
const KEYS = 16;
const PUBLISH_BATCH = 100;
/** A value the size of a typical chain.events envelope. */
const VALUE = JSON.stringify({
  id: 'x',
  type: 'chain.event',
  version: 1,
  payload: randomBytes(300).toString('hex'),
});

/**
 * `npm run bench -- bus`: messages/s through the postgres log end to end (publish → handled and committed),
 * beside the raw INSERT rate of the same PostgreSQL in the same run, with the ratios.
 */
export async function run(): Promise<void> {
  const database = await scratchDatabase();
  const { pool, url } = database;
  try {
    await pool.query('CREATE TABLE raw_insert (id bigserial, key text, value text)');
    await pool.query('CREATE TABLE effects (event_id text, key text)');

    // Baselines: what this PostgreSQL does with plain INSERTs, one commit each and batched like the publisher.
    const rawSingle = await time(async () => {
      const n = Math.min(MESSAGES, 3_000);
      for (let i = 0; i < n; i++)
        await pool.query('INSERT INTO raw_insert (key, value) VALUES ($1, $2)', [`k${i % KEYS}`, VALUE]);
      return n;
    });
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
    ]);

    const publishOnly = await time(async () => {
      await publishAll(bus, 'bench.plain');
      return MESSAGES;
    });
    const consumeOnly = await time(() => consume(bus, 'bench.plain', async () => undefined, false));
    // End to end: producer and consumer running together, as in the pipeline (publish → handled, committed).
    const endToEnd = await time(() => consume(bus, 'bench.e2e', async () => undefined, true));
    const endToEndOnce = await time(() =>
      consume(
        bus,
        'bench.once',
        async (message, context) => {
          await applyOnce(pool, 'bench', `${message.partition}:${message.offset}`, context, async (tx) => {
            await tx.query('INSERT INTO effects (event_id, key) VALUES ($1, $2)', [
              String(message.offset),
              message.key,
            ]);
          });
        },
        true,
      ),
    );
    await bus.close();

    const single = rate(rawSingle.count, rawSingle.ms);
    const batched = rate(rawBatched.count, rawBatched.ms);
    const e2e = rate(endToEnd.count, endToEnd.ms);
    const consumed = rate(consumeOnly.count, consumeOnly.ms);
    const e2eOnce = rate(endToEndOnce.count, endToEndOnce.ms);
    printTable(`bus benchmark (${fmt(MESSAGES)} messages, ${KEYS} keys, 8 partitions, ${database.source})`, [
      ['raw INSERT, 1 row per commit', `${fmt(single)} rows/s   (baseline A)`],
      ['raw INSERT, 100 rows per statement', `${fmt(batched)} rows/s   (baseline B)`],
      [
        'postgres log: publish, batches of 100',
        `${fmt(rate(publishOnly.count, publishOnly.ms))} msg/s   = ${(rate(publishOnly.count, publishOnly.ms) / batched).toFixed(2)}x B`,
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
    ]);
  } finally {
    await database.dispose();
  }
}

async function time(fn: () => Promise<number>): Promise<{ count: number; ms: number }> {
  const start = performance.now();
  const count = await fn();
  return { count, ms: performance.now() - start };
}

async function publishAll(bus: PostgresBus, topic: string): Promise<void> {
  for (let i = 0; i < MESSAGES; i += PUBLISH_BATCH) {
    await bus.publish(
      topic,
      Array.from({ length: PUBLISH_BATCH }, (_, j) => ({ key: `key-${(i + j) % KEYS}`, value: VALUE })),
    );
  }
}

/** Subscribes a fresh group and resolves when every message was handled; optionally publishes meanwhile. */
async function consume(
  bus: PostgresBus,
  topic: string,
  handler: Parameters<PostgresBus['subscribe']>[0]['handler'],
  publishConcurrently: boolean,
): Promise<number> {
  let handled = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const subscription = await bus.subscribe({
    group: `bench-${topic}`,
    topics: [topic],
    handler: async (message, context) => {
      await handler(message, context);
      if (++handled === MESSAGES) done();
    },
  });
  if (publishConcurrently) await publishAll(bus, topic);
  await finished;
  await subscription.stop();
  return handled;
}
