/**
 * Several JSON-RPC endpoints of one chain with a per-call timeout and fallback, every error text scrubbed
 * of the URLs (they carry API keys).
 *
 * Why not ethers' FallbackProvider: it answers a read only when a quorum of backends agree (lagging nodes
 * disagree on `latest` and on pending nonces, which stalls the sender), has no raw `send` for methods like
 * eth_chainId, and its stall timeout starts another backend without aborting the slow call. The sender needs
 * less: try the endpoints in order (sticking to the last one that answered), abort a call after
 * `timeoutMs`, and broadcast a signed transaction to every endpoint so one that drops it does not matter.
 */
import { FetchRequest, JsonRpcProvider, Network } from 'ethers';
import { withDeadline } from '../runtime/deadline.js';

export interface RpcPoolOptions {
  urls: readonly string[];
  chainId: number;
  /** Per call: a call that has not answered by then fails (and the next endpoint is tried). */
  timeoutMs: number;
  scrub: (text: string) => string;
  /**
   * The process stops (ServiceContext.stopSignal): every call in flight fails at once with RpcStoppedError,
   * and so does every later one. destroy() does the same.
   */
  stopSignal?: AbortSignal;
}

/** An error whose message has been scrubbed of secrets; `cause` keeps the original for revert decoding. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    message: string,
    readonly original: unknown,
  ) {
    super(message);
  }
}

/**
 * A call cut off because its service stops (RpcPoolOptions.stopSignal, destroy()): neither the endpoint's
 * answer nor the chain's. Work that meets it is left as it was, to be done after the restart: no failed job,
 * no refusal counted, no note (see `stoppedCall`).
 */
export class RpcStoppedError extends Error {
  override readonly name = 'RpcStoppedError';
  constructor() {
    super('RPC call aborted: the service is stopping');
  }
}

/** Whether `error` (as thrown by RpcPool, wrapped or not) is a call the stop cut off. */
export function stoppedCall(error: unknown): boolean {
  return (
    error instanceof RpcStoppedError ||
    (error instanceof RpcError && error.original instanceof RpcStoppedError)
  );
}

export class RpcPool {
  readonly providers: JsonRpcProvider[];
  private preferred = 0;
  /** Aborted by destroy() or by the stop signal: calls in flight and later ones fail (RpcStoppedError). */
  private readonly stop: AbortSignal;
  private readonly destroyed = new AbortController();

  constructor(private readonly options: RpcPoolOptions) {
    if (options.urls.length === 0) throw new Error('RpcPool needs at least one URL');
    this.stop = options.stopSignal
      ? AbortSignal.any([options.stopSignal, this.destroyed.signal])
      : this.destroyed.signal;
    this.providers = options.urls.map((url) => {
      const request = new FetchRequest(url);
      request.timeout = options.timeoutMs;
      return new JsonRpcProvider(request, options.chainId, {
        staticNetwork: Network.from(options.chainId),
        cacheTimeout: -1,
        batchMaxCount: 1,
      });
    });
  }

  /** The service stops: every call fails at once (RpcStoppedError). */
  get stopped(): boolean {
    return this.stop.aborted;
  }

  /** The endpoint that answered last (for ethers objects that need one Provider, e.g. Contract reads). */
  get provider(): JsonRpcProvider {
    return this.providers[this.preferred]!;
  }

  /**
   * Runs `call` on the preferred endpoint, then on the others while the failure is the endpoint's (timeout,
   * network, 5xx). A JSON-RPC answer that is an error (a revert, a refusal) is the chain's answer: returned
   * at once, not retried elsewhere. A stop ends it at once (RpcStoppedError, wrapped).
   */
  async read<T>(call: (provider: JsonRpcProvider) => Promise<T>): Promise<T> {
    let last: unknown;
    for (let i = 0; i < this.providers.length; i++) {
      const index = (this.preferred + i) % this.providers.length;
      try {
        const result = await this.bounded(() => call(this.providers[index]!));
        this.preferred = index;
        return result;
      } catch (error) {
        if (stoppedCall(error) || !isEndpointFailure(error)) throw this.wrap(error);
        last = error;
      }
    }
    throw this.wrap(last);
  }

  /**
   * Sends a signed transaction to every endpoint. Resolves when one took it; otherwise rejects with the
   * most telling refusal (a node's JSON-RPC error before a network failure). A stop before any endpoint took
   * it rejects with RpcStoppedError (wrapped): whether a node got it is unknown, and it is broadcast again
   * after the restart.
   */
  async broadcast(raw: string): Promise<void> {
    const results = await Promise.allSettled(
      this.providers.map((p) => this.bounded(() => p.broadcastTransaction(raw))),
    );
    if (results.some((r) => r.status === 'fulfilled')) return;
    const errors = results.map((r) => (r as PromiseRejectedResult).reason);
    if (errors.some(stoppedCall)) throw this.wrap(new RpcStoppedError());
    throw this.wrap(errors.find((e) => !isEndpointFailure(e)) ?? errors[0]);
  }

  /** Ends the pool: calls in flight fail at once (RpcStoppedError), later ones too. */
  destroy(): void {
    this.destroyed.abort();
    for (const p of this.providers) p.destroy();
  }

  /** `call` within the per-call timeout, cut off by a stop (the request goes on unheard until its timeout). */
  private async bounded<T>(call: () => Promise<T>): Promise<T> {
    const stop = this.stop;
    if (stop.aborted) throw new RpcStoppedError();
    let onStop: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      onStop = () => reject(new RpcStoppedError());
      stop.addEventListener('abort', onStop, { once: true });
    });
    try {
      return await Promise.race([withTimeout(call(), this.options.timeoutMs), stopped]);
    } finally {
      stop.removeEventListener('abort', onStop!);
    }
  }

  /** The error with its message (and the messages ethers nests in it) scrubbed. */
  wrap(error: unknown): RpcError {
    if (error instanceof RpcError) return error;
    const message = this.options.scrub(messageOf(error));
    return new RpcError(message.slice(0, 600), error);
  }
}

function messageOf(error: unknown): string {
  if (error instanceof Error) {
    // ethers puts the node's own text under error.error.message (and the request, with its URL, in info).
    const inner = (error as { error?: { message?: unknown } }).error?.message;
    const short = (error as { shortMessage?: unknown }).shortMessage;
    const head = typeof short === 'string' ? short : error.message;
    return typeof inner === 'string' && !head.includes(inner) ? `${head}: ${inner}` : head;
  }
  return String(error);
}

/** Timeouts, refused connections, HTTP errors: the endpoint failed, not the chain. */
export function isEndpointFailure(error: unknown): boolean {
  if (error instanceof TimeoutError) return true;
  const code = (error as { code?: unknown })?.code;
  if (code === 'TIMEOUT' || code === 'NETWORK_ERROR' || code === 'SERVER_ERROR') {
    // SERVER_ERROR with a JSON-RPC error body is the node answering.
    return (error as { error?: unknown }).error === undefined;
  }
  if (code === 'UNKNOWN_ERROR' || code === 'CALL_EXCEPTION' || code === 'INSUFFICIENT_FUNDS') return false;
  if (typeof code === 'string' && code.startsWith('E')) return true; // ECONNREFUSED and the like
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|socket hang up|fetch failed|timeout/i.test(messageOf(error));
}

class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return withDeadline(promise, ms, () => new TimeoutError(`RPC call timed out after ${ms} ms`));
}
