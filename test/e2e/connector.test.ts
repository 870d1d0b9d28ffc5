import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChainClient } from '../../services/chain-client/index.js';
import { chainClientMigrations } from '../../services/chain-client/migrations.js';
import { connectorMigrations } from '../../services/connector/migrations.js';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { runSwap, type ExecutedSwap, type SwapScenario } from '../../shared/devnet/swap-scenarios.js';
import { fileComplaint } from '../../shared/devnet/complaints.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import {
  allTopics,
  chainEvents,
  decode,
  topicSpec,
  type Envelope,
  type ChainEvent,
} from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { spawnTs, type Spawned } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const CHAINS = [
  { evm: 97, system: '9006' },
  { evm: 11155420, system: '614' },
] as const;
const STEP_TYPE = {
  transferOut: 'TransferOut',
  transferIn: 'TransferIn',
  confirmOut: 'ConfirmOut',
  confirmIn: 'ConfirmIn',
} as const;

/**
 * The Connector as an operator runs it (its own process, `bin/start.ts connector`) between our chain clients
 * on a two-chain devnet and the postgres log: every event of every swap reaches chain.events exactly once
 * after dedupe, in block order per chain, with its block timestamp — through a hard kill and through a
 * downtime long enough that the chain clients give up and the gap must be filled through history.
 */
