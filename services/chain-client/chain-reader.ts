import { JsonRpcProvider, toQuantity } from 'ethers';

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
 * same signature from a foreign contract never enter.
 */
export class ChainReader {
  readonly provider: JsonRpcProvider;

  constructor(
    rpcUrl: string,
    private readonly addresses: readonly string[],
  ) {
    this.provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, batchMaxCount: 20 });
  }

  async head(): Promise<number> {
    return Number(await this.provider.send('eth_blockNumber', []));
  }

  async logs(from: number, to: number): Promise<RawLog[]> {
    const logs = (await this.provider.send('eth_getLogs', [
      { fromBlock: toQuantity(from), toBlock: toQuantity(to), address: this.addresses },
    ])) as RawLog[];
    // Defence in depth: a node that ignores the filter must not smuggle foreign events in.
    const allowed = new Set(this.addresses.map((a) => a.toLowerCase()));
    return logs
      .filter((l) => allowed.has(l.address.toLowerCase()) && !l.removed)
      .sort(
        (a, b) => Number(a.blockNumber) - Number(b.blockNumber) || Number(a.logIndex) - Number(b.logIndex),
      );
  }

  /**
   * A node behind a load balancer may not know yet a block or receipt another node gave a log of: null is
   * thrown, so the step is retried, never delivered as `block: null` / `tx: null`.
   */
  async block(n: number): Promise<RawBlock> {
    const block = (await this.provider.send('eth_getBlockByNumber', [
      toQuantity(n),
      false,
    ])) as RawBlock | null;
    if (block === null) throw new Error(`the node does not know block ${n} yet`);
    return block;
  }

  async receipt(hash: string): Promise<RawReceipt> {
    const receipt = (await this.provider.send('eth_getTransactionReceipt', [hash])) as RawReceipt | null;
    if (receipt === null) throw new Error(`the node has no receipt of ${hash} yet`);
    return receipt;
  }

  destroy(): void {
    this.provider.destroy();
  }
}
