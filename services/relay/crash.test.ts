import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Contract, Transaction, Wallet, toQuantity } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { freePort } from '../../shared/net/free-port.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { isolatedEnv, spawnTs, type Spawned } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { RELAY_DEV_KEY } from './test-harness.js';

/**
 * Crash safety of the relay as its own process (`bin/start.ts relay`): SIGKILL between acceptance and
 * receipt, with the signed transaction already broadcast and then lost from the node's pool, loses no
 * command and sends no second transaction after the restart.
 */
describe('relay process killed between acceptance and receipt', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let dir: string;
  let port: number;
  const processes: Spawned[] = [];
  const relayAddress = new Wallet(RELAY_DEV_KEY).address;

  const start = async () => {
    const relay = spawnTs(
      'bin/start.ts',
      ['relay'],
      isolatedEnv({ DATABASE_URL: db.url, CONFIG_PATH: path.join(dir, 'config.toml'), LOG_LEVEL: 'info' }),
    );
    processes.push(relay);
    await relay.waitFor(/"msg":"ready"/, 60_000);
    return relay;
  };
  const row = async (id: string) =>
    (
      await db.pool.query<{
        status: string;
        tx_hash: string | null;
        nonce: string | null;
        txs: { hash: string; raw: string }[];
      }>('SELECT status, tx_hash, nonce, txs FROM relay_commands WHERE id = $1', [id])
    ).rows[0];

  beforeAll(async () => {
    [db, devnet, dir, port] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
      mkdtemp(path.join(os.tmpdir(), 'relay-crash-')),
      freePort(),
    ]);
    chain = devnet.chain(97);
    await writeFile(
      path.join(dir, 'config.toml'),
      [
        '[relay]',
        `port = ${port}`,
        'systemChainId = "9006"',
        'chainId = 97',
        `rpc = "${chain.rpcUrl}"`,
        `contractAddr = "${chain.contracts.otmoic}"`,
        `priv = "${RELAY_DEV_KEY}"`,
        'blockTimeSeconds = 0.2',
        'confirmations = 1',
        'bumpAfterBlocks = 1',
        '[log]',
        'level = "info"',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await devnet?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('re-broadcasts the one stored transaction after a SIGKILL and records its receipt', async () => {
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const { T, E, Tol } = locked.times;
    const first = await start();
    const body = {
      transaction_type: 'LOCAL_PADDING',
      gas: { gas_price: 'FAST' },
      command_transfer_out_confirm: {
        sender: locked.out.sender,
        user_receiver_address: locked.out.receiver,
        token: '0',
        token_amount: locked.out.tokenAmount.toString(),
        eth_amount: '0',
        hash_lock: locked.hashlock,
        preimage: locked.preimage,
        agreement_reached_time: T,
        expected_single_step_time: E,
        tolerant_single_step_time: Tol,
        earliest_refund_time: locked.times.R,
      },
    };
    const post = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/evm-client-9006/relay/behalf/confirm_out`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await response.json()) as { code: number; command_id: string };
    };
    const accepted = await post();
    expect(accepted.code).toBe(200);
    await waitFor(async () => (await row(accepted.command_id))?.status === 'scheduled', 'command scheduled');

    // Transactions now wait in the pool until the test mines: the relay is killed while its tx is unmined.
    await chain.provider.send('evm_setAutomine', [false]);
    await chain.setNextBlockTimestamp(T + 3 * E + 2 * Tol);
    await chain.mine();
    await waitFor(
      async () => (await row(accepted.command_id))?.status === 'sent',
      'transaction broadcast',
      20_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const stored = (await row(accepted.command_id))!;
    expect(stored.nonce).toBe('0');
    // The node loses it too (as a dropped or never-sent transaction would be).
    expect(await chain.provider.send('hardhat_dropTransaction', [stored.tx_hash])).toBe(true);
    expect(await chain.provider.getTransactionCount(relayAddress, 'pending')).toBe(0);

    const second = await start();
    // The same command again after the restart is still that one command.
    expect((await post()).command_id).toBe(accepted.command_id);
    await waitFor(
      async () => (await chain.provider.getTransactionCount(relayAddress, 'pending')) === 1,
      'the stored transaction re-broadcast',
      20_000,
    );
    await chain.provider.send('evm_setAutomine', [true]);
    await chain.mine();
    await waitFor(
      async () => (await row(accepted.command_id))?.status === 'confirmed',
      'command confirmed',
      20_000,
    );

    expect((await row(accepted.command_id))!.tx_hash).toBe(stored.tx_hash);
    expect(await chain.provider.getTransactionCount(relayAddress, 'latest')).toBe(1);
    const swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
    expect(((await swap.getFunction('swapStatus')(locked.out.transferId)) as [bigint])[0]).toBe(2n);
    const status = (await (
      await fetch(`http://127.0.0.1:${port}/evm-client-9006/relay/behalf/commands/${accepted.command_id}`)
    ).json()) as any;
    expect(status.command).toMatchObject({ status: 'confirmed', tx_hash: stored.tx_hash, nonce: 0 });
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    expect(second.output() + first.output()).not.toContain(RELAY_DEV_KEY.slice(2));
  });

  it('SIGKILL right after a replacement is stored still ends with one effective transaction', async () => {
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const { T, E, Tol } = locked.times;
    const nonce = await chain.provider.getTransactionCount(relayAddress, 'latest');
    const first = await start();
    const response = await fetch(`http://127.0.0.1:${port}/evm-client-9006/relay/behalf/confirm_in`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        transaction_type: 'LOCAL_PADDING',
        gas: { gas_price: 'SAFELOW' },
        command_transfer_in_confirm: {
          sender: locked.in.sender,
          user_receiver_address: locked.in.receiver,
          token: '0',
          token_amount: locked.in.tokenAmount.toString(),
          eth_amount: '0',
          hash_lock: locked.hashlock,
          preimage: locked.preimage,
          agreement_reached_time: T,
          expected_single_step_time: E,
          tolerant_single_step_time: Tol,
          earliest_refund_time: locked.times.R,
        },
      }),
    });
    const id = ((await response.json()) as { command_id: string }).command_id;
    await waitFor(async () => (await row(id))?.status === 'scheduled', 'command scheduled');

    await chain.provider.send('evm_setAutomine', [false]);
    try {
      await chain.setNextBlockTimestamp(T + 3 * E + Tol);
      await chain.mine();
      await waitFor(async () => (await row(id))?.status === 'sent', 'transaction broadcast', 20_000);
      const sent = Transaction.from((await row(id))!.txs[0]!.raw);
      // The next block asks more than the transaction offers: it stays unmined, and the relay speeds it up.
      await chain.provider.send('hardhat_setNextBlockBaseFeePerGas', [toQuantity(sent.maxFeePerGas! * 4n)]);
      await chain.mine();
      await waitFor(async () => (await row(id))!.txs.length >= 2, 'a replacement stored', 20_000);
      first.child.kill('SIGKILL');
      await first.exited;
      const stored = (await row(id))!;

      const second = await start();
      await waitFor(
        async () => (await chain.provider.getTransactionCount(relayAddress, 'pending')) === nonce + 1,
        'a transaction of the command in the pool',
        20_000,
      );
      await chain.mine();
      await chain.provider.send('evm_setAutomine', [true]);
      await waitFor(async () => (await row(id))?.status === 'confirmed', 'command confirmed', 20_000);
      const done = (await row(id))!;
      // One of the command's own transactions, at its one nonce; the nonce moved by exactly one.
      expect(done.txs.map((t) => t.hash)).toContain(done.tx_hash);
      expect(done.txs.slice(0, stored.txs.length).map((t) => t.hash)).toEqual(stored.txs.map((t) => t.hash));
      expect(done.nonce).toBe(String(nonce));
      expect(await chain.provider.getTransactionCount(relayAddress, 'latest')).toBe(nonce + 1);
      const swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
      expect(((await swap.getFunction('swapStatus')(locked.in.transferId)) as [bigint])[0]).toBe(2n);
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);
    } finally {
      await chain.provider.send('evm_setAutomine', [true]);
    }
  });
});
