/**
 * A relay whose wallet is a party of the swap (an operator who gives the relay the LP's key, as the original
 * chain client signed behalf commands with the LP wallet named by sender_wallet_name). The contract tells the
 * parties by `msg.sender == _sender`: the relay's confirm is the party's own, allowed from the agreement until
 * the party's deadline, and the late third-party window is refused to it (ExpiredOp). The relay used to wait
 * for that late window, and the command failed there: the swap was never confirmed through it.
 */
import { Contract } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { databaseForSuite } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, relayTestConfig, startTestRelay } from './test-harness.js';

/** Hardhat account 3 is the relay's wallet (RELAY_DEV_KEY). */
const RELAY_ACCOUNT = 3;

describe('relay wallet that is a party of the swap', () => {
  const db = databaseForSuite(relayMigrationSets);
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Awaited<ReturnType<typeof startTestRelay>>;
  beforeAll(async () => {
    devnet = await startDevnet({ chains: [{ chainId: 97 }] });
    chain = devnet.chain(97);
    relay = await startTestRelay(
      db,
      relayTestConfig({
        rpc: chain.rpcUrl,
        contractAddr: chain.contracts.otmoic,
        acceptChecks: true,
        senderWallets: { PartyWallet: chain.accounts[RELAY_ACCOUNT]!.address },
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await relay?.close();
    await devnet?.stop();
  });

  const settled = async (id: string) => {
    const command = async () => (await relay.get(`/behalf/commands/${id}`)).body.command;
    await waitFor(async () => ['confirmed', 'failed'].includes((await command()).status), 'settled', 30_000);
    return command();
  };
  const chainStatus = async (transferId: string) => {
    const swap = new Contract(chain.contracts.otmoic, swapInterface, chain.provider);
    return ((await swap.getFunction('swapStatus')(transferId)) as [bigint])[0];
  };

  it.each([
    ['confirm_in', 'lp', { user: 1, lp: RELAY_ACCOUNT }],
    ['confirm_out', 'user', { user: RELAY_ACCOUNT, lp: 2 }],
  ] as const)(
    '%s as the %s: sent at once, in the party window, and confirmed',
    async (action, party, parties) => {
      const locked = await lockSwap({
        src: chain,
        dst: chain,
        srcSystemChainId: 9006,
        dstSystemChainId: 9006,
        parties,
      });
      const { T, E, Tol } = locked.times;
      const side = action === 'confirm_in' ? locked.in : locked.out;
      const answer = await relay.post(
        `/behalf/${action}`,
        behalfBody(side, 'command_transfer_confirm', locked.preimage, {
          sender: undefined,
          sender_wallet_name: 'PartyWallet',
        }),
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const command = await settled(answer.body.command_id as string);
      expect(command.window).toEqual(
        party === 'lp'
          ? { op: 'lp confirm in', start: T, end: T + 3 * E + Tol }
          : { op: 'user confirm out', start: T, end: T + 3 * E },
      );
      expect({ status: command.status, reason: command.reason }).toEqual({
        status: 'confirmed',
        reason: null,
      });
      expect(await chainStatus(side.transferId)).toBe(2n);
      // Long before the third-party window: the chain is still within the party's own time.
      expect(await chain.latestTimestamp()).toBeLessThan(T + 3 * E);
    },
    120_000,
  );
});
