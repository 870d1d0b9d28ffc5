import type { FastifyInstance } from 'fastify';
import { AGENT_ERRORS } from './errors.js';
import { clientErrorCodesOf } from '../../shared/runtime/http.js';
import { Wallet } from 'ethers';
import type { EventBus, Subscription } from '../../shared/bus/port.js';
import { parseComplaint, recoverComplainant } from '../../shared/chain/index.js';
import type { AgentConfig, ChainClientConfig } from '../../shared/config/index.js';
import { secretScrubber } from '../../shared/config/redact.js';
import type { Pool } from '../../shared/db/pool.js';
import { senderHealth } from '../../shared/sender/health.js';
import { startHttpService } from '../../shared/runtime/http-service.js';
import type { RunningService, ServiceContext, ServiceDefinition } from '../../shared/runtime/service.js';
import { RpcPool, type Sender } from '../../shared/sender/index.js';
import { complaintCommands } from '../../topics/complaint.commands.js';
import { resolveChainId } from './chain-id.js';
import { AGENT_CONSUMER_GROUP, subscribeComplaints } from './command-consumer.js';
import { contractOwnership, didSupportOwnership, type DidOwnership } from './did-ownership.js';
import { agentMigrationSets } from './migrations.js';
import { agentMetrics } from './metrics.js';
import { registerAgentRoutes, type AgentChain } from './routes.js';
import { COMPLAINT_STATUSES, ComplaintStore } from './store.js';
import { createAgentSender, hasComplaintReader } from './submitter.js';

/**
 * Agent (`npm run start-agent`, section `[agent]`): takes the SDK's signed complaints, checks them without
 * gas (signature, DID ownership, no complaint yet on chain), and submits each once on chain from the Agent
 * wallet through the shared crash-safe sender.
 */
export const agentService: ServiceDefinition = {
  name: 'agent',
  sections: ['agent'],
  // The swap chains' EVM chain ids: a complaint must prove its agreement (agreement-proof.ts).
  optionalSections: ['chainClients'],
  migrations: agentMigrationSets,
  async start(context) {
    const agent = await startAgent(context, context.config.agent!, {
      didSupportUrl: context.config.point?.didSupportUrl,
      swapChains: swapChainsOf(context.config.chainClients ?? []),
    });
    context.trackConsumerGroup(AGENT_CONSUMER_GROUP, [complaintCommands.name]);
    return agent;
  },
};

export interface AgentContext extends Pick<ServiceContext, 'log' | 'metrics' | 'stopSignal'> {
  db: Pool;
  bus: EventBus;
}

/** Where DID ownership is asked: `didSource`, else the DID support service when a URL is known, else the contract. */
export function didSourceOf(
  config: Pick<AgentConfig, 'didSource' | 'didSupportUrl'>,
  pointDidSupportUrl: string | undefined,
): { source: 'didSupport'; url: string } | { source: 'contract' } {
  const url = config.didSupportUrl ?? pointDidSupportUrl;
  const source = config.didSource ?? (url !== undefined ? 'didSupport' : 'contract');
  if (source === 'contract') return { source };
  if (url === undefined)
    throw new Error('agent.didSource = "didSupport" needs agent.didSupportUrl or point.didSupportUrl');
  return { source, url };
}

/** System chain id → EVM chain id of the OtmoicSwap domain, for each chain of `[[chainClients]]`. */
export function swapChainsOf(clients: readonly ChainClientConfig[]): Map<string, number> {
  return new Map(clients.map((c) => [c.chainId, Number(c.nativeChainId)]));
}

export async function startAgent(
  context: AgentContext,
  config: AgentConfig,
  extra: { didSupportUrl?: string; swapChains?: ReadonlyMap<string, number> } = {},
): Promise<
  RunningService & {
    port: number;
    app: FastifyInstance;
    store: ComplaintStore;
    submitter(): Sender | undefined;
  }
