/**
 * The Agent end to end on the devnet, through every service: a complaint made exactly as the SDK makes it is
 * posted to the Agent, which submits it from its own wallet; the SubmitComplaint event of that transaction
 * reaches the Classifier through our chain client and the Connector, and its verdict shows in Points'
 * `GET /complaint?bid=`. The Agent asks DID ownership of the DID support service (the production path).
 */
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../services/agent/index.js';
import { agentMigrations } from '../../services/agent/migrations.js';
import { agentTestConfig, sdkBody, type SdkComplaint } from '../../services/agent/test-harness.js';
import { startPoints } from '../../services/points/index.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import { pointTestConfig } from '../../services/points/test-harness.js';
import {
  startRelayAdminStandIn,
  type RelayAdminStandIn,
} from '../../services/stand-ins/relay-admin/server.js';
import { bidIdOf, lpIdOf, registerDids, signAgreement, userDid } from '../../shared/devnet/agreements.js';
import { complaintOfAgreement } from '../../shared/otmoic/agreement.js';
import { senderMigrations } from '../../shared/sender/nonces.js';
import { DST, E, SRC, Tol, startPipeline, type Pipeline } from '../support/pipeline.js';
import { waitFor } from '../support/wait.js';

describe('a complaint through the Agent, the chain client, the Connector, the Classifier and Points', () => {
  let pipeline: Pipeline;
  let relayAdmin: RelayAdminStandIn;
  let points: Awaited<ReturnType<typeof startPoints>>;
  let agent: Awaited<ReturnType<typeof startAgent>>;
  const src = () => pipeline.src();
  const dst = () => pipeline.dst();

  beforeAll(async () => {
    pipeline = await startPipeline({
      extraMigrations: [pointsMigrations, senderMigrations, agentMigrations],
    });
    const { ctx, did } = pipeline;
    relayAdmin = await startRelayAdminStandIn();
    points = await startPoints(
      ctx,
      pointTestConfig({ relayAdminUrl: relayAdmin.url, didSupportUrl: did.url }),
    );
    agent = await startAgent(
      ctx,
      agentTestConfig({
        rpc: dst().rpcUrl,
        contractAddr: dst().contracts.reputation,
        chainId: undefined,
        didSource: 'didSupport',
        didSupportUrl: did.url,
      }),
    );
    // Its chain id is read from agent.rpc in the background.
    await waitFor(() => agent.submitter() !== undefined, 'the Agent bound to its chain');
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await points?.stop();
    await relayAdmin?.close();
    await pipeline?.stop();
  });

  it('case 1: the LP complains through the Agent that the user never locked; Points shows the verdict', async () => {
    const user = src().accounts[3]!;
    const lp = src().accounts[2]!;
    await registerDids(dst(), { [lpIdOf(lp.address)]: lp.address, [userDid(user.address)]: user.address });
    const T = Math.max(await src().latestTimestamp(), await dst().latestTimestamp()) + 10;
    const agreement = signAgreement(
      {
        srcChainId: BigInt(SRC.system),
        srcAddress: user.address,
        srcToken: '0x0000000000000000000000000000000000000000',
        srcAmount: '1000',
        dstChainId: BigInt(DST.system),
        dstAddress: user.address,
        dstToken: '0x0000000000000000000000000000000000000000',
        dstAmount: '990',
        dstNativeAmount: '0',
        requestor: user.address,
        lpId: lpIdOf(lp.address),
        agreementReachedTime: BigInt(T),
        expectedSingleStepTime: BigInt(E),
        tolerantSingleStepTime: BigInt(Tol),
        earliestRefundTime: BigInt(T + 3 * E + 3 * Tol + 60),
      },
      { userKey: user.privateKey, lpKey: lp.privateKey },
      { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm },
    );
    // The SDK's form: uint64 members as JSON numbers, uint256 addresses as decimal strings.
    const c = complaintOfAgreement(agreement);
    const complaint: SdkComplaint = {
      ...c,
      srcChainId: Number(c.srcChainId),
      dstChainId: Number(c.dstChainId),
      expectedSingleStepTime: Number(c.expectedSingleStepTime),
      tolerantSingleStepTime: Number(c.tolerantSingleStepTime),
      earliestRefundTime: Number(c.earliestRefundTime),
      agreementReachedTime: Number(c.agreementReachedTime),
    };
    const body = await sdkBody(new Wallet(lp.privateKey), complaint, agreement.lpId, {
      chainId: DST.evm,
      reputation: dst().contracts.reputation,
    });
    const response = await fetch(`http://127.0.0.1:${agent.port}/submit-complaint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const accepted = (await response.json()) as Record<string, any>;
    expect(accepted).toMatchObject({ code: 0, status: 'accepted', bid_id: bidIdOf(agreement) });
    const bid = accepted.bid_id as string;

    let txHash = '';
    await waitFor(
      async () => {
        const status = (await (
          await fetch(`http://127.0.0.1:${agent.port}/complaint-status?bid=${bid}`)
        ).json()) as Record<string, any>;
        txHash = status.tx_hash;
        return status.status === 'confirmed';
      },
      'the Agent transaction confirmed',
      30_000,
    );

    // Both chains pass T+E: no TransferOut for this bid on the source chain.
    for (const chain of [src(), dst()]) {
      const now = await chain.latestTimestamp();
      if (T + E + 1 > now) await chain.setNextBlockTimestamp(T + E + 1);
      await chain.mine(7);
    }
    let answer: Record<string, any> = {};
    await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${points.port}/complaint?bid=${bid}`);
        answer = (await r.json()) as Record<string, any>;
        return answer.status === 'decided';
      },
      'the verdict in Points',
      90_000,
    );
    expect(answer.verdict).toMatchObject({
      case: 1,
      party: 'user',
      subject: agreement.requestor.toLowerCase(),
    });
    expect(answer.complaint).toMatchObject({
      valid: true,
      complainantParty: 'lp',
      complainant: agreement.lpId,
    });
    // The complaint Points saw on chain is the Agent's own transaction.
    expect(answer.complaints_on_chain).toEqual([
      expect.objectContaining({
        chain_id: DST.system,
        tx_hash: txHash.toLowerCase(),
        complainant: agreement.lpId,
      }),
    ]);
  }, 180_000);
});
