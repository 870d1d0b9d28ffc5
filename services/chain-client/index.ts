import { Counter, Gauge, type Registry } from 'prom-client';
import type { ChainClientInstanceConfig } from '../../shared/config/index.js';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import { rowsOrNothing } from '../../shared/runtime/metrics.js';
import { singleFlight } from '../../shared/runtime/single-flight.js';
import type { RunningService, ServiceContext, ServiceDefinition } from '../../shared/runtime/service.js';
import { ChainReader } from './chain-reader.js';
import { Deliverer } from './deliverer.js';
import { Follower } from './follower.js';
import { chainClientMigrations } from './migrations.js';
import { registerSupportRoutes, SUPPORT_LIMITS } from './routes.js';
import { ChainClientStore } from './store.js';

/**
 * Our EVM chain client (`npm run start-chain-client`): serves the support API of the original chain client
 * from a JSON-RPC endpoint, one instance per `[[chainClient]]` entry, so the whole stack runs without the
 * original chain clients.
 */
export const chainClientService: ServiceDefinition = {
  name: 'chain-client',
  sections: ['chainClient'],
  migrations: [chainClientMigrations],
  async start(context) {
    const instances: RunningService[] = [];
    try {
      for (const config of context.config.chainClient!)
        instances.push(await startChainClient(context, config));
    } catch (err) {
      await Promise.all(instances.map((i) => i.stop()));
      throw err;
    }
    return { stop: async () => void (await Promise.all(instances.map((i) => i.stop()))) };
  },
};

interface ChainClientMetrics {
  /** The instances of this process: the pending gauges report these. */
  instances: Set<string>;
  height: Gauge<'instance'>;
  head: Gauge<'instance'>;
  deliveries: Counter<'instance' | 'outcome'>;
  historyTasks: Counter<'instance' | 'outcome'>;
}
const metricsByRegistry = new WeakMap<Registry, ChainClientMetrics>();

function metricsOf(registry: Registry, pool: Pool): ChainClientMetrics {
  let metrics = metricsByRegistry.get(registry);
  if (!metrics) {
    // What waits to be posted, read at scrape time: a registration whose receiver is gone keeps its posts
    // pending (each retried for about 17 minutes, while a new chunk comes every few seconds).
    const pending = singleFlight(() =>
      rowsOrNothing(
        pool.query<{ instance: string; n: string; oldest: string }>(
          `SELECT instance, count(*) AS n, extract(epoch FROM now() - min(created_at)) AS oldest
             FROM chain_client_deliveries WHERE status = 'pending' GROUP BY instance`,
        ),
      ),
    );
    const instances = new Set<string>();
    const perInstance = (name: string, help: string, value: (r: { n: string; oldest: string }) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['instance'],
        registers: [registry],
        async collect() {
          const rows = await pending();
          if (rows === undefined) return;
          for (const instance of instances) {
            const row = rows.find((r) => r.instance === instance);
            this.set({ instance }, row ? value(row) : 0);
          }
        },
      });
    perInstance('chain_client_pending_deliveries', 'Callback posts waiting to be sent or retried', (r) =>
      Number(r.n),
    );
    perInstance(
      'chain_client_oldest_pending_seconds',
      'Age of the oldest callback post not yet delivered or given up (0 when none)',
      (r) => Math.max(0, Number(r.oldest)),
    );
    metrics = {
      instances,
      height: new Gauge({
        name: 'chain_client_height',
        help: 'Last block queued for delivery to the registered callbacks',
        labelNames: ['instance'],
        registers: [registry],
      }),
      head: new Gauge({
        name: 'chain_client_head',
        help: "The chain's head minus the confirmations, as last read (chain_client_height follows it in 5-block chunks)",
        labelNames: ['instance'],
        registers: [registry],
      }),
      deliveries: new Counter({
        name: 'chain_client_deliveries_total',
        help: 'Callback posts by outcome',
        labelNames: ['instance', 'outcome'],
        registers: [registry],
      }),
      historyTasks: new Counter({
        name: 'chain_client_history_tasks_total',
        help: 'History tasks by how they ended: queued (every range read) or failed (a range never read, given up)',
        labelNames: ['instance', 'outcome'],
        registers: [registry],
      }),
    };
    metricsByRegistry.set(registry, metrics);
  }
  return metrics;
}

