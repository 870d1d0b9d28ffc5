import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DLQ_HEADERS, REDRIVEN_FROM_HEADER } from '../../shared/bus/index.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { spawnTs } from '../support/processes.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('npm run dead-letters on Kafka', kafka.skipReason);

/** `npm run dead-letters` as an operator runs it against the database of a running deployment. */
describe('npm run dead-letters', () => {
  let db: TestDatabase;
  let dir: string;
  const run = async (...args: string[]) => runWith({}, ...args);
  const runWith = async (env: NodeJS.ProcessEnv, ...args: string[]) => {
    const child = spawnTs('bin/dead-letters.ts', args, {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
      KAFKA_BROKERS: '', // the postgres log; the Kafka profile has its own test below
      ...env,
    });
    const { code } = await child.exited;
    return { code, output: child.output() };
  };
  /** The JSON the command printed (its last lines; a progress bar may come before it on stderr). */
  const printed = (output: string) => JSON.parse(output.slice(output.indexOf('[\n')));
  const countsOf = (output: string, topic: string) =>
    printed(output).find((c: { topic: string }) => c.topic === topic);

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-dead-letters-'));
    await writeFile(path.join(dir, 'config.toml'), '[log]\nlevel = "warn"\n');
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists dead letters per topic, redrives those of a topic once, and lists them as re-sent', async () => {
    let result = await run();
    expect(result.code, result.output).toBe(0);
    expect(countsOf(result.output, 'chain.events')).toEqual({
      topic: 'chain.events',
      deadLetters: 0,
      notRedriven: 0,
    });
    // A consumer dead-lettered a chain event (the topics exist now: the command created them as a service does).
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
          headers: { kind: 'TransferOut', [DLQ_HEADERS.topic]: 'chain.events', [DLQ_HEADERS.error]: 'a bug' },
        },
      ]);
    } finally {
      await bus.close();
    }
    result = await run('list');
    expect(countsOf(result.output, 'chain.events')).toMatchObject({ deadLetters: 1, notRedriven: 1 });

    result = await run('redrive', 'chain.events');
    expect(result.code, result.output).toBe(0);
    expect(printed(result.output)).toEqual([{ topic: 'chain.events', redriven: 1, refused: 0, failed: 0 }]);
    const { rows } = await db.pool.query<{ value: string; headers: Record<string, string> }>(
      `SELECT value, headers FROM bus_messages WHERE topic = 'chain.events'`,
    );
    expect(rows).toEqual([
      {
        value: '{"id":"9006:0xabc:0"}',
        headers: {
          kind: 'TransferOut',
          [REDRIVEN_FROM_HEADER]: expect.stringMatching(/^chain\.events\.dlq\/\d+\/0$/),
        },
      },
    ]);
    // Run again: nothing more is sent.
    result = await run('redrive', 'chain.events');
    expect(printed(result.output)).toEqual([{ topic: 'chain.events', redriven: 0, refused: 0, failed: 0 }]);
    result = await run();
    expect(countsOf(result.output, 'chain.events')).toMatchObject({ deadLetters: 1, notRedriven: 0 });
  }, 120_000);

  it('takes an empty LOG_LEVEL as unset, as every variable (README), and refuses a wrong one as a config error', async () => {
    let result = await runWith({ LOG_LEVEL: '' });
    expect(result.code, result.output).toBe(0);
    expect(countsOf(result.output, 'chain.events')).toBeDefined();
    result = await runWith({ LOG_LEVEL: 'verbose' });
    expect(result.code, result.output).toBe(78);
    expect(result.output).toContain('config error: env.LOG_LEVEL: Invalid option');
    expect(result.output).not.toMatch(/^\s+at /m);
  });

  it('refuses an unknown topic or a redrive without one, with its usage and exit code 2', async () => {
    for (const args of [['redrive'], ['redrive', 'no.such.topic'], ['purge']]) {
      const { code, output } = await run(...args);
      expect(code, args.join(' ')).toBe(2);
      expect(output).toMatch(/usage: npm run dead-letters/);
    }
  });

  it('exits 1 when a dead letter could not be re-sent (failed), as a runbook step takes the exit code', async () => {
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
    await db.pool.query(`CREATE OR REPLACE FUNCTION redrive_refused() RETURNS trigger AS $$
      BEGIN IF NEW.topic = 'chain.events' THEN RAISE EXCEPTION 'outage (test)'; END IF; RETURN NEW; END $$
      LANGUAGE plpgsql`);
    await db.pool.query(
      `CREATE TRIGGER redrive_refused BEFORE INSERT ON bus_messages FOR EACH ROW EXECUTE FUNCTION redrive_refused()`,
    );
    try {
      const result = await run('redrive', 'chain.events');
      expect(result.output).toMatch(/"failed": 1/);
      expect(result.code, result.output).toBe(1);
    } finally {
      await db.pool.query('DROP TRIGGER redrive_refused ON bus_messages');
    }
  }, 120_000);

  it('brings home a dead letter whose redrive of <topic>.dlq failed too: it lists and redrives <topic>.dlq.dlq', async () => {
    await db.pool.query('DELETE FROM bus_messages');
    await db.pool.query('DELETE FROM bus_group_offsets');
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
          value: '{"id":"9006:0xdef:0"}',
          headers: { kind: 'ConfirmOut', [DLQ_HEADERS.topic]: 'chain.events', [DLQ_HEADERS.error]: 'a bug' },
        },
      ]);
    } finally {
      await bus.close();
    }
    // Each redrive meets an outage of the table it sends to: its dead letter moves one level down.
    const refusing = async (
      topic: string,
      command: () => Promise<{ code: number | null; output: string }>,
    ) => {
      await db.pool.query(`CREATE OR REPLACE FUNCTION redrive_refused() RETURNS trigger AS $$
        BEGIN IF NEW.topic = '${topic}' THEN RAISE EXCEPTION 'outage (test)'; END IF; RETURN NEW; END $$
        LANGUAGE plpgsql`);
      await db.pool.query(
        `CREATE TRIGGER redrive_refused BEFORE INSERT ON bus_messages FOR EACH ROW EXECUTE FUNCTION redrive_refused()`,
      );
      try {
        return await command();
      } finally {
        await db.pool.query('DROP TRIGGER redrive_refused ON bus_messages');
      }
    };
    let result = await refusing('chain.events', () => run('redrive', 'chain.events'));
    expect(result.output).toMatch(/"failed": 1/);
    result = await refusing('chain.events.dlq', () => run('redrive', 'chain.events.dlq'));
    expect(result.output).toMatch(/"failed": 1/);
    // It is in chain.events.dlq.dlq.dlq now: the notifier tells it (its third level); the list shows it too.
    result = await run();
    expect(countsOf(result.output, 'chain.events.dlq.dlq')).toEqual({
      topic: 'chain.events.dlq.dlq',
      deadLetters: 1,
      notRedriven: 1,
    });
    // And the redrives, level by level, bring it home.
    for (const topic of ['chain.events.dlq.dlq', 'chain.events.dlq', 'chain.events']) {
      result = await run('redrive', topic);
      expect(result.code, result.output).toBe(0);
      expect(printed(result.output)).toEqual([{ topic, redriven: 1, refused: 0, failed: 0 }]);
    }
    const { rows } = await db.pool.query<{ value: string; headers: Record<string, string> }>(
      `SELECT value, headers FROM bus_messages WHERE topic = 'chain.events'`,
    );
    expect(rows).toEqual([
      {
        value: '{"id":"9006:0xdef:0"}',
        headers: {
          kind: 'ConfirmOut',
          [REDRIVEN_FROM_HEADER]: expect.stringMatching(/^chain\.events\.dlq\/\d+\/\d+$/),
        },
      },
    ]);
  }, 180_000);
});

/**
 * On a fresh Kafka deployment: the list also counts the dead letters of each dead-letter topic, whose own
 * dead-letter topic exists only once something subscribed to it. Asking the broker for that topic's offsets
 * failed, and the parallel retries crashed the command.
 */
describe.skipIf(kafka.skipReason)('npm run dead-letters on Kafka', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-dead-letters-kafka-'));
    await writeFile(path.join(dir, 'config.toml'), '[log]\nlevel = "warn"\n');
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists every topic, a dead-letter topic of a dead-letter topic that does not exist counting none', async () => {
    const child = spawnTs('bin/dead-letters.ts', [], {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
      KAFKA_BROKERS: kafka.target!.brokers.join(','),
    });
    const { code } = await child.exited;
    const output = child.output();
    expect(code, output).toBe(0);
    const counts = JSON.parse(output.slice(output.indexOf('[\n'))) as Array<{ topic: string }>;
    expect(counts.find((c) => c.topic === 'chain.events.dlq')).toEqual({
      topic: 'chain.events.dlq',
      deadLetters: 0,
      notRedriven: 0,
    });
  }, 180_000);
});
