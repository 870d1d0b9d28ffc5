/**
 * A replay (the resident engine) marks a batch's ids processed before it writes the batch's verdicts. A failed
 * write (the database away for a moment) used to drop those verdicts from memory too: the redelivered batch
 * decided nothing again, and the replay reported differences the live classifier did not have. They are kept
 * for the next write now.
 */
import { describe, expect, it } from 'vitest';
import { databaseForSuite } from '../../test/support/database.js';
import { chainEventId, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, finalHeights, HONEST_SWAP, syntheticEngine } from './judge-test-kit.js';
import { classifierMigrations } from './migrations.js';
import { buildTimeline } from './swap-timeline.js';

describe('classifier replay (resident): a failed write of the decisions', () => {
  const db = databaseForSuite([classifierMigrations]);

  it.each(['decisions', 'keep'] as const)(
    'loses no verdict: the redelivered batch writes it (%s)',
    async (resident) => {
      const schema = `resident_write_${resident}`;
      const { engine, tables } = await syntheticEngine(db.pool, schema, resident);
      // The first INSERT of verdicts fails (a sequence: its count survives the rolled-back transaction).
      await db.pool.query(`
        CREATE SEQUENCE ${schema}.tries;
        CREATE FUNCTION ${schema}.fail_once() RETURNS trigger AS $$
        BEGIN
          IF nextval('${schema}.tries') = 1 THEN RAISE EXCEPTION 'database went away'; END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql;
        CREATE TRIGGER fail_once BEFORE INSERT ON ${tables.verdicts}
          FOR EACH STATEMENT EXECUTE FUNCTION ${schema}.fail_once();`);
      const timeline = buildTimeline(HONEST_SWAP);
      const inputs: ClassifierInput[] = [
        ...Object.values(timeline.streams)
          .flat()
          .map((e): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e })),
        ...finalHeights(5_000),
      ];
      await expect(engine.handleBatch(inputs, batchContext())).rejects.toThrow('database went away');
      await engine.handleBatch(inputs, batchContext()); // the bus delivers the batch again
      await engine.writeResident();
      const { rows } = await db.pool.query<{ verdict: SwapVerdict }>(
        `SELECT verdict FROM ${tables.verdicts}`,
      );
      expect(rows.map((r) => r.verdict.outcome)).toEqual(['normal']);
    },
  );
});
