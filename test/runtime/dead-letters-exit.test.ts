import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS } from '../../shared/bus/index.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs } from '../support/processes.js';

/**
 * `npm run dead-letters -- redrive <topic>` whose dead letters were NOT re-sent (the re-publish failed for
 * good: moved on to <topic>.dlq.dlq) must not exit 0 as a redrive that worked: a script or a runbook step
 * (`… redrive chain.events && echo done`) takes the exit code, not the JSON.
 */
describe('npm run dead-letters -- redrive, exit code', () => {
  let db: TestDatabase;
  let dir: string;
  const run = async (...args: string[]) => {
    const child = spawnTs('bin/dead-letters.ts', args, {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
      KAFKA_BROKERS: '',
    });
    const { code } = await child.exited;
    return { code, output: child.output() };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-review-dl-'));
    await writeFile(path.join(dir, 'config.toml'), '[log]\nlevel = "warn"\n');
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('exits non-zero when a dead letter could not be re-sent (failed) or was refused', async () => {
    expect((await run()).code).toBe(0); // creates the topics
    const bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    try {
      await bus.publish('chain.events.dlq', [
        {
          key: '9006',
          value: '{"id":"9006:0xabc:0"}',
          headers: { [DLQ_HEADERS.topic]: 'chain.events', [DLQ_HEADERS.error]: 'a bug' },
        },
      ]);
    } finally {
      await bus.close();
    }
    // The database refuses the re-publish (an outage of that table, as in the conformance test).
    await db.pool.query(`CREATE OR REPLACE FUNCTION review_refuse() RETURNS trigger AS $$
      BEGIN IF NEW.topic = 'chain.events' THEN RAISE EXCEPTION 'outage (test)'; END IF; RETURN NEW; END $$
      LANGUAGE plpgsql`);
    await db.pool.query(
      `CREATE TRIGGER review_refuse BEFORE INSERT ON bus_messages FOR EACH ROW EXECUTE FUNCTION review_refuse()`,
    );
    const result = await run('redrive', 'chain.events');
    expect(result.output).toMatch(/"failed": 1/);
    expect(result.code, result.output).not.toBe(0);
  }, 120_000);
});
