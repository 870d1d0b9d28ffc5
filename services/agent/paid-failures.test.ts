import { describe, expect, it } from 'vitest';
import { paidFailuresOf, type ComplaintRow, type ReplacedComplaint } from './store.js';

/**
 * Whose failures count against a complaint (agent.maxPaidFailures): the complainant DID domain's, kept
 * across re-opens and replacements, never another domain's. The devnet test (agent.test.ts) shows the cap
 * at work; this one covers the cases it does not reach: a domain coming back after being replaced.
 */
const D = 'squatter.devnet';
const E = 'other.devnet';

function replaced(domain: string, fields: Partial<ReplacedComplaint> = {}): ReplacedComplaint {
  return {
    signer: '0x0000000000000000000000000000000000000001',
    domain,
    signature: '0x',
    reason: 'reverted on chain: InvalidSigner',
    nonce: 3,
    tx_hash: '0xaa',
    block_number: 10,
    transactions: [],
    created_at: '2026-11-26T00:00:00.000Z',
    replaced_at: '2026-11-26T00:01:00.000Z',
    ...fields,
  };
}

function row(fields: Partial<ComplaintRow>): ComplaintRow {
  return {
    bidId: `0x${'1'.repeat(64)}`,
    complaint: {},
    signature: '0x',
    domain: E,
    signer: '0x0000000000000000000000000000000000000002',
    alreadyOnChain: false,
    history: [],
    status: 'failed',
    reason: 'estimate reverted',
    nonce: null,
    txHash: null,
    blockNumber: null,
    attempts: 1,
    txs: [],
    refusals: 0,
    minedBlock: null,
    cancelReason: null,
    paidFailuresBefore: 0,
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...fields,
  };
}

describe('paidFailuresOf: the paid failures of a complainant domain on a bid', () => {
  it("the row's own domain: what was paid before its last re-open, plus its failure if a transaction was mined", () => {
    expect(paidFailuresOf(row({ domain: D, paidFailuresBefore: 1, blockNumber: 12 }), D)).toBe(2);
    // Refused at the estimate, or the nonce used by another transaction: nothing of ours mined, nothing paid.
    expect(paidFailuresOf(row({ domain: D, paidFailuresBefore: 1, blockNumber: null }), D)).toBe(1);
    // Not failed (under way again): only what was paid before.
    expect(
      paidFailuresOf(row({ domain: D, paidFailuresBefore: 1, status: 'sent', blockNumber: 12 }), D),
    ).toBe(1);
  });

  it('a domain replaced by another and coming back: its latest count in the history', () => {
    const r = row({
      domain: E,
      paidFailuresBefore: 0,
      blockNumber: 20,
      history: [
        replaced(D, { paid_failures: 1 }),
        replaced(E, { paid_failures: 1 }),
        replaced(D, { paid_failures: 2 }),
      ],
    });
    expect(paidFailuresOf(r, D)).toBe(2);
    // E's count is the row's (it took the row over with its earlier count; here 0 before, 1 now).
    expect(paidFailuresOf(r, E)).toBe(1);
  });

  it("another domain is never charged with the row's or the history's failures", () => {
    const r = row({
      domain: D,
      paidFailuresBefore: 5,
      blockNumber: 9,
      history: [replaced(D, { paid_failures: 4 })],
    });
    expect(paidFailuresOf(r, 'genuine.devnet')).toBe(0);
  });

  it('history entries from before agent migration 3 count their own mined failure', () => {
    const { paid_failures: _absent, ...legacy } = replaced(D);
    const r = row({ history: [legacy, { ...legacy, block_number: null, tx_hash: null }] });
    expect(paidFailuresOf(r, D)).toBe(1);
    expect(paidFailuresOf(row({ history: [{ ...legacy, block_number: null }] }), D)).toBe(0);
  });
});
