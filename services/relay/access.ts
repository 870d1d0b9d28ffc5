/**
 * Who may call the relay's behalf routes (and, with `restrictReads`, /status, /metrics and the command
 * lookups): an IP allow-list (addresses or CIDR ranges, node's BlockList) and API keys in `x-api-key`,
 * compared in constant time. Both are off when their list is empty.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import { RelayError } from './errors.js';

export interface AccessOptions {
  apiKeys: readonly string[];
  allowIps: readonly string[];
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export function accessGuard(options: AccessOptions): {
  check: (ip: string, headerKey: unknown) => void;
  clientKey: (ip: string, headerKey: unknown) => string;
} {
  const keys = options.apiKeys.map(digest);
  const allowed = new BlockList();
  for (const entry of options.allowIps) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address!) === 6 ? 'ipv6' : 'ipv4';
    if (isIP(address!) === 0) throw new Error(`relay.allowIps: ${entry} is not an IP address or CIDR range`);
    if (prefix === undefined) allowed.addAddress(address!, family);
    else allowed.addSubnet(address!, Number(prefix), family);
  }
  const keyIndex = (headerKey: unknown): number => {
    if (typeof headerKey !== 'string' || headerKey.length === 0 || headerKey.length > 512) return -1;
    const given = digest(headerKey);
    let found = -1;
    keys.forEach((k, i) => {
      if (timingSafeEqual(k, given)) found = i;
    });
    return found;
  };
  const ipAllowed = (ip: string): boolean => {
    if (options.allowIps.length === 0) return true;
    const plain = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
    const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    return isIP(plain) !== 0 && allowed.check(plain, family);
  };
  return {
    check(ip, headerKey) {
      if (!ipAllowed(ip)) throw new RelayError('FORBIDDEN', 'this client IP may not use this route');
      if (keys.length > 0 && keyIndex(headerKey) < 0)
        throw new RelayError('UNAUTHORIZED', 'a valid API key is required in the x-api-key header');
    },
    // Rate limits count per valid key (a shared NAT does not starve a keyed client), else per IP.
    clientKey(ip, headerKey) {
      const index = keyIndex(headerKey);
      return index >= 0 ? `key:${index}` : `ip:${ip}`;
    },
  };
}
