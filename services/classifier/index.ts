import type { ChainClientConfig } from '../../shared/config/index.js';
import type { Logger } from '../../shared/logging/logger.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { chainEvents, chainHeights, decode } from '../../topics/index.js';
import type { BatchHandler, BusMessage, EventBus, Subscription } from '../../shared/bus/port.js';
import { boundSignerMemo, DEFAULT_SIGNER_MEMO_ENTRIES } from './consent.js';
import { HttpDidSource, type DidNames } from './did-source.js';
import { ClassifierEngine, type ClassifierInput, type WatchedChain } from './engine.js';
import { classifierMetrics, type ClassifierMetrics } from './metrics.js';
import { askPendingDidsEvery, classifierHealth } from './health.js';
import { classifierMigrations } from './migrations.js';
import type { ClassifierTables } from './tables.js';
import { classifierTables } from './tables.js';
import type { Pool } from '../../shared/db/pool.js';

export const CLASSIFIER_GROUP = 'classifier';
export const CLASSIFIER_TOPICS = [chainEvents.name, chainHeights.name] as const;

/** The chains of `chainClients[]`: system chain id → EVM chain id, and whether complaints come from it. */
export function watchedChains(clients: readonly ChainClientConfig[]): Map<string, WatchedChain> {
  return new Map(
    clients.map((c) => [
      c.chainId,
      { evmChainId: Number(c.nativeChainId), reputation: c.reputationContractAddr !== undefined },
    ]),
  );
}

/**
 * Subscribes an engine to chain.events and chain.heights (one group, so effects and clocks stay in step), in
 * batches of one partition: each batch is one transaction. A message that does not decode fails its batch,
 * which the bus then delivers message by message (that one goes to the dead-letter topic). A replay wraps
 * the handler (ReplayCut.handler).
 */
export function subscribeEngine(
  bus: EventBus,
  engine: ClassifierEngine,
  options: EngineSubscription,
): Promise<Subscription> {
  const { group, startFrom = 'earliest', maxBatch = CLASSIFIER_BATCH, wrap = (handler) => handler } = options;
  return bus.subscribe({
    group,
    topics: CLASSIFIER_TOPICS,
    startFrom,
    maxBatch,
    batchHandler: wrap((messages, context) => engine.handleBatch(messages.map(classifierInput), context)),
    // A chain event never applied must hold its chain's clock (dead-lettered.ts).
    onDeadLetter: (message, reason, tx) => engine.deadLettered(message, reason, tx),
  });
}

/** How subscribeEngine subscribes: the consumer group, and what a replay or a test changes. */
export interface EngineSubscription {
  group: string;
  /** Where a group without a committed position starts. Default 'earliest'. */
  startFrom?: 'earliest' | 'latest';
  /** Largest batch per transaction. Default CLASSIFIER_BATCH. */
  maxBatch?: number;
  /** Wraps the batch handler (a replay's cut, a test's poison). */
  wrap?: (handler: BatchHandler) => BatchHandler;
}

/** How often the DID names pending swaps wait for are asked again (health.ts askPendingDidsEvery). */
export const DID_RECHECK_MS = 60_000;

/** Largest batch per transaction: large enough that round trips stop mattering, small enough to stay short. */
export const CLASSIFIER_BATCH = 500;

/** A bus message as the engine's input (PoisonMessageError when it does not decode). */
export function classifierInput(message: BusMessage): ClassifierInput {
  if (message.topic === chainHeights.name) {
    const { id, payload } = decode(chainHeights, message);
    return { kind: 'height', id, height: payload };
  }
  const { id, payload } = decode(chainEvents, message);
  return { kind: 'event', id, event: payload };
}

export interface ClassifierParts {
  engine: ClassifierEngine;
  did: DidNames;
  /** The DID support itself (`did` may wrap it). */
  live: HttpDidSource;
  metrics?: ClassifierMetrics;
}

/** The engine with its DID source wired so that an answer re-judges the swaps that waited for it. */
export function createClassifier(options: {
  pool: Pool;
  tables: ClassifierTables;
  group: string;
  chains: Map<string, WatchedChain>;
  didSupportUrl: string;
  didCacheMs: number;
  /** classifier.signerMemoEntries: the bound of this process's signer memo (default DEFAULT_SIGNER_MEMO_ENTRIES). */
  signerMemoEntries?: number;
  bus?: EventBus;
  metrics?: ClassifierMetrics;
  log: Logger;
  wrapDid?: (live: DidNames) => DidNames;
  /** A replay's engine (see EngineOptions.resident, releasedHolds). */
  resident?: 'decisions' | 'keep';
  releasedHolds?: ReadonlySet<string>;
}): ClassifierParts {
  boundSignerMemo(options.signerMemoEntries ?? DEFAULT_SIGNER_MEMO_ENTRIES);
  let engine: ClassifierEngine | undefined;
  const live = new HttpDidSource({
    url: options.didSupportUrl,
    ttlMs: options.didCacheMs,
    log: options.log,
    onAnswer: async (address) => {
      options.metrics?.didLookups.inc({ outcome: 'answered' });
      await engine?.didAnswered(address);
    },
    onFailure: () => options.metrics?.didLookups.inc({ outcome: 'failed' }),
  });
  const did = options.wrapDid ? options.wrapDid(live) : live;
  engine = new ClassifierEngine({
    pool: options.pool,
    tables: options.tables,
    group: options.group,
    chains: options.chains,
    did,
    bus: options.bus,
    metrics: options.metrics,
    log: options.log,
    resident: options.resident,
    releasedHolds: options.releasedHolds,
  });
  return { engine, did, live, metrics: options.metrics };
}

/**
 * Classifier (DESIGN §5, §7): consumes chain.events and chain.heights, keeps the swap projection, and
 * publishes one verdict per swap to swap.verdicts and at most one violation per swap to violations.
 */
export const classifierService: ServiceDefinition = {
  name: 'classifier',
  sections: ['classifier', 'chainClients'],
  migrations: [classifierMigrations],
  async start(context) {
    const config = context.config.classifier!;
    const tables = classifierTables();
    const metrics = classifierMetrics(context.metrics, context.db, tables);
    const { engine, did, live } = createClassifier({
      pool: context.db,
      tables,
      group: CLASSIFIER_GROUP,
      chains: watchedChains(context.config.chainClients!),
      didSupportUrl: config.didSupportUrl,
      didCacheMs: config.didCacheMs,
      signerMemoEntries: config.signerMemoEntries,
      bus: context.bus,
      metrics,
      log: context.log,
    });
    const http = await startHttpService(context, 'classifier', config.port, undefined, {
      healthChecks: {
        classifier: classifierHealth(
          context.db,
          tables,
          live,
          context.config.chainClients!.map((c) => c.chainId),
        ),
      },
    });
    const subscription = await subscribeEngine(context.bus, engine, { group: CLASSIFIER_GROUP });
    context.trackConsumerGroup(CLASSIFIER_GROUP, CLASSIFIER_TOPICS);
    await engine.requestPendingDids();
    const asking = askPendingDidsEvery(
      DID_RECHECK_MS,
      () => engine.requestPendingDids(),
      (err) => context.log.warn({ err: err.message }, 'could not read the DID names pending swaps wait for'),
    );
    return {
      async stop() {
        asking.stop();
        await subscription.stop();
        did.stop();
        await http.stop();
      },
    };
  },
};
