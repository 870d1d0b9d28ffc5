import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../logging/logger.js';
import { startHttpService } from './http-service.js';
import type { ServiceContext } from './service.js';

// No route here touches the database: the context holds what startHttpService itself reads.
const context = {
  log: createLogger({ name: 'http-service-test', level: 'silent' }),
  metrics: new Registry(),
} as unknown as ServiceContext;

describe('the interface a service listens on', () => {
  const host = process.env.HOST;
  afterEach(() => {
    if (host === undefined) delete process.env.HOST;
    else process.env.HOST = host;
  });

  it('is 127.0.0.1 when HOST is empty, as when it is unset (docker-compose passes `HOST: ${HOST}` empty)', async () => {
    for (const value of [undefined, '']) {
      if (value === undefined) delete process.env.HOST;
      else process.env.HOST = value;
      const service = await startHttpService(context, 'test', 0);
      try {
        const address = service.app.server.address() as AddressInfo;
        expect(address.address, `HOST=${JSON.stringify(value)}`).toBe('127.0.0.1');
      } finally {
        await service.stop();
      }
    }
  });
});
