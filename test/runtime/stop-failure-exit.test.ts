import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseForSuite } from '../support/database.js';
import { isolatedEnv, spawnTs } from '../support/processes.js';

describe('npm start stopped by a signal', () => {
  const db = databaseForSuite();

  it('exits non-zero when a service failed to stop (its failure is not reported as a clean stop)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-stopfail-'));
    const config = path.join(dir, 'config.toml');
    await writeFile(config, 'n8nUrl = "http://127.0.0.1:1/hook"\n');
    const proc = spawnTs(
      'test/support/stop-failure-runner.ts',
      [],
      isolatedEnv({ CONFIG_PATH: config, DATABASE_URL: db.url, LOG_LEVEL: 'info' }),
    );
    try {
      await proc.waitFor(/"msg":"ready"/, 60_000);
      proc.child.kill('SIGTERM');
      const exit = await proc.exited;
      expect(proc.output()).toContain('stop failed');
      expect(exit.code).not.toBe(0);
    } finally {
      proc.child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
