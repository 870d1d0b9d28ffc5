import { execFileSync } from 'node:child_process';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from './logger.js';

describe('logger', () => {
  it('masks secret-named fields wherever a log object carries them', () => {
    const lines: string[] = [];
    const spy = vi
      .spyOn(pino, 'destination')
      .mockReturnValue(
        new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }) as never,
      );
    const log = createLogger({ level: 'info' });
    spy.mockRestore();
    log.info(
      {
        agent: { priv: '0xsecretkey', port: 1 },
        password: 'hunter2',
        db: { password: 'pw2' },
        DBPASS: 'pw3',
      },
      'x',
    );
    const line = lines.join('');
    for (const secret of ['0xsecretkey', 'hunter2', 'pw2', 'pw3']) expect(line).not.toContain(secret);
    expect(JSON.parse(line)).toMatchObject({ agent: { priv: '***', port: 1 }, password: '***' });
  });
});

describe('log format', () => {
  const run = (env: NodeJS.ProcessEnv) =>
    execFileSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "import { createLogger } from './shared/logging/logger.ts'; createLogger({ name: 'otmoic' }).child({ service: 'points' }).info({ priv: '0xsecret', port: 9100 }, 'listening');",
      ],
      { env: { ...process.env, ...env } },
    ).toString();

  it('is one readable line per event when pretty (a terminal), secrets still masked', () => {
    const out = run({ LOG_FORMAT: 'pretty' });
    expect(out.trim().split('\n')).toHaveLength(1);
    expect(out).toMatch(/INFO.*points: listening.*"port":9100/);
    expect(out).not.toContain('0xsecret');
  });

  it('is JSON when not a terminal', () => {
    const out = run({ LOG_FORMAT: '' });
    expect(JSON.parse(out)).toMatchObject({ msg: 'listening', service: 'points', priv: '***' });
  });
});
