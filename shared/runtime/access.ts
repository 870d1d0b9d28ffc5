/**
 * Who may call a service's gas-spending routes (the relay's behalf routes, the Agent's /submit-complaint):
 * an IP allow-list (addresses or CIDR ranges, node's BlockList) and API keys in `x-api-key`, compared in
 * constant time. Both are off when their list is empty. Each service answers with its own coded errors.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';

export interface AccessOptions {
  apiKeys: readonly string[];
  allowIps: readonly string[];
}

/** The two refusals; the messages are the same in every service (only the codes differ). */
export type AccessRefusal = 'UNAUTHORIZED' | 'FORBIDDEN';
export const ACCESS_MESSAGES: Record<AccessRefusal, string> = {
  UNAUTHORIZED: 'a valid API key is required in the x-api-key header',
  FORBIDDEN: 'this client IP may not use this route',
};

/** An allow-list entry: an IPv4/IPv6 address or a CIDR range with a prefix valid for its family. */
export function isIpOrCidr(entry: string): boolean {
  const parts = entry.split('/');
  if (parts.length > 2) return false;
  const family = isIP(parts[0]!);
  if (family === 0) return false;
  if (parts.length === 1) return true;
  if (!/^\d{1,3}$/.test(parts[1]!)) return false;
  return Number(parts[1]) <= (family === 6 ? 128 : 32);
}

/**
 * Whom a rate limit counts for a client address: an IPv4 address as it is (an IPv4-mapped IPv6 address as its
 * IPv4 one), an IPv6 address by its /64. A single IPv6 host is commonly given a whole /64, so keyed on the full
 * address one client had 2^64 fresh budgets; zone ids (`fe80::1%eth0`) are left out.
 */
export function rateLimitSubject(ip: string): string {
  const address = ip.split('%')[0]!;
  const mapped = address.toLowerCase().startsWith('::ffff:') ? address.slice(7) : undefined;
  if (mapped !== undefined && isIP(mapped) === 4) return mapped;
  if (isIP(address) !== 6) return address;
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, as lower-case hex without leading zeros. */
function ipv6Groups(address: string): string[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const part = (text: string | undefined): string[] => {
    if (!text) return [];
    const groups = text.split(':');
    const last = groups[groups.length - 1]!;
    if (last.includes('.')) {
      // An embedded IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) is two groups.
      const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
      groups.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
    }
    return groups.map((g) => parseInt(g, 16).toString(16));
  };
  const front = part(head);
  const back = part(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...zeros, ...back];
}

const digest = (text: string) => createHash('sha256').update(text).digest();

export function accessGuard(
  options: AccessOptions & {
    /** The service's coded error for a refusal (thrown by check). */
    refuse: (kind: AccessRefusal, message: string) => Error;
    /** The config key of allowIps, named when an entry is not an address (config validation missed it). */
    allowIpsKey: string;
  },
): {
  check: (ip: string, headerKey: unknown) => void;
  clientKey: (ip: string, headerKey: unknown) => string;
} {
  const keys = options.apiKeys.map(digest);
  const allowed = new BlockList();
  for (const entry of options.allowIps) {
    if (!isIpOrCidr(entry))
      throw new Error(`${options.allowIpsKey}: ${entry} is not an IP address or CIDR range`);
    const [address, prefix] = entry.split('/');
    const family = isIP(address!) === 6 ? 'ipv6' : 'ipv4';
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
      if (!ipAllowed(ip)) throw options.refuse('FORBIDDEN', ACCESS_MESSAGES.FORBIDDEN);
      if (keys.length > 0 && keyIndex(headerKey) < 0)
        throw options.refuse('UNAUTHORIZED', ACCESS_MESSAGES.UNAUTHORIZED);
    },
    // Rate limits count per valid key (a shared NAT does not starve a keyed client), else per IP (an IPv6
    // client per /64).
    clientKey(ip, headerKey) {
      const index = keyIndex(headerKey);
      return index >= 0 ? `key:${index}` : `ip:${rateLimitSubject(ip)}`;
    },
  };
}
