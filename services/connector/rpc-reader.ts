import { FetchRequest, JsonRpcProvider, Network, toQuantity } from 'ethers';
import { z } from 'zod';
import { wrongChainText } from '../../shared/chain/chain-id.js';
import type { RawBlock, RawLog, RawReceipt } from '../../services/chain-client/chain-reader.js';

const hexQuantity = z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be a 0x-prefixed hex quantity');
const hash32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex');
const addressText = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte hex address');

// What the Connector relies on in RPC answers; the rest of each object is kept as the node sent it (the
// bodies built from them are archived like a chain client's).
const rawLogSchema = z.looseObject({
  address: addressText,
  topics: z.array(hash32),
  data: z.string().regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex'),
  blockNumber: hexQuantity,
  blockHash: hash32,
  transactionHash: hash32,
  transactionIndex: hexQuantity,
  logIndex: hexQuantity,
  removed: z.boolean().default(false),
});
const blockSchema = z.looseObject({ number: hexQuantity, timestamp: hexQuantity, hash: hash32 });
const receiptSchema = z.looseObject({ from: addressText, transactionHash: hash32 });

/** An RPC answer that is not what the JSON-RPC API promises (or no answer): retried like an outage. */
export class RpcAnswerError extends Error {}

/** The RPC serves another chain than the configured one: it is not read at all. */
class WrongChainError extends RpcAnswerError {}

/**
 * A read cut off because the Connector stops (its stop signal, destroy()): no answer of the RPC, so neither
 * an outage nor a bad answer (not an RpcAnswerError). What needed it is done after the restart.
 */
export class RpcReaderStoppedError extends Error {
  override readonly name = 'RpcReaderStoppedError';
  constructor(label: string) {
    super(`${label}: read aborted, the Connector is stopping`);
  }
}

/**
 * The Connector's own reads of a chain, for gaps a chain client does not fill: the same raw JSON objects our
 * chain client reads (so `buildEventBodies` makes the original bodies from them), each answer checked with
 * zod, every request bounded by a timeout. Error messages never carry the RPC URL (it may hold an API key).
 * A stop (`stop`, ServiceContext.stopSignal, or destroy()) ends every read in flight at once and fails later
 * ones (RpcReaderStoppedError).
 */
export class RpcReader {
  private readonly provider: JsonRpcProvider;
  private readonly destroyed = new AbortController();
  private readonly stop: AbortSignal;
  /** The check that the RPC serves `chainId`: kept when it refused (for good), dropped when it failed. */
  private chainCheck: Promise<void> | undefined;

  constructor(
    private readonly rpcUrl: string,
    /** EVM chain id of the RPC (`nativeChainId`): given, so the provider never probes the network. */
    private readonly chainId: number,
    /** How the URL is named in errors and logs, e.g. `rpc-urls.97`. */
    private readonly label: string,
    timeoutMs = 10_000,
    stop?: AbortSignal,
  ) {
    this.stop = stop ? AbortSignal.any([stop, this.destroyed.signal]) : this.destroyed.signal;
    const request = new FetchRequest(rpcUrl);
    request.timeout = timeoutMs;
    const network = Network.from(chainId);
    this.provider = new JsonRpcProvider(request, network, { staticNetwork: network, batchMaxCount: 20 });
  }

  async head(): Promise<number> {
    return Number(await this.call('eth_blockNumber', [], hexQuantity));
  }

  /**
   * Logs of blocks from…to emitted by `addresses` (address filter, and checked again), in block order. Asked in
   * one batch with block `to`, which the node must know: behind a load balancer, a node that has not reached
   * `to` answers eth_getLogs with what it has, and the fill would take the chunk without events it never saw.
   */
  async logs(from: number, to: number, addresses: readonly string[]): Promise<RawLog[]> {
    if (addresses.length === 0) return []; // no filter would mean every contract
    const [logs] = await Promise.all([
      this.call(
        'eth_getLogs',
        [{ fromBlock: toQuantity(from), toBlock: toQuantity(to), address: addresses }],
        z.array(rawLogSchema),
      ),
      this.blockByNumber(to),
    ]);
    const allowed = new Set(addresses.map((a) => a.toLowerCase()));
    return (logs as RawLog[])
      .filter((l) => allowed.has(l.address.toLowerCase()) && !l.removed)
      .sort(
        (a, b) => Number(a.blockNumber) - Number(b.blockNumber) || Number(a.logIndex) - Number(b.logIndex),
      );
  }