describe('connector end to end on the devnet', () => {
  let devnet: Devnet;
  let db: TestDatabase;
  let bus: PostgresBus;
  let dir: string;
  let connector: Spawned | undefined;
  let connectorPort: number;
  const clients: Array<{ stop(): Promise<void> }> = [];
  const swaps: ExecutedSwap[] = [];
  const received: Envelope<ChainEvent>[] = [];
  const log = createLogger({ level: 'silent' });

  const chain = (evm: number): DevnetChain => devnet.chain(evm);

  async function startConnector(): Promise<void> {
    connector = spawnTs('bin/start.ts', ['connector'], {
      ...process.env,
      CONFIG_PATH: path.join(dir, 'config.toml'),
      DATABASE_URL: db.url,
      LOG_LEVEL: 'info',
    });
    await connector.waitFor(/"msg":"ready"/, 60_000);
  }
  async function killConnector(): Promise<void> {
    connector?.child.kill('SIGKILL');
    await connector?.exited;
    connector = undefined;
  }

  async function swapsOf(count: number, scenarios: SwapScenario[] = ['honest']): Promise<void> {
    for (let i = 0; i < count; i++) {
      swaps.push(
        await runSwap(scenarios[i % scenarios.length]!, {
          src: chain(97),
          dst: chain(11155420),
          srcSystemChainId: 9006,
          dstSystemChainId: 614,
        }),
      );
    }
  }

  /** Mines past the next chunk boundary and waits until the connector stored that height on both chains. */
  async function settle(timeoutMs = 60_000, stream: 'swap' | 'reputation' = 'swap'): Promise<void> {
    for (const { evm, system } of CHAINS) {
      const c = chain(evm);
      await c.mine(10 - ((await c.provider.getBlockNumber()) % 5));
      const target = Math.floor((await c.provider.getBlockNumber()) / 5) * 5;
      await waitFor(
        async () => {
          const { rows } = await db.pool.query<{ height: string }>(
            `SELECT height FROM connector_heights WHERE chain_id = $1 AND stream = $2`,
            [system, stream],
          );
          return Number(rows[0]?.height ?? -1) >= target;
        },
        `chain ${system} (${stream}) processed up to ${target}`,
        timeoutMs,
      );
    }
    // The observer consumes asynchronously: wait until it has seen every event published so far.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(DISTINCT value::jsonb->>'id')::int AS n FROM bus_messages WHERE topic = 'chain.events'`,
    );
    await waitFor(
      () => new Set(received.map((e) => e.id)).size >= rows[0]!.n,
      `the observer received all ${rows[0]!.n} published events`,
      timeoutMs,
    );
  }

  /** The events every executed swap must have produced, by chain, in block order. */
  function expectedByChain(): Map<
    string,
    Array<{ txHash: string; type: string; timestamp: number; blockNumber: number }>
  > {
    const map = new Map<
      string,
      Array<{ txHash: string; type: string; timestamp: number; blockNumber: number }>
    >();
    for (const swap of swaps) {
      for (const step of swap.steps) {
        const system = CHAINS.find((c) => c.evm === step.chainId)!.system;
        map.set(system, [
          ...(map.get(system) ?? []),
          {
            txHash: step.txHash.toLowerCase(),
            type: STEP_TYPE[step.step],
            timestamp: step.timestamp,
            blockNumber: step.blockNumber,
          },
        ]);
      }
    }
    for (const list of map.values()) list.sort((a, b) => a.blockNumber - b.blockNumber);
    return map;
  }

  function assertExactlyOnceInOrder(): void {
    const seen = new Set<string>();
    const firstSeen = received.filter(
      (e) => e.payload.kind !== 'Complaint' && (seen.has(e.id) ? false : (seen.add(e.id), true)),
    );
    for (const { system } of CHAINS) {
      const got = firstSeen.filter((e) => e.payload.chainId === system).map((e) => e.payload);
      const want = expectedByChain().get(system)!;
      expect(got.map((e) => `${e.kind}:${e.txHash}`)).toEqual(want.map((w) => `${w.type}:${w.txHash}`));
      got.forEach((e, i) => expect(e.blockTimestamp).toBe(want[i]!.timestamp));
      // Block order per chain, as delivered to consumers (first occurrence).
      const order = got.map((e) => e.blockNumber * 10_000 + e.logIndex);
      expect(order).toEqual([...order].sort((a, b) => a - b));
    }
  }

  beforeAll(async () => {
    [devnet, db] = await Promise.all([
      startDevnet({ chains: CHAINS.map((c) => ({ chainId: c.evm })) }),
      createTestDatabase([chainClientMigrations, connectorMigrations]),
    ]);
    dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-connector-e2e-'));
    connectorPort = await freePort();
    const clientPorts: number[] = [];
    for (const { evm, system } of CHAINS) {
      const c = chain(evm);
      const client = await startChainClient(
        { db: db.pool, log, metrics: new Registry() },
        {
          port: 0,
          rpc: c.rpcUrl,
          systemChainId: system,
          contractAddr: c.contracts.otmoic,
          reputationContractAddr: c.contracts.reputation,
          confirmations: 0,
          startBlock: 0,
          pollIntervalMs: 100,
          deliveryAttempts: 4,
          keepSettledDays: 7,
        },
      );
      clients.push(client);
      clientPorts.push(client.port);
    }
    await writeFile(
      path.join(dir, 'config.toml'),
      [
        `[connector]\nport = ${connectorPort}\ncallbackUrl = "http://127.0.0.1:${connectorPort}/callback"\nreregisterIntervalMs = 2000\nbackfillRetryMs = 3000`,
        `[rpc-urls]\n${CHAINS.map((c) => `${c.evm} = "${chain(c.evm).rpcUrl}"`).join('\n')}`,
        ...CHAINS.map(
          (c, i) =>
            `[[chainClients]]\nurl = "http://127.0.0.1:${clientPorts[i]}"\nhistoryUrl = "http://127.0.0.1:${clientPorts[i]}"\ninitBlockHeight = 0\nchainId = "${c.system}"\nnativeChainId = "${c.evm}"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "${chain(c.evm).contracts.otmoic}"\nreputationContractAddr = "${chain(c.evm).contracts.reputation}"`,
        ),
      ].join('\n\n'),
    );

    bus = new PostgresBus({ pool: db.pool, connectionString: db.url, log });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 8)));
    await bus.subscribe({
      group: 'e2e-observer',
      topics: [chainEvents.name],
      handler: async (message) => void received.push(decode(chainEvents, message)),
    });
    await startConnector();
  }, 120_000);

  afterAll(async () => {
    await killConnector();
    await bus?.close();
    for (const client of clients) await client.stop();
    await devnet?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('publishes every event of 30 swaps once, in block order per chain, with block timestamps', async () => {
    await swapsOf(30, [
      'honest',
      'honest',
      'short_amount',
      'wrong_receiver',
      'confirm_in_without_confirm_out',
    ]);
    await settle();
    assertExactlyOnceInOrder();
    expect(new Set(received.map((e) => e.id)).size).toBeGreaterThanOrEqual(30 * 3);
  }, 180_000);

  it('loses nothing when the connector is killed hard mid-stream', async () => {
    const producing = swapsOf(12);
    await new Promise((r) => setTimeout(r, 700));
    await killConnector(); // SIGKILL while chunks are arriving
    await producing;
    await startConnector();
    await settle();
    assertExactlyOnceInOrder();
  }, 180_000);

  it('fills a gap through history when the chain clients gave up while it was down', async () => {
    await killConnector();
    await swapsOf(10);
    for (const { evm } of CHAINS) await chain(evm).mine(10);
    // Four attempts with back-off: the chain clients give up on those chunks within seconds.
    await waitFor(
      async () => {
        const { rows } = await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM chain_client_deliveries WHERE status = 'failed'`,
        );
        return Number(rows[0]!.n) > 0;
      },
      'a delivery given up',
      30_000,
    );
    await startConnector();
    await settle();
    assertExactlyOnceInOrder();
    const { rows } = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM chain_client_deliveries WHERE lane LIKE 'history:%'`,
    );
    expect(Number(rows[0]!.n)).toBeGreaterThan(0);
    expect(swaps.length).toBeGreaterThanOrEqual(50);
  }, 180_000);

  it('publishes complaints from the reputation contract and shows heights, lag and counts on /metrics', async () => {
    const opChain = chain(11155420);
    const swap = swaps[0]!;
    const filed = await fileComplaint(
      opChain,
      {
        srcChainId: 9006,
        srcAddress: BigInt(swap.out.sender),
        srcToken: '0x0000000000000000000000000000000000000000',
        dstChainId: 614,
        dstAddress: BigInt(swap.out.sender),
        dstToken: '0x0000000000000000000000000000000000000000',
        srcAmount: swap.agreed.amountOut.toString(),
        dstAmount: swap.agreed.amountIn.toString(),
        dstNativeAmount: '0',
        requestor: swap.out.sender,
        lpId: 'lp-1',
        expectedSingleStepTime: swap.times.E,
        tolerantSingleStepTime: swap.times.Tol,
        earliestRefundTime: swap.times.R,
        agreementReachedTime: swap.times.T,
        userSign: '0xuser',
        lpSign: '0xlp',
      },
      { complainant: 1, domain: 'user.otmoic' },
    );
    await settle(60_000, 'reputation');
    const complaint = received.find((e) => e.payload.kind === 'Complaint');
    expect(complaint?.payload).toMatchObject({
      kind: 'Complaint',
      chainId: '614',
      bidId: filed.bidId,
      complainant: 'user.otmoic',
      txHash: filed.receipt.hash.toLowerCase(),
    });
    expect(complaint?.payload.kind === 'Complaint' && complaint.payload.complaint.lpId).toBe('lp-1');

    const metrics = await (await fetch(`http://127.0.0.1:${connectorPort}/metrics`)).text();
    expect(metrics).toMatch(/connector_height\{chain="9006",stream="swap"\} [1-9]\d*/);
    expect(metrics).toMatch(/connector_lag_blocks\{chain="614",stream="swap"\} \d+/);
    expect(metrics).toMatch(/connector_events_total\{chain="614",type="Complaint"\} 1/);
  }, 120_000);
});
