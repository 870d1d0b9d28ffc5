import { FetchRequest, JsonRpcProvider, toQuantity } from 'ethers';
import { secretScrubber } from '../../shared/config/redact.js';

/** A log exactly as eth_getLogs returns it (hex quantities). */
export interface RawLog {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  transactionHash: string;
  transactionIndex: string;
  logIndex: string;
  removed: boolean;
}
export type RawReceipt = Record<string, unknown> & { from: string; transactionHash: string };
export type RawBlock = Record<string, unknown> & { number: string; timestamp: string };

/**
 * Reads the chain over JSON-RPC and keeps the node's raw JSON objects, because the chain client's bodies carry
 * them as they are (`event`, `tx`, `block`). Logs are always fetched with an address filter: events with the
 * same signature from a foreign contract never enter. Every error it throws has the RPC URL (an API key)
 * scrubbed out: its texts reach the logs and the unauthenticated /health.
 */
export class ChainReader {
  readonly provider: JsonRpcProvider;
  private readonly scrub: (text: string) => string;
  /** Aborted by destroy(): requests in flight fail at once, so a stop never waits on a hung node. */
  private readonly destroyed = new AbortController();

  constructor(
    rpcUrl: string,
    private readonly addresses: readonly string[],
    /** A request unanswered this long fails (chainClient.rpcTimeoutMs; ethers' own default is 300 s). */
    timeoutMs = 10_000,
  ) {
    const request = new FetchRequest(rpcUrl);
    request.timeout = timeoutMs;
    this.provider = new JsonRpcProvider(request, undefined, { staticNetwork: true, batchMaxCount: 20 });
    this.scrub = secretScrubber([rpcUrl]);
  }

  async head(): Promise<number> {
    return Number(await this.send('eth_blockNumber', []));
  }

  /**
   * The logs of blocks [from, to]. Asked in one batch with block `to`, which must be known: behind a load
   * balancer, a node that has not reached `to` answers eth_getLogs with what it has (nothing above its head),
   * and progress would move past events it never saw.
   */
  async logs(from: number, to: number): Promise<RawLog[]> {
    const [logs, last] = (await Promise.all([
      this.send('eth_getLogs', [
        { fromBlock: toQuantity(from), toBlock: toQuantity(to), address: this.addresses },
      ]),
      this.send('eth_getBlockByNumber', [toQuantity(to), false]),
    ])) as [RawLog[], RawBlock | null];
    if (last === null) throw new Error(`the node does not know block ${to} yet`);
    // Defence in depth: a node that ignores the filter must not smuggle foreign events in.
    const allowed = new Set(this.addresses.map((a) => a.toLowerCase()));
    return logs
      .filter((l) => allowed.has(l.address.toLowerCase()) && !l.removed)
      .sort(
        (a, b) => Number(a.blockNumber) - Number(b.blockNumber) || Number(a.logIndex) - Number(b.logIndex),
      );
  }

  /**
   * The block a log is in, by its hash: by number, a reorg between the two reads would pair the log with
   * another block (its time, its hash), which the Connector refuses as inconsistent. A node behind a load
   * balancer may not know yet a block or receipt another node gave a log of: null is thrown, so the step is
   * retried, never delivered as `block: null` / `tx: null`.
   */
  async block(hash: string): Promise<RawBlock> {
    const block = (await this.send('eth_getBlockByHash', [hash, false])) as RawBlock | null;
    if (block === null) throw new Error(`the node does not know block ${hash} yet`);
    return block;
  }

  async receipt(hash: string): Promise<RawReceipt> {
    const receipt = (await this.send('eth_getTransactionReceipt', [hash])) as RawReceipt | null;
    if (receipt === null) throw new Error(`the node has no receipt of ${hash} yet`);
    return receipt;
  }

  destroy(): void {
    this.destroyed.abort();
    this.provider.destroy();
  }

  private async send(method: string, params: unknown[]): Promise<unknown> {
    const signal = this.destroyed.signal;
    if (signal.aborted) throw new Error('the chain reader is stopped');
    let onAbort: (() => void) | undefined;
    const request = this.provider.send(method, params);
    request.catch(() => undefined);
    try {
      return await Promise.race([
        request,
        new Promise<never>((_, reject) => {
          onAbort = () => reject(new Error('the chain reader is stopped'));
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } catch (err) {
      throw new Error(this.scrub((err as Error).message));
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }
}
