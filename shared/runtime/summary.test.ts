import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/index.js';
import { serviceUrls } from './summary.js';

const config = loadConfig({
  text: '[point]\nport = 9100\nrelayAdminUrl = "http://127.0.0.1:1"\ndidSupportUrl = "http://127.0.0.1:2"\nrefreshInterval = 1000\n',
  require: ['point'],
  env: {},
});

describe("the ready line's URLs", () => {
  const host = process.env.HOST;
  afterEach(() => {
    if (host === undefined) delete process.env.HOST;
    else process.env.HOST = host;
  });

  it('put an IPv6 HOST in brackets, as a URL needs', () => {
    process.env.HOST = '::1';
    expect(serviceUrls(config, ['points'])).toMatchObject({
      points: 'http://[::1]:9100',
      dashboard: 'http://[::1]:9100/dashboard',
    });
    for (const url of Object.values(serviceUrls(config, ['points'])))
      expect(() => new URL(url)).not.toThrow();
  });

  it('show a wildcard HOST as the loopback address of its family, a name or IPv4 address as given', () => {
    process.env.HOST = '::';
    expect(serviceUrls(config, ['points']).points).toBe('http://[::1]:9100');
    process.env.HOST = '0.0.0.0';
    expect(serviceUrls(config, ['points']).points).toBe('http://127.0.0.1:9100');
    process.env.HOST = 'relay.internal';
    expect(serviceUrls(config, ['points']).points).toBe('http://relay.internal:9100');
    delete process.env.HOST;
    expect(serviceUrls(config, ['points']).points).toBe('http://127.0.0.1:9100');
  });
});
