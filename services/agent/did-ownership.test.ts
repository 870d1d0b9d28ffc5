/**
 * The real SDK submits `name.replace('@', '.')` of the first DID name the DID support service gives for the
 * complainant: a service answering `alice@olares.com` made every SDK complaint "not the owner" (403).
 */
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { didSupportOwnership } from './did-ownership.js';

const SIGNER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

describe('DID ownership through the DID support service', () => {
  const app = Fastify();
  let url: string;
  beforeAll(async () => {
    app.get('/find/owner/:address', async (request) =>
      (request.params as { address: string }).address === SIGNER
        ? { code: 0, data: [{ name: 'alice@olares.com' }] }
        : { code: 0, data: [] },
    );
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());

  it("owns the domain the SDK submits for a name user@domain, and the name as it is; nobody else's", async () => {
    const ownership = didSupportOwnership(url);
    expect(await ownership.check('alice.olares.com', SIGNER)).toEqual({ owns: true });
    expect(await ownership.check('alice@olares.com', SIGNER)).toEqual({ owns: true });
    expect(await ownership.check('bob.olares.com', SIGNER)).toEqual({
      owns: false,
      detail: 'it owns alice@olares.com',
    });
  });
});

/**
 * DESIGN §5 gives the DID support service's answer as `{data:[{name}]}`, and the Classifier and Points read it
 * so. The Agent alone required `code: 0`: with a service answering that shape, every complaint was refused
 * 503 (the DID source "down") while the Classifier judged on the same answers. A code other than 0 is still the
 * service failing (shared/otmoic/did-lookup.ts namesOfFindOwnerAnswer).
 */
describe('DID ownership through a DID support service answering without a code', () => {
  const app = Fastify();
  let url: string;
  beforeAll(async () => {
    app.get('/find/owner/:address', async (request) => {
      const address = (request.params as { address: string }).address;
      if (address === FAILING) return { code: 1, message: 'internal error', data: [] };
      return address === SIGNER ? { data: [{ name: 'alice.olares.com' }] } : { data: [] };
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());
  const FAILING = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC';

  it('reads {data:[{name}]} as an answer, and a code other than 0 as the service failing', async () => {
    const ownership = didSupportOwnership(url);
    expect(await ownership.check('alice.olares.com', SIGNER)).toEqual({ owns: true });
    expect(await ownership.check('bob.olares.com', SIGNER)).toEqual({
      owns: false,
      detail: 'it owns alice.olares.com',
    });
    await expect(ownership.check('alice.olares.com', FAILING)).rejects.toThrow(/code 1/);
  });
});

/**
 * The signer of an lpSign is one of up to 32 candidates (one per version of the Message, lower-case): the
 * Agent asks which of them owns the LP id before it pays gas (agreement-proof.ts).
 */
describe('the first owner among the candidate signers of an lpSign', () => {
  const app = Fastify();
  let url: string;
  const asked: string[] = [];
  beforeAll(async () => {
    app.get('/find/owner/:address', async (request) => {
      const address = (request.params as { address: string }).address;
      asked.push(address);
      return address === SIGNER ? { code: 0, data: [{ name: 'lp-7099.devnet' }] } : { code: 0, data: [] };
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());
  const OTHER = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';

  it('is the first candidate whose DID names include the domain, asked in order and no further', async () => {
    const ownership = didSupportOwnership(url);
    const third = '0x90f79bf6eb2c4f870365e785982e1f101e93b906';
    expect(await ownership.firstOwner('lp-7099.devnet', [OTHER, SIGNER.toLowerCase(), third])).toBe(
      SIGNER.toLowerCase(),
    );
    expect(asked.map((a) => a.toLowerCase())).not.toContain(third);
    expect(await ownership.firstOwner('lp-7099.devnet', [OTHER, third])).toBeNull();
    expect(await ownership.firstOwner('someone-else.devnet', [SIGNER.toLowerCase()])).toBeNull();
  });
});
