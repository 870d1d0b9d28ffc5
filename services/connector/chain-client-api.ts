import type { ChainClientConfig } from '../../shared/config/index.js';
import { CALLBACK_KEYS } from '../../shared/otmoic/abi.js';
import { ALREADY_REGISTERED, postSupport, registerCallbacks } from '../../shared/otmoic/support-register.js';
import type { Stream } from './heights.js';

/** The support routes of a chain client for a stream: reputation paths are the swap paths + "_reputation". */
export function supportPaths(client: ChainClientConfig, stream: Stream) {
  const suffix = stream === 'reputation' ? '_reputation' : '';
  return {
    register: underBase(client.url, client.registerPath + suffix),
    history: underBase(client.historyUrl, client.historyPath + suffix),
  };
}

/**
 * `url` + `path` (README): `new URL(path, url)` resolved the absolute path against the host and dropped the
 * base URL's own path, so a chain client behind a gateway's prefix was asked at the gateway's root.
 */
function underBase(base: string, path: string): string {
  const url = new URL(base);
  url.pathname = url.pathname.replace(/\/+$/, '') + path;
  return url.toString();
}

/**
 * Registers `callbackUrl` for merged update_height bodies. "Already registered" counts as success. `stop`
 * (the Connector stops) ends a request in flight at once.
 */
export function register(
  client: ChainClientConfig,
  stream: Stream,
  callbackUrl: string,
  stop?: AbortSignal,
): Promise<'registered' | 'already registered'> {
  return registerCallbacks(
    supportPaths(client, stream).register,
    { on_height_update: callbackUrl },
    true,
    stop,
  );
}

/**
 * The callback object of a history request. Merged: one `on_height_update`. Not merged
 * (`historyMerge = false`): every per-event key of the stream and `on_height_update`, all to the same URL
 * (the Connector's route takes both body shapes).
 */
export function historyCallback(merge: boolean, stream: Stream, callbackUrl: string): Record<string, string> {
  if (merge) return { on_height_update: callbackUrl };
  const keys = stream === 'reputation' ? ['on_reputation'] : Object.values(CALLBACK_KEYS);
  return Object.fromEntries([...keys, 'on_height_update'].map((key) => [key, callbackUrl]));
}

/**
 * Asks for blocks start…end; resolves when the chain client accepted the task (code 200), or has it already:
 * the original keys its tasks by callback and range, and answers the same request again 30209 "callbackUrl is
 * already registered" (the task runs; a retry of ours must not count as a refusal).
 */
export async function requestHistory(
  client: ChainClientConfig,
  stream: Stream,
  callbackUrl: string,
  start: number,
  end: number,
  stop?: AbortSignal,
): Promise<void> {
  const merge = client.historyMerge;
  const result = await postSupport(
    supportPaths(client, stream).history,
    { start, end, callback: historyCallback(merge, stream, callbackUrl), merge },
    stop,
  );
  if (result.code === 200 || ALREADY_REGISTERED.test(result.message ?? '')) return;
  throw new Error(`history refused: ${result.code} ${result.message ?? ''}`);
}
