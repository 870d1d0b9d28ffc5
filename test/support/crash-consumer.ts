// A consumer process for the crash tests: projects bus messages into a table, exactly once, until killed.
// Env: BUS (postgres | kafka), DB_URL, TOPIC, GROUP, TABLE; KAFKA_BROKERS for kafka; MAX_ATTEMPTS;
// CRASH_ON: an event id whose handling kills this process (SIGKILL), as a poison message that crashes would.
// BATCH: a batch size: a batchHandler applies each batch in one transaction (default: one message at a time).
import type { EventBus } from '../../shared/bus/port.js';
import { applyOnce, applyOnceBatch } from '../../shared/bus/apply-once.js';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';

const { BUS, DB_URL, TOPIC, GROUP, TABLE, KAFKA_BROKERS, CRASH_ON, MAX_ATTEMPTS, BATCH } = process.env;
const pool = createPool(DB_URL!, { max: 12 });
const log = createLogger({ level: 'warn' });
const maxAttempts = MAX_ATTEMPTS ? Number(MAX_ATTEMPTS) : undefined;

let bus: EventBus;
if (BUS === 'kafka') {
  const { KafkaBus } = await import('../../shared/bus/kafka/kafka-bus.js');
  bus = new KafkaBus({
    brokers: KAFKA_BROKERS!.split(','),
    clientId: 'crash-consumer',
    log,
    pool,
    connectionString: DB_URL!,
    maxAttempts,
  });
} else {
  const { PostgresBus } = await import('../../shared/bus/postgres/postgres-bus.js');
  bus = new PostgresBus({ pool, connectionString: DB_URL!, log, rebalanceMs: 200, maxAttempts });
}

type Row = { id: string; key: string; seq: number };
if (BATCH) {
  await bus.subscribe({
    group: GROUP!,
    topics: [TOPIC!],
    maxBatch: Number(BATCH),
    batchHandler: async (messages, context) => {
      const rows = messages.map((m) => JSON.parse(m.value) as Row);
      if (rows.some((r) => r.id === CRASH_ON)) process.kill(process.pid, 'SIGKILL');
      await applyOnceBatch(
        pool,
        `projection:${TABLE}`,
        rows.map((r) => r.id),
        context,
        async (tx, fresh) => {
          const kept = rows.filter((r) => fresh.has(r.id));
          await tx.query(
            `INSERT INTO ${TABLE} (key, seq, event_id)
           SELECT k, s, i FROM unnest($1::text[], $2::int[], $3::text[]) WITH ORDINALITY AS t(k, s, i, n) ORDER BY n`,
            [kept.map((r) => r.key), kept.map((r) => r.seq), kept.map((r) => r.id)],
          );
        },
      );
    },
  });
} else {
  await bus.subscribe({
    group: GROUP!,
    topics: [TOPIC!],
    handler: async (message, context) => {
      const { id, key, seq } = JSON.parse(message.value) as Row;
      if (id === CRASH_ON) process.kill(process.pid, 'SIGKILL');
      await applyOnce(pool, `projection:${TABLE}`, id, context, async (tx) => {
        await tx.query(`INSERT INTO ${TABLE} (key, seq, event_id) VALUES ($1, $2, $3)`, [key, seq, id]);
      });
    },
  });
}
process.stdout.write('consumer ready\n');
