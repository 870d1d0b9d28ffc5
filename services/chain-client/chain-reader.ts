import { FetchRequest, JsonRpcProvider, toQuantity } from 'ethers';
import { wrongChainText } from '../../shared/chain/chain-id.js';
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

/** The longest wait a Retry-After is granted: a broken or hostile endpoint cannot stall the client longer. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * Every error the reader throws: its text is about the chain or the endpoint, with the RPC URL scrubbed out,
 * so it may be shown on the unauthenticated /health (the follower's check); other errors are not.
 */
export class ChainReadError extends Error {}

/**
 * The endpoint refused for its load (429, or a 429 / 503 with Retry-After), or asked to be left alone for
 * `retryInMs` more: nothing is sent to it meanwhile. Its state, not the range's: a history task does not count
 * it as a failed attempt.
 */
export class RpcRateLimitedError extends ChainReadError {
  constructor(
    message: string,
    readonly retryInMs: number,
  ) {
    super(message);
  }
}

/**
 * The endpoint answered `eth_chainId` with another chain than `chainClient.nativeChainId`: nothing it answers
 * is taken (its events would go out labelled with this instance's system chain id). Its text names both ids.
 */
export class WrongChainError extends ChainReadError {}

/**
 * The wait a Retry-After value asks for (delay-seconds or an HTTP date, RFC 9110 §10.2.3), at most `capMs`;
 * undefined when it is absent or unreadable.
 */
export function retryAfterMs(value: string | undefined, nowMs: number, capMs: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  const ms = /^\d+$/.test(text) ? Number(text) * 1_000 : Date.parse(text) - nowMs;
  return Number.isNaN(ms) ? undefined : Math.min(capMs, Math.max(0, ms));
}

export interface ChainReaderOptions {
  /** The longest Retry-After honoured (default MAX_RETRY_AFTER_MS). */
  maxRetryAfterMs?: number;
  /**
   * The EVM chain id the endpoint must serve (chainClient.nativeChainId, a decimal string): asked with every
   * head and logs read, in the same batch. Unset: not checked.
   */
  chainId?: string;
}

/**
 * Reads the chain over JSON-RPC and keeps the node's raw JSON objects, because the chain client's bodies carry
 * them as they are (`event`, `tx`, `block`). Logs are always fetched with an address filter: events with the
 * same signature from a foreign contract never enter. Every error it throws has the RPC URL (an API key)
 * scrubbed out: its texts reach the logs and the unauthenticated /health. A Retry-After of the endpoint (on a
 * 429 or 503) is honoured: until then nothing is sent to it and every call fails at once (RpcRateLimitedError).
 */
export class ChainReader {
  readonly provider: JsonRpcProvider;
  private readonly scrub: (text: string) => string;
  /** Aborted by destroy(): requests in flight fail at once, so a stop never waits on a hung node. */
  private readonly destroyed = new AbortController();
  /** Date.now() before which the endpoint asked not to be called (its Retry-After). */
  private quietUntil = 0;
  private readonly maxRetryAfterMs: number;
  private readonly chainId: string | undefined;

  constructor(
    rpcUrl: string,
    private readonly addresses: readonly string[],
    /** A request unanswered this long fails (chainClient.rpcTimeoutMs; ethers' own default is 300 s). */
    timeoutMs = 10_000,
    options: ChainReaderOptions = {},
  ) {
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
    this.chainId = options.chainId;
    const request = new FetchRequest(rpcUrl);
    request.timeout = timeoutMs;
    // Ethers retries a 429 itself up to 12 times, taking Retry-After's seconds as milliseconds: it hammered a
    // rate-limited provider. The answer is ours to handle (noteAnswer, send).
    request.retryFunc = async () => false;
    const getUrl = FetchRequest.createGetUrlFunc();
    request.getUrlFunc = async (req, signal) => {
      // Also what ethers sends on its own (its network detection retries every second).
      if (this.quietMs() > 0)
        throw new ChainReadError('the RPC endpoint asked to be left alone (Retry-After)');
      const response = await getUrl(req, signal);
      this.noteAnswer(response.statusCode, response.headers['retry-after']);
      return response;
    };
    this.provider = new JsonRpcProvider(request, undefined, { staticNetwork: true, batchMaxCount: 20 });
    this.scrub = secretScrubber([rpcUrl]);
  }

  /** The head, read in one batch with the chain check: no step and no history request follows another chain. */
  async head(): Promise<number> {
    const [, head] = await Promise.all([this.servesTheChain(), this.send('eth_blockNumber', [])]);
    return Number(head);
  }

