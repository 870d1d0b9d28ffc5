/**
 * The Agent end to end on the devnet, through every service: a complaint made exactly as the SDK makes it is
 * posted to the Agent, which submits it from its own wallet; the SubmitComplaint event of that transaction
 * reaches the Classifier through our chain client and the Connector, and its verdict shows in Points'
 * `GET /complaint?bid=`. The Agent asks DID ownership of the DID support service (the production path).
 */
import { Wallet } from 'ethers';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent } from '../../services/agent/index.js';
import { agentMigrations } from '../../services/agent/migrations.js';
import { agentTestConfig, sdkBody, type SdkComplaint } from '../../services/agent/test-harness.js';
import { startChainClient } from '../../services/chain-client/index.js';
import { chainClientMigrations } from '../../services/chain-client/migrations.js';
import { createClassifier, subscribeEngine, watchedChains } from '../../services/classifier/index.js';
import { classifierMigrations } from '../../services/classifier/migrations.js';
import { classifierTables } from '../../services/classifier/tables.js';
import { connectorService } from '../../services/connector/index.js';
import { connectorMigrations } from '../../services/connector/migrations.js';
import { startPoints } from '../../services/points/index.js';
import { pointsMigrations } from '../../services/points/migrations.js';
import { pointTestConfig } from '../../services/points/test-harness.js';
import { startDidSupport, type DidSupport } from '../../services/stand-ins/did-support/index.js';
import {
  startRelayAdminStandIn,
  type RelayAdminStandIn,
} from '../../services/stand-ins/relay-admin/server.js';
import type { Subscription } from '../../shared/bus/port.js';
import { bidIdOf, lpIdOf, registerDids, signAgreement, userDid } from '../../shared/devnet/agreements.js';
import { startDevnet, type Devnet } from '../../shared/devnet/devnet.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { complaintOfAgreement } from '../../shared/otmoic/agreement.js';
import type { RunningService } from '../../shared/runtime/service.js';
import { senderMigrations } from '../../shared/sender/nonces.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { serviceContext } from '../support/service-context.js';
import { waitFor } from '../support/wait.js';

const SRC = { evm: 97, system: '9006' };
const DST = { evm: 11155420, system: '614' };
const E = 60;
const Tol = 120;

describe('a complaint through the Agent, the chain client, the Connector, the Classifier and Points', () => {
  let devnet: Devnet;
  let db: TestDatabase;
  let did: DidSupport;
  let relayAdmin: RelayAdminStandIn;
  let ctx: Awaited<ReturnType<typeof serviceContext>>;
  let connector: RunningService;
  let subscription: Subscription;
  let stopDid: () => void;
  let points: Awaited<ReturnType<typeof startPoints>>;
  let agent: Awaited<ReturnType<typeof startAgent>>;
  const clients: Array<{ stop(): Promise<void> }> = [];
  const src = () => devnet.chain(SRC.evm);
  const dst = () => devnet.chain(DST.evm);

  beforeAll(async () => {
    [devnet, db] = await Promise.all([
      startDevnet({ chains: [{ chainId: SRC.evm }, { chainId: DST.evm }] }),
      createTestDatabase([
        chainClientMigrations,
        connectorMigrations,
        classifierMigrations,
        pointsMigrations,
        senderMigrations,
        agentMigrations,
      ]),
    ]);
    did = await startDidSupport({ rpcUrl: dst().rpcUrl, registry: dst().contracts.reputation });
    relayAdmin = await startRelayAdminStandIn();
    const ports: number[] = [];
    for (const { evm, system } of [SRC, DST]) {
      const chain = devnet.chain(evm);
      const client = await startChainClient(
        { db: db.pool, log: createLogger({ level: 'silent' }), metrics: new Registry() },
        {
          port: 0,
          rpc: chain.rpcUrl,
          systemChainId: system,
          contractAddr: chain.contracts.otmoic,
          reputationContractAddr: chain.contracts.reputation,
          confirmations: 0,
          startBlock: 0,
          pollIntervalMs: 100,
          deliveryAttempts: 10,
        },
      );
      clients.push(client);
      ports.push(client.port);
    }
    const connectorPort = await freePort();
    const toml = [
      `[connector]\nport = ${connectorPort}\ncallbackUrl = "http://127.0.0.1:${connectorPort}/callback"\nreregisterIntervalMs = 2000\nbackfillRetryMs = 3000`,
      `[classifier]\nport = ${await freePort()}\ndidSupportUrl = "${did.url}"\ndidCacheMs = 1000`,
      `[rpc-urls]\n${SRC.evm} = "${src().rpcUrl}"\n${DST.evm} = "${dst().rpcUrl}"`,
      ...[SRC, DST].map(
        (c, i) =>
          `[[chainClients]]\nurl = "http://127.0.0.1:${ports[i]}"\nhistoryUrl = "http://127.0.0.1:${ports[i]}"\ninitBlockHeight = 0\nchainId = "${c.system}"\nnativeChainId = "${c.evm}"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "${devnet.chain(c.evm).contracts.otmoic}"\nreputationContractAddr = "${devnet.chain(c.evm).contracts.reputation}"`,
      ),
    ].join('\n\n');
    ctx = await serviceContext(db, toml, ['connector', 'classifier', 'chainClients', 'rpc-urls']);
    connector = await connectorService.start(ctx);
    const parts = createClassifier({
      pool: db.pool,
      tables: classifierTables(),
      group: 'classifier',
      chains: watchedChains(ctx.config.chainClients!),
      didSupportUrl: did.url,
      didCacheMs: 1_000,
      bus: ctx.bus,
      log: ctx.log,
    });
    stopDid = () => parts.did.stop();
    subscription = await subscribeEngine(ctx.bus, parts.engine, 'classifier');
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
    await subscription?.stop();
    stopDid?.();
    await connector?.stop();
    await ctx?.close();
    for (const client of clients) await client.stop();
    await did?.stop();
    await relayAdmin?.close();
    await devnet?.stop();
    await db?.drop();
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
