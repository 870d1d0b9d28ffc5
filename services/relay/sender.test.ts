import { Writable } from 'node:stream';
import { Contract, ContractFactory, hexlify, randomBytes, toQuantity, Transaction, Wallet } from 'ethers';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileContracts } from '../../contracts/compile.js';
import type { RelayConfig } from '../../shared/config/index.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { startRpcProxy, type RpcProxy } from '../../test/support/rpc-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, relayTestConfig, startTestRelay } from './test-harness.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;
const SECRET = 'k3y-0f-the-rpc-provider-5f1d0c9a7e';

/**
 * The hardened sender on the devnet, through the relay: speed-up at the same nonce, a nonce freed when the
 * node refuses a transaction for good or when a stuck call would revert now (never sped up to pay for a
 * revert), gas caps against a gas-burning receiver, one transaction for many concurrent commands of one
 * transfer, the LP's sender read from the chain, and no RPC secret anywhere.
 */
describe('relay sender on the devnet', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let swap: Contract;
  let relay: Relay | undefined;
  let proxy: RpcProxy | undefined;

  /** A relay whose wallet is devnet account `account` (or the key given in `overrides.priv`). */
  const start = async (account: number, overrides: Partial<RelayConfig> = {}, log?: pino.Logger) => {
    relay = await startTestRelay(
      db,
      relayTestConfig({
        rpc: chain.rpcUrl,
        contractAddr: chain.contracts.otmoic,
        acceptChecks: true,
        priv: chain.accounts[account]!.privateKey,
        ...overrides,
      }),
      log,
    );
    return relay;
  };
  /** A fresh wallet holding only `wei` (sent from devnet account 5). */
  const poorWallet = async (wei: bigint) => {
    const poor = Wallet.createRandom();
    await (await chain.wallet(5).sendTransaction({ to: poor.address, value: wei })).wait();
    return poor;
  };
  const command = async (id: string) => (await relay!.get(`/behalf/commands/${id}`)).body.command;
  const until = async (id: string, status: string, timeoutMs = 20_000) => {
    await waitFor(async () => (await command(id)).status === status, `command ${id} ${status}`, timeoutMs);
    return command(id);
  };
  const statusOf = async (transferId: string) =>
    ((await swap.getFunction('swapStatus')(transferId)) as [bigint])[0];
  const moveTo = async (timestamp: number) => {
    await chain.setNextBlockTimestamp(timestamp);
    await chain.mine();
  };
  const automine = (on: boolean) => chain.provider.send('evm_setAutomine', [on]);
  const lock = (outReceiver?: string) =>
    lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006, outReceiver });
  /**
   * Two fresh locks and their confirm_ins, both accepted: one asking the 200 gwei cap (`attack`: any client may),
   * one at the market (`genuine`).
   */
  const cappedAndGenuine = async (r: Relay) => {
    const a = await lock();
    const b = await lock();
    const attack = await r.post(
      '/behalf/confirm_in',
      behalfBody(a.in, 'command_transfer_confirm', a.preimage, {}, '200000000000'),
    );
    const genuine = await r.post(
      '/behalf/confirm_in',
      behalfBody(b.in, 'command_transfer_confirm', b.preimage),
    );
    expect([attack.status, genuine.status]).toEqual([200, 200]);
    return { a, b, attack, genuine };
  };
  /**
   * A confirm_in of a fresh lock, accepted and sent in its window with automine off: the lock, the command id
   * and its first transaction, in the pool and unmined.
   */
  const sentConfirmIn = async (r: Relay) => {
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const accepted = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    const id = accepted.body.command_id as string;
    await until(id, 'scheduled');
    await automine(false);
    await moveTo(T + 3 * E + Tol);
    const sent = await until(id, 'sent');
    return { locked, id, tx: (await chain.provider.getTransaction(sent.tx_hash))! };
  };

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
    swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
  });
  afterEach(async () => {
    await automine(true);
    await relay?.close();
    relay = undefined;
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(async () => {
    await devnet?.stop();
    await db?.drop();
  });

  it('replaces an unmined transaction at the same nonce with ≥ +10 % fees; it confirms inside its window', async () => {
    const r = await start(6, { bumpAfterBlocks: 1 });
    const address = chain.accounts[6]!.address;
    const nonce = await chain.provider.getTransactionCount(address);
    const { locked, id, tx: first } = await sentConfirmIn(r);
    const { T, E, Tol } = locked.times;
    expect(first.type).toBe(2);
    // The next block asks more than the transaction offers: it stays in the pool, unmined.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(first.maxFeePerGas! * 4n)]);
    await chain.mine();
    expect(await chain.provider.getTransactionReceipt(first.hash)).toBeNull();
    await waitFor(async () => {
      const { transactions } = await command(id);
      return (
        transactions.length >= 2 &&
        (await chain.provider.getTransaction(transactions.at(-1).tx_hash)) !== null
      );
    }, 'a speed-up in the pool');
    await chain.mine();
    await automine(true);

    const done = await until(id, 'confirmed');
    expect(done.transactions.length).toBeGreaterThanOrEqual(2);
    expect(done.tx_hash).not.toBe(first.hash);
    const mined = (await chain.provider.getTransaction(done.tx_hash))!;
    expect(mined.nonce).toBe(nonce);
    expect(mined.maxFeePerGas! * 100n).toBeGreaterThanOrEqual(first.maxFeePerGas! * 110n);
    expect(mined.maxPriorityFeePerGas! * 100n).toBeGreaterThanOrEqual(first.maxPriorityFeePerGas! * 110n);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 1);
    const block = (await chain.provider.getBlock(done.block_number))!;
    expect(block.timestamp).toBeLessThanOrEqual(T + 3 * E + 2 * Tol);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('does not speed up a transaction signed under a higher gas cap than the one configured now', async () => {
    const first = await start(17, { bumpAfterBlocks: 1 });
    const { id, tx } = await sentConfirmIn(first);
    // The operator lowers relay.maxGasLimit below what the transaction was signed with, and restarts.
    await first.close();
    relay = undefined;
    const lowered = Number(tx.gasLimit) - 1_000;
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(tx.maxFeePerGas! * 4n)]);
    await chain.mine();
    const r = await start(17, { bumpAfterBlocks: 1, maxGasLimit: lowered });
    await waitFor(
      async () =>
        /not sped up: its gas limit \d+ is above the configured maxGasLimit/.test(
          (await command(id)).reason ?? '',
        ),
      'the speed-up to be refused',
    );
    await chain.mine();
    await r.submitter.tick();
    expect((await command(id)).transactions).toHaveLength(1);
    // The market comes back to what it offered: it mines as it was signed.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(tx.maxFeePerGas! / 2n)]);
    await automine(true);
    await chain.mine();
    const done = await until(id, 'confirmed');
    expect(done.tx_hash).toBe(tx.hash);
  });

  it('does not speed up a transaction waiting behind an earlier unmined nonce; it mines at its first fee', async () => {
    const r = await start(19, { bumpAfterBlocks: 1 });
    const address = chain.accounts[19]!.address;
    const nonce = await chain.provider.getTransactionCount(address);
    const a = await lock();
    const b = await lock();
    const ids: string[] = [];
    for (const locked of [a, b]) {
      const accepted = await r.post(
        '/behalf/confirm_in',
        behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
      );
      ids.push(accepted.body.command_id);
      await until(accepted.body.command_id, 'scheduled');
    }
    await automine(false);
    // Both windows open (b was locked after a, within the 300 s of a's window).
    await moveTo(b.times.T + 3 * b.times.E + b.times.Tol);
    const [first, second] = [await until(ids[0]!, 'sent'), await until(ids[1]!, 'sent')];
    const [txA, txB] = [
      (await chain.provider.getTransaction(first.tx_hash))!,
      (await chain.provider.getTransaction(second.tx_hash))!,
    ];
    expect([txA.nonce, txB.nonce].sort()).toEqual([nonce, nonce + 1]);
    const [head, behind] = txA.nonce === nonce ? [ids[0]!, ids[1]!] : [ids[1]!, ids[0]!];
    const behindTx = txA.nonce === nonce ? txB : txA;

    // A block that asks more than either offers: the head of the line is sped up (to the market's fee).
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(behindTx.maxFeePerGas! * 4n)]);
    await chain.mine();
    expect(await chain.provider.getTransactionReceipt(behindTx.hash)).toBeNull();
    await waitFor(async () => (await command(head)).transactions.length >= 2, 'the head of the line sped up');
    // The one behind it is just as stuck by block count: several passes later, still its first transaction.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await command(behind)).transactions.map((t: { tx_hash: string }) => t.tx_hash)).toEqual([
      behindTx.hash,
    ]);

    // The market comes down: both mine, the second at the fee it was first signed with.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(behindTx.maxFeePerGas! / 2n)]);
    await chain.mine();
    await automine(true);
    const [headDone, behindDone] = [await until(head, 'confirmed'), await until(behind, 'confirmed')];
    expect(headDone.transactions.length).toBeGreaterThanOrEqual(2);
    expect(behindDone.tx_hash).toBe(behindTx.hash);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 2);
    expect(await statusOf(a.in.transferId)).toBe(2n);
    expect(await statusOf(b.in.transferId)).toBe(2n);
  });

  it("a node's wrong pending nonce is not followed: no gap, the command confirms at the mined count", async () => {
    proxy = await startRpcProxy(chain.rpcUrl, `/v3/${SECRET}`);
    // A faulty or lagging node: the wallet's pending count 5 above what it sent.
    proxy.rewrite = (method, params, result) =>
      method === 'eth_getTransactionCount' && params[1] === 'pending'
        ? `0x${(BigInt(result as string) + 5n).toString(16)}`
        : undefined;
    const r = await start(18, { rpc: proxy.url });
    const address = chain.accounts[18]!.address;
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const nonce = await chain.provider.getTransactionCount(address, 'latest');
    const accepted = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    await until(accepted.body.command_id, 'scheduled');
    await moveTo(T + 3 * E + Tol);
    const done = await until(accepted.body.command_id, 'confirmed');
    expect((await chain.provider.getTransaction(done.tx_hash))!.nonce).toBe(nonce);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('receipts that lag the mined count (another node behind a balancer) do not fail a mined command', async () => {
    proxy = await startRpcProxy(chain.rpcUrl, `/v3/${SECRET}`);
    // The receipt lookups answer from a node that has not seen the block yet, for the first few asks.
    let hidden = 0;
    proxy.rewrite = (method, _params, result) => {
      if (method !== 'eth_getTransactionReceipt' || result === null || hidden >= 4) return undefined;
      hidden++;
      return null;
    };
    const r = await start(12, { rpc: proxy.url });
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const accepted = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    await until(accepted.body.command_id, 'scheduled');
    await moveTo(T + 3 * E + Tol);
    const done = await until(accepted.body.command_id, 'confirmed');
    expect(hidden).toBe(4);
    expect(done.reason ?? null).toBeNull();
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('a job signed before the key changed is followed, never replaced with the new key; it confirms', async () => {
    const { locked, id, tx: first } = await sentConfirmIn(await start(16, { bumpAfterBlocks: 1 }));
    expect(first.from).toBe(chain.accounts[16]!.address);
    // Unmined: the next blocks ask more than it offers.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(first.maxFeePerGas! * 4n)]);
    await chain.mine();
    await relay!.close();

    // The same database, another key: several passes over blocks where the old key's transaction is stuck.
    await start(17, { bumpAfterBlocks: 1 });
    const newKey = chain.accounts[17]!.address;
    const newKeyNonce = await chain.provider.getTransactionCount(newKey, 'pending');
    const stuckBlock = async () => {
      await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(first.maxFeePerGas! * 4n)]);
      await chain.mine();
    };
    await stuckBlock();
    await waitFor(
      async () => /not this service's wallet/.test((await command(id)).reason ?? ''),
      'a pass over the job',
    );
    // More passes over more blocks (bumpAfterBlocks 1 would have replaced it by now).
    for (let i = 0; i < 3; i++) {
      await stuckBlock();
      await new Promise((resolve) => setTimeout(resolve, 700));
    }
    const followed = await command(id);
    expect(followed.status).toBe('sent');
    expect(followed.reason).toMatch(/signed by 0x[0-9a-f]{40}, not this service's wallet .*never replaced/);
    expect(followed.transactions.map((t: { tx_hash: string }) => t.tx_hash)).toEqual([first.hash]);
    expect(await chain.provider.getTransactionCount(newKey, 'pending')).toBe(newKeyNonce);

    // The old key's transaction mines: the job settles on it.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(first.maxFeePerGas! / 2n)]);
    await chain.mine();
    await automine(true);
    const done = await until(id, 'confirmed');
    expect(done.tx_hash).toBe(first.hash);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('frees the nonce of a transaction the node refuses for good; the next command goes through; no RPC secret leaks', async () => {
    proxy = await startRpcProxy(chain.rpcUrl, `/v3/${SECRET}`);
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
    const r = await start(
      7,
      { rpc: proxy.url, rpcFallbacks: [`http://127.0.0.1:9/v2/${SECRET}-fallback`], maxRefusals: 2 },
      log,
    );
    const address = chain.accounts[7]!.address;
    const a = await lock();
    const b = await lock();
    proxy.refuse = (tx) => tx.data.includes(a.hashlock.slice(2));
    const nonce = await chain.provider.getTransactionCount(address);
    const postA = await r.post(
      '/behalf/confirm_in',
      behalfBody(a.in, 'command_transfer_confirm', a.preimage),
    );
    const postB = await r.post(
      '/behalf/confirm_in',
      behalfBody(b.in, 'command_transfer_confirm', b.preimage),
    );
    await until(postA.body.command_id, 'scheduled');
    await until(postB.body.command_id, 'scheduled');
    await moveTo(b.times.T + 3 * b.times.E + b.times.Tol);

    const failed = await until(postA.body.command_id, 'failed');
    expect(failed.reason).toMatch(
      new RegExp(
        `^nonce ${nonce} freed by a 0-value self-transfer: the node refused the transaction 2 times; the self-transfer 0x[0-9a-f]{64} used the nonce$`,
      ),
    );
    expect(failed.transactions.map((t: { kind: string }) => t.kind)).toEqual(['call', 'cancel']);
    expect(failed.paid_failures).toBe(1);
    const confirmed = await until(postB.body.command_id, 'confirmed');
    expect((await chain.provider.getTransaction(confirmed.tx_hash))!.nonce).toBe(nonce + 1);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 2);
    expect(await statusOf(a.in.transferId)).toBe(1n);
    expect(proxy.refused).toBeGreaterThanOrEqual(2);

    // The same command again while its window is open re-opens it; now the node takes it. The re-post's gas
    // price is not taken: the first accepted strategy stays (any client may re-post any command).
    proxy.refuse = undefined;
    const again = await r.post(
      '/behalf/confirm_in',
      behalfBody(a.in, 'command_transfer_confirm', a.preimage, {}, '200000000000'),
    );
    expect(again.body).toMatchObject({ code: 200, command_id: postA.body.command_id, status: 'scheduled' });
    const reopened = await until(postA.body.command_id, 'confirmed');
    expect(reopened.gas_price).toBe('STANDARD');
    expect((await chain.provider.getTransaction(reopened.tx_hash))!.nonce).toBe(nonce + 2);
    expect(await statusOf(a.in.transferId)).toBe(2n);

    // Operator signals.
    const metrics = await r.metrics.metrics();
    expect(metrics).toMatch(/relay_wallet_balance_wei \d/);
    const counts = (await r.store.jobCounts()).byStatus;
    expect(counts['confirmed']).toBeGreaterThanOrEqual(2);
    expect(metrics).toContain(`relay_commands{status="confirmed"} ${counts['confirmed']}`);
    expect(metrics).toMatch(/relay_oldest_unconfirmed_seconds 0/);
    // Every command was taken by its consumer: none waits in `accepted`; `scheduled` is not a waiting status.
    expect(metrics).toMatch(/^relay_oldest_waiting_seconds\{status="accepted"\} 0$/m);
    expect(metrics).not.toContain('relay_oldest_waiting_seconds{status="scheduled"}');
    // A's failure stays counted after its re-open confirmed it (the notifier's submission_failed id).
    expect(metrics).toMatch(/^relay_job_failures 1$/m);
    const byTransfer = await r.get(`/behalf/commands?transfer_id=${a.in.transferId}`);
    expect(byTransfer.body.commands.map((c: { id: string }) => c.id)).toEqual([postA.body.command_id]);

    // The refusal quoted the URL's secret path: nowhere in answers or log lines.
    const answers = [
      JSON.stringify(await r.get('/status')),
      JSON.stringify(await r.get(`/behalf/commands/${postA.body.command_id}`)),
      JSON.stringify(byTransfer),
      metrics,
    ];
    expect(lines.some((l) => l.includes('<rpc>'))).toBe(true);
    for (const text of [...answers, ...lines]) expect(text).not.toContain(SECRET);
  });

  it('a client-chosen gas price the wallet cannot cover is lowered to what its balance pays; later commands go through', async () => {
    // A wallet holding less than gas limit × maxGasPriceWei. Any client may ask for a price up to that cap;
    // signed as asked, the node refuses it ("insufficient funds"), it can be neither sped up nor outbid, and
    // every later command's nonce waits behind it for good.
    const BALANCE = 5n * 10n ** 15n;
    const poor = await poorWallet(BALANCE);
    const r = await start(0, { priv: poor.privateKey });
    const { a, b, attack, genuine } = await cappedAndGenuine(r);
    // Nor can anyone re-price a scheduled command by repeating it: the first accepted strategy stays.
    const repeat = await r.post(
      '/behalf/confirm_in',
      behalfBody(b.in, 'command_transfer_confirm', b.preimage, {}, '200000000000'),
    );
    expect(repeat.body.command_id).toBe(genuine.body.command_id);
    expect((await command(genuine.body.command_id)).gas_price).toBe('STANDARD');

    await moveTo(b.times.T + 3 * b.times.E + b.times.Tol);
    const confirmed = await until(genuine.body.command_id, 'confirmed');
    const paid = await until(attack.body.command_id, 'confirmed');
    // The attack's call was signed at the highest fee the balance covered, below the asked 200 gwei.
    const tx = (await chain.provider.getTransaction(paid.tx_hash))!;
    expect(tx.maxFeePerGas!).toBeLessThan(200_000_000_000n);
    expect(tx.gasLimit * tx.maxFeePerGas!).toBeLessThanOrEqual(BALANCE);
    expect(paid.transactions).toHaveLength(1);
    expect((await chain.provider.getTransaction(confirmed.tx_hash))!.nonce).toBe(1);
    expect(await chain.provider.getTransactionCount(poor.address)).toBe(2);
    expect(await statusOf(a.in.transferId)).toBe(2n);
    expect(await statusOf(b.in.transferId)).toBe(2n);
  });

  it('a wallet that cannot pay the market fee takes no nonce: the command waits unsigned, then goes when funded', async () => {
    // 21,000 gas worth at 1 wei: not a confirm at the market's fee.
    const poor = await poorWallet(21_000n);
    const r = await start(0, { priv: poor.privateKey });
    const locked = await lock();
    const answer = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    const id = answer.body.command_id as string;
    await moveTo(locked.times.T + 3 * locked.times.E + locked.times.Tol);
    await waitFor(
      async () => /^waiting for funds: /.test((await command(id)).reason ?? ''),
      'waiting for funds',
    );
    const waiting = await command(id);
    expect([waiting.status, waiting.nonce, waiting.transactions]).toEqual(['scheduled', null, []]);
    expect(await chain.provider.getTransactionCount(poor.address)).toBe(0);
    // Funded, it is signed at the wallet's first nonce and confirms inside its window.
    await (await chain.wallet(5).sendTransaction({ to: poor.address, value: 10n ** 17n })).wait();
    const done = await until(id, 'confirmed');
    expect(done.nonce).toBe(0);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('a node that refuses a call as unaffordable though the balance covers it counts refusals; the nonce is freed', async () => {
    // The node sees another balance than the one the sender read (a lagging endpoint, funds spent from outside
    // the sender): a call it refuses with "insufficient funds" is counted toward maxRefusals, so its nonce is
    // freed by a self-transfer far cheaper than the call, and the later command goes through.
    const BALANCE = 5n * 10n ** 15n;
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/unfunded-key');
    proxy.fail = (method, params) => {
      if (method !== 'eth_sendRawTransaction') return undefined;
      const tx = Transaction.from(params[0] as string);
      const cost = tx.gasLimit * (tx.maxFeePerGas ?? tx.gasPrice ?? 0n);
      return cost > BALANCE
        ? {
            code: -32000,
            message: `insufficient funds for gas * price + value: balance ${BALANCE}, tx cost ${cost}`,
          }
        : undefined;
    };
    const r = await start(11, { rpc: proxy.url });
    const { b, attack, genuine } = await cappedAndGenuine(r);
    await moveTo(b.times.T + 3 * b.times.E + b.times.Tol);
    await until(genuine.body.command_id, 'confirmed', 25_000);
    const failed = await until(attack.body.command_id, 'failed');
    expect(failed.reason).toMatch(
      /freed by a 0-value self-transfer: the node refused the transaction 3 times/,
    );
    expect(failed.transactions.map((t: { kind: string }) => t.kind)).toEqual(['call', 'cancel']);
  });

  it('a relay whose RPC endpoints are all down shows the problem without their URLs', async () => {
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
    const r = await start(
      9,
      { rpc: `http://127.0.0.1:9/v3/${SECRET}`, rpcFallbacks: [`http://${SECRET}:pw@127.0.0.1:9/x`] },
      log,
    );
    await waitFor(async () => (await r.get('/status')).body.submitter.lastError !== undefined, 'a pass');
    // No API key nor allow-list (the test config's): the operator is told the gas-paying routes are open.
    expect(lines.some((l) => l.includes('open to any client: set relay.apiKeys or relay.allowIps'))).toBe(
      true,
    );
    const locked = await lock();
    const refused = await r.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe(30222);
    const fee = await r.post('/get_system_fee', {});
    for (const text of [
      JSON.stringify(await r.get('/status')),
      JSON.stringify(refused),
      JSON.stringify(fee),
      ...lines,
    ])
      expect(text).not.toContain(SECRET);
  });

  it('never pays above the caps for a gas-burning receiver', async () => {
    const compiled = await compileContracts();
    const deploy = async (mode: number, need: number) => {
      const factory = new ContractFactory(
        compiled.GasBurner.abi,
        compiled.GasBurner.bytecode,
        chain.wallet(0),
      );
      const contract = await factory.deploy(mode, need);
      await contract.waitForDeployment();
      return contract.getAddress();
    };
    const [greedy, needy] = [await deploy(1, 0), await deploy(2, 2_000_000)];
    const maxGasLimit = 200_000;
    const maxFee = 50_000_000_000n;
    const r = await start(8, { maxGasLimit, maxGasPriceWei: maxFee.toString() });
    const address = chain.accounts[8]!.address;
    const a = await lock(needy);
    const b = await lock(greedy);
    const balance = await chain.provider.getBalance(address);
    const nonce = await chain.provider.getTransactionCount(address);
    const postA = await r.post(
      '/behalf/confirm_out',
      behalfBody(a.out, 'command_transfer_confirm', a.preimage),
    );
    const postB = await r.post(
      '/behalf/confirm_out',
      behalfBody(b.out, 'command_transfer_confirm', b.preimage),
    );
    await until(postA.body.command_id, 'scheduled');
    await until(postB.body.command_id, 'scheduled');
    await moveTo(b.times.T + 3 * b.times.E + 2 * b.times.Tol);

    const refused = await until(postA.body.command_id, 'failed');
    expect(refused.reason).toMatch(
      /^the call fails within the cap of 200000 gas per transaction \(out of gas, or a revert without data\); nothing was sent$/,
    );
    expect(refused.tx_hash).toBeNull();
    expect(refused.paid_failures).toBe(0);
    const settled = await waitForFinal(postB.body.command_id);
    const receipt = (await chain.provider.getTransactionReceipt(settled.tx_hash))!;
    const tx = (await chain.provider.getTransaction(settled.tx_hash))!;
    expect(tx.gasLimit).toBeLessThanOrEqual(BigInt(maxGasLimit));
    expect(tx.maxFeePerGas).toBeLessThanOrEqual(maxFee);
    // The receiver burnt what it was given: the cap, not the receiver, bounded the bill.
    expect(receipt.gasUsed * 10n).toBeGreaterThan(tx.gasLimit * 7n);
    const cost = receipt.gasUsed * receipt.gasPrice;
    expect(cost).toBeLessThanOrEqual(BigInt(maxGasLimit) * maxFee);
    expect(balance - (await chain.provider.getBalance(address))).toBe(cost);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 1);
  });

  it('a receiver that reverts in its block after a good estimate costs the wallet at most maxPaidFailures transactions', async () => {
    const compiled = await compileContracts();
    const factory = new ContractFactory(compiled.GasBurner.abi, compiled.GasBurner.bytecode, chain.wallet(0));
    const flip = await factory.deploy(3, 400);
    await flip.waitForDeployment();
    const receiver = await flip.getAddress();
    const arm = async (on: boolean) => {
      // A higher tip than the relay's call: mined first in the same block.
      const tx = await (flip.connect(chain.wallet(0)) as Contract).getFunction('arm')(on, {
        maxPriorityFeePerGas: 100_000_000_000n,
        maxFeePerGas: 400_000_000_000n,
      });
      return tx.hash as string;
    };
    const r = await start(15, { maxPaidFailures: 2 });
    const address = chain.accounts[15]!.address;
    const locked = await lock(receiver);
    const { T, E, Tol } = locked.times;
    const body = behalfBody(locked.out, 'command_transfer_confirm', locked.preimage);
    const nonce = await chain.provider.getTransactionCount(address);
    const first = await r.post('/behalf/confirm_out', body);
    const id = first.body.command_id as string;
    await until(id, 'scheduled');
    await automine(false);
    await moveTo(T + 3 * E + 2 * Tol);
    for (let round = 1; round <= 2; round++) {
      // The call estimated fine (the receiver was not armed) and waits in the pool; the receiver's owner
      // arms it ahead of the call in the same block, and disarms it afterwards.
      await until(id, 'sent');
      await arm(true);
      await chain.mine();
      const failed = await until(id, 'failed');
      expect(failed.reason).toMatch(/^reverted on chain/);
      expect(failed.paid_failures).toBe(round);
      await arm(false);
      await chain.mine();
      const again = await r.post('/behalf/confirm_out', body);
      if (round === 1) {
        expect(again.body).toMatchObject({ code: 200, command_id: id, status: 'scheduled' });
        continue;
      }
      // Two paid failures: the re-post is refused and changes nothing, though the window is open and the
      // transfer still pending.
      expect([again.status, again.body.code]).toEqual([409, 30224]);
      expect(again.body.message).toContain(`command ${id}: 2 of its transactions were mined and failed`);
    }
    await chain.mine();
    const after = await command(id);
    expect([after.status, after.paid_failures]).toEqual(['failed', 2]);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 2);
    expect(await statusOf(locked.out.transferId)).toBe(1n);
    expect(await r.metrics.metrics()).toContain(
      'relay_commands_total{action="confirm_out",outcome="exhausted"} 1',
    );
  });

  async function waitForFinal(id: string) {
    await waitFor(
      async () => ['confirmed', 'failed'].includes((await command(id)).status),
      `command ${id} final`,
    );
    return command(id);
  }

  it('N concurrent commands for one transfer with different gas strategies send one transaction', async () => {
    const r = await start(10);
    const address = chain.accounts[10]!.address;
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const nonce = await chain.provider.getTransactionCount(address);
    const prices = [
      'FAST',
      'STANDARD',
      'SAFELOW',
      '3000000000',
      '2500000000',
      'FAST',
      '4000000000',
      'SAFELOW',
    ];
    const answers = await Promise.all(
      prices.map((price) =>
        r.post(
          '/behalf/confirm_out',
          behalfBody(locked.out, 'command_transfer_confirm', locked.preimage, {}, price),
        ),
      ),
    );
    const ids = new Set(answers.map((a) => a.body.command_id));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(ids.size).toBe(1);
    const [id] = [...ids] as [string];
    expect((await r.store.byTransfer(locked.out.transferId)).length).toBe(1);
    await moveTo(T + 3 * E + 2 * Tol);
    await until(id, 'confirmed');
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 1);
    expect(await statusOf(locked.out.transferId)).toBe(2n);
  });

  it("reads the LP's sender of a confirm_in given only by sender_wallet_name from the chain", async () => {
    proxy = await startRpcProxy(chain.rpcUrl, '/v2/key');
    const r = await start(11, { rpc: proxy.url });
    const scans = () => proxy!.calls['eth_getLogs'] ?? 0;
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const { sender: _sender, ...withoutSender } = behalfBody(
      locked.in,
      'command_transfer_confirm',
      locked.preimage,
    ).command_transfer_confirm as Record<string, unknown>;
    const body = (extra: Record<string, unknown>) => ({
      transaction_type: 'LOCAL_PADDING',
      gas: { gas_price: 'STANDARD' },
      command_transfer_in_confirm: { ...withoutSender, sender_wallet_name: 'SomeLpWallet', ...extra },
    });
    // A transfer_id never locked is refused after one eth_call, without scanning the logs.
    const unknown = await r.post('/behalf/confirm_in', body({ transfer_id: hexlify(randomBytes(32)) }));
    expect([unknown.status, unknown.body.code]).toEqual([400, 30223]);
    expect(scans()).toBe(0);
    const noId = await r.post('/behalf/confirm_in', body({}));
    expect([noId.status, noId.body.code]).toEqual([400, 30208]);
    const accepted = await r.post('/behalf/confirm_in', body({ transfer_id: locked.in.transferId }));
    expect(accepted.status).toBe(200);
    const scanned = scans();
    expect(scanned).toBeGreaterThan(0);
    // The sender found is remembered: a repeat scans nothing.
    const repeat = await r.post('/behalf/confirm_in', body({ transfer_id: locked.in.transferId }));
    expect(repeat.body.command_id).toBe(accepted.body.command_id);
    expect(scans()).toBe(scanned);
    await until(accepted.body.command_id, 'scheduled');
    await moveTo(T + 3 * E + Tol);
    const done = await until(accepted.body.command_id, 'confirmed');
    expect(done.transfer_id).toBe(locked.in.transferId);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });

  it('confirms only N blocks deep, and follows the nonce again when a reorg drops the receipt', async () => {
    const r = await start(13, { confirmations: 3 });
    const address = chain.accounts[13]!.address;
    const locked = await lock();
    const nonce = await chain.provider.getTransactionCount(address);
    const minedBlock = async (id: string) =>
      (await db.pool.query('SELECT mined_block FROM relay_commands WHERE id = $1', [id])).rows[0].mined_block;
    const accepted = await r.post('/behalf/refund_out', behalfBody(locked.out, 'command_transfer_refund'));
    const id = accepted.body.command_id as string;
    await until(id, 'scheduled');
    const beforeMining = await chain.snapshot();
    await moveTo(locked.times.R + 1);
    // Mined (automine) but 1 block deep: still `sent`, however often the sender looks.
    await waitFor(async () => (await chain.provider.getTransactionCount(address)) === nonce + 1, 'mined');
    await r.submitter.tick();
    await r.submitter.tick();
    expect((await command(id)).status).toBe('sent');
    const firstBlock = await minedBlock(id);
    expect(firstBlock).not.toBeNull();
    // The block is reorged away (the transaction with it); the sender sees no receipt and broadcasts again.
    await automine(false);
    await chain.revert(beforeMining);
    await chain.setNextBlockTimestamp(locked.times.R + 5);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce);
    await waitFor(async () => (await minedBlock(id)) === null, 'the reorged receipt forgotten');
    await waitFor(
      async () => (await chain.provider.getTransactionCount(address, 'pending')) === nonce + 1,
      'the stored transaction broadcast again',
    );
    await chain.mine();
    await automine(true);
    await waitFor(
      async () => (await chain.provider.getTransactionCount(address)) === nonce + 1,
      'mined again',
    );
    await r.submitter.tick();
    expect((await command(id)).status).toBe('sent');
    await chain.mine(2);
    const done = await until(id, 'confirmed');
    const block = (await chain.provider.getBlockNumber()) - done.block_number + 1;
    expect(block).toBeGreaterThanOrEqual(3);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 1);
    expect(await statusOf(locked.out.transferId)).toBe(3n);
  });

  it('frees the nonce of a call still unmined when its window is about to close (window missed)', async () => {
    const r = await start(14, { bumpAfterBlocks: 1_000, windowMarginSeconds: 30 });
    const address = chain.accounts[14]!.address;
    const nonce = await chain.provider.getTransactionCount(address);
    const { locked, id, tx: call } = await sentConfirmIn(r);
    const { T, E, Tol } = locked.times;
    // Priced out (and never sped up: bumpAfterBlocks is large) until 30 s before the window's end.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(call.maxFeePerGas! * 4n)]);
    await moveTo(T + 3 * E + 2 * Tol - 30);
    expect(await chain.provider.getTransactionReceipt(call.hash)).toBeNull();
    await waitFor(async () => {
      const c = await command(id);
      return (
        c.status === 'cancelling' &&
        (await chain.provider.getTransaction(c.transactions.at(-1).tx_hash)) !== null
      );
    }, 'a self-transfer in the pool');
    await chain.mine();
    await automine(true);
    const failed = await until(id, 'failed');
    expect(failed.reason).toMatch(
      new RegExp(
        `^nonce ${nonce} freed by a 0-value self-transfer: window closing: non-lp confirm in is allowed from block time ${T + 3 * E + Tol} to ${T + 3 * E + 2 * Tol}; the chain is at block time \\d+; the self-transfer 0x[0-9a-f]{64} used the nonce$`,
      ),
    );
    const cancel = (await chain.provider.getTransaction(failed.tx_hash))!;
    expect([cancel.to, cancel.value, cancel.nonce]).toEqual([address, 0n, nonce]);
    expect(await chain.provider.getTransactionCount(address)).toBe(nonce + 1);
    expect(await statusOf(locked.in.transferId)).toBe(1n);
    expect(await r.metrics.metrics()).toContain('relay_windows_missed_total{action="confirm_in"} 1');
  });

  /**
   * A confirm_in of a fresh wallet (10 ETH), sent and unmined (automine off), and `pricedOut`: mines a block whose
   * base fee is twice the max fee of the command's latest transaction, so that it stays in the pool.
   */
  const stuckConfirmIn = async (overrides: Partial<RelayConfig> = {}, log?: pino.Logger) => {
    const wallet = await poorWallet(10n ** 19n);
    const r = await start(0, { priv: wallet.privateKey, bumpAfterBlocks: 1, ...overrides }, log);
    const sent = await sentConfirmIn(r);
    const pricedOut = async () => {
      const latest = (await command(sent.id)).transactions.at(-1).tx_hash as string;
      const { maxFeePerGas } = (await chain.provider.getTransaction(latest))!;
      await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(maxFeePerGas! * 2n)]);
      await chain.mine();
    };
    return { ...sent, r, wallet, pricedOut };
  };
  /** Someone else confirms the transfer with the relay's own call data, at a fee the next block takes. */
  const settleFirst = async (call: { to: string | null; data: string; maxFeePerGas: bigint | null }) => {
    const settle = await chain.wallet(1).sendTransaction({
      to: call.to!,
      data: call.data,
      gasLimit: 300_000n,
      maxFeePerGas: call.maxFeePerGas! * 8n,
      maxPriorityFeePerGas: call.maxFeePerGas!,
    });
    return settle.hash;
  };
  /** Resolves once the command holds `count` transactions and the last is in the pool (or mined). */
  const replaced = (id: string, count: number) =>
    waitFor(async () => {
      const { transactions } = await command(id);
      return (
        transactions.length >= count &&
        (await chain.provider.getTransaction(transactions.at(-1).tx_hash)) !== null
      );
    }, `${count} transactions, the last in the pool`);
  const kinds = (c: { transactions: Array<{ kind: string }> }) => c.transactions.map((t) => t.kind);

  it('a stuck call whose transfer was settled meanwhile is not sped up: its nonce is freed, the command fails with the revert', async () => {
    const { locked, id, tx: call, wallet, pricedOut } = await stuckConfirmIn();
    const balance = await chain.provider.getBalance(wallet.address);
    // The transfer is confirmed by someone else in the next block, which prices the relay's call out.
    const settle = await settleFirst(call);
    await pricedOut();
    expect((await chain.provider.getTransactionReceipt(settle))?.status).toBe(1);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
    expect(await chain.provider.getTransactionReceipt(call.hash)).toBeNull();

    // Stuck for bumpAfterBlocks: the sender replaces it, and the replacement is mined.
    await replaced(id, 2);
    await chain.mine();
    await automine(true);
    const failed = await waitForFinal(id);
    // The call would revert: a faster copy of it would only raise what the wallet pays for the revert.
    expect({ status: failed.status, kinds: kinds(failed) }).toEqual({
      status: 'failed',
      kinds: ['call', 'cancel'],
    });
    expect(failed.reason).toMatch(
      /^nonce 0 freed by a 0-value self-transfer: the call would revert now \(InvalidStatus: the transfer is not pending on chain \(never locked with these terms, or already confirmed or refunded\)\); the self-transfer 0x[0-9a-f]{64} used the nonce$/,
    );
    const cancel = (await chain.provider.getTransaction(failed.tx_hash))!;
    expect([cancel.to, cancel.value, cancel.nonce]).toEqual([wallet.address, 0n, 0]);
    const receipt = (await chain.provider.getTransactionReceipt(failed.tx_hash))!;
    expect(receipt.gasUsed).toBe(21_000n);
    expect(balance - (await chain.provider.getBalance(wallet.address))).toBe(
      receipt.gasUsed * receipt.gasPrice,
    );
    expect(await chain.provider.getTransactionCount(wallet.address)).toBe(1);
  });

  it('a stuck call whose simulation fails for the endpoint (a rate limit) is sped up as before, never cancelled', async () => {
    proxy = await startRpcProxy(chain.rpcUrl, `/v3/${SECRET}`);
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
    const { locked, id, tx: call, pricedOut } = await stuckConfirmIn({ rpc: proxy.url }, log);
    // From now on every eth_call (the simulation) is refused by the endpoint: it says nothing of the call.
    let simulations = 0;
    proxy.fail = (method) => {
      if (method !== 'eth_call') return undefined;
      simulations++;
      return { code: -32005, message: `project ID request rate exceeded (${SECRET})` };
    };
    await pricedOut();
    await replaced(id, 2);
    await chain.mine();
    await automine(true);
    const done = await waitForFinal(id);
    expect({ status: done.status, kinds: kinds(done) }).toEqual({
      status: 'confirmed',
      kinds: ['call', 'call'],
    });
    const mined = (await chain.provider.getTransaction(done.tx_hash))!;
    expect(mined.maxFeePerGas! * 100n).toBeGreaterThanOrEqual(call.maxFeePerGas! * 110n);
    expect(await statusOf(locked.in.transferId)).toBe(2n);
    expect(simulations).toBeGreaterThan(0);
    expect(lines.some((l) => l.includes('sped up as before'))).toBe(true);
    for (const l of lines) expect(l).not.toContain(SECRET);
  });

  it('a simulation that flips between revert and success never makes the wallet pay for the call again once it is cancelled', async () => {
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/flip-key');
    const { id, wallet, pricedOut } = await stuckConfirmIn({
      rpc: proxy.url,
      maxGasPriceWei: '10000000000000',
    });
    // Each simulation answers the opposite of the last: success first, then the contract's InvalidStatus revert.
    const revert = {
      code: 3,
      message: 'execution reverted',
      data: swapInterface.encodeErrorResult('InvalidStatus', []),
    };
    let simulations = 0;
    proxy.fail = (method) => (method === 'eth_call' && simulations++ % 2 === 1 ? revert : undefined);
    // Blocks the wallet's transactions cannot enter (the cap is high enough for every replacement): each one is
    // stuck again, one replacement per block.
    await pricedOut();
    await replaced(id, 2);
    expect(kinds(await command(id))).toEqual(['call', 'call']); // success: sped up as before
    for (let count = 3; count <= 5; count++) {
      await pricedOut();
      await replaced(id, count);
    }
    const cancelling = await command(id);
    expect(cancelling.status).toBe('cancelling');
    expect(kinds(cancelling)).toEqual(['call', 'call', 'cancel', 'cancel', 'cancel']);
    // The market comes back: the last self-transfer is mined, the call never.
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(1_000_000_000n)]);
    await chain.mine();
    await automine(true);
    const failed = await waitForFinal(id);
    expect(failed.status).toBe('failed');
    expect(failed.reason).toMatch(
      /^nonce 0 freed by a 0-value self-transfer: the call would revert now \(InvalidStatus/,
    );
    const receipt = (await chain.provider.getTransactionReceipt(failed.tx_hash))!;
    expect([receipt.to, receipt.gasUsed]).toEqual([wallet.address, 21_000n]);
  });
  it('a stuck call is not cancelled when the replay is answered by a node behind the head (before the window opened): it is sped up and confirmed', async () => {
    // Behind a load balancer the head (eth_getBlockByNumber) and the replay (eth_call) may be answered by different
    // nodes: one of them a few blocks behind, whose latest block is before the window opened.
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/lagging-key');
    const { locked, id, tx: call, wallet, pricedOut } = await stuckConfirmIn({ rpc: proxy.url });
    const { T, E, Tol } = locked.times;
    const windowStart = T + 3 * E + Tol;
    // The lagging node's answer: the genuine replay on the newest block whose time is before the window.
    let behind = await chain.provider.getBlockNumber();
    while ((await chain.provider.getBlock(behind))!.timestamp >= windowStart) behind--;
    const lagging = await chain.provider
      .call({ from: wallet.address, to: call.to!, data: call.data, blockTag: behind })
      .then(
        () => undefined,
        (error: { data?: string }) => error.data,
      );
    expect(swapInterface.parseError(lagging!)?.name).toBe('NotInOpWindow');
    // It replays on its own latest block, and has no block after `behind` (geth's answer for one).
    let simulations = 0;
    proxy.fail = (method, params) => {
      if (method !== 'eth_call') return undefined;
      simulations++;
      if (params[1] === 'latest')
        return { code: 3, message: 'execution reverted', data: lagging } as { code: number; message: string };
      if (typeof params[1] === 'string' && Number(params[1]) > behind)
        return { code: -32000, message: 'header not found' };
      return undefined;
    };
    // The head the sender reads is well inside the window (the up-to-date node).
    await chain.setNextBlockTimestamp(windowStart + 10);
    await pricedOut();
    await replaced(id, 2);
    await chain.mine();
    await automine(true);
    const done = await waitForFinal(id);
    expect(simulations).toBeGreaterThan(0);
    // The call would succeed on the chain's head: a node behind it says nothing of the call.
    expect({ status: done.status, kinds: kinds(done) }).toEqual({
      status: 'confirmed',
      kinds: ['call', 'call'],
    });
    expect(await statusOf(locked.in.transferId)).toBe(2n);
  });
  it('a stuck call whose replay times out while its window comes within the margin is not sped up: its nonce is freed', async () => {
    // The replay (eth_call) is answered by nothing until the RPC timeout; meanwhile the chain moves inside the
    // window's safety margin, to its end. A faster call signed on the head read before would be mined after the
    // window and revert, at the wallet's cost.
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/slow-key');
    const timeoutMs = 1_000;
    const { locked, id, wallet, pricedOut } = await stuckConfirmIn({
      rpc: proxy.url,
      rpcTimeoutMs: timeoutMs,
    });
    const { T, E, Tol } = locked.times;
    const end = T + 3 * E + 2 * Tol;
    let held = 0;
    proxy.hold = async (method) => {
      if (method !== 'eth_call' || held++ > 0) return;
      await chain.setNextBlockTimestamp(end); // the window's last second, the call still priced out
      await pricedOut();
      await new Promise((resolve) => setTimeout(resolve, timeoutMs + 500));
    };
    await pricedOut();
    await replaced(id, 2);
    expect(held).toBeGreaterThan(0);
    // Decided on the chain's head inside the margin: the nonce is freed, no call is signed.
    expect(kinds(await command(id))).toEqual(['call', 'cancel']);
    await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(1_000_000_000n)]);
    await chain.mine();
    await automine(true);
    const failed = await waitForFinal(id);
    expect(failed.reason).toMatch(/^nonce 0 freed by a 0-value self-transfer: window closing: /);
    const receipt = (await chain.provider.getTransactionReceipt(failed.tx_hash))!;
    expect([receipt.to, receipt.gasUsed]).toEqual([wallet.address, 21_000n]);
  });

  it('where a plain transfer needs more than 21,000 gas (Arbitrum), the self-transfer freeing a nonce gets the chain estimate and is taken', async () => {
    // An Arbitrum node counts the L1 data cost in gas and refuses a 21,000-gas transfer as "intrinsic gas too
    // low", every time: a cancel signed with 21,000 would never free the nonce, and every later job waits.
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/l2-key');
    const intrinsic = 30_000n;
    const isSelfTransfer = (tx: { from?: string | null; to?: string | null; data?: string | null }) =>
      !!tx.to && tx.to.toLowerCase() === tx.from?.toLowerCase() && (!tx.data || tx.data === '0x');
    proxy.rewrite = (method, params) =>
      method === 'eth_estimateGas' &&
      isSelfTransfer(params[0] as { from?: string; to?: string; data?: string })
        ? toQuantity(intrinsic)
        : undefined;
    proxy.fail = (method, params) => {
      if (method !== 'eth_sendRawTransaction') return undefined;
      const tx = Transaction.from(params[0] as string);
      return isSelfTransfer(tx) && tx.gasLimit < intrinsic
        ? { code: -32000, message: `intrinsic gas too low: gas ${tx.gasLimit}, minimum needed ${intrinsic}` }
        : undefined;
    };
    const { id, tx: call, wallet, pricedOut } = await stuckConfirmIn({ rpc: proxy.url });
    await settleFirst(call);
    await pricedOut();
    await replaced(id, 2);
    const cancel = (await chain.provider.getTransaction((await command(id)).transactions.at(-1).tx_hash))!;
    expect([cancel.to, cancel.value, cancel.gasLimit]).toEqual([
      wallet.address,
      0n,
      (intrinsic * 130n) / 100n,
    ]);
    await chain.mine();
    await automine(true);
    const failed = await waitForFinal(id);
    expect({ status: failed.status, kinds: kinds(failed), hash: failed.tx_hash }).toEqual({
      status: 'failed',
      kinds: ['call', 'cancel'],
      hash: cancel.hash,
    });
  });
});
