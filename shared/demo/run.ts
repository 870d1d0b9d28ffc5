// `npm run demo`: traffic against the running system of config.toml (its devnet chains, Agent and Points),
// round after round, with what Points says of the parties after each.
import type { AppConfig } from '../config/index.js';
import { connectDevnetChain } from '../devnet/connect.js';
import type { Logger } from '../logging/logger.js';
import type { DemoChains } from './cases.js';
import { CHEATING_LP, CHEATING_USER, playRound, type Mix } from './traffic.js';
import { lpIdOf } from '../devnet/agreements.js';

export interface DemoOptions {
  /** Rounds to play; 0 plays until stopped. */
  rounds: number;
  mix: Mix;
  /** Pause between rounds. */
  pauseMs: number;
  signal?: AbortSignal;
}

/** The devnet chains of the configuration: the relay's chain is the source, the other the destination. */
export function demoChains(config: AppConfig): DemoChains {
  const entries = config.chainClients ?? [];
  const src = entries.find((e) => e.chainId === config.relay?.systemChainId) ?? entries[0];
  const dst = entries.find((e) => e !== src);
  if (!src || !dst) throw new Error('the demo needs two [[chainClients]] entries');
  const chain = (native: string) => {
    const url = config.rpcUrls?.[native];
    if (!url) throw new Error(`the demo needs rpc-urls.${native}`);
    return connectDevnetChain(url, Number(native));
  };
  const srcChain = chain(src.nativeChainId);
  const dstChain = chain(dst.nativeChainId);
  const didChainId = config.devnet?.didChainId ?? srcChain.chainId;
  return {
    src: srcChain,
    dst: dstChain,
    srcSystemChainId: Number(src.chainId),
    dstSystemChainId: Number(dst.chainId),
    didChain: didChainId === dstChain.chainId ? dstChain : srcChain,
  };
}

export async function runDemo(config: AppConfig, options: DemoOptions, log: Logger): Promise<void> {
  const chains = demoChains(config);
  const agentUrl = config.agent ? `http://127.0.0.1:${config.agent.port}` : undefined;
  const pointsUrl = config.point ? `http://127.0.0.1:${config.point.port}` : undefined;
  const relay = config.relay
    ? {
        url: `http://127.0.0.1:${config.relay.port}/evm-client-${config.relay.systemChainId}/relay`,
        chainId: config.relay.chainId,
      }
    : undefined;
  try {
    for (let round = 0; options.rounds === 0 || round < options.rounds; round++) {
      if (options.signal?.aborted) break;
      const result = await playRound(round, options.mix, chains, { agentUrl, relay }, log);
      const kinds = result.swaps.map((s) => s.kind).join(' ');
      log.info({ round, swaps: result.swaps.length, settledAt: result.settledAt }, `round played: ${kinds}`);
      // Points scores the window ending at the wall clock: blocks after it do not count yet.
      if (result.settledAt > Date.now() / 1000)
        log.warn(
          'chain time passed the wall clock: new verdicts count only once it is reached (delete data/ to begin again)',
        );
      if (pointsUrl) await reportScores(pointsUrl, chains, log);
      if (options.rounds === 0 || round + 1 < options.rounds)
        await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
    }
  } finally {
    chains.src.provider.destroy();
    chains.dst.provider.destroy();
  }
}

/** What Points says now of the two cheaters (scores lag the chain by the pipeline's few seconds). */
async function reportScores(pointsUrl: string, chains: DemoChains, log: Logger): Promise<void> {
  const cheater = chains.src.accounts[CHEATING_USER]!.address;
  const lpId = lpIdOf(chains.src.accounts[CHEATING_LP]!.address);
  const get = async (path: string) => {
    const response = await fetch(`${pointsUrl}${path}`).catch(() => undefined);
    return response?.ok
      ? ((await response.json()) as { score?: string; basis?: { tenths?: number } })
      : undefined;
  };
  const user = await get(`/user-point?address=${cheater}`);
  const lp = await get(`/lp-point?lp_id=${encodeURIComponent(lpId)}`);
  log.info(
    {
      user: cheater,
      userScore: user?.score,
      lp: lpId,
      lpScore: lp?.score,
      dashboard: `${pointsUrl}/dashboard`,
    },
    'scores of the cheaters so far',
  );
}
