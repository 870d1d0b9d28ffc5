import { Counter, Gauge } from 'prom-client';
import type { ChainClientConfig } from '../../shared/config/index.js';
import { sleep } from '../../shared/bus/retry.js';
import { SupportRefusedError } from '../../shared/otmoic/support-register.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { CHAIN_CLIENT_ERRORS } from '../chain-client/errors.js';
import { register, requestHistory } from './chain-client-api.js';
import { GapFiller } from './gap-fill.js';
import { HeightStore, streamsOf, type Stream } from './heights.js';
import { Ingestor } from './ingest.js';
import { connectorMigrations } from './migrations.js';
import type { ChainContracts } from './normalize.js';
import { countRejections, historyQuery, registerCallbackRoutes } from './routes.js';
import { RpcReader } from './rpc-reader.js';

/**
 * Connector (spec §1): registers at every chain client, takes their callbacks, fills gaps through history,
 * archives raw bodies and publishes normalised events to `chain.events` and heights to `chain.heights`.
 */
export const connectorService: ServiceDefinition = {
  name: 'connector',
  sections: ['connector', 'chainClients', 'rpc-urls'],
  migrations: [connectorMigrations],
  async start(context) {
    const config = context.config.connector!;
    const clients = context.config.chainClients!;
    const log = context.log;
    const metrics = {
      height: new Gauge({
        name: 'connector_height',
        help: 'Last processed block',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
      }),
      lag: new Gauge({
        name: 'connector_lag_blocks',
        help: 'Blocks reported by the chain client but not yet processed',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
      }),
      events: new Counter({
        name: 'connector_events_total',
        help: 'Events published to chain.events',
        labelNames: ['chain', 'type'] as const,
        registers: [context.metrics],
      }),
      rejected: new Counter({
        name: 'connector_rejected_bodies_total',
        help: 'Callback bodies refused, by reason, and by chain once the path names a configured one',
        labelNames: ['chain', 'reason'] as const,
        registers: [context.metrics],
      }),
      blockTimeUnread: new Counter({
        name: 'connector_block_time_unread_total',
        help: 'Chunks published without their chain.heights message: the RPC read of their block time failed',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
      }),
      late: new Counter({
        name: 'connector_late_events_total',
        help: 'Single events posted after their blocks were processed without them: published late, out of block order',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
      }),
      foreign: new Counter({
        name: 'connector_foreign_events_total',
        help: "Logs of contracts that are not the chain's configured ones, left out of the bodies posted (the original chain client reads logs without an address filter)",
        labelNames: ['chain'] as const,
        registers: [context.metrics],
      }),
    };
    const registrations = new Counter({
      name: 'connector_registrations_total',
      help: 'Registration attempts at chain clients by outcome',
      labelNames: ['chain', 'stream', 'outcome'] as const,
      registers: [context.metrics],
    });

    const chains = new Map<string, ChainContracts>(
      clients.map((c) => [
        c.chainId,
        { systemChainId: c.chainId, swap: c.contractAddr, reputation: c.reputationContractAddr },
      ]),
    );
    const byChain = new Map(clients.map((c) => [c.chainId, c]));
    // Reputation only of chains whose entry names a reputation contract: a stored row of a stream no longer
    // followed is left as it is, and nothing (metrics, health) reports it.
    const streamsOfClient = (client: ChainClientConfig) => streamsOf(chains.get(client.chainId)!);
    const heights = new HeightStore(context.db);
    for (const client of clients) {
      for (const stream of streamsOfClient(client)) {
        const height = await heights.init(client.chainId, stream, client.initBlockHeight);
        metrics.height.set({ chain: client.chainId, stream }, height);
        log.info({ chain: client.chainId, stream, height }, 'stored height loaded');
      }
    }

    // connector.callbackToken, when set, is the first path segment after the callback path: only the chain
    // clients we registered know it. A secret: scrubbed from every text that may hold a callback URL.
    const token = config.callbackToken;
    const callbackFor = (chainId: string, stream: Stream) =>
      `${config.callbackUrl.replace(/\/$/, '')}${token ? `/${token}` : ''}/${chainId}/${stream}`;
    const scrub = (text: string) => (token ? text.split(token).join('***') : text);
    /** Streams a chain client refused for want of its reputation contract, by chain/stream: what to fix. */
    const misconfigured = new Map<string, string>();
    const scrubbed = async <T>(work: () => Promise<T>): Promise<T> => {
      try {
        return await work();
      } catch (err) {
        // A chain client's refusal keeps its code (keepRegistered tells a misconfiguration from an outage).
        if (err instanceof SupportRefusedError)
          throw new SupportRefusedError(err.what, err.code, scrub(err.answer));
        throw new Error(scrub((err as Error).message));
      }
    };
    if (!token && config.allowIps.length === 0)
      log.warn(
        'the callback route is open to anyone who can reach it (connector.callbackToken and connector.allowIps are unset): anyone could post forged heights and events',
      );
    const readers = new Map<string, RpcReader>();
    for (const client of clients) {
      const key = context.config.rpcUrls?.[client.nativeChainId] ? client.nativeChainId : client.chainId;
      const rpc = context.config.rpcUrls?.[key];
      if (rpc)
        readers.set(
          client.chainId,
          // The runner's stop signal (after in-flight work had its grace) ends a gap fill's or a chunk's read.
          new RpcReader(rpc, Number(client.nativeChainId), `rpc-urls.${key}`, undefined, context.stopSignal),
        );
      else
        log.warn(
          { chain: client.chainId },
          'no rpc-urls entry: heights of empty chunks carry no timestamp and are not published, gaps wait for history',
        );
    }

    const gapMetrics = {
      stuck: new Gauge({
        name: 'connector_stream_stuck_seconds',
        help: 'Seconds a stream has waited for a gap without progress, once stuck (2 x historyTimeoutMs); 0 otherwise',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
        collect: () => gapFiller?.updateMetrics(),
      }),
      gapFrom: new Gauge({
        name: 'connector_gap_from_block',
        help: 'First block of the gap a stream waits for (0: no gap)',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
        collect: () => gapFiller?.updateMetrics(),
      }),
      gapTo: new Gauge({
        name: 'connector_gap_to_block',
        help: 'Last block of the gap a stream waits for (0: no gap)',
        labelNames: ['chain', 'stream'] as const,
        registers: [context.metrics],
        collect: () => gapFiller?.updateMetrics(),
      }),
    };
    // Assigned below: the gap filler calls it only after the ingestor reported a gap.
    let ingestor: Ingestor;
    const gapFiller: GapFiller = new GapFiller({
      log,
      metrics: gapMetrics,
      retryMs: config.backfillRetryMs,
      historyTimeoutMs: config.historyTimeoutMs,
      reportIntervalMs: config.stuckReportIntervalMs,
      storedHeight: (chainId, stream) => heights.get(chainId, stream),
      requestHistory: (chainId, stream, start, end, stop) =>
        scrubbed(() =>
          requestHistory(
            byChain.get(chainId)!,
            stream,
            // Marked, so a history chunk is never taken for the first live chunk after a registration, and
            // with its first block, so a first chunk starting mid-chunk is not taken for all of its 5 blocks.
            `${callbackFor(chainId, stream)}?${historyQuery(start)}`,
            start,
            end,
            stop,
          ),
        ),
      fillFromRpc: (chainId, stream, target) =>
        ingestor.fillFromRpc(chainId, stream, target, config.rpcRangeBlocks),
    });
    ingestor = new Ingestor({
      pool: context.db,
      bus: context.bus,
      archive: context.archive,
      heights,
      chains,
      log,
      metrics,
      requestBackfill: (chainId, stream, stored, height) => gapFiller.report(chainId, stream, stored, height),
      async blockTimestamp(chainId, height) {
        const reader = readers.get(chainId);
        return reader ? Number((await reader.blockByNumber(height)).timestamp) : undefined;
      },
      rpc: (chainId) => readers.get(chainId),
      maxBlocksAhead: config.maxBlocksAhead,
      chunkCommit: config.chunkCommit,
    });

    const basePath = new URL(config.callbackUrl).pathname.replace(/\/$/, '');
    const http = await startHttpService(
      context,
      'connector',
      config.port,
      (app) =>
        registerCallbackRoutes(app, basePath, ingestor, countRejections(metrics.rejected), {
          callbackToken: token,
          allowIps: config.allowIps,
        }),
      // The token is a path parameter of up to 512 characters (fastify's default limit is 100).
      {
        healthChecks: {
          streams: () => gapFiller.health(),
          // A misconfigured pair stays so until someone fixes the configuration: /health says so, not only the log.
          registrations: () =>
            misconfigured.size > 0
              ? { status: 'degraded', misconfigured: [...misconfigured.values()] }
              : { status: 'ok' },
        },
        redact: scrub,
        maxParamLength: 512,
      },
    );

    // Registrations live in the chain client's memory (the original's): renew them periodically. Aborted when
    // the Connector stops: a registration in flight ends at once.
    const stopController = new AbortController();
    const registering = clients.flatMap((client) =>
      streamsOfClient(client).map((stream) => keepRegistered(client, stream)),
    );
    async function keepRegistered(client: ChainClientConfig, stream: Stream): Promise<void> {
      let failing = false; // log changes of state, not every retry (the counter has every attempt)
      let misconfiguredAt = -Infinity; // when a refusal for want of a reputation contract was last logged
      while (!stopController.signal.aborted) {
        try {
          // In the database: a failure here sends no registration (retried like a failed one).
          const pending = await ingestor.liveStarting(client.chainId, stream);
          const outcome = await scrubbed(() =>
            register(client, stream, callbackFor(client.chainId, stream), stopController.signal),
          );
          // Not while an earlier registration's first chunk is awaited: its answer may have been lost, or it was
          // answered "registered", and then "already registered" is about that one, whose live delivery
          // started after the chain client's head.
          if (outcome === 'already registered' && !pending)
            await ingestor.liveContinues(client.chainId, stream);
          registrations.inc({ chain: client.chainId, stream, outcome });
          misconfigured.delete(`${client.chainId}/${stream}`);
          log[failing ? 'info' : 'debug'](
            { chain: client.chainId, stream, outcome },
            'registered at chain client',
          );
          failing = false;
          await sleep(config.reregisterIntervalMs, stopController.signal);
        } catch (err) {
          if (stopController.signal.aborted) return; // cut off by the stop: no failed attempt
          registrations.inc({ chain: client.chainId, stream, outcome: 'failed' });
          if (
            err instanceof SupportRefusedError &&
            err.code === CHAIN_CLIENT_ERRORS.NO_REPUTATION_CONTRACT.code
          ) {
            // A misconfigured pair, not an outage: said at warn level every stuckReportIntervalMs until fixed,
            // asked again every reregisterIntervalMs. The stream does not move meanwhile, so the Classifier's
            // complaints clock of the chain waits instead of passing complaints nobody read.
            misconfigured.set(
              `${client.chainId}/${stream}`,
              `chain ${client.chainId}: its chain client has no reputation contract; set chainClient.reputationContractAddr there or remove reputationContractAddr from this chainClients entry`,
            );
            const now = Date.now();
            if (now - misconfiguredAt >= config.stuckReportIntervalMs) {
              misconfiguredAt = now;
              log.warn(
                { chain: client.chainId, stream, err: err.message },
                `chain ${client.chainId}: its chain client has no reputation contract, but its chainClients entry has reputationContractAddr; complaints of chain ${client.chainId} are not followed until reputationContractAddr is set on that chain client (chainClient.reputationContractAddr) or removed from this chainClients entry`,
              );
            }
            failing = true;
            await sleep(config.reregisterIntervalMs, stopController.signal);
            continue;
          }
          log[failing ? 'debug' : 'warn'](
            { chain: client.chainId, stream, err: (err as Error).message },
            'registration failed; retrying',
          );
          failing = true;
          await sleep(Math.min(5_000, config.reregisterIntervalMs), stopController.signal);
        }
      }
    }

    return {
      async stop() {
        stopController.abort();
        await http.stop(); // in-flight callbacks finish first
        await gapFiller.stop();
        await Promise.all(registering);
        for (const reader of readers.values()) reader.destroy();
      },
    };
  },
};
