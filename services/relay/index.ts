import type { FastifyInstance } from 'fastify';
import { Contract, JsonRpcProvider, Network, Wallet } from 'ethers';
import type { EventBus } from '../../shared/bus/port.js';
import type { RelayConfig } from '../../shared/config/index.js';
import type { Pool } from '../../shared/db/pool.js';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { RunningService, ServiceContext, ServiceDefinition } from '../../shared/runtime/service.js';
import { relayCommands } from '../../topics/relay.commands.js';
import { relayConsumerGroup, subscribeCommands } from './command-consumer.js';
import { relayMetrics } from './metrics.js';
import { relayMigrations } from './migrations.js';
import { registerRelayRoutes } from './routes.js';
import { CommandStore } from './store.js';
import { Submitter } from './submitter.js';

/** A read of basisPointsRate() that takes longer than this is a failure (30206), not a hanging request. */
const FEE_READ_TIMEOUT_MS = 5_000;

/**
 * The relay interface of one EVM chain deployment (`npm run start-relay`, section `[relay]`): hashlock,
 * system fee, EIP-712 signer recovery and behalf commands, which the submitter sends from the relay wallet
 * inside the contract's third-party windows.
 */
export const relayService: ServiceDefinition = {
  name: 'relay',
  sections: ['relay'],
  migrations: [relayMigrations],
  async start(context) {
    const relay = await startRelay(context, context.config.relay!);
    context.trackConsumerGroup(relayConsumerGroup(context.config.relay!.systemChainId), [relayCommands.name]);
    return relay;
  },
};

export interface RelayContext extends Pick<ServiceContext, 'log' | 'metrics'> {
  db: Pool;
  bus: EventBus;
}

export async function startRelay(
  context: RelayContext,
  config: RelayConfig,
): Promise<
  RunningService & { port: number; app: FastifyInstance; submitter: Submitter; store: CommandStore }
> {
  const log = context.log.child({ relay: config.systemChainId });
  const pollIntervalMs = Math.round(config.blockTimeSeconds * 1000);
  // No network probing: start-up must not fail while the RPC is down (the submitter retries, /status tells).
  const provider = new JsonRpcProvider(config.rpc, config.chainId, {
    staticNetwork: Network.from(config.chainId),
    cacheTimeout: -1,
    pollingInterval: Math.min(pollIntervalMs, 4_000),
  });
  const wallet = new Wallet(config.priv, provider);
  const store = new CommandStore(context.db, context.bus, `relay:${config.systemChainId}`);
  const metrics = relayMetrics(context.metrics);
  const maxGasPriceWei = config.maxGasPriceWei === undefined ? undefined : BigInt(config.maxGasPriceWei);
  const submitter = new Submitter({
    pool: context.db,
    store,
    provider,
    wallet,
    contractAddr: config.contractAddr,
    chainId: config.chainId,
    systemChainId: config.systemChainId,
    pollIntervalMs,
    maxGasPriceWei,
    onSettled: (action, outcome) => metrics.commands.inc({ action, outcome }),
    log,
  });
  const contract = new Contract(config.contractAddr, swapInterface, provider);
  const readFee = async (): Promise<bigint> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        contract.getFunction('basisPointsRate').staticCall() as Promise<bigint>,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('basisPointsRate() timed out')), FEE_READ_TIMEOUT_MS);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  };

  const subscription = await subscribeCommands({
    bus: context.bus,
    pool: context.db,
    store,
    systemChainId: config.systemChainId,
    onScheduled: () => submitter.wake(),
  });
  const http = await startHttpService(
    { ...context, log } as unknown as ServiceContext,
    `relay ${config.systemChainId}`,
    config.port,
    (app) =>
      registerRelayRoutes(app, {
        systemChainId: config.systemChainId,
        chainId: config.chainId,
        commandContext: {
          systemChainId: config.systemChainId,
          chainId: config.chainId,
          senderWallets: config.senderWallets,
          maxGasPriceWei,
        },
        store,
        readFee,
        onCommand: (action, outcome) => metrics.commands.inc({ action, outcome }),
        status: () => ({
          wallet: wallet.address,
          chainId: config.chainId,
          submitter: { ...submitter.state },
        }),
        log,
      }),
  );
  submitter.start();
  log.info(
    { wallet: wallet.address, contract: config.contractAddr, chainId: config.chainId },
    'relay started',
  );
  const address = http.app.server.address();
  return {
    app: http.app,
    port: typeof address === 'object' && address ? address.port : config.port,
    submitter,
    store,
    async stop() {
      await http.stop();
      await subscription.stop();
      await submitter.stop();
      provider.destroy();
    },
  };
}
