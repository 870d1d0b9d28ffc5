// One Hardhat 2 network (EDR) served over JSON-RPC on a loopback port, inside this process.
//
// In-process rather than a `hardhat node` child: a chain is up in ~0.1 s instead of the 2-3 s a Hardhat CLI
// boot takes, no config file or artifacts are needed, and closing the HTTP server is all it takes to stop
// (no child process can be left behind). Hardhat's internal modules are used because Hardhat 2 has no
// public API for a bare network; the package is pinned in package.json, so their shape cannot drift.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { openJournal, type Request } from './journal.js';

type ProviderModule = typeof import('hardhat/internal/hardhat-network/provider/provider.js');
type HandlerModule = typeof import('hardhat/internal/hardhat-network/jsonrpc/handler.js');
type DefaultConfigModule = typeof import('hardhat/internal/core/config/default-config.js');
type ProviderUtilModule = typeof import('hardhat/internal/core/providers/util.js');

const require = createRequire(import.meta.url);

export interface HardhatNodeOptions {
  chainId: number;
  /** Interface to listen on; loopback unless said otherwise. */
  host?: string;
  /** 0 (default) lets the OS pick a free port. */
  port?: number;
  /** Unix seconds of the genesis block; default: now. Lets tests replay fixed historical timestamps. */
  initialTimestamp?: number;
  /** Private keys funded at genesis (default: Hardhat's 20 mnemonic accounts). */
  accounts?: readonly GenesisAccount[];
  /** Journal file: the chain is replayed from it at start and every new block is recorded (journal.ts). */
  journal?: string;
}

export interface GenesisAccount {
  privateKey: string;
  /** Wei, decimal string. */
  balance: string;
}

export interface HardhatNode {
  chainId: number;
  rpcUrl: string;
  port: number;
  /** True when the chain was replayed from a non-empty journal (its contracts already exist). */
  resumed: boolean;
  /** Direct EIP-1193 access to the chain, bypassing HTTP. */
  request(method: string, params?: unknown[]): Promise<unknown>;
  close(): Promise<void>;
}

let defaultAccounts: GenesisAccount[] | undefined;

// EDR sets up its provider factories on first use; two providers created at the same moment in one process
// (startDevnet starts its chains in parallel) were seen to fail under load with "Provider for provided chain
// type does not exist". Providers are created one at a time (each takes ~0.1 s), and that error is retried.
let creating: Promise<unknown> = Promise.resolve();
const CREATE_ATTEMPTS = 3;

function oneAtATime<T>(create: () => Promise<T>): Promise<T> {
  const attempt = async (): Promise<T> => {
    for (let n = 1; ; n++) {
      try {
        return await create();
      } catch (error) {
        if (n >= CREATE_ATTEMPTS || !/chain type does not exist/i.test(String(error))) throw error;
        await new Promise((r) => setTimeout(r, 100 * n));
      }
    }
  };
  const next = creating.then(attempt, attempt);
  creating = next.catch(() => undefined);
  return next;
}

/**
 * Hardhat's default accounts (mnemonic "test test ... junk", m/44'/60'/0'/0/i, 10 000 ETH each).
 * Derived once per process: the BIP-39 seed stretch costs ~0.3 s.
 */
export function hardhatDefaultAccounts(): readonly GenesisAccount[] {
  if (defaultAccounts === undefined) {
    const { defaultHardhatNetworkHdAccountsConfigParams } =
      require('hardhat/internal/core/config/default-config') as DefaultConfigModule;
    const { normalizeHardhatNetworkAccountsConfig } =
      require('hardhat/internal/core/providers/util') as ProviderUtilModule;
    defaultAccounts = normalizeHardhatNetworkAccountsConfig(defaultHardhatNetworkHdAccountsConfigParams);
  }
  return defaultAccounts;
}

export async function startHardhatNode(options: HardhatNodeOptions): Promise<HardhatNode> {
  const { createHardhatNetworkProvider } =
    require('hardhat/internal/hardhat-network/provider/provider') as ProviderModule;
  const { JsonRpcHandler } = require('hardhat/internal/hardhat-network/jsonrpc/handler') as HandlerModule;
  const { defaultHardhatNetworkParams: defaults } =
    require('hardhat/internal/core/config/default-config') as DefaultConfigModule;

  const journal = options.journal
    ? openJournal(options.journal, options.chainId, options.initialTimestamp ?? Math.floor(Date.now() / 1000))
    : undefined;
  const initialTimestamp = journal?.genesis ?? options.initialTimestamp;
  const provider = await oneAtATime(() =>
    createHardhatNetworkProvider(
      {
        chainId: options.chainId,
        networkId: options.chainId,
        hardfork: defaults.hardfork,
        blockGasLimit: defaults.blockGasLimit,
        minGasPrice: defaults.minGasPrice,
        // Reverted transactions come back as JSON-RPC errors carrying the revert data, as on `hardhat node`.
        throwOnTransactionFailures: true,
        throwOnCallFailures: true,
        // One block per transaction: tests pin each block's timestamp with evm_setNextBlockTimestamp.
        automine: true,
        intervalMining: 0,
        mempoolOrder: 'priority',
        chains: defaults.chains,
        genesisAccounts: [...(options.accounts ?? hardhatDefaultAccounts())],
        allowUnlimitedContractSize: false,
        allowBlocksWithSameTimestamp: false,
        initialDate: initialTimestamp === undefined ? undefined : new Date(initialTimestamp * 1000),
        enableTransientStorage: false,
        enableRip7212: false,
      },
      { enabled: false },
    ),
  );

  const direct: Request = (args) => provider.request(args);
  await journal?.replay(direct);
  const request = journal ? journal.wrap(direct) : direct;
  // The handler only calls request() and, for subscriptions, the listener methods.
  const handler = new JsonRpcHandler({
    request,
    addListener: provider.addListener.bind(provider),
    removeListener: provider.removeListener.bind(provider),
  } as unknown as typeof provider);
  const server = createServer((req, res) => void handler.handleHttp(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  return {
    chainId: options.chainId,
    rpcUrl: `http://${host}:${port}`,
    port,
    resumed: (journal?.entries ?? 0) > 0,
    request: (method, params = []) => request({ method, params }),
    close: () =>
      new Promise<void>((resolve, reject) => {
        // Keep-alive sockets of clients would otherwise hold close() open for seconds.
        server.closeAllConnections();
        server.close((error) => (error === undefined ? resolve() : reject(error)));
      }),
  };
}
