/**
 * The local devnet as a service (`[devnet]`, never in production): one in-process Hardhat chain per
 * `rpc-urls` entry on that URL's loopback port, with our contracts at their fixed addresses, replayed from
 * its journal so chain state survives a restart; the DID support stand-in on `point.didSupportUrl`'s port
 * (the DID registry of chain `devnet.didChainId`) and the relay-admin (KYC) stand-in on
 * `point.relayAdminUrl`'s port. Started first, so chain clients and services find their chains up.
 */
import path from 'node:path';
import { startDevnet } from '../../shared/devnet/devnet.js';
import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { startDidSupport } from '../stand-ins/did-support/index.js';
import { startRelayAdminStandIn } from '../stand-ins/relay-admin/server.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

function loopbackPort(url: string, key: string): number {
  const parsed = new URL(url);
  if (!LOOPBACK.has(parsed.hostname))
    throw new Error(`[devnet] serves ${key} locally, but ${key} is not a loopback URL`);
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  return port;
}

export const devnetService: ServiceDefinition = {
  name: 'devnet',
  sections: ['devnet', 'point', 'rpc-urls'],
  async start({ config, log }) {
    const devnetConfig = config.devnet!;
    const chains = Object.entries(config.rpcUrls!).map(([chainId, url]) => ({
      chainId: Number(chainId),
      port: loopbackPort(url, `rpc-urls.${chainId}`),
      // Used only for a new chain (a journalled one keeps its genesis).
      initialTimestamp: Math.floor(Date.now() / 1000) - devnetConfig.genesisDaysAgo * 86_400,
    }));
    const stateDir = path.resolve(devnetConfig.stateDir);
    const devnet = await startDevnet({ chains, stateDir });
    const stops: Array<() => Promise<void>> = [() => devnet.stop()];
    const stopAll = async () => {
      for (const stop of stops.reverse()) await stop().catch(() => undefined);
    };
    try {
      const didChain = devnet.chain(devnetConfig.didChainId);
      const did = await startDidSupport({
        rpcUrl: didChain.rpcUrl,
        registry: didChain.contracts.reputation,
        port: loopbackPort(config.point!.didSupportUrl, 'point.didSupportUrl'),
      });
      stops.push(() => did.stop());
      const kyc = await startRelayAdminStandIn({
        port: loopbackPort(config.point!.relayAdminUrl, 'point.relayAdminUrl'),
        file: path.join(stateDir, 'kyc.json'),
        verified: devnetConfig.kycVerified,
      });
      stops.push(() => kyc.close());
    } catch (err) {
      await stopAll();
      throw err;
    }
    log.info(
      {
        chains: devnet.chains.map((c) => ({ chainId: c.chainId, rpc: c.rpcUrl, otmoic: c.contracts.otmoic })),
        startupMs: devnet.startupMs,
        stateDir,
      },
      'devnet up (Hardhat accounts: well-known development keys, never use them elsewhere)',
    );
    return { stop: stopAll };
  },
};
