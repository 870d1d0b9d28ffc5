/**
 * What the relay reads from the chain at accept time: the chain's block time (cached for a fraction of a
 * block, so a burst of commands costs one read), a transfer's swapStatus, and the sender of a transferIn
 * (its LogNewTransferIn). Every read goes through the RPC pool (timeouts, fallback, scrubbed errors).
 */
import { Contract, type Log } from 'ethers';
import { swapInterface } from '../../shared/otmoic/abi.js';
import type { RpcPool } from '../../shared/sender/index.js';

export interface ChainView {
  chainTime(): Promise<number>;
  /** swapStatus(transferId): 0 none, 1 pending, 2 confirmed, 3 refunded. */
  swapStatus(transferId: string): Promise<number>;
  /**
   * The `sender` of the LogNewTransferIn with this transferId, searched back from the head (up to
   * lookbackBlocks / 5,000 eth_getLogs requests): callers ask only for a transfer swapStatus says is locked.
   */
  transferInSender(transferId: string): Promise<string | undefined>;
}

/** Blocks per eth_getLogs request (most providers cap a range near 10 000). */
const LOG_CHUNK = 5_000;
/** Senders found, remembered (a transferIn's sender never changes): a repeat costs no log scan. */
const SENDER_MEMO_SIZE = 10_000;
/**
 * Transfers whose scan found no LogNewTransferIn (a transfer out, or one older than the look-back), remembered
 * this long: an anonymous client repeating one such request would otherwise cost a whole scan each time (up
 * to lookbackBlocks / 5,000 eth_getLogs calls of the sender's RPC quota). Not for ever: a lagging fallback
 * node may have missed a log that exists.
 */
export const SENDER_MISS_TTL_MS = 600_000;

export function chainView(options: {
  rpc: RpcPool;
  contractAddr: string;
  lookbackBlocks: number;
  cacheMs: number;
  /** How long a scan that found nothing is remembered (default SENDER_MISS_TTL_MS). */
  missTtlMs?: number;
}): ChainView {
  const { rpc, contractAddr } = options;
  let cached: { at: number; time: Promise<number> } | undefined;
  const senders = new Map<string, string>();
  /** transferId → when its miss is forgotten (ms). */
  const misses = new Map<string, number>();
  /** transferId → its scan under way: identical requests sent at once share it instead of scanning each. */
  const scanning = new Map<string, Promise<string | undefined>>();
  const topic = swapInterface.getEvent('LogNewTransferIn')!.topicHash;
  return {
    chainTime() {
      const now = Date.now();
      if (cached === undefined || now - cached.at > options.cacheMs) {
        const time = rpc.read(async (p) => {
          const block = await p.getBlock('latest');
          if (block === null) throw new Error('the node returned no latest block');
          return block.timestamp;
        });
        cached = { at: now, time };
        time.catch(() => {
          if (cached?.time === time) cached = undefined;
        });
      }
      return cached.time;
    },
    async swapStatus(transferId) {
      const [status] = (await rpc.read((p) =>
        new Contract(contractAddr, swapInterface, p).getFunction('swapStatus').staticCall(transferId),
      )) as [bigint];
      return Number(status);
    },
    async transferInSender(transferId) {
      const key = transferId.toLowerCase();
      const known = senders.get(key);
      if (known !== undefined) return known;
      const missed = misses.get(key);
      if (missed !== undefined && missed > Date.now()) return undefined;
      misses.delete(key);
      const under = scanning.get(key);
      if (under !== undefined) return under;
      const scan = scanForSender(key).finally(() => scanning.delete(key));
      scanning.set(key, scan);
      return scan;
    },
  };

  /** Looks back lookbackBlocks for the LogNewTransferIn of `key`; remembers what it found, or that it found none. */
  async function scanForSender(key: string): Promise<string | undefined> {
    const head = await rpc.read((p) => p.getBlockNumber());
    const floor = Math.max(0, head - options.lookbackBlocks);
    for (let to = head; to >= floor; to -= LOG_CHUNK) {
      const from = Math.max(floor, to - LOG_CHUNK + 1);
      const logs: Log[] = await rpc.read((p) =>
        p.getLogs({ address: contractAddr, topics: [topic], fromBlock: from, toBlock: to }),
      );
      for (const log of logs) {
        const parsed = swapInterface.parseLog(log);
        if (parsed !== null && (parsed.args[0] as string).toLowerCase() === key) {
          const sender = parsed.args[1] as string;
          if (senders.size >= SENDER_MEMO_SIZE) senders.delete(senders.keys().next().value!);
          senders.set(key, sender);
          return sender;
        }
      }
    }
    if (misses.size >= SENDER_MEMO_SIZE) misses.delete(misses.keys().next().value!);
    misses.set(key, Date.now() + (options.missTtlMs ?? SENDER_MISS_TTL_MS));
    return undefined;
  }
}
