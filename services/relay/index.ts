import type { FastifyInstance } from 'fastify';
import { RELAY_ERRORS } from './errors.js';
import { clientErrorCodesOf } from '../../shared/runtime/http.js';
import { Contract, Wallet } from 'ethers';
import type { EventBus } from '../../shared/bus/port.js';
import type { RelayConfig } from '../../shared/config/index.js';
import { secretScrubber } from '../../shared/config/redact.js';
import { RpcPool, type Sender } from '../../shared/sender/index.js';
import type { Pool } from '../../shared/db/pool.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { senderHealth } from '../../shared/sender/health.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { RunningService, ServiceContext, ServiceDefinition } from '../../shared/runtime/service.js';
import { relayCommands } from '../../topics/relay.commands.js';
import { relayConsumerGroup, subscribeCommands } from './command-consumer.js';
import { relayMetrics } from './metrics.js';
import { chainView } from './chain-view.js';
import { relayMigrationSets } from './migrations.js';
import { registerRelayRoutes } from './routes.js';
import { COMMAND_STATUSES, CommandStore } from './store.js';
import { createRelaySender } from './submitter.js';
import { cachedFor } from '../../shared/runtime/single-flight.js';
import { RegistrationForwarder } from './registration-forwarder.js';

/**
 * The relay interface of one EVM chain deployment (`npm run start-relay`, section `[relay]`): hashlock,
 * system fee, EIP-712 signer recovery and behalf commands, which the submitter sends from the relay wallet
 * inside the contract's third-party windows.
 */
export const relayService: ServiceDefinition = {
  name: 'relay',
  sections: ['relay'],
  migrations: relayMigrationSets,
  async start(context) {
    const relay = await startRelay(context, context.config.relay!);
    context.trackConsumerGroup(relayConsumerGroup(context.config.relay!), [relayCommands.name]);
    return relay;
  },
};

export interface RelayContext extends Pick<ServiceContext, 'log' | 'metrics' | 'stopSignal'> {
  db: Pool;
  bus: EventBus;
}

