import { describe, expect, it } from 'vitest';
import { accessGuard, rateLimitSubject } from './access.js';

describe('rateLimitSubject', () => {
  it('keeps an IPv4 address, and reads an IPv4-mapped IPv6 address as its IPv4 one', () => {
    expect(rateLimitSubject('203.0.113.7')).toBe('203.0.113.7');
    expect(rateLimitSubject('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(rateLimitSubject('::FFFF:203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address by its /64, whatever the spelling', () => {
    const subject = '2001:db8:0:2::/64';
    for (const address of [
      '2001:db8:0:2::1',
      '2001:0db8:0000:0002:ffff:ffff:ffff:ffff',
      '2001:DB8::2:1:2:3:4',
      '2001:db8:0:2:0:0:0:9%eth0',
      '2001:db8:0:2::10.0.0.1',
    ])
      expect(rateLimitSubject(address), address).toBe(subject);
    expect(rateLimitSubject('2001:db8:0:3::1')).toBe('2001:db8:0:3::/64');
    expect(rateLimitSubject('::1')).toBe('0:0:0:0::/64');
    expect(rateLimitSubject('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(rateLimitSubject('1:2:3:4:5:6:7::')).toBe('1:2:3:4::/64');
  });

  it('is what the guard counts a client without a valid key by', () => {
    const guard = accessGuard({
      apiKeys: ['k'],
      allowIps: [],
      refuse: (kind) => new Error(kind),
      allowIpsKey: 'x.allowIps',
    });
    expect(guard.clientKey('2001:db8::1', undefined)).toBe(guard.clientKey('2001:db8::2', 'wrong'));
    expect(guard.clientKey('2001:db8::1', undefined)).not.toBe(guard.clientKey('2001:db8:0:1::1', undefined));
    expect(guard.clientKey('2001:db8::1', 'k')).toBe('key:0');
  });
});
