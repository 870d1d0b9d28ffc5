import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Contract, ContractFactory } from 'ethers';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileContracts } from '../../contracts/compile.js';
import { callAt, transferOutArgs, hashlockOf } from '../../contracts/otmoic-test-kit.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { runSwap, type ExecutedSwap, type SwapScenario } from '../../shared/devnet/swap-scenarios.js';
import { createLogger } from '../../shared/logging/logger.js';
import { OTMOIC_SWAP_ABI } from '../../shared/otmoic/abi.js';
import type { ChainClientInstanceConfig } from '../../shared/config/index.js';
import { startCallbackRecorder } from '../../test/support/callback-recorder.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { startRpcProxy } from '../../test/support/rpc-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { Deliverer } from './deliverer.js';
import { startChainClient } from './index.js';
import { chainClientMigrations } from './migrations.js';
import { ChainClientStore } from './store.js';

const SRC_SYSTEM = '9006';
const DST_SYSTEM = '614';

describe('our EVM chain client on the devnet', () => {
  let devnet: Devnet;
  let db: TestDatabase;
  let recorder: Awaited<ReturnType<typeof startCallbackRecorder>>;
  const clients = new Map<string, { port: number; stop(): Promise<void> }>();
  const metrics = new Registry();
  const log = createLogger({ level: 'silent' });
  const swaps: ExecutedSwap[] = [];
  let src: DevnetChain;
  let dst: DevnetChain;

  const configFor = (chain: DevnetChain, systemChainId: string): ChainClientInstanceConfig => ({
    port: 0,
    rpc: chain.rpcUrl,
    systemChainId,
    contractAddr: chain.contracts.otmoic,
    reputationContractAddr: chain.contracts.reputation,
    confirmations: 0,
    startBlock: 0,
    pollIntervalMs: 100,
    deliveryAttempts: 10,
    historyAttempts: 10,
    keepSettledDays: 7,
    rpcTimeoutMs: 10_000,
    allowIps: [],
  });
  const start = async (chain: DevnetChain, system: string) =>
    clients.set(system, await startChainClient({ db: db.pool, log, metrics }, configFor(chain, system)));
  const support = async (system: string, path: string, body: unknown) => {
    const response = await fetch(`http://127.0.0.1:${clients.get(system)!.port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { code: number; message: string } };
  };
  const perEventCallback = (system: string) => ({
    on_transfer_out: recorder.url(`/${system}/out`),
    on_transfer_in: recorder.url(`/${system}/in`),
    on_confirm_out: recorder.url(`/${system}/confirm_out`),
    on_confirm_in: recorder.url(`/${system}/confirm_in`),
    on_refunded_out: recorder.url(`/${system}/refund_out`),
    on_refunded_in: recorder.url(`/${system}/refund_in`),
    on_height_update: recorder.url(`/${system}/height`),
  });
  /** Every event delivered to one system chain's per-event callbacks, in arrival order. */
  const perEvent = (system: string) =>
    recorder.posts
      .filter(
        (p) => p.path.startsWith(`/${system}/`) && !p.path.endsWith('/height') && !p.path.endsWith('/merged'),
      )
      .map((p) => p.body);
  const merged = (system: string) => recorder.at(`/${system}/merged`);
  const mergedEvents = (system: string) => merged(system).flatMap((b) => b.data);
  const maxHeight = (system: string) => Math.max(-1, ...merged(system).map((b) => b.height));

  /** Mines to the next chunk boundary and waits until both chains reported it. */
  async function settle() {
    for (const [chain, system] of [
      [src, SRC_SYSTEM],
      [dst, DST_SYSTEM],
    ] as const) {
      const head = await chain.provider.getBlockNumber();
      await chain.mine(5 - (head % 5) + 5);
      const target = Math.floor((await chain.provider.getBlockNumber()) / 5) * 5;
      await waitFor(() => maxHeight(system) >= target, `${system} at height ${target}`, 20_000);
    }
  }

  beforeAll(async () => {
    [devnet, db, recorder] = await Promise.all([
      startDevnet({ chains: [{ chainId: 97 }, { chainId: 11155420 }] }),
      createTestDatabase([chainClientMigrations]),
      startCallbackRecorder(),
    ]);
    src = devnet.chain(97);
    dst = devnet.chain(11155420);
    await start(src, SRC_SYSTEM);
    await start(dst, DST_SYSTEM);
    for (const system of [SRC_SYSTEM, DST_SYSTEM]) {
      expect(
        (await support(system, '/support/register', { callback: perEventCallback(system) })).body,
      ).toEqual({
        code: 200,
        message: 'register succeed',
      });
      const mergedCallback = { on_height_update: recorder.url(`/${system}/merged`) };
      expect(
        (await support(system, '/support/register', { callback: mergedCallback, merge: true })).body.code,
      ).toBe(200);
    }
    const scenarios: SwapScenario[] = [
      'honest',
      'short_amount',
      'wrong_receiver',
      'confirm_in_without_confirm_out',
    ];
    for (const scenario of scenarios) {
      swaps.push(await runSwap(scenario, { src, dst, srcSystemChainId: 9006, dstSystemChainId: 614 }));
    }
    await settle();
  }, 120_000);

  afterAll(async () => {
    for (const client of clients.values()) await client.stop();
    await recorder?.close();
    await devnet?.stop();
    await db?.drop();
  });

  it('delivers the honest swap and the three cheats as the exact event sequence per chain', () => {
    const expectedSrc = swaps.flatMap((s) =>
      s.steps
        .filter((step) => step.chainId === 97)
        .map((step) => ({ type: step.step === 'transferOut' ? 'TransferOut' : 'ConfirmOut', swap: s, step })),
    );
    const expectedDst = swaps.flatMap((s) =>
      s.steps
        .filter((step) => step.chainId === 11155420)
        .map((step) => ({ type: step.step === 'transferIn' ? 'TransferIn' : 'ConfirmIn', swap: s, step })),
    );
    for (const [system, expected] of [
      [SRC_SYSTEM, expectedSrc],
      [DST_SYSTEM, expectedDst],
    ] as const) {
      const got = perEvent(system);
      expect(got.map((b) => b.type)).toEqual(expected.map((e) => e.type));
      got.forEach((body, i) => {
        const { swap, step } = expected[i]!;
        expect(Object.keys(body)).toEqual([
          'event',
          'tx',
          'eventParse',
          'block',
          'type',
          'transfer_info',
          'event_raw',
          'event_parse',
          'chain_id',
        ]);
        expect(body.chain_id).toBe(system);
        expect(body.event.transactionHash).toBe(step.txHash);
        expect(Number(body.event.blockNumber)).toBe(step.blockNumber);
        expect(Number(body.block.timestamp)).toBe(step.timestamp);
        expect(body.tx.from.toLowerCase()).toBe(step.from.toLowerCase());
        expect(JSON.parse(body.event_raw)).toEqual(body.event);
        // As the original's watcher: the receipt as JSON text.
        expect(JSON.parse(body.transfer_info)).toEqual(body.tx);
        expect(body.eventParse).toEqual(body.event_parse);
        const side = step.chainId === 97 ? swap.out : swap.in;
        expect(body.event_parse.transfer_id).toBe(side.transferId.toLowerCase());
      });
    }
  });

  it('shows each cheat in the event_parse fields', () => {
    const outOf = (s: ExecutedSwap) =>
      perEvent(SRC_SYSTEM).find((b) => b.type === 'TransferOut' && b.event_parse.bid_id === s.bidId)!;
    const [honest, short, wrong, cheat] = swaps;
    expect(outOf(honest!).event_parse.amount).toBe(honest!.agreed.amountOut.toString());
    expect(outOf(honest!).event_parse.receiver).toBe(honest!.agreed.lpReceiverOnSrc);
    expect(outOf(short!).event_parse.amount).toBe(((short!.agreed.amountOut * 80n) / 100n).toString());
    expect(outOf(wrong!).event_parse.receiver).toBe(wrong!.out.sender);
    expect(outOf(wrong!).event_parse.hash_lock).toBe(wrong!.hashlock);
    // The cheat: no ConfirmOut on the source chain; ConfirmIn sent by the user, not the LP, with the preimage.
    expect(
      perEvent(SRC_SYSTEM).some(
        (b) => b.type === 'ConfirmOut' && b.event_parse.transfer_id === cheat!.out.transferId,
      ),
    ).toBe(false);
    const confirmIn = perEvent(DST_SYSTEM).find(
      (b) => b.type === 'ConfirmIn' && b.event_parse.transfer_id === cheat!.in.transferId,
    )!;
    expect(confirmIn.tx.from.toLowerCase()).toBe(cheat!.out.sender.toLowerCase());
    expect(confirmIn.event_parse.preimage).toBe(cheat!.preimage);
    expect(Number(confirmIn.block.timestamp)).toBe(cheat!.times.T + 3 * cheat!.times.E + cheat!.times.Tol);
  });

  it('merges events into update_height chunks: every height once, multiples of 5, in order, same events', () => {
    for (const system of [SRC_SYSTEM, DST_SYSTEM]) {
      const heights = merged(system).map((b) => b.height);
      // A registration receives chunks from when it registered; from then on every chunk comes once, in
      // order, empty ones too (heartbeats).
      expect(heights[0]! % 5).toBe(0);
      heights.forEach((h, i) => expect(h).toBe(heights[0]! + i * 5));
      for (const body of merged(system)) {
        expect(Object.keys(body)).toEqual(['type', 'height', 'data']);
        for (const e of body.data) expect(Number(e.event.blockNumber)).toBeLessThanOrEqual(body.height);
      }
      expect(mergedEvents(system).map((e) => e.event.transactionHash)).toEqual(
        perEvent(system).map((e) => e.event.transactionHash),
      );
    }
  });

  it('replays a block range through history with the same events', async () => {
    const first = Number(perEvent(SRC_SYSTEM)[0]!.event.blockNumber);
    const last = maxHeight(SRC_SYSTEM);
    const reply = await support(SRC_SYSTEM, '/support/history', {
      start: first,
      end: last,
      callback: { on_height_update: recorder.url('/history') },
      merge: true,
    });
    expect(reply.body).toEqual({ code: 200, message: 'history task started' });
    await waitFor(() => recorder.at('/history').some((b) => b.height === last), 'history complete', 20_000);
    const replayed = recorder.at('/history').flatMap((b) => b.data);
    expect(replayed).toEqual(mergedEvents(SRC_SYSTEM).filter((e) => Number(e.event.blockNumber) >= first));
  });

  it('a history request sent again (its answer was lost) is the same task: every chunk once', async () => {
    const first = Number(perEvent(SRC_SYSTEM)[0]!.event.blockNumber);
    const last = maxHeight(SRC_SYSTEM);
    const request = {
      start: first,
      end: last,
      callback: { on_height_update: recorder.url('/history-again') },
      merge: true,
    };
    const started = { code: 200, message: 'history task started' };
    expect((await support(SRC_SYSTEM, '/support/history', request)).body).toEqual(started);
    expect((await support(SRC_SYSTEM, '/support/history', request)).body).toEqual(started);
    const heights = () => recorder.at('/history-again').map((b) => b.height);
    await waitFor(() => heights().includes(last), 'history complete', 20_000);
    // Room for a second task's posts, had one started.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(heights()).toEqual([...new Set(heights())]);
    expect(recorder.at('/history-again').flatMap((b) => b.data)).toEqual(
      mergedEvents(SRC_SYSTEM).filter((e) => Number(e.event.blockNumber) >= first),
    );
  });

  it('a history task outlives an RPC error and a restart: every chunk once, in order', async () => {
    const proxy = await startRpcProxy(src.rpcUrl, '/rpc');
    // The node answers the task's second range with garbage once.
    let getLogs = 0;
    proxy.rewrite = (method) => (method === 'eth_getLogs' && ++getLogs === 2 ? 'not logs' : undefined);
    const system = '778';
    // Enough blocks for several 100-block ranges.
    const head = await src.provider.getBlockNumber();
    if (head < 330) await src.mine(330 - head);
    const last = Math.floor((await src.provider.getBlockNumber()) / 5) * 5;
    const end = Math.min(last, 320);
    const heightsOf = (path: string) => recorder.at(path).map((b) => b.height);
    const everyChunk = Array.from({ length: Math.floor(end / 5) }, (_, i) => (i + 1) * 5);
    const config = { ...configFor(src, system), rpc: proxy.url, startBlock: last };
    let client = await startChainClient({ db: db.pool, log, metrics }, config);
    const store = new ChainClientStore(db.pool, system);
    try {
      const reply = await fetch(`http://127.0.0.1:${client.port}/support/history`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          start: 1,
          end,
          callback: { on_height_update: recorder.url('/778/h') },
          merge: true,
        }),
      });
      expect(await reply.json()).toEqual({ code: 200, message: 'history task started' });
      await waitFor(() => heightsOf('/778/h').includes(end), 'the history task done', 20_000);
      expect(getLogs).toBeGreaterThan(2);
      expect(heightsOf('/778/h')).toEqual(everyChunk);
      expect(await store.historyTasks()).toEqual([]);

      // A task stored while no instance runs (a restart in the middle of one) is taken up by the next one.
      await client.stop();
      await store.addHistoryTask(
        {
          lane: 'history:restart-test',
          kind: 'swap',
          callback: { on_height_update: recorder.url('/778/restarted') },
          merge: true,
          start: 101,
          end,
        },
        100,
      );
      client = await startChainClient({ db: db.pool, log, metrics }, config);
      await waitFor(() => heightsOf('/778/restarted').includes(end), 'the stored task done', 20_000);
      expect(heightsOf('/778/restarted')).toEqual(everyChunk.filter((h) => h > 100));
    } finally {
      await client.stop();
      await proxy.close();
    }
  });

  it('does not deliver an event with the same signature from a foreign contract', async () => {
    const compiled = (await compileContracts()).Otmoic;
    const foreign = await new ContractFactory(compiled.abi, compiled.bytecode, src.wallet(0)).deploy();
    await foreign.waitForDeployment();
    const foreignAddress = (await foreign.getAddress()).toLowerCase();
    const now = (await src.latestTimestamp()) + 5;
    const side = {
      sender: src.accounts[4]!.address,
      receiver: src.accounts[5]!.address,
      token: '0x0000000000000000000000000000000000000000',
      tokenAmount: 1000n,
      ethAmount: 0n,
      hashlock: hashlockOf('0x' + '07'.repeat(32)),
      agreementReachedTime: now,
      expectedSingleStepTime: 60,
      tolerantSingleStepTime: 60,
      earliestRefundTime: now + 1000,
    };
    const attempt = await callAt(
      src,
      now + 1,
      new Contract(foreignAddress, OTMOIC_SWAP_ABI as unknown as string[], src.wallet(4)),
      'transferOut',
      transferOutArgs(side, {
        dstChainId: 614,
        dstAddress: 1n,
        bidId: '0x' + '09'.repeat(32),
        tokenDst: 0n,
        amountDst: 1n,
        nativeAmountDst: 0n,
        requestor: 'x',
        lpId: 'y',
        userSign: '',
        lpSign: '',
      }),
      1000n,
    );
    expect(attempt.ok).toBe(true);
    await settle();
    const all = [...perEvent(SRC_SYSTEM), ...mergedEvents(SRC_SYSTEM)];
    expect(all.some((b) => b.event.address.toLowerCase() === foreignAddress)).toBe(false);
    expect(all.some((b) => b.event_parse.bid_id === '0x' + '09'.repeat(32))).toBe(false);
  });

  it('resumes after a restart with no gap and no duplicate, registrations kept', async () => {
    await clients.get(SRC_SYSTEM)!.stop();
    const before = perEvent(SRC_SYSTEM).length;
    const whileDown = await runSwap('honest', { src, dst, srcSystemChainId: 9006, dstSystemChainId: 614 });
    await src.mine(12);
    await start(src, SRC_SYSTEM); // a new instance: registrations and progress come from the database
    await settle();
    const after = perEvent(SRC_SYSTEM).slice(before);
    expect(after.map((b) => `${b.type}:${b.event.transactionHash}`)).toEqual(
      whileDown.steps
        .filter((s) => s.chainId === 97)
        .map((s) => `${s.step === 'transferOut' ? 'TransferOut' : 'ConfirmOut'}:${s.txHash}`),
    );
    const heights = merged(SRC_SYSTEM).map((b) => b.height);
    heights.forEach((h, i) => expect(h).toBe(heights[0]! + i * 5));
  });

  it('retries a failing receiver with back-off and keeps its order', async () => {
    const flaky = await startCallbackRecorder({ failFirst: () => true }); // every body fails once
    try {
      const reply = await support(DST_SYSTEM, '/support/register', {
        callback: { on_height_update: flaky.url('/flaky') },
        merge: true,
      });
      expect(reply.body.code).toBe(200);
      await settle();
      const target = maxHeight(DST_SYSTEM);
      await waitFor(
        () => flaky.at('/flaky').some((b) => b.height === target),
        'flaky receiver caught up',
        30_000,
      );
      const heights = flaky.at('/flaky').map((b) => b.height);
      // A new registration starts at the current height; from there every chunk arrives once, in order.
      heights.forEach((h, i) => expect(h).toBe(heights[0] + i * 5));
      // Each of those bodies was refused once, then delivered on its second attempt (the receiver records a
      // post a moment before the chain client marks it delivered).
      await waitFor(
        async () => {
          const { rows } = await db.pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM chain_client_deliveries WHERE url = $1 AND attempts >= 2 AND status = 'delivered'`,
            [flaky.url('/flaky')],
          );
          return Number(rows[0]!.n) >= heights.length;
        },
        'second-attempt deliveries recorded',
        5_000,
      );
    } finally {
      await flaky.close();
    }
  });

  it('a receiver that hangs holds up its own lane only; a dead one is retried 1 s, 2 s, … apart', async () => {
    // Accepts connections, never answers: each post to it waits for the 10 s timeout.
    const hanging = http.createServer(() => undefined);
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hang`;
    const deadUrl = 'http://127.0.0.1:9/dead';
    // Each failed attempt at the dead receiver as the database saw it: when it failed, and the next attempt it
    // set. The schedule is read from these, not from when the test happens to look (late on a loaded machine).
    await db.pool.query(`
      CREATE TABLE dead_attempts (attempts int, at timestamptz, next_attempt_at timestamptz);
      CREATE FUNCTION record_dead_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO dead_attempts VALUES (NEW.attempts, now(), NEW.next_attempt_at); RETURN NEW; END $$;
      CREATE TRIGGER dead_attempts AFTER UPDATE ON chain_client_deliveries FOR EACH ROW
        WHEN (NEW.url = '${deadUrl}') EXECUTE FUNCTION record_dead_attempt();`);
    try {
      for (const url of [hangingUrl, deadUrl])
        expect(
          (
            await support(DST_SYSTEM, '/support/register', {
              callback: { on_height_update: url },
              merge: true,
            })
          ).body.code,
        ).toBe(200);
      // Two chunks later, each of the hanging lane's posts takes 10 s: the healthy lanes keep their pace.
      for (let i = 0; i < 2; i++) {
        const head = await dst.provider.getBlockNumber();
        await dst.mine(5 - (head % 5) + 5);
        const target = Math.floor((await dst.provider.getBlockNumber()) / 5) * 5;
        await waitFor(
          () => maxHeight(DST_SYSTEM) >= target,
          `height ${target} while a receiver hangs`,
          3_000,
        );
      }
      // The dead receiver's first post: attempts 1 s apart, then 2 s (the original's schedule; 200 ms, doubling,
      // made four in the first two seconds), none before the time the one before it set.
      const attemptsOfDead = async () =>
        (
          await db.pool.query<{ attempts: number; retryInMs: number; early: boolean }>(
            `SELECT attempts, round(extract(epoch FROM next_attempt_at - at) * 1000)::int AS "retryInMs",
                    at < lag(next_attempt_at) OVER (ORDER BY attempts) AS early
               FROM dead_attempts ORDER BY attempts`,
          )
        ).rows;
      await waitFor(
        async () => (await attemptsOfDead()).length >= 3,
        'three attempts at the dead receiver',
        10_000,
      );
      expect((await attemptsOfDead()).slice(0, 3)).toEqual([
        { attempts: 1, retryInMs: 1_000, early: null },
        { attempts: 2, retryInMs: 2_000, early: false },
        { attempts: 3, retryInMs: 4_000, early: false },
      ]);
    } finally {
      await db.pool.query('DROP FUNCTION record_dead_attempt() CASCADE; DROP TABLE dead_attempts');
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
      await db.pool.query(
        `DELETE FROM chain_client_registrations WHERE callback->>'on_height_update' = ANY($1)`,
        [[hangingUrl, deadUrl]],
      );
      await db.pool.query(`DELETE FROM chain_client_deliveries WHERE url = ANY($1)`, [[hangingUrl, deadUrl]]);
    }
  });

  it('a node that has no receipt yet for a log it gave is asked again: no body goes out with tx null', async () => {
    const proxy = await startRpcProxy(src.rpcUrl, '/rpc');
    let nulls = 3;
    proxy.rewrite = (method) => (method === 'eth_getTransactionReceipt' && nulls-- > 0 ? null : undefined);
    const system = '777';
    const client = await startChainClient(
      { db: db.pool, log, metrics },
      { ...configFor(src, system), rpc: proxy.url, startBlock: await src.provider.getBlockNumber() },
    );
    try {
      const callback = {
        on_transfer_out: recorder.url(`/${system}/out`),
        on_confirm_out: recorder.url(`/${system}/confirm_out`),
      };
      expect(
        await (
          await fetch(`http://127.0.0.1:${client.port}/support/register`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ callback }),
          })
        ).json(),
      ).toEqual({ code: 200, message: 'register succeed' });
      const swap = await runSwap('honest', { src, dst, srcSystemChainId: 9006, dstSystemChainId: 614 });
      await src.mine(10);
      await waitFor(() => recorder.at(`/${system}/confirm_out`).length > 0, 'the swap delivered', 20_000);
      const bodies = [...recorder.at(`/${system}/out`), ...recorder.at(`/${system}/confirm_out`)];
      expect(nulls).toBeLessThan(0);
      expect(bodies.map((b) => b.event.transactionHash)).toEqual(
        swap.steps.filter((s) => s.chainId === 97).map((s) => s.txHash),
      );
      for (const body of bodies) expect(body.tx?.transactionHash).toBe(body.event.transactionHash);
    } finally {
      await client.stop();
      await proxy.close();
    }
  });

  it('does not retry a post the receiver refuses (400): the lane moves on at once', async () => {
    let refusals = 1;
    const received: number[] = [];
    const receiver = http.createServer((request, response) => {
      let data = '';
      request.on('data', (chunk) => (data += chunk));
      request.on('end', () => {
        if (refusals-- > 0) return response.writeHead(400).end('{"code":400,"message":"refused"}');
        received.push(JSON.parse(data).height);
        response.writeHead(200).end('{"code":200}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/refusing`;
    try {
      expect(
        (await support(DST_SYSTEM, '/support/register', { callback: { on_height_update: url }, merge: true }))
          .body.code,
      ).toBe(200);
      await settle();
      // The following chunks came without waiting for retries of the refused one (1 s, 2 s, …).
      await waitFor(() => received.length >= 1, 'the chunk after the refused one', 3_000);
      const { rows } = await db.pool.query<{ status: string; attempts: number; last_error: string }>(
        `SELECT status, attempts, last_error FROM chain_client_deliveries WHERE url = $1 ORDER BY id LIMIT 1`,
        [url],
      );
      expect(rows[0]).toEqual({ status: 'failed', attempts: 1, last_error: 'HTTP 400' });
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await db.pool.query(`DELETE FROM chain_client_registrations WHERE callback->>'on_height_update' = $1`, [
        url,
      ]);
      await db.pool.query(`DELETE FROM chain_client_deliveries WHERE url = $1`, [url]);
    }
  });

  it('removes delivered and given-up posts after keepSettledDays, never a pending one', async () => {
    const instance = 'prune-test';
    await db.pool.query(
      `INSERT INTO chain_client_deliveries (instance, lane, url, body, status, settled_at, next_attempt_at)
       VALUES ($1, 'old', 'http://127.0.0.1:9/x', '{}', 'delivered', now() - interval '8 days', now()),
              ($1, 'old', 'http://127.0.0.1:9/x', '{}', 'failed', now() - interval '8 days', now()),
              ($1, 'recent', 'http://127.0.0.1:9/x', '{}', 'delivered', now() - interval '6 days', now()),
              ($1, 'waiting', 'http://127.0.0.1:9/x', '{}', 'pending', NULL, now() + interval '1 day')`,
      [instance],
    );
    const deliverer = new Deliverer({ pool: db.pool, instance, maxAttempts: 11, keepSettledDays: 7, log });
    deliverer.start();
    const remaining = async () =>
      (
        await db.pool.query<{ lane: string }>(
          'SELECT lane FROM chain_client_deliveries WHERE instance = $1 ORDER BY lane',
          [instance],
        )
      ).rows.map((r) => r.lane);
    try {
      await waitFor(async () => (await remaining()).length === 2, 'the old posts removed', 5_000);
      expect(await remaining()).toEqual(['recent', 'waiting']);
    } finally {
      await deliverer.stop();
      await db.pool.query('DELETE FROM chain_client_deliveries WHERE instance = $1', [instance]);
    }
  });

  it('unregister (ours) removes a registration and the posts still queued for it', async () => {
    const callback = { on_height_update: 'http://127.0.0.1:9/gone' };
    expect((await support(DST_SYSTEM, '/support/register', { callback, merge: true })).body.code).toBe(200);
    await settle();
    const queued = async () =>
      Number(
        (
          await db.pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM chain_client_deliveries WHERE url = $1 AND status = 'pending'`,
            [callback.on_height_update],
          )
        ).rows[0]!.n,
      );
    expect(await queued()).toBeGreaterThan(0);
    // Another merge is another registration: not this one.
    expect((await support(DST_SYSTEM, '/support/unregister', { callback, merge: false })).body).toEqual({
      code: 30209,
      message: 'callbackUrl is not registered',
    });
    expect((await support(DST_SYSTEM, '/support/unregister', { callback, merge: true })).body).toEqual({
      code: 200,
      message: 'unregister succeed',
    });
    expect(await queued()).toBe(0);
    await settle();
    expect(await queued()).toBe(0);
    expect((await support(DST_SYSTEM, '/support/unregister', { callback: null })).status).toBe(400);
  });

  it('the same URLs with another merge are another registration, as in the original', async () => {
    const callback = { on_height_update: recorder.url('/merge-twice') };
    for (const merge of [false, true])
      expect((await support(SRC_SYSTEM, '/support/register', { callback, merge })).body).toEqual({
        code: 200,
        message: 'register succeed',
      });
    expect((await support(SRC_SYSTEM, '/support/register', { callback, merge: true })).body.code).toBe(30209);
    await db.pool.query(`DELETE FROM chain_client_registrations WHERE callback->>'on_height_update' = $1`, [
      callback.on_height_update,
    ]);
  });

  it('answers a repeated registration and bad bodies as the original does', async () => {
    expect(
      (await support(SRC_SYSTEM, '/support/register', { callback: perEventCallback(SRC_SYSTEM) })).body,
    ).toEqual({
      code: 30209,
      message: 'callbackUrl is already registered',
    });
    expect(await support(SRC_SYSTEM, '/support/register', { merge: true })).toEqual({
      status: 400,
      body: { code: 30209, message: 'callbackUrl is a required parameter ' },
    });
    // null is missing too, as in the original.
    expect((await support(SRC_SYSTEM, '/support/register', { callback: null })).body.message).toBe(
      'callbackUrl is a required parameter ',
    );
    expect(
      (await support(SRC_SYSTEM, '/support/history', { start: null, end: 5, callback: {} })).body.message,
    ).toBe('start is a required parameter ');
    expect((await support(SRC_SYSTEM, '/support/history', { end: 5, callback: {} })).body.message).toBe(
      'start is a required parameter ',
    );
    expect((await support(SRC_SYSTEM, '/support/history', { start: 5, callback: {} })).body.message).toBe(
      'endBlock is a required parameter ',
    );
    const badUrl = await support(SRC_SYSTEM, '/support/register', {
      callback: { on_transfer_out: 'ftp://x' },
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.message).toMatch(/http\(s\) URL/);
    const unknownKey = await support(SRC_SYSTEM, '/support/register', {
      callback: { on_everything: 'http://x' },
    });
    expect(unknownKey.body.message).toMatch(/callback keys must be among/);
    const beyond = await support(SRC_SYSTEM, '/support/history', {
      start: 0,
      end: 10_000_000,
      callback: { on_height_update: 'http://x' },
    });
    expect(beyond.body.message).toMatch(/beyond the confirmed head/);
    const reputation = await support(SRC_SYSTEM, '/support/register_reputation', {
      callback: { on_reputation: recorder.url('/rep') },
      merge: false,
    });
    expect(reputation.body).toEqual({ code: 200, message: 'register succeed' });
  });
});
