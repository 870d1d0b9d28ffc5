/**
 * The sender judged "window closing" on the block header it read at the start of its pass. Whatever happened
 * afterwards in the pass (a slow estimate: one endpoint timing out after rpcTimeoutMs before the fallback
 * answers, or the other jobs of the batch) did not count: a call was still signed and broadcast with the chain
 * past `end - windowMarginSeconds`, even at the window's last second, where no block can include it in time,
 * and the relay wallet paid for a call certain to revert. The chain is now asked again just before signing.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { lockSwap } from '../../shared/devnet/swap-scenarios.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { relayMigrationSets } from './migrations.js';
import { behalfBody, RELAY_DEV_KEY, relayTestConfig, startTestRelay } from './test-harness.js';

type Relay = Awaited<ReturnType<typeof startTestRelay>>;

/** A JSON-RPC proxy whose eth_estimateGas answer is held until `onEstimate` has run (a slow endpoint). */
async function slowEstimateProxy(target: string) {
  const state: { onEstimate?: () => Promise<void> } = {};
  const server = createServer((request, response) => {
    void (async () => {
      let text = '';
      for await (const chunk of request) text += chunk;
      const upstream = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
      });
      const answer = await upstream.text();
      const parsed = JSON.parse(text) as { method?: string };
      if (!Array.isArray(parsed) && parsed.method === 'eth_estimateGas' && state.onEstimate) {
        const hook = state.onEstimate;
        state.onEstimate = undefined;
        await hook();
      }
      response.statusCode = upstream.status;
      response.setHeader('content-type', 'application/json');
      response.end(answer);
    })().catch((error: unknown) => {
      response.statusCode = 502;
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the window-closing guard at signing time', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let relay: Relay | undefined;
  let proxy: Awaited<ReturnType<typeof slowEstimateProxy>> | undefined;
  const RELAY_ADDRESS = new Wallet(RELAY_DEV_KEY).address;

  beforeAll(async () => {
    [db, devnet] = await Promise.all([
      createTestDatabase(relayMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
    ]);
    chain = devnet.chain(97);
  });
  afterAll(async () => {
    await chain?.provider.send('evm_setAutomine', [true]).catch(() => undefined);
    await relay?.close();
    await proxy?.close();
    await devnet?.stop();
    await db?.drop();
  });

  it('signs nothing once the chain is inside the last windowMarginSeconds, even when the pass was slow', async () => {
    proxy = await slowEstimateProxy(chain.rpcUrl);
    relay = await startTestRelay(
      db,
      relayTestConfig({
        rpc: proxy.url,
        contractAddr: chain.contracts.otmoic,
        acceptChecks: true,
        windowMarginSeconds: 5,
      }),
    );
    const locked = await lockSwap({ src: chain, dst: chain, srcSystemChainId: 9006, dstSystemChainId: 9006 });
    const { T, E, Tol } = locked.times;
    const start = T + 3 * E + Tol;
    const end = T + 3 * E + 2 * Tol;
    const accepted = await relay.post(
      '/behalf/confirm_in',
      behalfBody(locked.in, 'command_transfer_confirm', locked.preimage),
    );
    expect(accepted.status).toBe(200);
    const id = accepted.body.command_id as string;
    const command = async () => (await relay!.get(`/behalf/commands/${id}`)).body.command;
    await waitFor(async () => (await command()).status === 'scheduled', 'scheduled', 20_000);
    const sentBefore = await chain.provider.getTransactionCount(RELAY_ADDRESS);

    // While the estimate is on its way (an endpoint that times out, then the fallback), the chain reaches the
    // window's last second: from here no block can include the call inside the window.
    proxy.state.onEstimate = async () => {
      await chain.setNextBlockTimestamp(end);
      await chain.mine();
    };
    await chain.provider.send('evm_setAutomine', [false]);
    await chain.setNextBlockTimestamp(start);
    await chain.mine();
    await waitFor(
      async () => ['sent', 'failed'].includes((await command()).status),
      'the sender decided',
      20_000,
    );
    await chain.mine(); // the next block, at end + 1 or later
    await chain.provider.send('evm_setAutomine', [true]);
    await waitFor(async () => (await command()).status === 'failed', 'failed', 20_000);
    const failed = await command();

    // The chain was at `end` (inside the 5 s margin) before anything was signed: nothing is sent. (Signed on
    // the pass's head, the call was mined after the window, reverted, and its gas was paid.)
    expect({
      sent: (await chain.provider.getTransactionCount(RELAY_ADDRESS)) - sentBefore,
      paid_failures: failed.paid_failures,
      reason: failed.reason,
    }).toEqual({ sent: 0, paid_failures: 0, reason: expect.stringMatching(/^window clos/) });
  });
});
