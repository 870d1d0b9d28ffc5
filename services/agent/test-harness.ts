/** Test support: one Agent in this process on a given database (postgres log as the bus). Not used in production. */
import { Contract, Wallet, type TypedDataField } from 'ethers';
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { complaintDomain, complaintTypedDataTypes } from '../../shared/chain/index.js';
import type { AgentConfig } from '../../shared/config/index.js';
import type { Pool } from '../../shared/db/pool.js';
import type { DevnetChain } from '../../shared/devnet/devnet.js';
import { createLogger, type Logger } from '../../shared/logging/logger.js';
import { reputationInterface } from '../../shared/otmoic/abi.js';
import { complaintOfAgreement, type SignedAgreement } from '../../shared/otmoic/agreement.js';
import { complaintCommands } from '../../topics/complaint.commands.js';
import { topicSpec } from '../../topics/envelope.js';
import { startAgent } from './index.js';

/** Hardhat account 1: the Agent wallet of config.toml and the tests. */
export const AGENT_DEV_KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';

export function agentTestConfig(overrides: Partial<AgentConfig> = {}): AgentConfig {
  return {
    port: 0,
    rpc: 'http://127.0.0.1:9',
    priv: AGENT_DEV_KEY,
    contractAddr: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    chainId: 97,
    rpcFallbacks: [],
    rpcTimeoutMs: 5_000,
    didSource: 'contract',
    blockTimeSeconds: 0.1,
    maxGasPriceWei: '200000000000',
    maxGasLimit: 1_000_000,
    confirmations: 1,
    bumpAfterBlocks: 3,
    maxRefusals: 3,
    maxPaidFailures: 2,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    domainRateLimit: { max: 100_000, windowMs: 60_000 },
    bodyLimit: 32_768,
    apiKeys: [],
    allowIps: [],
    corsOrigins: [],
    ...overrides,
  };
}

export async function startTestAgent(
  db: { pool: Pool; url: string },
  config: AgentConfig,
  log: Logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
  options: { didSupportUrl?: string; waitForChain?: boolean; swapChains?: ReadonlyMap<string, number> } = {},
) {
  const bus = new PostgresBus({
    pool: db.pool,
    connectionString: db.url,
    log,
    idlePollMs: 200,
    rebalanceMs: 200,
  });
  await bus.ensureTopics([topicSpec(complaintCommands, 4)]);
  const metrics = new Registry();
  const agent = await startAgent({ db: db.pool, bus, log, metrics }, config, options);
  // Without agent.chainId the Agent reads it from the RPC in the background: wait for it (unless told not to).
  for (let waited = 0; options.waitForChain !== false && agent.submitter() === undefined; waited += 20) {
    if (waited > 30_000) throw new Error('the Agent did not learn its chain id');
    await new Promise((r) => setTimeout(r, 20));
  }
  const base = `http://127.0.0.1:${agent.port}`;
  return {
    ...agent,
    bus,
    base,
    metrics,
    async post(path: string, body: unknown, headers: Record<string, string> = {}) {
      const response = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    },
    async get(path: string) {
      const response = await fetch(`${base}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    },
    async close() {
      await agent.stop();
      await bus.close();
    },
  };
}

/** A complaint as the SDK builds it: uint64 members as JSON numbers, uint256 addresses as decimal strings. */
export interface SdkComplaint {
  srcChainId: number;
  srcAddress: string;
  srcToken: string;
  dstChainId: number;
  dstAddress: string;
  dstToken: string;
  srcAmount: string;
  dstAmount: string;
  dstNativeAmount: string;
  requestor: string;
  lpId: string;
  expectedSingleStepTime: number;
  tolerantSingleStepTime: number;
  earliestRefundTime: number;
  agreementReachedTime: number;
  userSign: string;
  lpSign: string;
}

let counter = 0;
/**
 * The user of the sample complaints: the devnet's account 5, the complainant of the Agent's tests (the Agent
 * takes a complaint only from the swap's user or LP).
 */
export const SAMPLE_REQUESTOR = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
/** A distinct complaint (its agreementReachedTime and amounts make a new bid each call). */
export function sampleComplaint(overrides: Partial<SdkComplaint> = {}): SdkComplaint {
  counter += 1;
  const T = 1_900_000_000 + counter * 1_000 + Math.floor(Math.random() * 1_000);
  return {
    srcChainId: 9006,
    // As the SDK sends them: toHexAddress(address), the EVM address itself.
    srcAddress: SAMPLE_REQUESTOR,
    srcToken: '0x0000000000000000000000000000000000000000',
    dstChainId: 614,
    dstAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    dstToken: '0x0000000000000000000000000000000000000000',
    srcAmount: `${1000 + counter}`,
    dstAmount: '990',
    dstNativeAmount: '0',
    requestor: SAMPLE_REQUESTOR,
    lpId: 'lp-3c44cddd',
    expectedSingleStepTime: 60,
    tolerantSingleStepTime: 120,
    earliestRefundTime: T + 600,
    agreementReachedTime: T,
    userSign: `0x${'11'.repeat(65)}`,
    lpSign: `0x${'22'.repeat(65)}`,
    ...overrides,
  };
}

/** The SDK's form of a signed agreement: uint64 members as JSON numbers, uint256 addresses as decimal strings. */
export function sdkComplaintOf(agreement: SignedAgreement): SdkComplaint {
  const c = complaintOfAgreement(agreement);
  return {
    ...c,
    srcChainId: Number(c.srcChainId),
    dstChainId: Number(c.dstChainId),
    expectedSingleStepTime: Number(c.expectedSingleStepTime),
    tolerantSingleStepTime: Number(c.tolerantSingleStepTime),
    earliestRefundTime: Number(c.earliestRefundTime),
    agreementReachedTime: Number(c.agreementReachedTime),
  };
}

/** The SDK's body: ethers signTypedData over the Complaint, then `{params: [complaint, signature, domain]}`. */
export async function sdkBody(
  signer: Wallet,
  complaint: SdkComplaint,
  domain: string,
  chain: { chainId: number; reputation: string },
): Promise<{ params: [SdkComplaint, string, string] }> {
  const types: Record<string, TypedDataField[]> = complaintTypedDataTypes();
  const signature = await signer.signTypedData(
    complaintDomain(chain.chainId, chain.reputation),
    types,
    complaint,
  );
  return { params: [complaint, signature, domain] };
}

/** SubmitComplaint logs of the devnet chain's Reputation contract, decoded to bid ids. */
export async function submitComplaintLogs(chain: DevnetChain): Promise<{ bidId: string; txHash: string }[]> {
  const topic = reputationInterface.getEvent('SubmitComplaint')!.topicHash;
  const logs = await chain.provider.getLogs({
    address: chain.contracts.reputation,
    topics: [topic],
    fromBlock: 0,
    toBlock: 'latest',
  });
  return logs.map((log) => ({
    bidId: (reputationInterface.parseLog(log)!.args[0] as string).toLowerCase(),
    txHash: log.transactionHash,
  }));
}

export async function hasComplaintOnChain(chain: DevnetChain, bidId: string): Promise<boolean> {
  const reputation = new Contract(chain.contracts.reputation, reputationInterface, chain.provider);
  return (await reputation.getFunction('hasComplaint')(bidId)) as boolean;
}
