/**
 * The DID support service answers `{code: 0, data: [{name}]}` (the Agent's reading, and the devnet stand-in's).
 * A `code` other than 0 is the service saying it failed, whatever `data` holds: read as a decisive "owns no
 * DID", it made the LP's signer no address of the LP (case 2 on the user of every swap it quoted, case 0 for its
 * complaints) and was recorded with the verdict for every replay. It is a failure: the swap waits and the
 * lookup is retried. An answer without `code` (DESIGN §5's `{data:[{name}]}`) is still an answer.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logging/logger.js';
import { waitFor } from '../../test/support/wait.js';
import { HttpDidSource } from './did-source.js';

const ADDRESS = '0x' + 'ab'.repeat(20);

function sourceAnswering(body: unknown) {
  const answered: string[] = [];
  const failed: string[] = [];
  const did = new HttpDidSource({
    url: 'http://did.invalid',
    ttlMs: 60_000,
    log: createLogger({ level: 'silent' }),
    onAnswer: async (address) => void answered.push(address),
    onFailure: (_address, error) => void failed.push(error),
    fetch: async () => Response.json(body),
  });
  return { did, answered, failed };
}

describe('the DID support service’s answer code', () => {
  it('a code other than 0 is a failure, not an address that owns no DID', async () => {
    const { did, answered, failed } = sourceAnswering({ code: 500, message: 'internal error', data: [] });
    did.request(ADDRESS);
    await waitFor(() => answered.length + failed.length > 0, 'the lookup', 2_000);
    did.stop();
    expect(answered).toEqual([]);
    expect(did.names(ADDRESS)).toBeUndefined();
    expect(failed[0]).toMatch(/code 500/);
  });

  it('code 0, or no code at all, is an answer', async () => {
    for (const body of [
      { code: 0, data: [{ name: 'lp.otmoic' }] },
      { data: [{ name: 'lp.otmoic' }] },
      { code: 0, data: [] },
    ]) {
      const { did, answered } = sourceAnswering(body);
      did.request(ADDRESS);
      await waitFor(() => answered.length > 0, 'the answer', 2_000);
      did.stop();
      expect(did.names(ADDRESS)).toEqual(body.data.map((d) => d.name));
    }
  });
});
