import { describe, expect, it } from 'vitest';
import { senderHealth } from './health.js';

describe('the sender check of /health (relay and Agent)', () => {
  it('is degraded while the sender holding the wallet cannot use its chain, with the reason', () => {
    expect(
      senderHealth({
        active: true,
        chainOk: false,
        lastError: 'the RPC reports chain 1, not the configured chain 97',
      }),
    ).toEqual({
      status: 'degraded',
      error:
        'the chain cannot be used, nothing is sent: the RPC reports chain 1, not the configured chain 97',
    });
    expect(senderHealth({ active: true, chainOk: true })).toEqual({ status: 'ok' });
  });

  it('is ok on standby (another process sends), and degraded without a sender yet', () => {
    expect(senderHealth({ active: false, chainOk: false })).toEqual({ status: 'ok', standby: true });
    expect(senderHealth(undefined, 'no chain id yet')).toEqual({
      status: 'degraded',
      error: 'no chain id yet',
    });
  });
});
