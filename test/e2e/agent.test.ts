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
import { agentTestConfig, sdkBody, sdkComplaintOf } from '../../services/agent/test-harness.js';
import { startPoints } from '../../services/points/index.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import { pointTestConfig } from '../../services/points/test-harness.js';
import {
  startRelayAdminStandIn,
  type RelayAdminStandIn,
} from '../../services/stand-ins/relay-admin/server.js';
import { bidIdOf, lpIdOf, registerDids, signAgreement, userDid } from '../../shared/devnet/agreements.js';
import type { Agreement, SignedAgreement } from '../../shared/otmoic/agreement.js';
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
      // The chains' EVM ids: a complaint must prove its agreement before the Agent pays for it.
      {
        swapChains: new Map([
          [SRC.system, SRC.evm],
          [DST.system, DST.evm],
        ]),
      },
    );
    // Its chain id is read from agent.rpc in the background.
    await waitFor(() => agent.submitter() !== undefined, 'the Agent bound to its chain');
  }, 180_000);

  /** A native-token swap from SRC to DST between `user` and `lp`, agreed at T, for `amount`. */
  const termsOf = (user: string, lp: string, T: number, amount: bigint): Agreement => ({
    srcChainId: BigInt(SRC.system),
    srcAddress: user,
    srcToken: '0x0000000000000000000000000000000000000000',
    srcAmount: amount.toString(),
    dstChainId: BigInt(DST.system),
    dstAddress: user,
    dstToken: '0x0000000000000000000000000000000000000000',
    dstAmount: (amount - 10n).toString(),
    dstNativeAmount: '0',
    requestor: user,
    lpId: lpIdOf(lp),
    agreementReachedTime: BigInt(T),
    expectedSingleStepTime: BigInt(E),
    tolerantSingleStepTime: BigInt(Tol),
    earliestRefundTime: BigInt(T + 3 * E + 3 * Tol + 60),
  });
  /** The SDK's POST /submit-complaint of `agreement` by `signer` under `domain`. */
  const submit = async (signer: Wallet, agreement: SignedAgreement, domain: string) => {
    const body = await sdkBody(signer, sdkComplaintOf(agreement), domain, {
      chainId: DST.evm,
      reputation: dst().contracts.reputation,
    });
    const response = await fetch(`http://127.0.0.1:${agent.port}/submit-complaint`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  };

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
      termsOf(user.address, lp.address, T, 1000n),
      { userKey: user.privateKey, lpKey: lp.privateKey },
      { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm },
    );
    const accepted = (await submit(new Wallet(lp.privateKey), agreement, agreement.lpId)).body;
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

  it("refuses before gas a complaint whose lpSign the LP never made (the Classifier's case 0), and files the genuine one", async () => {
    const user = src().accounts[4]!;
    const lp = src().accounts[2]!;
    await registerDids(dst(), { [lpIdOf(lp.address)]: lp.address, [userDid(user.address)]: user.address });
    const T = Math.max(await src().latestTimestamp(), await dst().latestTimestamp()) + 1_000;
    const terms = termsOf(user.address, lp.address, T, 2000n);
    const chains = { srcEvmChainId: SRC.evm, dstEvmChainId: DST.evm };
    const post = async (keys: { userKey: string; lpKey: string }) => {
      const agreement = signAgreement(terms, keys, chains);
      return { ...(await submit(new Wallet(user.privateKey), agreement, userDid(user.address))), agreement };
    };
    // The user signs the LP's part too: its own signature it can make, not one of a key owning the LP id.
    const forged = await post({ userKey: user.privateKey, lpKey: user.privateKey });
    expect(forged.status).toBe(400);
    expect(forged.body).toEqual({
      code: 41026,
      message: expect.stringMatching(
        new RegExp(
          `^lpSign does not recover an address whose DID names include ${lpIdOf(lp.address)} under OtmoicSwap\\{chainId ${DST.evm}\\}`,
        ),
      ),
    });
    const bid = bidIdOf(forged.agreement);
    expect((await fetch(`http://127.0.0.1:${agent.port}/complaint-status?bid=${bid}`)).status).toBe(404);

    const genuine = await post({ userKey: user.privateKey, lpKey: lp.privateKey });
    expect(genuine.body).toMatchObject({ code: 0, status: 'accepted', bid_id: bidIdOf(genuine.agreement) });
  }, 60_000);
});
