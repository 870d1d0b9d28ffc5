import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config/index.js';
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
      maxGasLimit: 1_000_000,
      rateLimit: { max: 60, windowMs: 60_000 },
      domainRateLimit: { max: 10, windowMs: 60_000 },
      bodyLimit: 32_768,
    });
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
