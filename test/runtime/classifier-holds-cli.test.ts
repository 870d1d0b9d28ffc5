import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifierMigrations } from '../../services/classifier/migrations.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs } from '../support/processes.js';

/** `npm run classifier-holds` as an operator runs it against the database of a running deployment. */
describe('npm run classifier-holds', () => {
  let db: TestDatabase;
  let dir: string;
  /** The command on `databaseUrl` (default: the test's database), with `env` added. */
  const runOn = async (databaseUrl: string, args: string[], env: Record<string, string> = {}) => {
    const child = spawnTs('bin/classifier-holds.ts', args, {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: '',
      ...env,
    });
    const { code } = await child.exited;
    return { code, output: child.output() };
  };
  const run = (...args: string[]) => runOn(db.url, args);

  beforeAll(async () => {
    db = await createTestDatabase([classifierMigrations]);
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-classifier-holds-'));
    await writeFile(path.join(dir, 'config.toml'), '[log]\nlevel = "warn"\n');
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('lists the dead-lettered events that hold clocks and releases one; refuses an unknown id', async () => {
    let result = await run();
    expect(result.code, result.output).toBe(0);
    expect(JSON.parse(result.output)).toEqual([]);
    await db.pool.query(
      `INSERT INTO classifier_missing_events (chain_id, stream, event_id, block_number, error)
       VALUES ('614', 'swap', 'e-1', 0, 'not JSON'), ('614', 'reputation', 'e-1', 0, 'not JSON')`,
    );
    result = await run('list');
    expect(result.code, result.output).toBe(0);
    expect(JSON.parse(result.output)).toMatchObject([
      { chainId: '614', stream: 'reputation', eventId: 'e-1', block: 0, error: 'not JSON', released: false },
      { chainId: '614', stream: 'swap', eventId: 'e-1', released: false },
    ]);

    result = await run('release', 'e-2');
    expect(result.code).toBe(1);
    expect(result.output).toContain('no dead-lettered event "e-2" holds a clock');

    result = await run('release', 'e-1');
    expect(result.code, result.output).toBe(0);
    expect(JSON.parse(result.output)).toEqual({ released: 'e-1', streams: 2 });
    const { rows } = await db.pool.query<{ released: boolean }>(
      'SELECT released FROM classifier_missing_events',
    );
    expect(rows.map((r) => r.released)).toEqual([true, true]);
  });

  it("says in one line, without a stack trace, that the Classifier's tables are not in a database where it never ran", async () => {
    const bare = await createTestDatabase();
    try {
      const { code, output } = await runOn(bare.url, []);
      expect(code).toBe(1);
      expect(output.trim()).toBe(
        `classifier-holds: relation "public.classifier_missing_events" does not exist: that service's tables are not in this database (has it ever run on it?)`,
      );
    } finally {
      await bare.drop();
    }
  });

  it('says in one line, without a stack trace, that the database cannot be reached', async () => {
    const away = new URL(db.url);
    away.hostname = '127.0.0.1';
    away.port = '9'; // nothing listens on the discard port
    const { code, output } = await runOn(away.toString(), []);
    expect(code).toBe(1);
    expect(output).not.toMatch(/^\s+at /m);
    expect(output).toMatch(/^classifier-holds: .*ECONNREFUSED/m);
  });

  it('names the cause when the database host has two addresses (localhost on most systems: ::1 and 127.0.0.1)', async () => {
    // Node then tries both and fails with an AggregateError whose message is empty. This host's /etc/hosts
    // gives localhost one address, so the preload resolves a name as a dual-stack /etc/hosts resolves localhost.
    const preload = path.join(dir, 'dual-stack-hosts.mjs');
    await writeFile(
      preload,
      `import dns from 'node:dns';
const lookup = dns.lookup;
dns.lookup = (host, options, cb) => {
  if (typeof options === 'function') [cb, options] = [options, {}];
  if (host !== 'dual-stack.test') return lookup(host, options, cb);
  const all = [{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }];
  process.nextTick(() => (options.all ? cb(null, all) : cb(null, '127.0.0.1', 4)));
};
`,
    );
    const away = new URL(db.url);
    away.hostname = 'dual-stack.test';
    away.port = '9'; // nothing listens on the discard port
    const { code, output } = await runOn(away.toString(), [], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${pathToFileURL(preload).href}`,
    });
    expect(code).toBe(1);
    expect(output).not.toMatch(/^\s+at /m);
    // Where ::1 is not configured, its attempt fails otherwise (EADDRNOTAVAIL, ENETUNREACH).
    expect(output.trim()).toMatch(
      /^classifier-holds: connect [A-Z]+ ::1:9; connect ECONNREFUSED 127\.0\.0\.1:9$/,
    );
  });

  it('refuses a malformed command with its usage', async () => {
    const result = await run('release');
    expect(result.code).toBe(2);
    expect(result.output).toContain('usage: npm run classifier-holds');
  });
});
