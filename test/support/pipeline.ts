/**
 * The reputation pipeline on a two-chain devnet, in this process, for end-to-end tests: our chain client for
 * each chain, the Connector, the Classifier, and the DID support stand-in over the devnet's registry (on the
 * destination chain, where complaints are filed). Tests add Points, the Agent or a relay on `ctx`.
 */
import { Registry } from 'prom-client';
import { startChainClient } from '../../services/chain-client/index.js';
import { chainClientMigrations } from '../../services/chain-client/migrations.js';
import {
  createClassifier,
  subscribeEngine,
  watchedChains,
  type ClassifierParts,
} from '../../services/classifier/index.js';
import { classifierMigrations } from '../../services/classifier/migrations.js';
import { classifierTables } from '../../services/classifier/tables.js';
import { connectorService } from '../../services/connector/index.js';
import { connectorMigrations } from '../../services/connector/migrations.js';
import { startDidSupport, type DidSupport } from '../../services/stand-ins/did-support/index.js';
import type { MigrationSet } from '../../shared/db/migrate.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import type { ScenarioOptions } from '../../shared/devnet/swap-scenarios.js';
import { createLogger } from '../../shared/logging/logger.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { serviceContext, type Profile } from './service-context.js';

export const SRC = { evm: 97, system: '9006' } as const;
export const DST = { evm: 11155420, system: '614' } as const;
export const E = 60;
export const Tol = 120;

export interface Pipeline {
  devnet: Devnet;
  db: TestDatabase;
  did: DidSupport;
  ctx: Awaited<ReturnType<typeof serviceContext>>;
  classifier: ClassifierParts;
  src(): DevnetChain;
  dst(): DevnetChain;
  /** Swap scenario options between the two chains, DIDs registered on the destination chain. */
  options(extra?: Partial<ScenarioOptions>): ScenarioOptions;
  stop(): Promise<void>;
}

export async function startPipeline(
  options: { extraMigrations?: readonly MigrationSet[]; profile?: Profile } = {},
): Promise<Pipeline> {
  const [devnet, db] = await Promise.all([
    startDevnet({ chains: [{ chainId: SRC.evm }, { chainId: DST.evm }] }),
    createTestDatabase([
      chainClientMigrations,
      connectorMigrations,
      classifierMigrations,
      ...(options.extraMigrations ?? []),
    ]),
  ]);
  const src = () => devnet.chain(SRC.evm);
  const dst = () => devnet.chain(DST.evm);
  const stops: Array<() => Promise<unknown> | void> = [() => db.drop(), () => devnet.stop()];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s();
  };
  try {
    const did = await startDidSupport({ rpcUrl: dst().rpcUrl, registry: dst().contracts.reputation });
    stops.push(() => did.stop());
    const ports: number[] = [];
    for (const { evm, system } of [SRC, DST]) {
      const chain = devnet.chain(evm);
      const client = await startChainClient(
        { db: db.pool, log: createLogger({ level: 'silent' }), metrics: new Registry() },
        {
          port: 0,
          rpc: chain.rpcUrl,
          systemChainId: system,
          contractAddr: chain.contracts.otmoic,
          reputationContractAddr: chain.contracts.reputation,
          confirmations: 0,
          startBlock: 0,
          pollIntervalMs: 100,
          deliveryAttempts: 10,
          keepSettledDays: 7,
        },
      );
      stops.push(() => client.stop());
      ports.push(client.port);
    }
    const connectorPort = await freePort();
    const toml = [
      `[connector]\nport = ${connectorPort}\ncallbackUrl = "http://127.0.0.1:${connectorPort}/callback"\nreregisterIntervalMs = 2000\nbackfillRetryMs = 3000`,
      `[classifier]\nport = ${await freePort()}\ndidSupportUrl = "${did.url}"\ndidCacheMs = 1000`,
      `[rpc-urls]\n${SRC.evm} = "${src().rpcUrl}"\n${DST.evm} = "${dst().rpcUrl}"`,
      ...[SRC, DST].map(
        (c, i) =>
          `[[chainClients]]\nurl = "http://127.0.0.1:${ports[i]}"\nhistoryUrl = "http://127.0.0.1:${ports[i]}"\ninitBlockHeight = 0\nchainId = "${c.system}"\nnativeChainId = "${c.evm}"\nregisterPath = "/support/register"\nhistoryPath = "/support/history"\ncontractAddr = "${devnet.chain(c.evm).contracts.otmoic}"\nreputationContractAddr = "${devnet.chain(c.evm).contracts.reputation}"`,
      ),
    ].join('\n\n');
    const ctx = await serviceContext(
      db,
      toml,
      ['connector', 'classifier', 'chainClients', 'rpc-urls'],
      options.profile,
    );
    stops.push(() => ctx.close());
    const connector = await connectorService.start(ctx);
    stops.push(() => connector.stop());
    const classifier = createClassifier({
      pool: db.pool,
      tables: classifierTables(),
      group: 'classifier',
      chains: watchedChains(ctx.config.chainClients!),
      didSupportUrl: did.url,
      didCacheMs: 1_000,
      bus: ctx.bus,
      log: ctx.log,
    });
    stops.push(() => classifier.did.stop());
    const subscription = await subscribeEngine(ctx.bus, classifier.engine, { group: 'classifier' });
    stops.push(() => subscription.stop());
    return {
      devnet,
      db,
      did,
      ctx,
      classifier,
      src,
      dst,
      options: (extra = {}) => ({
        src: src(),
        dst: dst(),
        srcSystemChainId: Number(SRC.system),
        dstSystemChainId: Number(DST.system),
        didChain: dst(),
        E,
        Tol,
        ...extra,
      }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