  /**
   * The logs of blocks [from, to]. Asked in one batch with block `to`, which must be known: behind a load
   * balancer, a node that has not reached `to` answers eth_getLogs with what it has (nothing above its head),
   * and progress would move past events it never saw.
   */
  async logs(from: number, to: number): Promise<RawLog[]> {
    return (await this.logsAndHead(from, to)).logs;
  }

  /**
   * logs(), with the head of the node that answered (the same batch): the head another node reported says
   * nothing of how deep `to` is on this one, so the confirmations are counted on this head (Follower).
   */
  async logsAndHead(from: number, to: number): Promise<{ logs: RawLog[]; head: number }> {
    // The chain check in the batch whose logs are delivered: one node answers a batch, and behind a load
    // balancer the node that answered the head may not be this one.
    const [, head, last, logs] = (await Promise.all([
      this.servesTheChain(),
      this.send('eth_blockNumber', []),
      this.send('eth_getBlockByNumber', [toQuantity(to), false]),
      this.send('eth_getLogs', [
        { fromBlock: toQuantity(from), toBlock: toQuantity(to), address: this.addresses },
      ]),
    ])) as [void, string, RawBlock | null, RawLog[]];
    if (last === null) throw new ChainReadError(`the node does not know block ${to} yet`);
    return { logs: this.ours(logs), head: Number(head) };
  }

  private ours(logs: RawLog[]): RawLog[] {
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
    if (block === null) throw new ChainReadError(`the node does not know block ${hash} yet`);
    return block;
  }

  async receipt(hash: string): Promise<RawReceipt> {
    const receipt = (await this.send('eth_getTransactionReceipt', [hash])) as RawReceipt | null;
    if (receipt === null) throw new ChainReadError(`the node has no receipt of ${hash} yet`);
    return receipt;
  }

  destroy(): void {
    this.destroyed.abort();
    this.provider.destroy();
  }

  /**
   * Asks `eth_chainId` (sent at once, so it joins the batch of the reads sent beside it) when a chain id is
   * configured; fails with WrongChainError when the endpoint serves another chain.
   */
  private async servesTheChain(): Promise<void> {
    if (this.chainId === undefined) return;
    const answer = await this.send('eth_chainId', []);
    if (typeof answer !== 'string' || !/^0x[0-9a-fA-F]+$/.test(answer))
      throw new ChainReadError('unexpected eth_chainId answer: not a hex quantity');
    const wrong = wrongChainText(answer, this.chainId);
    if (wrong !== undefined)
      throw new WrongChainError(`${wrong} (chainClient.nativeChainId): nothing is delivered`);
  }

  /** A 429 or 503 with a Retry-After: the endpoint is left alone until then. */
  private noteAnswer(status: number, retryAfter: string | undefined): void {
    if (status !== 429 && status !== 503) return;
    const waitMs = retryAfterMs(retryAfter, Date.now(), this.maxRetryAfterMs);
    if (waitMs !== undefined) this.quietUntil = Math.max(this.quietUntil, Date.now() + waitMs);
  }

  /** How long the endpoint asked to be left alone still (0: not). */
  private quietMs(): number {
    return Math.max(0, this.quietUntil - Date.now());
  }

  private async send(method: string, params: unknown[]): Promise<unknown> {
    const signal = this.destroyed.signal;
    if (signal.aborted) throw new ChainReadError('the chain reader is stopped');
    const quiet = this.quietMs();
    if (quiet > 0)
      throw new RpcRateLimitedError(
        `the RPC endpoint asked to be left alone (Retry-After): retry in ${Math.ceil(quiet / 1_000)} s`,
        quiet,
      );
    let onAbort: (() => void) | undefined;
    const request = this.provider.send(method, params);
    request.catch(() => undefined);
    try {
      return await Promise.race([
        request,
        new Promise<never>((_, reject) => {
          onAbort = () => reject(new ChainReadError('the chain reader is stopped'));
          signal.addEventListener('abort', onAbort, { once: true });
        }),
      ]);
    } catch (err) {
      const message = this.scrub((err as Error).message);
      const refusedForLoad = (err as { response?: { statusCode?: number } }).response?.statusCode === 429;
      const quiet = this.quietMs();
      if (refusedForLoad || quiet > 0)
        throw new RpcRateLimitedError(
          `the RPC endpoint refused for its load${quiet > 0 ? `; retry in ${Math.ceil(quiet / 1_000)} s` : ''}: ${message}`,
          quiet,
        );
      throw new ChainReadError(message);
    } finally {
      signal.removeEventListener('abort', onAbort!);
    }
  }
}