export async function startRelay(
  context: RelayContext,
  config: RelayConfig,
): Promise<RunningService & { port: number; app: FastifyInstance; submitter: Sender; store: CommandStore }> {
  const log = context.log.child({ relay: config.systemChainId });
  const pollIntervalMs = Math.round(config.blockTimeSeconds * 1000);
  const rpcUrls = [config.rpc, ...config.rpcFallbacks];
  // RPC URLs carry API keys, and the chain client's register URL may carry a token: every text that leaves the
  // relay (answers, command reasons, logs) is scrubbed of both.
  const registerUrl = config.chainClientRegisterUrl;
  const scrub = secretScrubber(registerUrl === undefined ? rpcUrls : [...rpcUrls, registerUrl]);
  // No network probing: start-up must not fail while the RPC is down (the sender retries, /status tells).
  const rpc = new RpcPool({
    urls: rpcUrls,
    chainId: config.chainId,
    timeoutMs: config.rpcTimeoutMs,
    scrub,
    // The process stops: an RPC call in flight (the sender's, a route's) ends at once, nothing counted.
    stopSignal: context.stopSignal,
  });
  const wallet = new Wallet(config.priv);
  const store = new CommandStore(context.db, context.bus, `relay:${config.systemChainId}`, wallet.address, {
    systemChainId: config.systemChainId,
    chainId: config.chainId,
    contractAddr: config.contractAddr,
  });
  // Before anything reads or sends: refuses another deployment's systemChainId, adopts older commands.
  const claimed = await store.claimDeployment();
  if (claimed.adopted > 0 || claimed.windowsUpdated > 0)
    log.info(
      { ...claimed, contract: config.contractAddr },
      'commands stored by an earlier version: adopted by this deployment, windows recomputed',
    );
  let sender: Sender | undefined;
  const metrics = relayMetrics(context.metrics, {
    balanceWei: () => sender?.state.balanceWei,
    oldestUnconfirmedSinceMs: () => sender?.state.oldestUnconfirmedSinceMs,
    jobCounts: () => store.jobCounts(),
    statuses: COMMAND_STATUSES,
    // Not `scheduled`: a command waits there for its window (a refund for its timelock), for hours if need be.
    waitingStatuses: ['accepted'],
  });
  const maxGasPriceWei = BigInt(config.maxGasPriceWei);
  sender = createRelaySender({
    pool: context.db,
    store,
    rpc,
    wallet,
    contractAddr: config.contractAddr,
    chainId: config.chainId,
    pollIntervalMs,
    caps: { maxFeePerGas: maxGasPriceWei, maxGasLimit: BigInt(config.maxGasLimit) },
    confirmations: config.confirmations,
    windowMarginSeconds: config.windowMarginSeconds,
    bumpAfterBlocks: config.bumpAfterBlocks,
    maxRefusals: config.maxRefusals,
    onSettled: (action, outcome) => {
      metrics.commands.inc({ action, outcome: outcome === 'missed' ? 'failed' : outcome });
      if (outcome === 'missed') metrics.windowsMissed.inc({ action });
    },
    scrub,
    log,
  });
  const submitter = sender;
  // get_system_fee is asked for every quote and is not rate-limited: one RPC read per block time at most.
  const readFee = cachedFor(pollIntervalMs, () =>
    rpc.read(
      (p) =>
        new Contract(config.contractAddr, swapInterface, p)
          .getFunction('basisPointsRate')
          .staticCall() as Promise<bigint>,
    ),
  );

  const forwarder =
    config.chainClientRegisterUrl === undefined
      ? undefined
      : new RegistrationForwarder({
          registerUrl: config.chainClientRegisterUrl,
          stored: () => store.registration(config.systemChainId),
          forwarded: {
            get: () => store.forwardedRegistration(config.systemChainId),
            set: (callbacks) => store.setForwardedRegistration(config.systemChainId, callbacks),
          },
          intervalMs: config.reregisterSeconds * 1000,
          log,
          stopSignal: context.stopSignal,
          onOutcome: (outcome) => metrics.registrations.inc({ outcome }),
        });
  const subscription = await subscribeCommands({
    bus: context.bus,
    pool: context.db,
    store,
    deployment: config,
    onScheduled: () => submitter.wake(),
  });
  const http = await startHttpService(
    { ...context, log } as unknown as ServiceContext,
    `relay ${config.systemChainId}`,
    config.port,
    (app) =>
      registerRelayRoutes(app, {
        chain: config.acceptChecks
          ? chainView({
              rpc,
              contractAddr: config.contractAddr,
              lookbackBlocks: config.senderLookbackBlocks,
              cacheMs: Math.min(1_000, pollIntervalMs),
            })
          : undefined,
        windowMarginSeconds: config.windowMarginSeconds,
        maxWindowAheadSeconds: config.maxWindowAheadSeconds,
        maxPaidFailures: config.maxPaidFailures,
        access: { apiKeys: config.apiKeys, allowIps: config.allowIps, restrictReads: config.restrictReads },
        rateLimit: config.rateLimit,
        errorsAsHttp200: config.errorsAsHttp200,
        scrub,
        onReopened: () => submitter.wake(),
        forwardRegistration: forwarder && ((callbacks) => forwarder.forward(callbacks)),
        chainClientOrigin: registerUrl === undefined ? undefined : new URL(registerUrl).origin,
        onStoredOnly: () => metrics.registrations.inc({ outcome: 'stored_only' }),
        reregisterSeconds: config.reregisterSeconds,
        systemChainId: config.systemChainId,
        chainId: config.chainId,
        commandContext: {
          systemChainId: config.systemChainId,
          chainId: config.chainId,
          contractAddr: config.contractAddr,
          senderWallets: config.senderWallets,
          maxGasPriceWei,
        },
        store,
        readFee,
        onCommand: (action, outcome) => metrics.commands.inc({ action, outcome }),
        status: () => ({
          wallet: wallet.address,
          chainId: config.chainId,
          rpcEndpoints: rpcUrls.length,
          submitter: { ...submitter.state },
        }),
        log,
      }),
    {
      ownErrorVocabulary: true,
      healthChecks: { sender: () => senderHealth(submitter.state) },
      clientErrorCodes: clientErrorCodesOf(RELAY_ERRORS),
    },
  );
  submitter.start();
  forwarder?.start();
  log.info(
    { wallet: wallet.address, contract: config.contractAddr, chainId: config.chainId },
    'relay started',
  );
  if (config.apiKeys.length === 0 && config.allowIps.length === 0)
    log.warn(
      'the behalf routes make the relay wallet pay gas and are open to any client: set relay.apiKeys or relay.allowIps',
    );
  const address = http.app.server.address();
  return {
    app: http.app,
    port: typeof address === 'object' && address ? address.port : config.port,
    submitter,
    store,
    async stop() {
      forwarder?.stop();
      await http.stop();
      await subscription.stop();
      await submitter.stop();
      rpc.destroy();
    },
  };
}
