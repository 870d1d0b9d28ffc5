/** Test support: one relay in this process on a given database (postgres log as the bus). Not used in production. */
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { RelayConfig } from '../../shared/config/index.js';
import type { Pool } from '../../shared/db/pool.js';
import { createLogger, type Logger } from '../../shared/logging/logger.js';
import { topicSpec } from '../../topics/envelope.js';
import { relayCommands } from '../../topics/relay.commands.js';
import { startRelay } from './index.js';

/** Hardhat account 3: the relay wallet of config.toml and the tests. */
export const RELAY_DEV_KEY = '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6';

export function relayTestConfig(overrides: Partial<RelayConfig> = {}): RelayConfig {
  return {
    port: 0,
    systemChainId: '9006',
    chainId: 97,
    rpc: 'http://127.0.0.1:9',
    contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    priv: RELAY_DEV_KEY,
    senderWallets: { RelayWallet: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' },
    blockTimeSeconds: 0.1,
    maxGasPriceWei: '200000000000',
    maxGasLimit: 300_000,
    rpcFallbacks: [],
    rpcTimeoutMs: 5_000,
    confirmations: 1,
    windowMarginSeconds: 5,
    bumpAfterBlocks: 3,
    maxRefusals: 3,
    maxPaidFailures: 2,
    maxWindowAheadSeconds: 7 * 24 * 3_600,
    senderLookbackBlocks: 10_000,
    apiKeys: [],
    allowIps: [],
    restrictReads: false,
    rateLimit: { max: 100_000, windowMs: 60_000 },
    errorsAsHttp200: false,
    reregisterSeconds: 60,
    // The golden vectors are commands for transfers no devnet holds: tests that send for real turn it on.
    acceptChecks: false,
    ...overrides,
  };
}

export async function startTestRelay(
  db: { pool: Pool; url: string },
  config: RelayConfig,
  log: Logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
) {
  const bus = new PostgresBus({
    pool: db.pool,
    connectionString: db.url,
    log,
    idlePollMs: 200,
    rebalanceMs: 200,
  });
  await bus.ensureTopics([topicSpec(relayCommands, 4)]);
  const metrics = new Registry();
  const relay = await startRelay({ db: db.pool, bus, log, metrics }, config).catch(async (error: unknown) => {
    await bus.close();
    throw error;
  });
  const base = `http://127.0.0.1:${relay.port}/evm-client-${config.systemChainId}/relay`;
  return {
    ...relay,
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
    async get(path: string, headers: Record<string, string> = {}) {
      const response = await fetch(`${base}${path}`, { headers });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    },
    async close() {
      await relay.stop();
      await bus.close();
    },
  };
}

/** A behalf body in the original clients' form, from a locked side of a swap. */
export function behalfBody(
  side: {
    sender: string;
    receiver: string;
    token: string;
    tokenAmount: bigint;
    ethAmount: bigint;
    hashlock: string;
    agreementReachedTime: number;
    expectedSingleStepTime: number;
    tolerantSingleStepTime: number;
    earliestRefundTime: number;
  },
  key: string,
  preimage?: string,
  extra: Record<string, unknown> = {},
  gasPrice = 'STANDARD',
) {
  return {
    transaction_type: 'LOCAL_PADDING',
    gas: { gas_price: gasPrice },
    [key]: {
      sender: side.sender,
      user_receiver_address: side.receiver,
      token: side.token,
      token_amount: side.tokenAmount.toString(),
      eth_amount: side.ethAmount.toString(),
      hash_lock: side.hashlock,
      agreement_reached_time: side.agreementReachedTime,
      expected_single_step_time: side.expectedSingleStepTime,
      tolerant_single_step_time: side.tolerantSingleStepTime,
      earliest_refund_time: side.earliestRefundTime,
      ...(preimage ? { preimage } : {}),
      ...extra,
    },
  };
}
