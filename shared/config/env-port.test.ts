import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './index.js';

// README: DBPORT / MONGO_PORT are ports; a malformed value is refused (exit 78), not reinterpreted.
describe('DBPORT / MONGO_PORT', () => {
  it.each(['0x1538', '1e3', '0b1'])('refuses %s instead of reading it as another number', (value) => {
    expect(() =>
      loadConfig({ text: '', env: { DBHOST: 'db.internal', DBPORT: value }, root: '/srv' }),
    ).toThrow(ConfigError);
    expect(() =>
      loadConfig({ text: '', env: { MONGO_HOST: 'mongo.internal', MONGO_PORT: value }, root: '/srv' }),
    ).toThrow(ConfigError);
  });
});
