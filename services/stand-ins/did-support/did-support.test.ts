import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDids } from '../../../shared/devnet/agreements.js';
import { startDevnet, type Devnet } from '../../../shared/devnet/devnet.js';
import { startDidSupport, type DidSupport } from './index.js';

describe('DID support stand-in over the devnet registry', () => {
  let devnet: Devnet;
  let did: DidSupport;
  const get = async (path: string) => {
    const response = await fetch(did.url + path);
    return {
      status: response.status,
      body: (await response.json()) as { code: number; data?: unknown[]; message?: string },
    };
  };

  beforeAll(async () => {
    devnet = await startDevnet({ chains: [{ chainId: 97 }] });
    const chain = devnet.chain(97);
    did = await startDidSupport({ rpcUrl: chain.rpcUrl, registry: chain.contracts.reputation });
  }, 60_000);
  afterAll(async () => {
    await did?.stop();
    await devnet?.stop();
  });

  it('answers the names an address owns now, as the real service: {data:[{name}]}', async () => {
    const chain = devnet.chain(97);
    const [a, b] = [chain.accounts[1]!.address, chain.accounts[2]!.address];
    expect((await get(`/find/owner/${a}`)).body).toEqual({ code: 0, data: [] });
    await registerDids(chain, { 'alice.devnet': a, 'lp-alice': a });
    expect((await get(`/find/owner/${a.toLowerCase()}`)).body).toEqual({
      code: 0,
      data: [{ name: 'alice.devnet' }, { name: 'lp-alice' }],
    });
    // A domain that moves to another owner leaves the first one's names.
    await registerDids(chain, { 'lp-alice': b });
    expect((await get(`/find/owner/${a}`)).body.data).toEqual([{ name: 'alice.devnet' }]);
    expect((await get(`/find/name/lp-alice`)).body).toEqual({ code: 0, data: [{ owner: b }] });
    expect((await get(`/find/name/nobody`)).body).toEqual({ code: 0, data: [] });
  });

  it('refuses a malformed address and unknown routes with {code, message}', async () => {
    expect(await get('/find/owner/0x123')).toEqual({
      status: 400,
      body: { code: 400, message: 'address must be a 20-byte 0x-prefixed hex address' },
    });
    // An empty name is the caller's mistake, not the registry being away (502).
    expect(await get('/find/name/')).toEqual({
      status: 400,
      body: { code: 400, message: 'name must not be empty' },
    });
    const missing = await get('/find/everything');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ code: 404 });
    // A name over the router's 100-character parameter limit: the same 404 {code, message}, not fastify's 414.
    const long = `/find/name/${'a'.repeat(101)}`;
    expect(await get(long)).toEqual({ status: 404, body: { code: 404, message: `no route GET ${long}` } });
  });
});
