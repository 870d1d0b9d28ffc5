import { Contract, Wallet, hexlify, randomBytes, keccak256 } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, RELAY_DEV_KEY, relayTestConfig, startTestRelay } from './test-harness.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;
const RELAY_ADDRESS = new Wallet(RELAY_DEV_KEY).address;
const STATUS = { pending: 1n, confirmed: 2n };

/**
 * The submitter on the devnet with our swap contract: users and LPs who never confirm get confirmed by the
 * relay inside its windows; a late command fails naming the window; a repeated command sends one transaction.
 */
describe('relay submitter on the devnet', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Relay;
  let swap: Contract;
  const relayTxCount = () => chain.provider.getTransactionCount(RELAY_ADDRESS);
  const statusOf = async (transferId: string) =>
    ((await swap.getFunction('swapStatus')(transferId)) as [bigint])[0];
  const command = async (id: string) => (await relay.get(`/behalf/commands/${id}`)).body.command;
  const until = async (id: string, status: string) => {
    await waitFor(async () => (await command(id)).status === status, `command ${id} ${status}`, 20_000);
    return command(id);
  };
  const moveTo = async (timestamp: number) => {
    await chain.setNextBlockTimestamp(timestamp);
    await chain.mine();
  };
  const lock = () => lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
    swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
    relay = await startTestRelay(
      db,
      relayTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.otmoic, acceptChecks: true }),
    );
  });
  afterAll(async () => {
    await relay?.close();
    await devnet?.stop();
    await db?.drop();
  });

  it('confirms in for a silent LP and out for a silent user, each inside its window, once per command', async () => {
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const sentBefore = await relayTxCount();

    // Sent twice at once and once more later: one command, one id.
    const confirmIn = behalfBody(locked.in, 'command_transfer_in_confirm', locked.preimage);
    const [a, b] = await Promise.all([
      relay.post('/behalf/confirm_in', confirmIn),
      relay.post('/behalf/confirm_in', confirmIn),
    ]);
    // The one that stored it answers 'accepted'; the other answers the command's status when it looked, which
    // the submitter may have moved on to 'scheduled' by then (either request may be the first).
    for (const answer of [a, b])
      expect(answer).toEqual({
        status: 200,
        body: {
          code: 200,
          message: 'Command received',
          command_id: expect.any(String),
          status: expect.stringMatching(/^(accepted|scheduled)$/),
        },
      });
    expect([a.body.status, b.body.status]).toContain('accepted');
    expect(b.body.command_id).toBe(a.body.command_id);
    const confirmOut = await relay.post(
      '/behalf/confirm_out',
      behalfBody(locked.out, 'command_transfer_confirm', locked.preimage),
    );
    expect(confirmOut.status).toBe(200);

    // Before the windows nothing is sent, however often the submitter looks.
    await until(a.body.command_id, 'scheduled');
    await until(confirmOut.body.command_id, 'scheduled');
    await relay.submitter.tick();
    expect(await relayTxCount()).toBe(sentBefore);

    await moveTo(T + 3 * E + Tol); // the LP's own window has just ended
    const confirmedIn = await until(a.body.command_id, 'confirmed');
    expect(await statusOf(locked.in.transferId)).toBe(STATUS.confirmed);
    expect(await statusOf(locked.out.transferId)).toBe(STATUS.pending);
    const inTx = await chain.provider.getTransaction(confirmedIn.tx_hash);
    expect(inTx?.from).toBe(RELAY_ADDRESS);
    const inBlock = await chain.provider.getBlock(confirmedIn.block_number);
    expect(inBlock!.timestamp).toBeGreaterThanOrEqual(T + 3 * E + Tol);
    expect(inBlock!.timestamp).toBeLessThanOrEqual(T + 3 * E + 2 * Tol);

    await moveTo(T + 3 * E + 2 * Tol);
    const confirmedOut = await until(confirmOut.body.command_id, 'confirmed');
    expect(await statusOf(locked.out.transferId)).toBe(STATUS.confirmed);
    const outBlock = await chain.provider.getBlock(confirmedOut.block_number);
    expect(outBlock!.timestamp).toBeGreaterThanOrEqual(T + 3 * E + 2 * Tol);
    expect(outBlock!.timestamp).toBeLessThanOrEqual(T + 3 * E + 3 * Tol);

    // A retry after the fact gets the same command, its status, and sends nothing.
    expect(await relay.post('/behalf/confirm_in', confirmIn)).toEqual({
      status: 200,
      body: { ...a.body, status: 'confirmed' },
    });
    await relay.submitter.tick();
    expect(await relayTxCount()).toBe(sentBefore + 2);
    expect(await command(a.body.command_id)).toMatchObject({
      status: 'confirmed',
      tx_hash: confirmedIn.tx_hash,
    });
    const metrics = await relay.metrics.metrics();
    expect(metrics).toContain('relay_commands_total{action="confirm_in",outcome="accepted"} 1');
    expect(metrics).toContain('relay_commands_total{action="confirm_in",outcome="repeated"} 2');
    expect(metrics).toContain('relay_commands_total{action="confirm_in",outcome="confirmed"} 1');
  });

  it('refuses a command that arrives after its window, naming the window, and stores nothing', async () => {
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    await moveTo(T + 3 * E + 3 * Tol + 1);
    const sentBefore = await relayTxCount();
    const late = await relay.post(
      '/behalf/confirm_out',
      behalfBody(locked.out, 'command_transfer_confirm', locked.preimage),
    );
    expect(late).toEqual({
      status: 409,
      body: {
        code: 30218,
        message: `window closed: non-user confirm out is allowed from block time ${T + 3 * E + 2 * Tol} to ${T + 3 * E + 3 * Tol}; the chain is at block time ${T + 3 * E + 3 * Tol + 1} (safety margin 5 s)`,
      },
    });
    expect(await relay.store.byTransfer(locked.out.transferId)).toEqual([]);
    expect(await relayTxCount()).toBe(sentBefore);
    expect(await statusOf(locked.out.transferId)).toBe(STATUS.pending);
  });

  it('refuses a command whose window is narrower than windowMarginSeconds: the sender could never send it', async () => {
    // The sender signs nothing from the 5 s margin before a window's end, so a 4 s window is closed for it
    // before it opens. Before this check such a command was answered "Command received", then failed.
    const narrow = await lockSwap({
      src: chain,
      dst: chain,
      srcSystemChainId: 9006,
      dstSystemChainId: 9006,
      Tol: 4,
    });
    const { T, E } = narrow.times;
    const answer = await relay.post(
      '/behalf/confirm_in',
      behalfBody(narrow.in, 'command_transfer_confirm', narrow.preimage),
    );
    expect(answer).toEqual({
      status: 409,
      body: {
        code: 30218,
        message: `window can never be used: non-lp confirm in is allowed from block time ${T + 3 * E + 4} to ${T + 3 * E + 8}, and the relay sends nothing in the last 5 s of a window (relay.windowMarginSeconds)`,
      },
    });
    expect(await relay.store.byTransfer(narrow.in.transferId)).toEqual([]);
  });

  it('refuses a command for a transfer that is not pending on chain, before storing anything', async () => {
    const now = await chain.latestTimestamp();
    const preimage = hexlify(randomBytes(32));
    const E = 60;
    const Tol = 120;
    const T = now - 3 * E - Tol - 5; // the non-LP confirm-in window is open now
    const never = {
      sender: chain.accounts[2]!.address,
      receiver: chain.accounts[1]!.address,
      token: '0x0000000000000000000000000000000000000000',
      tokenAmount: 5n,
      ethAmount: 0n,
      hashlock: keccak256(preimage),
      agreementReachedTime: T,
      expectedSingleStepTime: E,
      tolerantSingleStepTime: Tol,
      earliestRefundTime: T + 1_000,
      transferId: '0x',
    };
    const sentBefore = await relayTxCount();
    const answer = await relay.post(
      '/behalf/confirm_in',
      behalfBody(never, 'command_transfer_confirm', preimage),
    );
    expect(answer.status).toBe(409);
    expect(answer.body).toEqual({
      code: 30220,
      message: expect.stringMatching(
        /^swapStatus\(0x[0-9a-f]{64}\) is none \(never locked with these terms\), not pending$/,
      ),
    });
    expect(await relayTxCount()).toBe(sentBefore);
  });

  it('records a transaction that reverts on chain as failed, with the custom error decoded', async () => {
    const locked = await lock();
    const { T, E, Tol } = locked.times;
    const answer = await relay.post(
      '/behalf/confirm_out',
      behalfBody(locked.out, 'command_transfer_confirm', locked.preimage),
    );
    await until(answer.body.command_id, 'scheduled');
    // Someone else confirms out in the same block, ahead of the relay (higher gas price): the relay's
    // transaction is mined after it and reverts.
    await chain.provider.send('evm_setAutomine', [false]);
    try {
      await moveTo(T + 3 * E + 2 * Tol);
      await until(answer.body.command_id, 'sent');
      const other = new Contract(chain.contracts.otmoic, swapInterface, chain.wallet(5));
      const c = locked.out;
      await other.getFunction('confirmTransferOut')(
        c.sender,
        c.receiver,
        c.token,
        c.tokenAmount,
        c.ethAmount,
        c.hashlock,
        E,
        Tol,
        c.earliestRefundTime,
        locked.preimage,
        T,
        { gasLimit: 500_000n, gasPrice: 10n ** 12n },
      );
      await chain.mine();
    } finally {
      await chain.provider.send('evm_setAutomine', [true]);
    }
    const failed = await until(answer.body.command_id, 'failed');
    expect(failed.reason).toMatch(
      /^reverted on chain: InvalidStatus: the transfer is not pending on chain .* \(tx 0x[0-9a-f]{64}\)$/,
    );
    expect(failed.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await statusOf(locked.out.transferId)).toBe(STATUS.confirmed);
  });

  it('lets one relay per wallet send; a second one stands by and takes over when the first stops', async () => {
    const standby = await startTestRelay(
      db,
      relayTestConfig({ rpc: chain.rpcUrl, contractAddr: chain.contracts.otmoic }),
    );
    await standby.submitter.tick();
    expect(standby.submitter.state.active).toBe(false);
    await relay.close();
    relay = standby; // afterAll and the next test use the survivor
    await relay.submitter.tick();
    expect(relay.submitter.state.active).toBe(true);
  });

  it('refunds a side after R on behalf of its sender', async () => {
    const locked = await lock();
    await moveTo(locked.times.R + 1);
    const answer = await relay.post('/behalf/refund_out', behalfBody(locked.out, 'command_transfer_refund'));
    await until(answer.body.command_id, 'confirmed');
    expect(await statusOf(locked.out.transferId)).toBe(3n);
  });
});
