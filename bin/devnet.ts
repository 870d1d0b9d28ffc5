// `npm run devnet -- --chains 97,11155420 [--host 127.0.0.1]`
// Starts a local devnet, prints one line of JSON (RPC URLs, contract addresses, accounts) on stdout and
// "devnet ready in N ms" on stderr, then runs until SIGINT/SIGTERM and stops every chain before exiting.
import { startDevnet } from '../shared/devnet/devnet.js';
import { commandLine, usageError } from './command-line.js';

const DEFAULT_CHAINS = '97,11155420';

const usage = `usage: npm run devnet [-- --chains ${DEFAULT_CHAINS}] [--host 127.0.0.1]`;

function parseChainIds(text: string): number[] {
  const ids = text.split(',').map((part) => Number(part.trim()));
  for (const id of ids) {
    if (!Number.isSafeInteger(id) || id <= 0) usageError(usage, `--chains: not a chain id list: "${text}"`);
  }
  return ids;
}

const { values } = commandLine(usage, {
  options: {
    chains: { type: 'string', default: DEFAULT_CHAINS },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

const devnet = await startDevnet({
  chains: parseChainIds(values.chains).map((chainId) => ({ chainId })),
  host: values.host,
});

const summary = {
  startupMs: devnet.startupMs,
  chains: devnet.chains.map((chain) => ({
    chainId: chain.chainId,
    rpcUrl: chain.rpcUrl,
    contracts: chain.contracts,
    accounts: chain.accounts,
  })),
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
process.stderr.write(`devnet ready in ${devnet.startupMs} ms\n`);

let stopping = false;
const shutdown = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  devnet
    .stop()
    .then(() => {
      process.stderr.write(`devnet stopped (${signal})\n`);
      process.exit(0);
    })
    .catch((error: unknown) => {
      process.stderr.write(`devnet stop failed: ${String(error)}\n`);
      process.exit(1);
    });
};
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));
