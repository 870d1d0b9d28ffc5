/**
 * KYC and DID through real local HTTP servers: cached for the refresh interval, a KYC change followed at the
 * next refresh, and when the services are stopped the answers keep coming with the last known values,
 * flagged stale.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { startRelayAdminStandIn, type RelayAdminStandIn } from '../stand-ins/relay-admin/server.js';
import { CachedLookup } from './cached-lookup.js';
import { POINTS_ERRORS } from './errors.js';
import { fetchDidNames, fetchDidOwner, fetchKyc } from './external-services.js';
import { pointsMigrations } from './migrations.js';
import { pointTestConfig, startFakeDidSupport, startTestPoints, userAddress } from './test-harness.js';

const BOB = userAddress(0xb0b);
const CAROL = userAddress(0xca201);
const REFRESH_MS = 60_000;

describe('KYC and DID services: cache, refresh, and down', () => {
  let db: TestDatabase;
  let relayAdmin: RelayAdminStandIn;
  let did: Awaited<ReturnType<typeof startFakeDidSupport>>;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const clock = { ms: 1_800_000_000_000 };

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    relayAdmin = await startRelayAdminStandIn({ verified: [BOB] });
    did = await startFakeDidSupport(new Map([[BOB, ['bob.example']]]));
    points = await startTestPoints(
      db,
      pointTestConfig({ relayAdminUrl: relayAdmin.url, didSupportUrl: did.url, refreshInterval: REFRESH_MS }),
      { clockMs: () => clock.ms, nowSeconds: () => Math.floor(clock.ms / 1000), consume: false },
    );
  });
  afterAll(async () => {
    await points?.close();
    await relayAdmin?.close();
    await did?.close();
    await db?.drop();
  });

  it('follows a KYC change at the next refresh, not before', async () => {
    expect((await points.get(`/user-point?address=${BOB}`)).body).toMatchObject({
      score_tenths: 50,
      kyc: { verified: true, stale: false },
      did: { names: ['bob.example'], stale: false },
    });
    await relayAdmin.setVerified(BOB, false);
    clock.ms += REFRESH_MS - 1;
    expect((await points.get(`/user-point?address=${BOB}`)).body.score_tenths).toBe(50);
    clock.ms += 1;
    expect((await points.get(`/user-point?address=${BOB}`)).body).toMatchObject({
      score_tenths: 20,
      kyc: { verified: false, stale: false },
    });
    await relayAdmin.setVerified(BOB, true);
    clock.ms += REFRESH_MS;
    expect((await points.get(`/user-point?address=${BOB}`)).body.score_tenths).toBe(50);
  });

  it('keeps answering with the last known values, flagged stale, while both services are stopped', async () => {
    expect((await points.get('/user-point?did=bob.example')).body.subject.address).toBe(BOB);
    const relayPort = relayAdmin.port;
    const didPort = did.port;
    await relayAdmin.close();
    await did.close();
    clock.ms += REFRESH_MS;

    const bob = await points.get(`/user-point?address=${BOB}`);
    expect(bob.status).toBe(200);
    expect(bob.body).toMatchObject({
      score_tenths: 50,
      kyc: { verified: true, known: true, stale: true },
      did: { names: ['bob.example'], stale: true },
    });
    // Resolved before: still answers by DID name.
    expect((await points.get('/user-point?did=bob.example')).body).toMatchObject({
      score_tenths: 50,
      subject: { address: BOB },
    });
    // Never seen: basis 2, KYC unknown, stale; a DID name never resolved cannot be answered.
    expect((await points.get(`/user-point?address=${CAROL}`)).body).toMatchObject({
      score_tenths: 20,
      kyc: { verified: false, known: false, stale: true },
      did: { names: [], stale: true },
    });
    expect(await points.get('/user-point?did=carol.example')).toMatchObject({
      status: 503,
      body: { code: POINTS_ERRORS.DID_UNAVAILABLE.code },
    });
    const metrics = await (await fetch(`${points.base}/metrics`)).text();
    expect(metrics).toMatch(/points_lookups_total\{service="kyc",outcome="failed"\} [1-9]/);

    // Back up (Carol verified meanwhile): after the back-off the next query is fresh again.
    relayAdmin = await startRelayAdminStandIn({ port: relayPort, verified: [BOB, CAROL] });
    did = await startFakeDidSupport(new Map([[CAROL, ['carol.example']]]), didPort);
    clock.ms += 5_000;
    expect((await points.get(`/user-point?address=${CAROL}`)).body).toMatchObject({
      score_tenths: 50,
      kyc: { verified: true, known: true, stale: false },
      did: { names: ['carol.example'], stale: false },
    });
  });
});

describe('a KYC service that answers nonsense or hangs counts as down', () => {
  it('refuses a malformed answer and a slow one, keeping the last known value', async () => {
    let mode: 'ok' | 'malformed' | 'hang' = 'ok';
    const app = Fastify({ loggerInstance: createLogger({ level: 'silent' }) as FastifyBaseLogger });
    app.get('/kyc/:address', async (request, reply) => {
      const address = (request.params as { address: string }).address;
      if (mode === 'malformed') return { data: { address, verified: 'yes' } };
      if (mode === 'hang') {
        await new Promise((r) => setTimeout(r, 1_500));
        return reply.send({ data: { address, verified: false } });
      }
      return { data: { address, verified: true } };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const clock = { ms: 0 };
    const errors: string[] = [];
    const kyc = new CachedLookup({
      name: 'kyc',
      fetch: fetchKyc(url),
      refreshIntervalMs: 1_000,
      timeoutMs: 300,
      retryAfterFailureMs: 100,
      clock: () => clock.ms,
      onError: (_k, e) => errors.push(e.message),
    });
    try {
      expect(await kyc.get(BOB)).toMatchObject({ value: true, stale: false });
      mode = 'malformed';
      clock.ms += 1_000;
      expect(await kyc.get(BOB)).toMatchObject({ value: true, stale: true });
      expect(errors.at(-1)).toMatch(/unexpected answer/);
      // Within the back-off the service is not asked at all.
      expect(kyc.down).toBe(true);
      mode = 'hang';
      clock.ms += 100;
      const started = Date.now();
      expect(await kyc.get(BOB)).toMatchObject({ value: true, stale: true });
      expect(Date.now() - started).toBeLessThan(1_200);
      expect(errors).toHaveLength(2);
    } finally {
      await app.close();
    }
  });
});

describe('a refusal of one key does not mark the service down for everyone', () => {
  const DAVE = userAddress(0xda7e);
  const ERIN = userAddress(0xe1);
  const FRANK = userAddress(0xf4a);
  let db: TestDatabase;
  let kyc: FastifyInstance;
  let did: Awaited<ReturnType<typeof startFakeDidSupport>>;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const clock = { ms: 1_800_000_000_000 };

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    // KYC refuses Dave's address (404), fails on Frank's (500), and verifies everyone else.
    kyc = Fastify({ loggerInstance: createLogger({ level: 'silent' }) as FastifyBaseLogger });
    kyc.get('/kyc/:address', async (request, reply) => {
      const address = (request.params as { address: string }).address;
      if (address === DAVE) return reply.code(404).send({ code: 404, message: 'unknown' });
      if (address === FRANK) return reply.code(500).send({ code: 500, message: 'broken' });
      return { data: { address, verified: true } };
    });
    await kyc.listen({ port: 0, host: '127.0.0.1' });
    // A plain fastify app, like the devnet stand-in: a path parameter over 100 characters is refused (404).
    did = await startFakeDidSupport(new Map([[BOB, ['bob.example']]]));
    points = await startTestPoints(
      db,
      pointTestConfig({
        relayAdminUrl: `http://127.0.0.1:${(kyc.server.address() as { port: number }).port}`,
        didSupportUrl: did.url,
      }),
      { clockMs: () => clock.ms, nowSeconds: () => Math.floor(clock.ms / 1000), consume: false },
    );
  });
  afterAll(async () => {
    await points?.close();
    await kyc?.close();
    await did?.close();
    await db?.drop();
  });

  it('answers 404 for a DID name the service refuses, and the next name is still asked', async () => {
    const long = `${'a'.repeat(101)}.example`;
    expect(await points.get(`/user-point?did=${long}`)).toMatchObject({
      status: 404,
      body: { code: POINTS_ERRORS.DID_NOT_FOUND.code },
    });
    // Never resolved before: answered only if the service is asked, i.e. not in a back-off.
    expect(await points.get('/user-point?did=bob.example')).toMatchObject({
      status: 200,
      body: { subject: { address: BOB } },
    });
  });

  it("scores an unknown user at KYC basis 5 right after another user's address was refused", async () => {
    expect((await points.get(`/user-point?address=${DAVE}`)).body).toMatchObject({
      score_tenths: 20,
      kyc: { known: false, stale: true },
    });
    expect((await points.get(`/user-point?address=${ERIN}`)).body).toMatchObject({
      score_tenths: 50,
      kyc: { verified: true, known: true, stale: false },
    });
    const metrics = await (await fetch(`${points.base}/metrics`)).text();
    expect(metrics).toMatch(/points_lookups_total\{service="kyc",outcome="refused"\} 1/);
    // A server error is about the service: it is not asked again for the back-off (last known values, stale).
    await points.get(`/user-point?address=${FRANK}`);
    expect((await points.get(`/user-point?address=${CAROL}`)).body).toMatchObject({
      score_tenths: 20,
      kyc: { known: false, stale: true },
    });
  });
});

describe('a DID name resolved from a stale answer', () => {
  const ALICE = userAddress(0xa11ce);
  let db: TestDatabase;
  let did: Awaited<ReturnType<typeof startFakeDidSupport>>;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const clock = { ms: 1_800_000_000_000 };

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    did = await startFakeDidSupport(new Map([[ALICE, ['shared.example']]]));
    points = await startTestPoints(
      db,
      pointTestConfig({ didSupportUrl: did.url, refreshInterval: REFRESH_MS }),
      { clockMs: () => clock.ms, nowSeconds: () => Math.floor(clock.ms / 1000), consume: false },
    );
  });
  afterAll(async () => {
    await points?.close();
    await did?.close();
    await db?.drop();
  });

  it('says so: the answer for did= is flagged stale when its owner came from the last known answer', async () => {
    expect((await points.get('/user-point?did=shared.example')).body).toMatchObject({
      subject: { address: ALICE },
      did: { stale: false },
    });
    // Alice's names are asked again later (a query by her address), so they are fresher than the name's owner.
    clock.ms += REFRESH_MS;
    expect((await points.get(`/user-point?address=${ALICE}`)).body.did.stale).toBe(false);
    // The DID support service goes down once the name's owner is due again: that owner is the last known one
    // (the name may have moved to someone else since), and the answer must say it is not current.
    await did.close();
    clock.ms += 1;
    const answer = await points.get('/user-point?did=shared.example');
    expect(answer.status).toBe(200);
    expect(answer.body.subject).toMatchObject({
      address: ALICE,
      resolved_from_did: { name: 'shared.example', stale: true, fetched_at: 1_800_000_000 },
    });
    expect(answer.body.did.stale).toBe(true);
    // By address, nothing was resolved, and Alice's own names are still current.
    expect((await points.get(`/user-point?address=${ALICE}`)).body).toMatchObject({
      subject: { resolved_from_did: null },
      did: { stale: false },
    });
  });
});

describe('a DID support service that answers with a code other than 0', () => {
  let server: FastifyInstance;
  let url: string;
  const answers = new Map<string, unknown>();
  beforeAll(async () => {
    server = Fastify();
    server.get('/find/owner/:address', async () => answers.get('owner'));
    server.get('/find/name/:name', async () => answers.get('name'));
    url = await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => server?.close());

  it('has failed (the last known value is kept, flagged stale), not answered that the address owns no DID', async () => {
    const signal = new AbortController().signal;
    answers.set('owner', { code: 500, message: 'database down', data: [] });
    answers.set('name', { code: 500, message: 'database down', data: [] });
    await expect(fetchDidNames(url)(BOB, signal)).rejects.toThrow(/unexpected answer/);
    await expect(fetchDidOwner(url)('bob.example', signal)).rejects.toThrow(/unexpected answer/);
    // Without a code (DESIGN §5) or with code 0: an answer.
    answers.set('owner', { data: [{ name: 'bob.example' }] });
    expect(await fetchDidNames(url)(BOB, signal)).toEqual(['bob.example']);
    answers.set('owner', { code: 0, data: [] });
    expect(await fetchDidNames(url)(BOB, signal)).toEqual([]);
    answers.set('name', { code: 0, data: [{ owner: BOB }] });
    expect(await fetchDidOwner(url)('bob.example', signal)).toBe(BOB.toLowerCase());
  });
});
