import type { FastifyInstance } from 'fastify';
import { POINTS_ERRORS } from './errors.js';
import { clientErrorCodesOf } from '../../shared/runtime/http.js';
import type { PointConfig } from '../../shared/config/index.js';
import { createPool } from '../../shared/db/pool.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { RunningService, ServiceContext, ServiceDefinition } from '../../shared/runtime/service.js';
import { CachedLookup } from './cached-lookup.js';
import { FactsCache, listenForChanges } from './facts-cache.js';
import { POINTS_GROUP, POINTS_TOPICS, subscribePoints } from './consumer.js';
import { fetchDidNames, fetchDidOwner, fetchKyc } from './external-services.js';
import { pointsMetrics } from './metrics.js';
import { pointsMigrations } from './migrations.js';
import { PointsQueries } from './queries.js';
import { registerDashboard } from './dashboard-routes.js';
import { registerPointsRateLimit, registerPointsRoutes } from './routes.js';
import { PointsStore } from './store.js';

/**
 * Points (spec §1, §2.4): projections of `violations`, `swap.verdicts` and complaint events, and the score
 * queries over them (`npm run start-points`, section `[point]`).
 */
export const pointsService: ServiceDefinition = {
  name: 'points',
  sections: ['point'],
  migrations: [pointsMigrations],
  async start(context) {
    const points = await startPoints(context, context.config.point!);
    context.trackConsumerGroup(POINTS_GROUP, POINTS_TOPICS);
    return points;
  },
};

/** Connections of the HTTP reads (beside the process's pool, which the consumer uses). */
const HTTP_POOL_SIZE = 5;

export interface PointsStartOptions {
  /** Test hooks: move time for the caches (ms) and the queries (unix seconds). */
  clockMs?: () => number;
  nowSeconds?: () => number;
  /** Whether to consume the topics (tests that only query turn it off). Default true. */
  consume?: boolean;
}

/** The queries of Points over its live projections, with KYC and DID caches per the configuration. */
export function createPointsQueries(
  context: Pick<ServiceContext, 'log' | 'metrics' | 'db' | 'stopSignal'>,
  config: PointConfig,
  options: Pick<PointsStartOptions, 'clockMs' | 'nowSeconds'> = {},
): { queries: PointsQueries; store: PointsStore; cache: FactsCache } {
  const log = context.log;
  const metrics = pointsMetrics(context.metrics);
  const store = new PointsStore(context.db);
  const cache = new FactsCache(store, {
    onListening: (listening) => metrics.cacheListening.set(listening ? 1 : 0),
  });
  const lookup = <T>(
    service: 'kyc' | 'did-names' | 'did-owner',
    fetch: (key: string, signal: AbortSignal) => Promise<T>,
  ) =>
    new CachedLookup<T>({
      name: service,
      fetch,
      refreshIntervalMs: config.refreshInterval,
      timeoutMs: config.lookupTimeoutMs,
      clock: options.clockMs,
      // The process stops: a KYC or DID lookup still waiting ends (its query answers the last known value).
      stopSignal: context.stopSignal,
      onOutcome: (outcome) => metrics.lookups.inc({ service, outcome }),
      onError: (key, error) =>
        log.warn(
          { service, key, err: error.message.slice(0, 300) },
          'lookup failed; last known value used, flagged stale',
        ),
    });
  const queries = new PointsQueries({
    store,
    figures: cache,
    windowDays: config.windowDays,
    kyc: lookup('kyc', fetchKyc(config.relayAdminUrl)),
    didNames: lookup('did-names', fetchDidNames(config.didSupportUrl)),
    didOwner: lookup('did-owner', fetchDidOwner(config.didSupportUrl)),
    nowSeconds: options.nowSeconds,
  });

  return { queries, store, cache };
}

export async function startPoints(
  context: Pick<ServiceContext, 'log' | 'metrics' | 'db' | 'dbUrl' | 'bus' | 'stopSignal'> & {
    config?: Pick<ServiceContext['config'], 'http'>;
  },
  config: PointConfig,
  options: PointsStartOptions = {},
): Promise<
  RunningService & { app: FastifyInstance; port: number; queries: PointsQueries; store: PointsStore }
> {
  const log = context.log;
  const metrics = pointsMetrics(context.metrics);
  // The HTTP reads have their own few connections, each statement bounded by point.queryTimeoutMs: a slow
  // public query can neither hold the consumers' connections nor run for long.
  const reads = createPool(context.dbUrl, {
    max: HTTP_POOL_SIZE,
    log,
    application: 'otmoic-points-http',
    statementTimeoutMs: config.queryTimeoutMs,
  });
  const { queries, store, cache } = createPointsQueries({ ...context, db: reads }, config, options);
  const listener = listenForChanges({ dbUrl: context.dbUrl, cache, log });

  const subscription =
    options.consume === false
      ? undefined
      : await subscribePoints({
          bus: context.bus,
          pool: context.db,
          store,
          onOutcome: (topic, outcome) => metrics.events.inc({ topic, outcome }),
          onChanged: (subjects) => {
            for (const key of subjects) cache.invalidateSubject(key);
          },
        });
  const http = await startHttpService(
    context as ServiceContext,
    'points',
    config.port,
    async (app) => {
      await registerPointsRateLimit(app, config.rateLimit);
      registerPointsRoutes(app, { queries, log, metrics });
      await registerDashboard(app, {
        db: reads,
        metrics: context.metrics,
        windowDays: config.windowDays,
        queries,
      });
    },
    {
      ownErrorVocabulary: true,
      clientErrorCodes: clientErrorCodesOf(POINTS_ERRORS),
      // The web app's reads of scores and records (shared/runtime/cors.ts).
      cors: {
        origins: config.corsOrigins,
        methods: ['GET', 'HEAD'],
        allowedHeaders: [],
        exposedHeaders: ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
      },
    },
  );
  const address = http.app.server.address();
  return {
    app: http.app,
    port: typeof address === 'object' && address ? address.port : config.port,
    queries,
    store,
    async stop() {
      await http.stop();
      await subscription?.stop();
      await listener.stop();
      await reads.end();
    },
  };
}
