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
