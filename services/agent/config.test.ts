import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactConfig } from '../../shared/config/index.js';
import { didSourceOf } from './index.js';

const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const base = `[agent]\nport = 1\nrpc = "https://rpc.example/v1/SECRETKEY0123456789"\npriv = "${KEY}"\ncontractAddr = "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0"\n`;
const load = (text: string) => loadConfig({ text, require: ['agent'], env: {} });

describe('[agent] configuration', () => {
  it('fills the defaults of our keys', () => {
    const agent = load(base).agent!;
    expect(agent.chainId).toBeUndefined();
    expect(agent).toMatchObject({
      rpcFallbacks: [],
      confirmations: 2,
      maxGasLimit: 400_000,
      rateLimit: { max: 60, windowMs: 60_000 },
      domainRateLimit: { max: 10, windowMs: 60_000 },
      bodyLimit: 32_768,
      apiKeys: [],
      allowIps: [],
      corsOrigins: [],
    });
  });

  it('takes the origins of browser apps (corsOrigins) exactly as a browser sends them, or "*" alone', () => {
    expect(
      load(`${base}corsOrigins = ["https://app.example.com", "http://127.0.0.1:8080"]\n`).agent!.corsOrigins,
    ).toEqual(['https://app.example.com', 'http://127.0.0.1:8080']);
    expect(load(`${base}corsOrigins = ["*"]\n`).agent!.corsOrigins).toEqual(['*']);
    // A browser's Origin never has a path or a trailing slash: such an entry would never match.
    for (const bad of [
      'https://app.example.com/',
      'https://app.example.com/swap',
      'app.example.com',
      'ftp://x.example',
    ])
      expect(() => load(`${base}corsOrigins = ["${bad}"]\n`)).toThrow(
        /agent\.corsOrigins\[0\]: must be an origin/,
      );
    expect(() => load(`${base}corsOrigins = ["*", "https://app.example.com"]\n`)).toThrow(
      /agent\.corsOrigins: "\*" allows any origin/,
    );
  });

  it('takes API keys and an allow-list of addresses and CIDR ranges for POST /submit-complaint', () => {
    const agent = load(
      `${base}apiKeys = ["agent-api-key-0123456789abcdef"]\nallowIps = ["10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"]\n`,
    ).agent!;
    expect(agent.apiKeys).toEqual(['agent-api-key-0123456789abcdef']);
    expect(agent.allowIps).toEqual(['10.0.0.0/8', '192.168.1.7', '::1', 'fd00::/8']);
    expect(
      JSON.stringify(
        redactConfig(
          loadConfig({
            text: `${base}apiKeys = ["agent-api-key-0123456789abcdef"]\n`,
            require: ['agent'],
            env: {},
          }),
        ),
      ),
    ).not.toContain('agent-api-key');
  });

  it('refuses a short API key and entries that are not addresses or ranges, naming each, echoing no key', () => {
    let error: unknown;
    try {
      load(
        `${base}apiKeys = ["short-secret-k", "good-api-key-0123456789"]\nallowIps = ["10.0.0.0/33", "localhost", "1.2.3.4/8/1", "::1/129", "1.2.3.4/"]\n`,
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues).toEqual([
      { key: 'agent.apiKeys[0]', problem: 'an API key must have at least 16 characters' },
      ...[0, 1, 2, 3, 4].map((i) => ({
        key: `agent.allowIps[${i}]`,
        problem: 'must be an IP address or a CIDR range (e.g. 10.0.0.0/8)',
      })),
    ]);
    const text = String((error as Error).message) + JSON.stringify(error);
    expect(text).not.toContain('short-secret-k');
    expect(text).not.toContain('good-api-key');
  });

  it('refuses a bad key naming it, without echoing the secrets', () => {
    let error: unknown;
    try {
      load(`${base}didSource = "chain"\nbodyLimit = 10\n`);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = String((error as Error).message) + JSON.stringify(error);
    expect(text).toMatch(/agent\.didSource/);
    expect(text).toMatch(/agent\.bodyLimit/);
    expect(text).not.toContain(KEY.slice(2));
    expect(text).not.toContain('SECRETKEY');
  });

  it('asks the DID support service in production and the contract on the devnet', () => {
    expect(didSourceOf({}, 'http://did.example')).toEqual({
      source: 'didSupport',
      url: 'http://did.example',
    });
    expect(didSourceOf({ didSupportUrl: 'http://mine.example' }, 'http://did.example')).toEqual({
      source: 'didSupport',
      url: 'http://mine.example',
    });
    expect(didSourceOf({}, undefined)).toEqual({ source: 'contract' });
    expect(didSourceOf({ didSource: 'contract' }, 'http://did.example')).toEqual({ source: 'contract' });
    expect(() => didSourceOf({ didSource: 'didSupport' }, undefined)).toThrow(/didSupportUrl/);
  });
});
