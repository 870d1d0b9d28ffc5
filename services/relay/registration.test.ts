import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { createLogger } from '../../shared/logging/logger.js';
import { startCallbackRecorder } from '../../test/support/callback-recorder.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { startChainClient } from '../chain-client/index.js';
import { chainClientMigrations } from '../chain-client/migrations.js';
import { relayMigrationSets } from './migrations.js';
import { relayTestConfig, startTestRelay } from './test-harness.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;

/**
 * register_relay as the relay server uses it: the original chain client pushed each swap event to the
 * registered relay_server_url itself. Here the relay hands the URLs to the chain client's /support/register,
 * again every reregisterSeconds (a chain client may forget registrations when it restarts).
 */
describe('register_relay: the relay server gets the swap events', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Relay | undefined;
  const stops: Array<() => Promise<void>> = [];

  const relayServerUrls = (recorder: Awaited<ReturnType<typeof startCallbackRecorder>>) => ({
    on_transfer_out: recorder.url('/relay/chain_client/on_transfer_out'),
    on_transfer_in: recorder.url('/relay/chain_client/on_transfer_in'),
    on_confirm_out: recorder.url('/relay/chain_client/on_confirm_out'),
    on_confirm_in: recorder.url('/relay/chain_client/on_confirm_in'),
    on_refunded_out: recorder.url('/relay/chain_client/on_refunded_out'),
    on_refunded_in: recorder.url('/relay/chain_client/on_refunded_in'),
  });

  /** A chain client's /support/register that answers as told and records what it was given. */
  const fakeChainClient = async (answer: (path: string) => { status: number; body: string }) => {
    const received: unknown[] = [];
    const server = http.createServer((request, response) => {
      let data = '';
      request.on('data', (chunk) => (data += chunk));
      request.on('end', () => {
        received.push({ path: request.url, body: JSON.parse(data) });
        const { status, body } = answer(request.url ?? '');
        response.writeHead(status, { 'content-type': 'application/json' }).end(body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stops.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/support/register`, received };
  };

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase([...relayMigrationSets, chainClientMigrations]),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
  });
  afterEach(async () => {
    await relay?.close();
    relay = undefined;
    for (const stop of stops.splice(0)) await stop();
  });
  afterAll(async () => {
    await devnet?.stop();
    await db?.drop();
  });

  it('our chain client delivers a lock to the relay server that registered at the relay', async () => {
    const client = await startChainClient(
      { db: db.pool, log: createLogger({ level: 'silent' }), metrics: new Registry() },
      {
        port: 0,
        rpc: chain.rpcUrl,
        systemChainId: '9006',
        contractAddr: chain.contracts.otmoic,
        confirmations: 0,
        startBlock: await chain.provider.getBlockNumber(),
        pollIntervalMs: 100,
        deliveryAttempts: 10,
        keepSettledDays: 7,
      },
    );
    stops.push(() => client.stop());
    const recorder = await startCallbackRecorder();
    stops.push(() => recorder.close());
    relay = await startTestRelay(
      db,
      relayTestConfig({ chainClientRegisterUrl: `http://127.0.0.1:${client.port}/support/register` }),
    );

    const registered = await relay.post('/register_relay', { relay_server_url: relayServerUrls(recorder) });
    expect(registered).toEqual({ status: 200, body: { code: 200, message: 'register succeed' } });
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    await chain.mine(2);
    await waitFor(
      async () =>
        recorder.at('/relay/chain_client/on_transfer_out').length > 0 &&
        recorder.at('/relay/chain_client/on_transfer_in').length > 0,
      'the lock delivered to the relay server',
    );
    const [out] = recorder.at('/relay/chain_client/on_transfer_out');
    expect(out.type).toBe('TransferOut');
    expect(out.event_parse.transfer_id).toBe(locked.out.transferId.toLowerCase());
    expect(recorder.at('/relay/chain_client/on_transfer_in')[0].event_parse.transfer_id).toBe(
      locked.in.transferId.toLowerCase(),
    );
    // Registering again (the relay server does so periodically) is success, and delivers nothing twice.
    expect(
      (await relay.post('/register_relay', { relay_server_url: relayServerUrls(recorder) })).status,
    ).toBe(200);

    // The relay server moves one URL: the new set replaces the old one at the chain client (the old URL gets
    // no more events, the URLs in both sets no event twice).
    const moved = { ...relayServerUrls(recorder), on_transfer_out: recorder.url('/v2/on_transfer_out') };
    expect((await relay.post('/register_relay', { relay_server_url: moved })).body).toEqual({
      code: 200,
      message: 'register succeed',
    });
    const { rows } = await db.pool.query<{ callback: Record<string, string> }>(
      'SELECT callback FROM chain_client_registrations WHERE instance = $1',
      ['9006'],
    );
    expect(rows.map((r) => r.callback)).toEqual([moved]);
    const before = recorder.posts.length;
    const second = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    await chain.mine(2);
    await waitFor(
      async () => recorder.at('/v2/on_transfer_out').length > 0 && recorder.posts.length >= before + 2,
      'the second lock delivered to the moved URL',
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const later = recorder.posts.slice(before);
    expect(later.map((p) => [p.path, p.body.event_parse.transfer_id])).toEqual([
      ['/v2/on_transfer_out', second.out.transferId.toLowerCase()],
      ['/relay/chain_client/on_transfer_in', second.in.transferId.toLowerCase()],
    ]);
  });

  it('answers 502 / 30225 when the chain client does not take the URLs, stores them and hands them over later, replacing the set it held', async () => {
    await db.pool.query('DELETE FROM relay_registrations');
    let up = true;
    // Its first unregister fails: the removal is tried again at the next hand-over.
    let unregisterFailures = 1;
    const fake = await fakeChainClient((path) =>
      !up || (path === '/support/unregister' && unregisterFailures-- > 0)
        ? { status: 503, body: 'down' }
        : { status: 200, body: '{"code":200,"message":"register succeed"}' },
    );
    const recorder = await startCallbackRecorder();
    stops.push(() => recorder.close());
    relay = await startTestRelay(
      db,
      relayTestConfig({ chainClientRegisterUrl: fake.url, reregisterSeconds: 1 }),
    );
    const first = relayServerUrls(recorder);
    expect((await relay.post('/register_relay', { relay_server_url: first })).status).toBe(200);

    // The chain client is down when the relay server moves a URL.
    up = false;
    const moved = { ...first, on_transfer_out: recorder.url('/v2/on_transfer_out') };
    const refused = await relay.post('/register_relay', { relay_server_url: moved });
    expect(refused.status).toBe(502);
    expect(refused.body).toEqual({
      code: 30225,
      message: expect.stringMatching(
        /^the chain client \(relay\.chainClientRegisterUrl\) did not take the callback URLs \(.*\); they are stored and handed to it again every 1 s; retry$/,
      ),
    });
    // It comes back: the stored URLs are handed over without the relay server asking again, and the set it
    // held from before is removed.
    up = true;
    const unregisters = () => fake.received.filter((r: any) => r.path === '/support/unregister');
    await waitFor(async () => unregisters().length >= 2, 'the old set removed, the second time', 5_000);
    expect(unregisters().map((r: any) => r.body.callback.on_transfer_out)).toEqual([
      first.on_transfer_out,
      first.on_transfer_out,
    ]);
    const calls = fake.received.map((r: any) => [r.path, r.body.callback.on_transfer_out]);
    expect(calls.slice(-2)).toEqual([
      ['/support/register', moved.on_transfer_out],
      ['/support/unregister', first.on_transfer_out],
    ]);
    // Later hand-overs of the same set remove nothing more.
    const count = fake.received.length;
    await waitFor(async () => fake.received.length >= count + 2, 'two more hand-overs', 5_000);
    expect(fake.received.slice(count).every((r: any) => r.path === '/support/register')).toBe(true);
    const metrics = await relay.metrics.metrics();
    expect(metrics).toMatch(/relay_registrations_total\{outcome="failed"\} [1-9]/);
    expect(metrics).toMatch(/relay_registrations_total\{outcome="registered"\} [1-9]/);
  });

  it('a refusal never quotes the chain client URL in the answer (it may carry a token); logs name its origin only', async () => {
    const TOKEN = 's3cr3t-t0ken-value';
    // A chain client (or a proxy before it) that fails without a {code} body: the case whose error quoted the URL.
    const fake = await fakeChainClient(() => ({ status: 500, body: 'boom' }));
    const registerUrl = `${fake.url}?token=${TOKEN}`;
    const { port } = new URL(fake.url);
    const lines: string[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    relay = await startTestRelay(db, relayTestConfig({ chainClientRegisterUrl: registerUrl }), log);
    const answer = await relay.post('/register_relay', {
      relay_server_url: { on_transfer_out: 'http://example.com/cb' },
    });
    expect(answer.status).toBe(502);
    expect(answer.body).toEqual({
      code: 30225,
      message:
        'the chain client (relay.chainClientRegisterUrl) did not take the callback URLs (HTTP 500 without a {code} body); they are stored and handed to it again every 60 s; retry',
    });
    expect(answer.body.message).not.toContain(`127.0.0.1:${port}`);
    const refusal = lines.find((l) => l.includes('did not take the callback URLs'));
    expect(JSON.parse(refusal!).chainClient).toBe(`http://127.0.0.1:${port}`);
    for (const line of lines) {
      expect(line).not.toContain(TOKEN);
      expect(line).not.toContain('/support/register');
    }
  });

  it('"already registered" from the chain client is success', async () => {
    const fake = await fakeChainClient(() => ({
      status: 200,
      body: '{"code":30209,"message":"callbackUrl is already registered"}',
    }));
    const recorder = await startCallbackRecorder();
    stops.push(() => recorder.close());
    relay = await startTestRelay(db, relayTestConfig({ chainClientRegisterUrl: fake.url }));
    expect(
      (await relay.post('/register_relay', { relay_server_url: relayServerUrls(recorder) })).body,
    ).toEqual({ code: 200, message: 'register succeed' });
    expect(await relay.metrics.metrics()).toMatch(
      /relay_registrations_total\{outcome="already_registered"\} [1-9]/,
    );
  });
});