  /** Block `n` (the time of a chunk's height message). */
  async blockByNumber(n: number): Promise<RawBlock> {
    const block = await this.call('eth_getBlockByNumber', [toQuantity(n), false], blockSchema.nullable());
    if (!block) throw new RpcAnswerError(`${this.label}: block ${n} not found`);
    if (Number(block.number) !== n)
      throw new RpcAnswerError(`${this.label}: asked block ${n}, got ${block.number}`);
    return block as RawBlock;
  }

  /** The block a log is in, by its hash (by number, a reorg between the reads would pair the log with another). */
  async block(hash: string): Promise<RawBlock> {
    const block = await this.call('eth_getBlockByHash', [hash, false], blockSchema.nullable());
    if (!block) throw new RpcAnswerError(`${this.label}: block ${hash} not found`);
    if (block.hash.toLowerCase() !== hash.toLowerCase())
      throw new RpcAnswerError(`${this.label}: asked block ${hash}, got ${block.hash}`);
    return block as RawBlock;
  }

  async receipt(hash: string): Promise<RawReceipt> {
    const receipt = await this.call('eth_getTransactionReceipt', [hash], receiptSchema.nullable());
    if (!receipt) throw new RpcAnswerError(`${this.label}: receipt of ${hash} not found`);
    return receipt as RawReceipt;
  }

  destroy(): void {
    this.destroyed.abort();
    this.provider.destroy();
  }

  /** The Connector stops: every read fails at once (RpcReaderStoppedError). */
  get stopped(): boolean {
    return this.stop.aborted;
  }

  /**
   * Before its first read, the RPC must answer `eth_chainId` with the configured chain: an RPC of another
   * chain (a wrong `rpc-urls` entry) would fill gaps with that chain's logs where the contract has the same
   * address there (deterministic deployments). Every read then fails, as in an outage, and says why.
   */
  private async servesTheChain(): Promise<void> {
    const check = (this.chainCheck ??= this.call('eth_chainId', [], hexQuantity).then((answer) => {
      const wrong = wrongChainText(answer, this.chainId);
      if (wrong !== undefined) throw new WrongChainError(`${this.label}: ${wrong}`);
    }));
    try {
      await check;
    } catch (err) {
      if (!(err instanceof WrongChainError) && this.chainCheck === check) this.chainCheck = undefined;
      throw err;
    }
  }

  private async call<T>(method: string, params: unknown[], schema: z.ZodType<T>): Promise<T> {
    if (method !== 'eth_chainId') await this.servesTheChain();
    let answer: unknown;
    const stop = this.stop;
    if (stop.aborted) throw new RpcReaderStoppedError(this.label);
    let onStop: (() => void) | undefined;
    const sent = this.provider.send(method, params);
    sent.catch(() => undefined); // cut off by the stop: it fails unheard later
    try {
      answer = await Promise.race([
        sent,
        new Promise<never>((_, reject) => {
          onStop = () => reject(new RpcReaderStoppedError(this.label));
          stop.addEventListener('abort', onStop, { once: true });
        }),
      ]);
    } catch (err) {
      if (err instanceof RpcReaderStoppedError) throw err;
      throw new RpcAnswerError(`${this.label}: ${method} failed: ${this.scrub(err)}`);
    } finally {
      stop.removeEventListener('abort', onStop!);
    }
    const parsed = schema.safeParse(answer);
    if (!parsed.success)
      throw new RpcAnswerError(
        `${this.label}: unexpected ${method} answer: ${z.prettifyError(parsed.error)}`,
      );
    return parsed.data;
  }

  /** The error's first line without the URL (or its path and query, where API keys live). */
  private scrub(err: unknown): string {
    let text = String((err as { shortMessage?: string }).shortMessage ?? (err as Error).message ?? err);
    text = text.split('\n')[0]!.slice(0, 300);
    const url = new URL(this.rpcUrl);
    const secrets = [this.rpcUrl, this.rpcUrl.replace(/\/$/, ''), url.host, url.pathname + url.search];
    for (const secret of secrets.filter((s) => s.length > 1).sort((a, b) => b.length - a.length))
      text = text.split(secret).join(`<${this.label}>`);
    return text;
  }
}
