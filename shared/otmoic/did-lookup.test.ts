import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { getAddress } from 'ethers';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { didSupportOwnership } from '../../services/agent/did-ownership.js';
import { HttpDidSource } from '../../services/classifier/did-source.js';
import { fetchDidNames } from '../../services/points/external-services.js';
import { createLogger } from '../logging/logger.js';
import { didAddressForms } from './did-lookup.js';

const LP = getAddress('0x90f79bf6eb2c4f870365e785982e1f101e93b906');
const USER = getAddress('0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc');
const NOBODY = getAddress('0x15d34aaf54267db7d7c367839aaf71a00a2c6a65');

/**
 * A DID support service that matches addresses case-sensitively, as nothing says the real one does not: the
 * LP's names stored under its checksummed form, the user's under lower case. Every caller (Classifier,
 * Points, Agent) must find both, whatever form it was handed.
 */
describe('DID names asked under both forms of an address', () => {
  const stored = new Map<string, string[]>([
    [LP, ['lp-one.example']],
    [USER.toLowerCase(), ['alice.example']],
  ]);
  let asked: string[] = [];
  let server: http.Server;
  let url: string;

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      const address = decodeURIComponent(request.url!.replace('/find/owner/', ''));
      asked.push(address);
      const names = stored.get(address) ?? [];
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ code: 0, data: names.map((name) => ({ name })) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    asked = [];
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('the forms: checksummed, then lower-case; anything not an EVM address as it is', () => {
    expect(didAddressForms(LP.toLowerCase())).toEqual([LP, LP.toLowerCase()]);
    expect(didAddressForms(LP)).toEqual([LP, LP.toLowerCase()]);
    const long = '0x' + 'ab'.repeat(32);
    expect(didAddressForms(long)).toEqual([long]);
  });

  it('Classifier: finds names stored under either form; asks once when the first form has them', async () => {
    const source = new HttpDidSource({
      url,
      ttlMs: 60_000,
      log: createLogger({ level: 'silent' }),
      onAnswer: async () => undefined,
    });
    expect(await source.lookup(LP.toLowerCase())).toEqual(['lp-one.example']);
    expect(asked).toEqual([LP]);
    expect(await source.lookup(USER.toLowerCase())).toEqual(['alice.example']);
    expect(await source.lookup(NOBODY.toLowerCase())).toEqual([]);
    expect(asked.slice(1)).toEqual([USER, USER.toLowerCase(), NOBODY, NOBODY.toLowerCase()]);
  });

  it('Points: the same', async () => {
    const names = fetchDidNames(url);
    const signal = AbortSignal.timeout(5_000);
    expect(await names(LP.toLowerCase(), signal)).toEqual(['lp-one.example']);
    expect(await names(USER.toLowerCase(), signal)).toEqual(['alice.example']);
    expect(await names(NOBODY.toLowerCase(), signal)).toEqual([]);
  });

  it('Agent: a signer owns the domain stored under either form of its address', async () => {
    const ownership = didSupportOwnership(url);
    expect(await ownership.check('lp-one.example', LP)).toEqual({ owns: true });
    expect(await ownership.check('alice.example', USER)).toEqual({ owns: true });
    expect(await ownership.check('alice.example', NOBODY)).toEqual({
      owns: false,
      detail: 'it owns no DID domain',
    });
  });
});
