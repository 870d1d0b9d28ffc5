import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectorMigrations } from '../../services/connector/migrations.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { runSwap, type ExecutedSwap } from '../../shared/devnet/swap-scenarios.js';
import { freePort } from '../../shared/net/free-port.js';
import { chainEvents, decode, type ChainEvent, type Envelope } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import {
  startFakeChainClient,
  type FakeChainClient,
  type HistoryBehaviour,
} from '../support/fake-chain-client.js';
import { spawnTs, type Spawned } from '../support/processes.js';
import { startFaultyRpc } from '../support/rpc-fault-proxy.js';
import { waitFor } from '../support/wait.js';

const EVM = 97;
const SYSTEM = '9006';
const STEP_TYPE = {
  transferOut: 'TransferOut',
  transferIn: 'TransferIn',
  confirmOut: 'ConfirmOut',
  confirmIn: 'ConfirmIn',
} as const;

/**
 * The Connector (its own process) in front of chain-client doubles that never deliver history with events
 * (the original chainclient-evm V2.4), or deliver it twice and out of order, on a devnet chain. It must
 * catch up through the RPC, publish each event of the gap once in block order with its block time, keep
 * following live chunks, shrug off late history, and — with the RPC down too — say so and wait, through
 * hard kills, until the RPC is back.
 */
