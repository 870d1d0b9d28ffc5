import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RelayConfig } from '../../shared/config/index.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { startRpcProxy } from '../../test/support/rpc-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, relayTestConfig, startTestRelay } from './test-harness.js';
import { RELAY_ERRORS } from './errors.js';
import { rawAnswer } from '../../test/support/raw-http.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;
const GENUINE = 'genuine-client-key-0123456789';
const FLOODER = 'flooding-client-key-9876543210';
const ACTIONS = ['confirm_out', 'confirm_in', 'refund_out', 'refund_in'] as const;

/**
 * The relay's HTTP surface as an attacker sees it: without the key (or from outside the allow-list) the
 * behalf routes answer 401 / 403 and change nothing, whatever the body; a flood of junk is rate-limited per
 * client and never delays a genuine command inside its window.
 */
describe('relay behalf routes under abuse', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Relay | undefined;

  const start = async (overrides: Partial<RelayConfig>) => {
    relay = await startTestRelay(
      db,
      relayTestConfig({
        rpc: chain.rpcUrl,
        contractAddr: chain.contracts.otmoic,
        acceptChecks: true,
        priv: chain.accounts[12]!.privateKey,
        apiKeys: [GENUINE, FLOODER],
        ...overrides,
      }),
    );
    return relay;
  };
  const counts = async () =>
    (
      await db.pool.query<{ commands: string; messages: string }>(
        'SELECT (SELECT count(*) FROM relay_commands) AS commands, (SELECT count(*) FROM bus_messages) AS messages',
      )
    ).rows[0]!;

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
  });
  afterEach(async () => {
    await relay?.close();
    relay = undefined;
  });
  afterAll(async () => {
    await devnet?.stop();
    await db?.drop();
  });

  it("what Node's parser refuses before any route answers in the relay's vocabulary", async () => {
    const r = await start({});
    const malformed = await rawAnswer(r.port, 'GE(T / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect([malformed.status, malformed.body]).toEqual([
      400,
      { code: RELAY_ERRORS.REQUEST_MALFORMED.code, message: 'the request is not valid HTTP' },
    ]);
    const long = await rawAnswer(
      r.port,
      `GET ${new URL(r.base).pathname}/status?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    );
    expect([long.status, (long.body as { code: number }).code]).toEqual([
      431,
      RELAY_ERRORS.HEADERS_TOO_LARGE.code,
    ]);
  });

  it('restrictReads: /metrics is refused without the key, however its path is spelled', async () => {
    const r = await start({ restrictReads: true });
    const origin = `http://127.0.0.1:${r.port}`;
    expect((await fetch(`${origin}/metrics`)).status).toBe(401);
    // The router decodes the path: a percent-encoded spelling reaches the same route, so the guard must see
    // the route it matched, not the raw URL.
    for (const spelling of ['/%6Detrics', '/%6d%65trics', '/metrics?x=1', '/%6Detrics?x=1']) {
      const answer = await fetch(`${origin}${spelling}`);
      expect(await answer.text()).not.toContain('relay_commands');
      expect(answer.status).toBe(401);
    }
    const keyed = await fetch(`${origin}/%6Detrics`, { headers: { 'x-api-key': GENUINE } });
    expect(keyed.status).toBe(200);
    expect(await keyed.text()).toContain('relay_commands');
  });

  it('answers 401 without a valid key and 403 outside the allow-list, for any body, and changes nothing', async () => {
    const r = await start({ restrictReads: true });
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const valid = behalfBody(locked.in, 'command_transfer_confirm', locked.preimage);
    const before = await counts();
    const keys = fc.oneof(
      fc.constant(undefined),
      fc.string({ maxLength: 40 }),
      fc.constantFrom('', GENUINE.slice(0, -1), `${GENUINE} `, GENUINE.toUpperCase()),
    );
    const bodies = fc.oneof(
      fc.constant(valid),
      fc.json({ maxDepth: 2 }).map((j) => JSON.parse(j) as unknown),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ACTIONS), keys, bodies, async (action, key, body) => {
        const response = await r.app.inject({
          method: 'POST',
          url: `/evm-client-9006/relay/behalf/${action}`,
          payload: JSON.stringify(body),
          headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'x-api-key': key }) },
        });
        expect([response.statusCode, response.json()]).toEqual([
          401,
          { code: 30216, message: 'a valid API key is required in the x-api-key header' },
        ]);
      }),
      { numRuns: 300 },
    );
    for (const path of ['/status', '/behalf/commands?transfer_id=0x' + '00'.repeat(32)])
      expect((await r.get(path)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${r.port}/metrics`)).status).toBe(401);
    expect((await r.get('/status', { 'x-api-key': GENUINE })).status).toBe(200);
    expect(
      (await r.post('/register_relay', { relay_server_url: { on_transfer_out: 'http://x/y' } })).status,
    ).toBe(401);
    expect(await counts()).toEqual(before);
    // The right key works.
    expect((await r.post('/behalf/confirm_in', valid, { 'x-api-key': GENUINE })).status).toBe(200);
    await r.close();
    relay = undefined;

    const outside = await start({ allowIps: ['10.0.0.0/8', '192.168.1.7'] });
    const refused = await outside.post('/behalf/confirm_in', valid, { 'x-api-key': GENUINE });
    expect(refused).toEqual({
      status: 403,
      body: { code: 30217, message: 'this client IP may not use this route' },
    });
    expect((await counts()).commands).toBe(String(Number(before.commands) + 1));
  });

  it("leaves the pure routes out of the budget: a relay server's quotes never spend it, get_system_fee reads the chain once a block", async () => {
    const proxy = await startRpcProxy(chain.rpcUrl, '/v1');
    // Blocks every minute: the fee is read once for the whole loop, however long a loaded machine takes over it
    // (with blocks every 3 s it read twice when the loop took over 3 s).
    const r = await start({ rateLimit: { max: 5, windowMs: 60_000 }, rpc: proxy.url, blockTimeSeconds: 60 });
    const reads: string[] = [];
    const preimage = '0x' + '07'.repeat(32);
    for (let i = 0; i < 20; i++) {
      const hash = await r.post('/get_hashlock', { preimage }, { 'x-api-key': GENUINE });
      expect(hash.status).toBe(200);
      const fee = await r.post('/get_system_fee', {}, { 'x-api-key': GENUINE });
      expect(fee.body).toMatchObject({ code: 200, fee: expect.any(Number) });
      reads.push(String(fee.body.fee));
    }
    // The budget of 5 is untouched: 5 behalf posts are answered (400: junk), the 6th is 429.
    const behalf = [];
    for (let i = 0; i < 6; i++)
      behalf.push(
        (await r.post('/behalf/confirm_in', { transaction_type: 'LOCAL_PADDING' }, { 'x-api-key': GENUINE }))
          .status,
      );
    expect(behalf).toEqual([400, 400, 400, 400, 400, 429]);
    expect(new Set(reads).size).toBe(1);
    expect(proxy.calls['eth_call']).toBe(1);
    await r.close();
    relay = undefined;
    await proxy.close();
  });

  it('rate-limits a flood of junk per client; a genuine command in its window is accepted and confirmed', async () => {
    const r = await start({ rateLimit: { max: 30, windowMs: 60_000 } });
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const { T, E, Tol } = locked.times;
    await chain.setNextBlockTimestamp(T + 3 * E + Tol);
    await chain.mine();
    const before = await counts();
    const junk = Array.from({ length: 300 }, (_, i) =>
      r.post(
        `/behalf/${ACTIONS[i % 4]}`,
        { transaction_type: 'LOCAL_PADDING', junk: i },
        { 'x-api-key': FLOODER },
      ),
    );
    const started = Date.now();
    const genuine = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
      { 'x-api-key': GENUINE },
    );
    const answers = await Promise.all(junk);
    expect(genuine.status).toBe(200);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(300 - 30);
    expect(limited[0]!.body).toEqual({
      code: 30215,
      message: expect.stringMatching(/^too many requests; retry in \d+ s$/),
    });
    expect(answers.every((a) => a.status === 429 || a.status === 400)).toBe(true);
    await waitFor(
      async () =>
        (await r.get(`/behalf/commands/${genuine.body.command_id}`)).body.command.status === 'confirmed',
      'the genuine command confirmed',
      20_000,
    );
    const done = (await r.get(`/behalf/commands/${genuine.body.command_id}`)).body.command;
    const block = (await chain.provider.getBlock(done.block_number))!;
    expect(block.timestamp).toBeLessThanOrEqual(T + 3 * E + 2 * Tol);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(Number((await counts()).commands)).toBe(Number(before.commands) + 1);
  });
});
