import { urlHost } from '../config/env.js';
import type { AppConfig } from '../config/index.js';

/**
 * How a URL names the host a service listens on (HOST, else 127.0.0.1): an IPv6 literal in brackets
 * (`http://[::1]:9100`, not `http://::1:9100`, which is no URL), a wildcard as its family's loopback address.
 */
export function printedHost(host: string | undefined): string {
  if (!host || host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return urlHost(host) ?? host;
}

/**
 * Where to look once everything is up: one entry per running service, for the single "ready" line. RPC URLs
 * are shown only for the devnet's own chains (elsewhere they may carry API keys).
 */
export function serviceUrls(config: AppConfig, running: readonly string[]): Record<string, string> {
  const host = printedHost(process.env.HOST);
  const at = (port: number, path = '') => `http://${host}:${port}${path}`;
  const urls: Record<string, string> = {};
  const has = (name: string) => running.includes(name);
  if (has('points') && config.point) {
    urls.dashboard = at(config.point.port, '/dashboard');
    urls.points = at(config.point.port);
  }
  if (has('agent') && config.agent) urls.agent = at(config.agent.port);
  if (has('relay') && config.relay)
    urls.relay = at(config.relay.port, `/evm-client-${config.relay.systemChainId}/relay`);
  if (has('connector') && config.connector) urls.connector = at(config.connector.port);
  if (has('classifier') && config.classifier) urls.classifier = at(config.classifier.port);
  if (has('notifier') && config.notifier.port !== undefined) urls.notifier = at(config.notifier.port);
  if (has('chain-client'))
    for (const c of config.chainClient ?? []) urls[`chainClient${c.systemChainId}`] = at(c.port);
  if (has('devnet')) {
    for (const [chainId, url] of Object.entries(config.rpcUrls ?? {})) urls[`chain${chainId}`] = url;
    if (config.point) {
      urls.didSupport = config.point.didSupportUrl;
      urls.kyc = config.point.relayAdminUrl;
    }
  }
  return urls;
}