describe('connector: a chain client that never delivers history does not stall a stream', () => {
  let devnet: Devnet;
  let chain: DevnetChain;

  beforeAll(async () => {
    devnet = await startDevnet({ chains: [{ chainId: EVM }] });
    chain = devnet.chain(EVM);
  }, 120_000);
  afterAll(async () => devnet?.stop());

  /** One Connector set-up: its database, a chain-client double, the config file, the process. */
  async function scenario(options: {
    history: HistoryBehaviour;
    historyMerge?: boolean;
    historyTimeoutMs: number;
    rpcRangeBlocks: number;
    rpcUrl?: string;
  }) {
    const db: TestDatabase = await createTestDatabase([connectorMigrations]);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-gap-fill-'));
    const initBlockHeight = await chain.provider.getBlockNumber();
    const swaps: ExecutedSwap[] = [];
    let fake: FakeChainClient | undefined;
    let connector: Spawned | undefined;
    const port = await freePort();
    const outputs: string[] = [];

    const self = {
      db,
      swaps,
      initBlockHeight,
      port,
      get fake() {
        return fake!;
      },
      /** Every log line the Connector printed, across restarts. */
      output: () => outputs.join('') + (connector?.output() ?? ''),
      /** `startBlock`: its first live block (default: the block after the head, as the original). */
      async startClient(startBlock?: number) {
        fake = await startFakeChainClient({
          rpcUrl: chain.rpcUrl,
          systemChainId: SYSTEM,
          contracts: { swap: chain.contracts.otmoic, reputation: chain.contracts.reputation },
          history: options.history,
          startBlock,
        });
        await writeFile(
          path.join(dir, 'config.toml'),
          `[connector]\nport = ${port}\ncallbackUrl = "http://127.0.0.1:${port}/callback"
reregisterIntervalMs = 1000\nbackfillRetryMs = 1000\nhistoryTimeoutMs = ${options.historyTimeoutMs}
rpcRangeBlocks = ${options.rpcRangeBlocks}\nstuckReportIntervalMs = 1000
[rpc-urls]\n${EVM} = "${options.rpcUrl ?? chain.rpcUrl}"
[[chainClients]]\nurl = "${fake.url}"\nhistoryUrl = "${fake.url}"\ninitBlockHeight = ${initBlockHeight}
chainId = "${SYSTEM}"\nnativeChainId = "${EVM}"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"
contractAddr = "${chain.contracts.otmoic}"\nreputationContractAddr = "${chain.contracts.reputation}"
historyMerge = ${options.historyMerge ?? true}\n`,
        );
      },
      async startConnector() {
        connector = spawnTs('bin/start.ts', ['connector'], {
          ...process.env,
          CONFIG_PATH: path.join(dir, 'config.toml'),
          DATABASE_URL: db.url,
          LOG_LEVEL: 'info',
        });
        await connector.waitFor(/"msg":"ready"/, 60_000);
        // Live chunks reach only registered callbacks: wait for both registrations (renewals answer 30209).
        for (const path of ['/support/register', '/support/register_reputation'])
          await waitFor(() => fake!.requests.some((r) => r.path === path), `registration at ${path}`, 30_000);
      },
      async killConnector() {
        if (!connector) return;
        connector.child.kill('SIGKILL');
        await connector.exited;
        outputs.push(connector.output());
        connector = undefined;
      },
      async swapsOf(count: number) {
        for (let i = 0; i < count; i++)
          swaps.push(
            await runSwap('honest', {
              src: chain,
              dst: chain,
              srcSystemChainId: 9006,
              dstSystemChainId: 9006,
            }),
          );
      },
      async stored(stream: 'swap' | 'reputation' = 'swap'): Promise<number> {
        const { rows } = await db.pool.query<{ height: string }>(
          'SELECT height FROM connector_heights WHERE chain_id = $1 AND stream = $2',
          [SYSTEM, stream],
        );
        return Number(rows[0]?.height ?? -1);
      },
      /** Mines past the next chunk boundary; waits until the double posted it and the Connector stored it. */
      async settle(timeoutMs = 60_000): Promise<number> {
        await chain.mine(10 - ((await chain.provider.getBlockNumber()) % 5));
        const target = Math.floor((await chain.provider.getBlockNumber()) / 5) * 5;
        await waitFor(() => fake!.liveHeight() >= target, `live chunk ${target} posted`, 30_000);
        for (const stream of ['swap', 'reputation'] as const)
          await waitFor(
            async () => (await self.stored(stream)) >= target,
            `${stream} at ${target}`,
            timeoutMs,
          );
        return target;
      },
      async published(): Promise<Envelope<ChainEvent>[]> {
        const { rows } = await db.pool.query<{ value: string; offset: string }>(
          `SELECT value, "offset" FROM bus_messages WHERE topic = 'chain.events' ORDER BY partition, "offset"`,
        );
        return rows.map((r) =>
          decode(chainEvents, {
            topic: 'chain.events',
            partition: 0,
            offset: BigInt(r.offset),
            key: SYSTEM,
            value: r.value,
            headers: {},
            timestamp: new Date(),
          }),
        );
      },
      async messageCounts() {
        const { rows } = await db.pool.query<{ topic: string; n: number }>(
          `SELECT topic, count(*)::int AS n FROM bus_messages GROUP BY topic ORDER BY topic`,
        );
        return rows;
      },
      /** chain.events holds every event of every swap once (not once after dedupe), in block order, with block times. */
      async expectExactlyOnceInOrder() {
        const got = await self.published();
        const want = swaps
          .flatMap((s) => s.steps)
          .filter((step) => step.blockNumber > initBlockHeight)
          .sort((a, b) => a.blockNumber - b.blockNumber);
        expect(got.map((e) => `${e.payload.kind}:${e.payload.txHash}`)).toEqual(
          want.map((w) => `${STEP_TYPE[w.step]}:${w.txHash.toLowerCase()}`),
        );
        got.forEach((e, i) => {
          expect(e.payload.blockTimestamp).toBe(want[i]!.timestamp);
          expect(e.payload.blockNumber).toBe(want[i]!.blockNumber);
          expect(e.id).toBe(`${SYSTEM}:${e.payload.txHash}:${e.payload.logIndex}`);
        });
        // The last chain.heights of the swap stream names the last event (the classifier's "seen every event" check).
        const { rows } = await db.pool.query<{ value: string }>(
          `SELECT value FROM bus_messages WHERE topic = 'chain.heights'
              AND value::jsonb->'payload'->>'stream' = 'swap' ORDER BY "offset" DESC LIMIT 1`,
        );
        expect(JSON.parse(rows[0]!.value).payload.lastEventId).toBe(got.at(-1)!.id);
        return got;
      },
      async health() {
        const response = await fetch(`http://127.0.0.1:${port}/health`);
        return { status: response.status, body: (await response.json()) as any };
      },
      async metric(name: string): Promise<number | undefined> {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${name}{chain="${SYSTEM}",stream="swap"}`));
        return line === undefined ? undefined : Number(line.split(' ').at(-1));
      },
      async close() {
        await self.killConnector();
        await fake?.close();
        await db.drop();
        await rm(dir, { recursive: true, force: true });
      },
    };
    return self;
  }

  it('catches up through the RPC within the configured time, keeps following live chunks, and late history changes nothing', async () => {
    const s = await scenario({ history: 'broken', historyTimeoutMs: 2_000, rpcRangeBlocks: 7 });
    try {
      await s.swapsOf(4); // the gap: 16 events the double's history never delivers
      await s.startClient();
      await s.startConnector();
      const started = Date.now();
      await s.settle(30_000);
      const caughtUpMs = Date.now() - started;
      // The history timeout, then the RPC read: well within timeout + 15 s on a loaded 2-core machine.
      expect(caughtUpMs).toBeLessThan(2_000 + 15_000);
      expect(s.output()).toContain('history did not arrive: reading the gap from the RPC');
      expect(s.fake.requests.find((r) => r.path === '/support/history')).toMatchObject({
        code: 200,
        body: { start: s.initBlockHeight + 1, merge: true },
      });
      await s.expectExactlyOnceInOrder();

      // Live chunks follow on: no new gap while two more swaps happen.
      const gapsBefore = s.output().split('gap detected').length;
      await s.swapsOf(2);
      await s.settle();
      await s.expectExactlyOnceInOrder();
      expect(s.output().split('gap detected').length).toBe(gapsBefore);
      expect((await s.health()).body.status).toBe('ok');

      // The history the double held back arrives late: answered, and nothing changes.
      const before = await s.messageCounts();
      const heightBefore = await s.stored();
      const historyPosts = s.fake.delivered.history;
      await s.fake.releaseHeld();
      expect(s.fake.delivered.history).toBeGreaterThan(historyPosts);
      expect(s.fake.delivered.failed).toBe(0);
      expect(await s.messageCounts()).toEqual(before);
      expect(await s.stored()).toBe(heightBefore);
      await s.expectExactlyOnceInOrder();
    } finally {
      await s.close();
    }
  }, 180_000);

  it('takes history delivered twice and out of order, without merge (per-event posts), once and in block order', async () => {
    const s = await scenario({
      history: 'doubled',
      historyMerge: false,
      historyTimeoutMs: 120_000, // history only: the RPC must not be needed
      rpcRangeBlocks: 100,
    });
    try {
      await s.swapsOf(3);
      await s.startClient();
      await s.startConnector();
      await s.settle();
      await s.fake.idle(); // both passes of every history request are delivered
      expect(s.output()).not.toContain('reading the gap from the RPC');
      const history = s.fake.requests.find((r) => r.path === '/support/history');
      expect(history?.body.merge).toBe(false);
      expect(Object.keys(history?.body.callback ?? {}).sort()).toEqual(
        [
          'on_confirm_in',
          'on_confirm_out',
          'on_height_update',
          'on_refunded_in',
          'on_refunded_out',
          'on_transfer_in',
          'on_transfer_out',
        ].sort(),
      );
      await s.expectExactlyOnceInOrder();
      const { rows } = await s.db.pool.query(`SELECT count(*)::int AS n FROM connector_pending_events`);
      expect(rows[0].n).toBe(0);
    } finally {
      await s.close();
    }
  }, 180_000);

  it('a chain client restarted within a chunk: the blocks before its first live block are asked through history', async () => {
    const s = await scenario({ history: 'doubled', historyTimeoutMs: 120_000, rpcRangeBlocks: 100 });
    try {
      await s.startClient();
      await s.startConnector();
      const stored = await s.settle();
      // The chain client goes down, a swap happens, and it comes back with its head inside the next chunk:
      // the original delivers live from the block after its head, so its first chunk (height stored + 5)
      // holds that chunk's last block only.
      await s.fake.close();
      await s.killConnector();
      await s.swapsOf(1);
      const skipped = s.swaps[0]!.steps.filter((step) => step.blockNumber < stored + 5);
      expect(skipped.length).toBeGreaterThan(0);
      await s.startClient(stored + 5);
      await s.startConnector();
      await s.settle();
      await s.fake.idle();
      // Every event of the swap, those of the blocks the live chunk did not hold included, once and in order.
      await s.expectExactlyOnceInOrder();
      expect(s.output()).toContain('first chunk since the chain client took our registration as new');
      const history = s.fake.requests.find((r) => r.path === '/support/history');
      expect(history).toMatchObject({ code: 200, body: { start: stored + 1 } });
      // Its chunks come to a marked URL: never taken for the first live chunk of a restarted chain client, and
      // naming the request's first block (its first chunk may start mid-chunk).
      expect(history!.body.callback.on_height_update).toBe(
        `http://127.0.0.1:${s.port}/callback/${SYSTEM}/swap?source=history&from=${stored + 1}`,
      );
    } finally {
      await s.close();
    }
  }, 180_000);

  it('with the RPC down too: waits, says so on /health and /metrics, loses nothing across hard kills, catches up when the RPC is back', async () => {
    const proxy = await startFaultyRpc(chain.rpcUrl);
    proxy.setDown(true);
    const s = await scenario({
      history: 'broken',
      historyTimeoutMs: 1_000,
      rpcRangeBlocks: 5,
      rpcUrl: proxy.url,
    });
    try {
      await s.swapsOf(3);
      await s.startClient();
      await s.startConnector();
      await chain.mine(10);
      // Stuck after twice the history timeout: degraded (HTTP 200), with the range it waits for.
      await waitFor(async () => (await s.health()).body.status === 'degraded', '/health degraded', 30_000);
      const { status, body } = await s.health();
      expect(status).toBe(200);
      expect(body.checks.database.ok).toBe(true);
      const stuck = body.checks.streams.stuck.find((x: { stream: string }) => x.stream === 'swap');
      expect(stuck).toMatchObject({ chain: SYSTEM, stream: 'swap', source: 'rpc' });
      expect(stuck.waitingFor.from).toBe((await s.stored()) + 1);
      expect(stuck.waitingFor.to).toBeGreaterThanOrEqual(s.swaps.at(-1)!.steps.at(-1)!.blockNumber);
      expect(stuck.rpcError).toMatch(/rpc-urls\.97/);
      expect(stuck.rpcError).not.toContain(proxy.url.replace('http://', ''));
      expect(await s.metric('connector_stream_stuck_seconds')).toBeGreaterThanOrEqual(2);
      expect(await s.metric('connector_gap_from_block')).toBe(stuck.waitingFor.from);
      await waitFor(() => s.output().includes('"msg":"stream stuck"'), 'the stuck log line', 5_000);
      expect(s.output()).not.toContain(proxy.url);
      // Logged on state change and periodically, not on every retry.
      const failures = s
        .output()
        .split('\n')
        .filter(
          (l) => l.includes('reading the gap from the RPC failed') && l.includes('"stream":"swap"'),
        ).length;
      expect(failures).toBe(1);
      expect(await s.published()).toHaveLength(0);

      // Killed while stuck: after the restart it is stuck again, nothing published.
      await s.killConnector();
      await s.startConnector();
      await chain.mine(5);
      await waitFor(async () => (await s.health()).body.status === 'degraded', 'degraded again', 30_000);
      expect(await s.published()).toHaveLength(0);

      // The RPC comes back, slowly: killed again in the middle of the fill.
      const before = await s.stored();
      proxy.setDelay(150);
      proxy.setDown(false);
      await waitFor(async () => (await s.stored()) > before, 'the fill has started', 60_000);
      await s.killConnector();
      const middle = await s.stored();
      expect(middle).toBeLessThan(s.fake.liveHeight());
      proxy.setDelay(0);
      await s.startConnector();
      await s.settle();
      await s.expectExactlyOnceInOrder();
      expect((await s.health()).body.status).toBe('ok');
      expect(await s.metric('connector_stream_stuck_seconds')).toBe(0);
      // eth_getLogs: always with the stream's contract as address filter, never more than rpcRangeBlocks.
      const getLogs = proxy.calls.filter((c) => c.method === 'eth_getLogs').map((c) => c.params[0]);
      expect(getLogs.length).toBeGreaterThan(0);
      for (const filter of getLogs) {
        expect([[chain.contracts.otmoic], [chain.contracts.reputation]]).toContainEqual(filter.address);
        expect(Number(filter.toBlock) - Number(filter.fromBlock) + 1).toBeLessThanOrEqual(5);
      }
    } finally {
      await s.close();
      await proxy.close();
    }
  }, 240_000);
});
