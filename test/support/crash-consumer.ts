// A consumer process for the crash test: projects bus messages into a table, exactly once, until killed.
// Env: DB_URL, TOPIC, GROUP, TABLE.
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { applyOnce } from '../../shared/bus/apply-once.js';
import { createPool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';

const { DB_URL, TOPIC, GROUP, TABLE } = process.env as Record<string, string>;
const pool = createPool(DB_URL!, { max: 12 });
const bus = new PostgresBus({
  pool,
  connectionString: DB_URL!,
  log: createLogger({ level: 'warn' }),
  rebalanceMs: 200,
});

await bus.subscribe({
  group: GROUP!,
  topics: [TOPIC!],
  handler: async (message, context) => {
    const { id, key, seq } = JSON.parse(message.value) as { id: string; key: string; seq: number };
    await applyOnce(pool, `projection:${TABLE}`, id, context, async (tx) => {
      await tx.query(`INSERT INTO ${TABLE} (key, seq, event_id) VALUES ($1, $2, $3)`, [key, seq, id]);
    });
  },
});
process.stdout.write('consumer ready\n');
