import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDids } from '../../shared/devnet/agreements.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { callFails } from '../../shared/sender/broadcast-errors.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { startRpcProxy, type RpcProxy } from '../../test/support/rpc-proxy.js';
import { waitFor } from '../../test/support/wait.js';
import { agentMigrationSets } from './migrations.js';
import {
  AGENT_DEV_KEY,
  agentTestConfig,
  hasComplaintOnChain,
  sampleComplaint,
  sdkBody,
  startTestAgent,
} from './test-harness.js';

/**
 * An endpoint's hiccups are not the chain refusing the complaint. ethers labels every failed eth_estimateGas
 * CALL_EXCEPTION, and endpoints answer rate limits with texts of their own: one of these failed an accepted
 * complaint for good, and three cancelled its transaction with a self-transfer the wallet paid for, charged to
 * the complainant's domain.
 */
describe('the Agent behind a flaky RPC endpoint', () => {
  let devnet: Devnet;
  let chain: DevnetChain;
  let db: TestDatabase;
  let proxy: RpcProxy;
  let agent: Awaited<ReturnType<typeof startTestAgent>>;
  let complainant: Wallet;
  const DOMAIN = 'flaky-rpc.devnet';
  const agentAddress = new Wallet(AGENT_DEV_KEY).address;
  /** Failures still to answer, by method, each with its node text. */
  const failures: Record<string, Array<{ code: number; message: string }>> = {};

  beforeAll(async () => {
    [devnet, db] = await Promise.all([
      startDevnet({ chains: [{ chainId: 97 }] }),
      createTestDatabase(agentMigrationSets),
    ]);
    chain = devnet.chain(97);
    complainant = new Wallet(chain.accounts[5]!.privateKey);
    await registerDids(chain, { [DOMAIN]: complainant.address });
    proxy = await startRpcProxy(chain.rpcUrl, '/v3/key');
    proxy.fail = (method) => failures[method]?.shift();
    agent = await startTestAgent(
      db,
      agentTestConfig({ rpc: proxy.url, contractAddr: chain.contracts.reputation, chainId: 97 }),
    );
  }, 120_000);
  afterAll(async () => {
    await agent?.close();
    await proxy?.close();
    await devnet?.stop();
    await db?.drop();
  });

  const submitAndSettle = async () => {
    const body = await sdkBody(complainant, sampleComplaint(), DOMAIN, {
      chainId: chain.chainId,
      reputation: chain.contracts.reputation,
    });
    const answer = await agent.post('/submit-complaint', body);
    expect(answer.body.code).toBe(0);
    const bid = answer.body.bid_id as string;
    await waitFor(
      async () =>
        ['confirmed', 'failed'].includes((await agent.get(`/complaint-status?bid=${bid}`)).body.status),
      'the complaint settled',
      30_000,
    );
    return { bid, status: (await agent.get(`/complaint-status?bid=${bid}`)).body };
  };

  it('estimates again after a node error at the estimate, and sends the complaint', async () => {
    failures.eth_estimateGas = [{ code: -32000, message: 'header not found' }];
    const { bid, status } = await submitAndSettle();
    expect(status).toMatchObject({ status: 'confirmed', paid_failures: 0 });
    expect(failures.eth_estimateGas).toEqual([]);
    expect(await hasComplaintOnChain(chain, bid)).toBe(true);
  }, 60_000);

  it('keeps broadcasting through an endpoint rate limit instead of cancelling the call', async () => {
    const sent = await chain.provider.getTransactionCount(agentAddress, 'latest');
    failures.eth_sendRawTransaction = [
      { code: -32005, message: 'project ID request rate exceeded' },
      { code: 429, message: 'Your app has exceeded its compute units per second capacity' },
      { code: -32005, message: 'project ID request rate exceeded' },
      { code: -32005, message: 'project ID request rate exceeded' },
    ];
    const { bid, status } = await submitAndSettle();
    expect(status).toMatchObject({ status: 'confirmed', paid_failures: 0 });
    expect(failures.eth_sendRawTransaction).toEqual([]);
    expect(await hasComplaintOnChain(chain, bid)).toBe(true);
    // One transaction: the complaint, no self-transfer.
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(sent + 1);
  }, 60_000);
});

describe('callFails: whether a failed estimate is the call failing', () => {
  const estimateError = (message: string, data: string | null = null) => ({
    code: 'CALL_EXCEPTION',
    data,
    info: { error: { code: -32000, message } },
  });

  it('is the call failing for revert data or a node text of a revert or out of gas', () => {
    expect(callFails(estimateError('execution reverted: nope', '0x08c379a0'))).toBe(true);
    for (const text of [
      'execution reverted',
      'gas required exceeds allowance (1000000)',
      'Error: Transaction reverted without a reason string',
      'out of gas',
      'VM Exception while processing transaction: revert',
    ])
      expect(callFails(estimateError(text)), text).toBe(true);
  });

  it('is not for a node error ethers labels so, nor for anything but a CALL_EXCEPTION', () => {
    for (const text of ['header not found', 'project ID request rate exceeded', 'internal error'])
      expect(callFails(estimateError(text)), text).toBe(false);
    expect(callFails({ code: 'NETWORK_ERROR' })).toBe(false);
    expect(callFails(undefined)).toBe(false);
  });
});
