// A local multi-chain devnet: one Hardhat network per EVM chain id, each with Otmoic, Reputation and
// TestToken deployed and the Hardhat test accounts funded (10 000 ETH at genesis plus TestTokens).
import path from 'node:path';
import { JsonRpcProvider, Network, Wallet, getCreateAddress } from 'ethers';
import { compileContracts } from '../../contracts/compile.js';
import type { CompiledContracts } from '../../contracts/compile.js';
import { chainClock } from './chain-clock.js';
import type { ChainClock } from './chain-clock.js';
import { deployDevnetContracts } from './deploy.js';
import type { DevnetContracts } from './deploy.js';
import { hardhatDefaultAccounts, startHardhatNode } from './hardhat-node.js';
import type { HardhatNode } from './hardhat-node.js';

export type { ChainClock } from './chain-clock.js';
export type { DevnetContracts } from './deploy.js';

export interface DevnetChainOptions {
  /** EVM chain id (what `block.chainid` and `eth_chainId` return), e.g. 97 or 11155420. */
  chainId: number;
  /** Fixed port; default: a free one picked by the OS. */
  port?: number;
  /** Unix seconds of the genesis block; default: now. */
  initialTimestamp?: number;
}

export interface StartDevnetOptions {
  chains: readonly DevnetChainOptions[];
  /** Default 127.0.0.1. */
  host?: string;
  /** TestToken base units minted to each of the first `fundedAccounts` accounts; default 1 000 000 tokens. */
  tokensPerAccount?: bigint;
  /** How many of the 20 accounts get TestTokens; default 10. */
  fundedAccounts?: number;
  /**
   * Directory of the chains' journals (`<chainId>.jsonl`): a chain is replayed from its journal at start and
   * keeps recording, so its state survives a restart (journal.ts). Default: none, the chain lives in memory.
   */
  stateDir?: string;
  /** Already compiled contracts (default: compileContracts(), cached on disk). */
  compiled?: CompiledContracts;
}

export interface DevnetAccount {
  address: string;
  privateKey: string;
}

export interface DevnetChain extends ChainClock {
  chainId: number;
  rpcUrl: string;
  provider: JsonRpcProvider;
  contracts: DevnetContracts;
  /** Hardhat's 20 default accounts; [0] deployed the contracts and owns them. */
  accounts: readonly DevnetAccount[];
  /** A wallet of `accounts[index]` connected to this chain's provider. */
  wallet(index: number): Wallet;
}

export interface Devnet {
  chains: readonly DevnetChain[];
  /** The chain with this EVM chain id (throws if the devnet has none). */
  chain(chainId: number): DevnetChain;
  /** Milliseconds from startDevnet() being called to every chain being deployed and funded. */
  startupMs: number;
  /** Stops every chain; safe to call more than once. */
  stop(): Promise<void>;
}

const DEFAULT_TOKENS_PER_ACCOUNT = 1_000_000n * 10n ** 18n;
const DEFAULT_FUNDED_ACCOUNTS = 10;

export async function startDevnet(options: StartDevnetOptions): Promise<Devnet> {
  const started = performance.now();
  const chainIds = options.chains.map((chain) => chain.chainId);
  if (chainIds.length === 0) throw new Error('startDevnet: no chains requested');
  if (new Set(chainIds).size !== chainIds.length)
    throw new Error(`startDevnet: duplicate chain id in ${chainIds}`);

  const compiled = options.compiled ?? (await compileContracts());
  const accounts = hardhatDefaultAccounts().map(({ privateKey }) => ({
    address: new Wallet(privateKey).address,
    privateKey,
  }));

  const nodes: HardhatNode[] = [];
  const chains: DevnetChain[] = [];
  const stopAll = async (): Promise<void> => {
    for (const chain of chains.splice(0)) chain.provider.destroy();
    await Promise.all(nodes.splice(0).map((node) => node.close()));
  };

  try {
    // Chains start in parallel: each is independent and most of the time is spent waiting on EDR.
    await Promise.all(
      options.chains.map(async (chainOptions) => {
        const node = await startHardhatNode({
          chainId: chainOptions.chainId,
          host: options.host,
          port: chainOptions.port,
          initialTimestamp: chainOptions.initialTimestamp,
          journal: options.stateDir && path.join(options.stateDir, `${chainOptions.chainId}.jsonl`),
        });
        nodes.push(node);
        const chain = await prepareChain(node, accounts, compiled, options);
        chains.push(chain);
      }),
    );
  } catch (error) {
    await stopAll();
    throw error;
  }

  // Report chains in the order they were asked for, whatever order they finished in.
  const ordered = chainIds.map((id) => chains.find((chain) => chain.chainId === id) as DevnetChain);
  return {
    chains: ordered,
    chain(chainId) {
      const found = ordered.find((chain) => chain.chainId === chainId);
      if (found === undefined) throw new Error(`devnet has no chain ${chainId} (has ${chainIds.join(', ')})`);
      return found;
    },
    startupMs: Math.round(performance.now() - started),
    stop: stopAll,
  };
}

/** Where deployDevnetContracts put them: the deployer's nonces 0, 1, 2 (a replayed chain has them). */
function deployedContracts(deployer: string): DevnetContracts {
  const at = (nonce: number) => getCreateAddress({ from: deployer, nonce });
  return { token: at(0), otmoic: at(1), reputation: at(2) };
}

async function prepareChain(
  node: HardhatNode,
  accounts: readonly DevnetAccount[],
  compiled: CompiledContracts,
  options: StartDevnetOptions,
): Promise<DevnetChain> {
  // staticNetwork: no chain-id probing per request; cacheTimeout -1: never serve a stale block number or
  // timestamp after the tests moved time; short polling so tx.wait() returns as soon as the block exists.
  const provider = new JsonRpcProvider(node.rpcUrl, node.chainId, {
    staticNetwork: Network.from(node.chainId),
    cacheTimeout: -1,
    pollingInterval: 50,
  });
  const wallet = (index: number): Wallet => {
    const account = accounts[index];
    if (account === undefined)
      throw new RangeError(`no devnet account ${index} (there are ${accounts.length})`);
    return new Wallet(account.privateKey, provider);
  };

  const fundedCount = options.fundedAccounts ?? DEFAULT_FUNDED_ACCOUNTS;
  const contracts = node.resumed
    ? deployedContracts(accounts[0]!.address)
    : await deployDevnetContracts(wallet(0), compiled, {
        fundAccounts: accounts.slice(0, fundedCount).map((account) => account.address),
        tokensPerAccount: options.tokensPerAccount ?? DEFAULT_TOKENS_PER_ACCOUNT,
      });

  return {
    chainId: node.chainId,
    rpcUrl: node.rpcUrl,
    provider,
    contracts,
    accounts,
    wallet,
    // Time control goes straight to the in-process chain: no HTTP round trip, no provider cache.
    ...chainClock(node.request),
  };
}
