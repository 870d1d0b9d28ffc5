import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { meetsTarget, suiteMarkdown, writeReport, type Environment } from './report.js';

const env: Environment = {
  date: '2026-01-01T00:00:00Z',
  cpu: 'Test CPU',
  cores: 2,
  memory: '4 GiB',
  os: 'Linux',
  node: 'v20.0.0',
  load: 1.25,
  databases: ['PostgreSQL 17.6 (embedded, from npm, fsync on)'],
};

describe('bench report', () => {
  const dirs: string[] = [];
  afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

  it('renders figure, baseline, ratio, target and whether it is met, with the machine', () => {
    const text = suiteMarkdown(
      'bus',
      [
        {
          title: 'publish',
          rows: [
            { measure: 'raw', value: '100 rows/s', note: 'baseline' },
            { measure: 'log', value: '60 msg/s', baseline: '100 rows/s', ratio: 0.6, target: 0.5 },
            { measure: 'slow', value: '40 msg/s', baseline: '100 rows/s', ratio: 0.4, target: 0.5 },
          ],
        },
      ],
      env,
    );
    expect(text).toContain(
      'Test CPU, 2 cores, 4 GiB memory, Linux, load average 1.3, Node v20.0.0, PostgreSQL 17.6',
    );
    expect(text).toContain('| log | 60 msg/s | 100 rows/s | 0.60× | ≥ 0.5× | yes |');
    expect(text).toContain('| slow | 40 msg/s | 100 rows/s | 0.40× | ≥ 0.5× | **no** |');
    expect(meetsTarget({ measure: 'x', value: 'y', ratio: 1 })).toBeUndefined();
  });

  it('rewrites only the suites that ran and keeps the others', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-report-'));
    dirs.push(dir);
    const file = path.join(dir, 'benchmarks.md');
    const part = (name: string, value: string) =>
      suiteMarkdown(name, [{ title: name, rows: [{ measure: 'm', value }] }], env);
    writeReport(
      file,
      new Map([
        ['bus', part('bus', 'first bus')],
        ['crypto', part('crypto', 'first crypto')],
      ]),
      ['bus', 'crypto', 'connector'],
    );
    writeReport(file, new Map([['connector', part('connector', 'first connector')]]), [
      'bus',
      'crypto',
      'connector',
    ]);
    writeReport(file, new Map([['bus', part('bus', 'second bus')]]), ['bus', 'crypto', 'connector']);
    const text = await readFile(file, 'utf8');
    expect(text).toContain('second bus');
    expect(text).not.toContain('first bus');
    expect(text).toContain('first crypto');
    expect(text).toContain('first connector');
    // In the suites' order, one part each.
    expect(text.indexOf('## bus')).toBeLessThan(text.indexOf('## crypto'));
    expect(text.indexOf('## crypto')).toBeLessThan(text.indexOf('## connector'));
    expect(text.match(/<!-- bench:bus begin -->/g)).toHaveLength(1);
  });
});
