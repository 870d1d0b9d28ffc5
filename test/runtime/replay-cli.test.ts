import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs } from '../support/processes.js';

/** The environment on the postgres log of the test database (KAFKA_BROKERS, set to skip Kafka tests, would send the child there). */
function postgresBusEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.KAFKA_BROKERS;
  return env;
}

/** `npm run replay` as an operator runs it: every consumer of the pipeline, in order, against a database. */
describe('npm run replay', () => {
  let db: TestDatabase;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-replay-cli-'));
    await writeFile(
      path.join(dir, 'config.toml'),
      `[classifier]\nport = 1\ndidSupportUrl = "http://127.0.0.1:9"\n\n[[chainClients]]\nurl = "http://127.0.0.1:9"\nhistoryUrl = "http://127.0.0.1:9"\ninitBlockHeight = 0\nchainId = "9006"\nnativeChainId = "97"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"\n`,
    );
  });
  afterAll(async () => {
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('without a name replays the classifier and points (reports in pipeline order), exits 0 when both are identical', async () => {
    const run = spawnTs('bin/replay.ts', [], {
      ...postgresBusEnv(),
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
    });
    const { code } = await run.exited;
    const output = run.output();
    expect(code, output).toBe(0);
    const order = [...output.matchAll(/"replay": "(\w+)"/g)].map((m) => m[1]);
    expect(order).toEqual(['classifier', 'points']);
    expect(output).toMatch(/replay \(classifier \+ points\) \[#+\] 100%/);
    expect(output).toMatch(/"identical": true/);
  }, 120_000);

  it('runs a replayer named twice once (two at once collided on one schema name)', async () => {
    const run = spawnTs('bin/replay.ts', ['classifier', 'classifier'], {
      ...postgresBusEnv(),
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
    });
    const { code } = await run.exited;
    const output = run.output();
    expect(code, output).toBe(0);
    expect([...output.matchAll(/"replay": "(\w+)"/g)].map((m) => m[1])).toEqual(['classifier']);
    expect(output).toMatch(/replay \(classifier\) \[#+\] 100%/);
  }, 120_000);

  it('refuses an unknown name with its usage and exit code 2', async () => {
    const run = spawnTs('bin/replay.ts', ['everything'], { ...postgresBusEnv(), DATABASE_URL: db.url });
    expect((await run.exited).code).toBe(2);
    expect(run.output()).toMatch(/usage: npm run replay/);
  });
});
