/** Test support: payload builders, a tiny fake DID support service, and Points on a test database. Not used in production. */
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { Registry } from 'prom-client';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { PointConfig } from '../../shared/config/index.js';
import type { Pool } from '../../shared/db/pool.js';
import { createLogger } from '../../shared/logging/logger.js';
import type { ChainEvent } from '../../topics/chain.events.js';
import { chainEventId, chainEvents } from '../../topics/chain.events.js';
import { encode, envelope, topicSpec, type TopicDefinition } from '../../topics/envelope.js';
import { allTopics } from '../../topics/index.js';
import { swapVerdicts, verdictId, type SwapVerdict } from '../../topics/swap.verdicts.js';
import { violationId, violations, type Violation } from '../../topics/violations.js';
import { startPoints, type PointsStartOptions } from './index.js';

export const hex32 = (n: number | bigint, salt = 0): string =>
  '0x' + (BigInt(n) * 1_000_003n + BigInt(salt)).toString(16).padStart(64, '0');
export const userAddress = (n: number): string => '0x' + n.toString(16).padStart(40, '0');

export function violationPayload(input: {
  bid: string;
  party: 'user' | 'lp';
  subject: string;
  blockTime: number;
  case?: number;
}): Violation {
  const c = input.case ?? (input.party === 'lp' ? 3 : 5);
  return {
    party: input.party,
    subject: input.subject,
    case: c,
    bidId: input.bid,
    srcChainId: '9006',
    dstChainId: '614',
    chainId: input.party === 'lp' ? '614' : '9006',
    transactions: [
      {
        step: 'transferOut',
        chainId: '9006',
        txHash: hex32(input.blockTime, 7),
        blockTime: input.blockTime - 600,
      },
    ],
    blockTime: input.blockTime,
    rule: `case ${c}: test rule`,
  };
}

export function verdictPayload(input: {
  bid: string;
  lpId: string;
  user?: string;
  outcome: SwapVerdict['outcome'];
  party?: 'user' | 'lp' | null;
  case?: number | null;
  blockTime: number;
  responseTimeSeconds?: number | null;
  complaint?: SwapVerdict['complaint'];
}): SwapVerdict {
  const party = input.party ?? null;
  return {
    bidId: input.bid,
    srcChainId: '9006',
    dstChainId: '614',
    transferOutId: hex32(input.blockTime, 1),
    transferInId: input.outcome === 'normal' ? hex32(input.blockTime, 2) : null,
    user: input.user ?? userAddress(1),
    lpId: input.lpId,
    outcome: input.outcome,
    case: input.case ?? null,
    party,
    subject: party === 'lp' ? input.lpId : party === 'user' ? (input.user ?? userAddress(1)) : null,
    rule: input.outcome === 'normal' ? 'normal: all four steps in time' : 'test rule',
    blockTime: input.blockTime,
    decidedOn: '614',
    responseTimeSeconds: input.outcome === 'normal' ? (input.responseTimeSeconds ?? 30) : null,
    transactions: [
      {
        step: 'transferOut',
        chainId: '9006',
        txHash: hex32(input.blockTime, 3),
        blockTime: input.blockTime - 100,
      },
    ],
    complaint: input.complaint ?? null,
    evidence: { userConsent: true, lpConsent: true, lpSigner: null, didNames: {} },
  };
}

export function complaintEvent(input: {
  bid: string;
  blockTime: number;
  agreementReachedTime: number;
  logIndex?: number;
}): ChainEvent {
  return {
    kind: 'Complaint',
    chainId: '614',
    contract: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    blockNumber: 100,
    blockTimestamp: input.blockTime,
    txHash: hex32(input.blockTime, 9),
    logIndex: input.logIndex ?? 0,
    txFrom: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    bidId: input.bid,
    complainant: 'alice.example',
    complaint: {
      srcChainId: '9006',
      dstChainId: '614',
      requestor: userAddress(1),
      lpId: 'lp-1',
      agreementReachedTime: String(input.agreementReachedTime),
      expectedSingleStepTime: '60',
      tolerantSingleStepTime: '30',
      earliestRefundTime: String(input.agreementReachedTime + 600),
    },
  };
}

export async function publish<P>(
  bus: PostgresBus,
  topic: TopicDefinition<P>,
  payload: P,
  id: string,
): Promise<void> {
  await bus.publish(topic.name, [
    encode(topic, envelope(topic, payload, { occurredAt: 0, source: 'test', id })),
  ]);
}
export const publishViolation = (bus: PostgresBus, v: Violation) =>
  publish(bus, violations, v, violationId(v.bidId));
export const publishVerdict = (bus: PostgresBus, v: SwapVerdict) =>
  publish(bus, swapVerdicts, v, verdictId(v.bidId));
export const publishChainEvent = (bus: PostgresBus, e: ChainEvent) =>
  publish(bus, chainEvents, e, chainEventId(e));

/** A tiny fake of the DID support service's two routes, with names that tests change and a switch to fail. */
export async function startFakeDidSupport(owners: Map<string, string[]> = new Map(), port = 0) {
  const app = Fastify({ loggerInstance: createLogger({ level: 'silent' }) as FastifyBaseLogger });
  app.get('/find/owner/:address', async (request) => {
    const address = (request.params as { address: string }).address.toLowerCase();
    return { data: (owners.get(address) ?? []).map((name) => ({ name })) };
  });
  app.get('/find/name/:name', async (request) => {
    const name = (request.params as { name: string }).name;
    const owner = [...owners].find(([, names]) => names.includes(name))?.[0];
    return { data: owner ? [{ owner }] : [] };
  });
  await app.listen({ port, host: '127.0.0.1' });
  const bound = (app.server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${bound}`, port: bound, owners, close: () => app.close() };
}

export function pointTestConfig(overrides: Partial<PointConfig> = {}): PointConfig {
  return {
    port: 0,
    relayAdminUrl: 'http://127.0.0.1:9',
    didSupportUrl: 'http://127.0.0.1:9',
    refreshInterval: 60_000,
    windowDays: 90,
    lookBackDays: 90,
    lookupTimeoutMs: 500,
    // Tests and the fuzzer send far more than a client would; the rate-limit test sets its own.
    rateLimit: { max: 1_000_000, windowMs: 60_000 },
    queryTimeoutMs: 5_000,
    corsOrigins: [],
    ...overrides,
  };
}

/** Points in this process on a test database, with the postgres log as its bus. */
export async function startTestPoints(
  db: { pool: Pool; url: string },
  config: PointConfig,
  options: PointsStartOptions & { trustProxy?: string[] } = {},
) {
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const bus = new PostgresBus({
    pool: db.pool,
    connectionString: db.url,
    log,
    idlePollMs: 200,
    rebalanceMs: 200,
  });
  await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 4)));
  const metrics = new Registry();
  const http = { trustProxy: options.trustProxy ?? [] };
  const points = await startPoints(
    { db: db.pool, dbUrl: db.url, bus, log, metrics, config: { http } },
    config,
    options,
  );
  const base = `http://127.0.0.1:${points.port}`;
  return {
    ...points,
    bus,
    base,
    metrics,
    async get(path: string) {
      const response = await fetch(`${base}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    },
    async close() {
      await points.stop();
      await bus.close();
    },
  };
}