> {
  const log = context.log; // the runner's child names the service already
  const rpcUrls = [config.rpc, ...config.rpcFallbacks];
  // RPC URLs carry API keys: every text that leaves the Agent (answers, reasons, logs) is scrubbed.
  const scrub = secretScrubber(rpcUrls);
  const wallet = new Wallet(config.priv);
  const store = new ComplaintStore(context.db, context.bus, 'agent');
  const didChoice = didSourceOf(config, extra.didSupportUrl);
  const swapChains = extra.swapChains ?? new Map<string, number>();

  /** Everything that needs the chain id: made once it is known (configured, or read from the RPC). */
  interface Bound extends AgentChain {
    rpc: RpcPool;
    sender: Sender;
    subscription: Subscription;
  }
  let bound: Bound | undefined;
  let stopped = false;
  /** Aborted by stop(): the chain id lookup (and the wait before the next) ends at once. */
  const stopping = new AbortController();
  const metrics = agentMetrics(context.metrics, {
    balanceWei: () => bound?.sender.state.balanceWei,
    oldestUnconfirmedSinceMs: () => bound?.sender.state.oldestUnconfirmedSinceMs,
    jobCounts: () => store.countJobs(),
    statuses: COMPLAINT_STATUSES,
    // A complaint is sent as soon as it is scheduled: waiting long in either status means nobody sends.
    waitingStatuses: ['accepted', 'scheduled'],
  });

  const bind = async (chainId: number): Promise<void> => {
    const rpc = new RpcPool({
      urls: rpcUrls,
      chainId,
      timeoutMs: config.rpcTimeoutMs,
      scrub,
      stopSignal: context.stopSignal,
    });
    const did: DidOwnership =
      didChoice.source === 'contract'
        ? contractOwnership(rpc, config.contractAddr)
        : didSupportOwnership(didChoice.url, undefined, context.stopSignal);
    const sender = createAgentSender({
      pool: context.db,
      store,
      rpc,
      wallet,
      contractAddr: config.contractAddr,
      chainId,
      pollIntervalMs: Math.round(config.blockTimeSeconds * 1000),
      caps: { maxFeePerGas: BigInt(config.maxGasPriceWei), maxGasLimit: BigInt(config.maxGasLimit) },
      confirmations: config.confirmations,
      bumpAfterBlocks: config.bumpAfterBlocks,
      maxRefusals: config.maxRefusals,
      onSettled: (outcome) => metrics.complaints.inc({ outcome }),
      scrub,
      log,
    });
    const subscription = await subscribeComplaints({
      bus: context.bus,
      pool: context.db,
      store,
      // The Agent validated the message before publishing it; recovering again costs microseconds.
      signerOf: (payload) =>
        recoverComplainant(
          parseComplaint(payload.complaint),
          payload.signature,
          chainId,
          config.contractAddr,
        ),
      onScheduled: () => sender.wake(),
    });
    sender.start();
    bound = {
      chainId,
      did,
      hasComplaint: hasComplaintReader(rpc, config.contractAddr),
      rpc,
      sender,
      subscription,
    };
    log.info(
      { wallet: wallet.address, contract: config.contractAddr, chainId, didSource: did.source },
      'agent bound to its chain',
    );
  };

  const http = await startHttpService(
    { ...context, log } as unknown as ServiceContext,
    'agent',
    config.port,
    (app) =>
      registerAgentRoutes(app, {
        contractAddr: config.contractAddr,
        store,
        chain: () => bound,
        swapChains,
        onAgreementChecked: (result) => metrics.agreementChecks.inc({ result }),
        rateLimit: config.rateLimit,
        domainRateLimit: config.domainRateLimit,
        bodyLimit: config.bodyLimit,
        maxPaidFailures: config.maxPaidFailures,
        access: { apiKeys: config.apiKeys, allowIps: config.allowIps },
        onReopened: () => bound?.sender.wake(),
        onOutcome: (outcome) => metrics.complaints.inc({ outcome }),
        onRefused: (reason) => {
          metrics.complaints.inc({ outcome: 'refused' });
          metrics.refusals.inc({ reason });
        },
        status: () => ({
          wallet: wallet.address,
          chainId: bound?.chainId ?? null,
          contract: config.contractAddr,
          didSource: didChoice.source,
          agreementChains: [...swapChains.keys()],
          rpcEndpoints: rpcUrls.length,
          submitter: bound ? { ...bound.sender.state } : { chainOk: false, active: false },
        }),
        scrub,
        log,
      }),
    // Refusals carry the Agent's 41xxx codes (errors.ts), 404 included.
    {
      ownErrorVocabulary: true,
      clientErrorCodes: clientErrorCodesOf(AGENT_ERRORS),
      // The SDK in a browser files complaints and reads their status (shared/runtime/cors.ts).
      cors: {
        origins: config.corsOrigins,
        methods: ['GET', 'HEAD', 'POST'],
        allowedHeaders: ['content-type', 'x-api-key'],
        exposedHeaders: ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
      },
      healthChecks: {
        sender: () =>
          senderHealth(
            bound?.sender.state,
            'the chain id of agent.rpc has not been read yet: nothing is sent',
          ),
      },
    },
  );

  // No chain at start-up is no reason to fail: the chain id is asked again until the RPC answers (meanwhile
  // complaints are refused with 503, nothing is lost: accepted ones are in the database and the topic).
  let binding: Promise<void>;
  if (config.chainId !== undefined) {
    await bind(config.chainId);
    binding = Promise.resolve();
  } else {
    binding = (async () => {
      let reported = false;
      while (!stopped) {
        try {
          const chainId = await resolveChainId(undefined, rpcUrls, config.rpcTimeoutMs, stopping.signal);
          if (!stopped) await bind(chainId);
          return;
        } catch (error) {
          if (stopped) return; // the lookup was cut off by the stop: nothing to report
          if (!reported)
            log.warn({ err: scrub((error as Error).message) }, 'chain id not known yet; retrying');
          reported = true;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.max(1_000, config.blockTimeSeconds * 1000));
            stopping.signal.addEventListener(
              'abort',
              () => {
                clearTimeout(timer);
                resolve();
              },
              { once: true },
            );
          });
        }
      }
    })();
  }
  log.info(
    { wallet: wallet.address, contract: config.contractAddr, didSource: didChoice.source },
    'agent started',
  );
  if (swapChains.size === 0)
    log.warn(
      { route: 'POST /submit-complaint' },
      "the agreement signatures of complaints (userSign, lpSign) are not checked before gas: the config has no [[chainClients]] (their nativeChainId is the EIP-712 domain's chain id); a complaint that proves nothing is paid for and judged invalid (case 0)",
    );
  // Open is the default (the Otmoic SDK sends no key), but every complaint spends the wallet's gas (DESIGN §5.8).
  if (config.apiKeys.length === 0 && config.allowIps.length === 0)
    log.warn(
      { route: 'POST /submit-complaint' },
      'POST /submit-complaint is open to every client (agent.apiKeys and agent.allowIps are empty): anyone may make the Agent wallet spend gas, within the rate limits',
    );
  // An IP allow-list trusts the network, and a browser inside it runs pages of the CORS origins with that IP.
  if (config.corsOrigins.length > 0 && config.apiKeys.length === 0 && config.allowIps.length > 0)
    log.warn(
      { route: 'POST /submit-complaint', corsOrigins: config.corsOrigins },
      'agent.corsOrigins with agent.allowIps and no agent.apiKeys: a page of an allowed origin, opened by a browser inside the allowed network, may make the Agent wallet spend gas; set agent.apiKeys (a page cannot read them)',
    );
  const address = http.app.server.address();
  return {
    app: http.app,
    port: typeof address === 'object' && address ? address.port : config.port,
    store,
    submitter: () => bound?.sender,
    async stop() {
      stopped = true;
      stopping.abort();
      await http.stop();
      await binding;
      if (bound) {
        await bound.subscription.stop();
        await bound.sender.stop();
        bound.rpc.destroy();
      }
    },
  };
}