export async function startChainClient(
  context: Pick<ServiceContext, 'db' | 'log' | 'metrics' | 'stopSignal'>,
  // Optional for callers that build the entry themselves (tests, the fake chain client).
  config: Omit<ChainClientInstanceConfig, 'rpcTimeoutMs' | 'allowIps' | 'historyAttempts'> &
    Partial<Pick<ChainClientInstanceConfig, 'rpcTimeoutMs' | 'allowIps' | 'historyAttempts'>>,
): Promise<RunningService & { port: number }> {
  const log = context.log.child({ chainClient: config.systemChainId });
  const { height, head, deliveries, historyTasks, instances } = metricsOf(
    context.metrics,
    context.db as Pool,
  );
  instances.add(config.systemChainId);
  const contracts = { swap: config.contractAddr, reputation: config.reputationContractAddr };
  const reader = new ChainReader(
    config.rpc,
    [contracts.swap, ...(contracts.reputation ? [contracts.reputation] : [])],
    config.rpcTimeoutMs,
    { chainId: config.nativeChainId },
  );
  const store = new ChainClientStore(context.db as Pool, config.systemChainId);
  const deliverer = new Deliverer({
    pool: context.db as Pool,
    instance: config.systemChainId,
    maxAttempts: config.deliveryAttempts,
    keepSettledDays: config.keepSettledDays,
    log,
    outcomes: deliveries,
    stopSignal: context.stopSignal,
  });
  const follower = new Follower({
    reader,
    store,
    contracts,
    systemChainId: config.systemChainId,
    confirmations: config.confirmations,
    startBlock: config.startBlock,
    pollIntervalMs: config.pollIntervalMs,
    historyAttempts: config.historyAttempts,
    log,
    onHistoryOutcome: (outcome) => historyTasks.inc({ instance: config.systemChainId, outcome }),
    onQueued: () => deliverer.wake(),
    onHeight: (h) => height.set({ instance: config.systemChainId }, h),
    onHead: (h) => head.set({ instance: config.systemChainId }, h),
  });
  if (config.reputationContractAddr === undefined) {
    // Taken before this instance refused them: their heartbeats would move a receiver's complaint stream past
    // complaints nobody read.
    const dropped = await store.dropReputation();
    if (dropped.registrations + dropped.historyTasks > 0)
      log.warn(
        dropped,
        'reputation registrations and history tasks removed: this chain client has no chainClient.reputationContractAddr and reads no complaints (their receivers are refused from now on)',
      );
  }
  if (config.nativeChainId === undefined)
    log.warn(
      'chainClient.nativeChainId is not set: the chain its rpc serves is not checked (an rpc of another chain with the same contract address would be followed)',
    );
  if (!config.allowIps?.length)
    log.warn(
      { limits: SUPPORT_LIMITS },
      'the /support routes are open to any client (chainClient.allowIps is empty): anyone may register callbacks and start history reads, up to the limits',
    );
  const http = await startHttpService(
    { ...context, log } as ServiceContext,
    `chain-client ${config.systemChainId}`,
    config.port,
    (app) =>
      registerSupportRoutes(app, {
        store,
        follower,
        log,
        systemChainId: config.systemChainId,
        reputationContract: config.reputationContractAddr,
        allowIps: config.allowIps,
      }),
    { healthChecks: { follower: () => follower.health() } },
  );
  deliverer.start();
  follower.start();
  const address = http.app.server.address();
  return {
    port: typeof address === 'object' && address ? address.port : config.port,
    async stop() {
      await http.stop();
      // The follower stops taking steps, then the reader fails its requests in flight: a hung node never
      // holds the stop up.
      const following = follower.stop();
      reader.destroy();
      await following;
      await deliverer.stop();
    },
  };
}

export type { Logger };
