import { describe, expect, it } from 'vitest';
import { reputationInterface } from '../../shared/otmoic/abi.js';
import type { RawLog } from './chain-reader.js';
import { buildEventBodies } from './event-body.js';
import { notUtf8, transferOutLog } from '../../test/support/non-utf8-log.js';

// The contracts take any bytes for a `string` parameter (the ABI decoder checks no UTF-8), so anyone can emit a
// TransferOut whose requestor, lpId or signature is not UTF-8 (a 1-wei transferOut), and any DID owner a
// complaint with such a member.
const SWAP = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';
const REPUTATION = '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0';
const BLOCK_HASH = '0x' + 'bb'.repeat(32);
const TX = '0x' + '0a'.repeat(32);
const reader = {
  block: async () => ({ number: '0x5', timestamp: '0x6553f100', hash: BLOCK_HASH }),
  receipt: async () => ({ from: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC', transactionHash: TX }),
};
const rawLog = (address: string, topics: string[], data: string, logIndex = 0): RawLog => ({
  address,
  topics,
  data,
  blockNumber: '0x5',
  blockHash: BLOCK_HASH,
  transactionHash: TX,
  transactionIndex: '0x0',
  logIndex: '0x' + logIndex.toString(16),
  removed: false,
});

describe('a log whose string is not UTF-8 (anyone can emit one)', () => {
  it('is built into its body, the bytes that are no UTF-8 read as U+FFFD: reading it failed every step of the follower, on that range for ever', async () => {
    const out = transferOutLog('ZZZZ');
    const logs = [rawLog(SWAP, out.topics, notUtf8(out.data, 'ZZZZ'))];
    const bodies = await buildEventBodies(reader, logs, { swap: SWAP }, '9006');
    expect(bodies).toHaveLength(1);
    expect(bodies[0]!.type).toBe('TransferOut');
    expect(bodies[0]!.event_parse.requestor).toBe('\uFFFD'.repeat(4));
    expect(bodies[0]!.event_parse['16']).toBe('\uFFFD'.repeat(4));
    // The rest as from any log.
    expect(bodies[0]!.event_parse.lpId).toBe('lp-1');
    expect(bodies[0]!.event_parse.amount).toBe('1');
    expect(bodies[0]!.event_parse.bid_id).toBe('0x' + '55'.repeat(32));
    expect(() => JSON.stringify(bodies[0])).not.toThrow();
  });

  it("a complaint's member in the struct too", async () => {
    const fragment = reputationInterface.getEvent('SubmitComplaint')!;
    const complaint = [
      9006n,
      1n,
      'YYYY',
      614n,
      2n,
      'tok',
      '1',
      '1',
      '0',
      'req',
      'lp-1',
      60n,
      60n,
      1n,
      1n,
      'us',
      'ls',
    ];
    const encoded = reputationInterface.encodeEventLog(fragment, [
      '0x' + '55'.repeat(32),
      complaint,
      'bob.devnet',
    ]);
    const logs = [rawLog(REPUTATION, encoded.topics, notUtf8(encoded.data, 'YYYY'))];
    const bodies = await buildEventBodies(reader, logs, { swap: SWAP, reputation: REPUTATION }, '614');
    expect(bodies).toHaveLength(1);
    const parsed = bodies[0]!.event_parse as Record<string, Record<string, unknown>>;
    expect(parsed.complaint!.srcToken).toBe('\uFFFD'.repeat(4));
    expect(parsed.complaint!.dstToken).toBe('tok');
    expect(parsed.complainant).toBe('bob.devnet');
  });
});
