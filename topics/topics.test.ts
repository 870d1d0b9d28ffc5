import { describe, expect, it } from 'vitest';
import { PoisonMessageError, type BusMessage } from '../shared/bus/index.js';
import {
  allTopics,
  chainEventId,
  chainEvents,
  chainHeights,
  decode,
  encode,
  envelope,
  relayCommands,
  violations,
} from './index.js';
import { envelopeShape, plainEnvelope, topicSpec } from './envelope.js';

const asMessage = (topic: string, value: string): BusMessage => ({
  topic,
  partition: 0,
  offset: 0n,
  key: 'k',
  value,
  headers: {},
  timestamp: new Date(),
});

const transferOut = {
  kind: 'TransferOut' as const,
  chainId: '9006',
  contract: '0x5FbDB2315678afecb367f032d315F642f64180aa',
  blockNumber: 120,
  blockTimestamp: 1_700_000_123,
  txHash: '0x' + 'AB'.repeat(32),
  logIndex: 3,
  txFrom: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  transferId: '0x' + '11'.repeat(32),
  sender: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  receiver: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  token: '0x0000000000000000000000000000000000000000',
  amount: '1000000000000000000',
  hashlock: '0x' + '22'.repeat(32),
  expectedSingleStepTime: '60',
  tolerantSingleStepTime: '120',
  earliestRefundTime: '1700001000',
  agreementReachedTime: '1700000000',
  dstChainId: '614',
  dstAddress: '642829559307850963015472508762062935916233390536',
  bidId: '0x' + '33'.repeat(32),
  tokenDst: '0',
  amountDst: '990000000000000000',
  nativeAmountDst: '0',
  requestor: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  lpId: 'lp-1',
  userSign: '0xsig',
  lpSign: '0xsig',
};

describe('topics', () => {
  it('has one definition per topic of the design, each with a distinct name and a retention decision', () => {
    expect(allTopics.map((t) => t.name).sort()).toEqual(
      [
        'chain.events',
        'chain.heights',
        'complaint.commands',
        'relay.commands',
        'swap.verdicts',
        'violations',
      ].sort(),
    );
    for (const t of allTopics) expect(t.retentionMs === null || t.retentionMs > 0).toBe(true);
    // A replay of the classifier reads both from the beginning: the chains' clocks live as long as their events.
    expect(chainHeights.retentionMs).toBe(chainEvents.retentionMs);
    expect(chainEvents.retentionMs).toBeNull();
  });

  it('round-trips a chain event through encode and decode, keyed by chain, hex normalised', () => {
    const env = envelope(chainEvents, transferOut, {
      occurredAt: 1_700_000_123,
      source: 'connector',
      id: chainEventId(transferOut),
    });
    const message = encode(chainEvents, env);
    expect(message.key).toBe('9006');
    expect(message.headers).toEqual({ type: 'chain.event', version: '1', kind: 'TransferOut' });
    const back = decode(chainEvents, asMessage('chain.events', message.value));
    expect(back.id).toBe(`9006:0x${'ab'.repeat(32)}:3`);
    expect(back.payload).toEqual({ ...transferOut, txHash: transferOut.txHash.toLowerCase() });
  });

  it('refuses to publish an invalid payload (a producer bug never reaches a topic)', () => {
    const bad = envelope(chainEvents, { ...transferOut, amount: '1.5' }, { occurredAt: 1, source: 't' });
    expect(() => encode(chainEvents, bad)).toThrow(/decimal-integer/);
  });

  it('turns anything that is not a valid envelope of the topic into a poison message', () => {
    const valid = encode(
      violations,
      envelope(
        violations,
        {
          party: 'lp',
          subject: 'lp-1',
          case: 3,
          bidId: '0x' + '33'.repeat(32),
          srcChainId: '9006',
          dstChainId: '614',
          chainId: '614',
          transactions: [],
          blockTime: 5,
          rule: 'case 3',
        },
        { occurredAt: 5, source: 't' },
      ),
    ).value;
    expect(decode(violations, asMessage('violations', valid)).payload.case).toBe(3);

    const cases: Array<[string, RegExp]> = [
      ['not json', /not JSON/],
      ['{"id":"x"}', /not an envelope/],
      [valid.replace('"version":1', '"version":2'), /unsupported envelope violation v2/],
      [valid.replace('"case":3', '"case":9'), /invalid payload/],
      [valid.replace('"party":"lp"', '"party":"relay"'), /invalid payload/],
    ];
    for (const [value, pattern] of cases) {
      const attempt = () => decode(violations, asMessage('violations', value));
      expect(attempt).toThrow(PoisonMessageError);
      expect(attempt).toThrow(pattern);
    }
  });

  it('decodes an envelope without zod only when zod would accept it, into what zod returns', () => {
    const good = { id: 'e1', type: 'chain.event', version: 1, occurredAt: 0, source: 's', payload: { a: 1 } };
    const cases: unknown[] = [
      good,
      { ...good, extra: 'stripped' },
      { ...good, payload: null },
      { ...good, id: 'x'.repeat(200) },
      { ...good, id: 'x'.repeat(201) },
      { ...good, id: '' },
      { ...good, type: '' },
      { ...good, version: 0 },
      { ...good, version: 1.5 },
      { ...good, version: 2 ** 60 },
      { ...good, version: '1' },
      { ...good, occurredAt: -1 },
      { ...good, occurredAt: Number.NaN },
      { ...good, source: 7 },
      (({ payload: _, ...rest }) => rest)(good),
      [good],
      null,
      'text',
    ];
    for (const input of cases) {
      const fast = plainEnvelope(input);
      const zod = envelopeShape.safeParse(input);
      // What the fast path accepts, zod accepts as the same object; what it leaves, zod still decides.
      if (fast !== undefined) expect(zod.success && zod.data).toStrictEqual(fast);
    }
    expect(plainEnvelope(good)).toStrictEqual(good);
    expect(plainEnvelope({ ...good, extra: 1 })).toStrictEqual(good);
  });

  it('keeps the partition count of the topics the Classifier reads in order (chain.events, chain.heights)', () => {
    // A height moves a chain's clock once the event it names is handled: every earlier event of the chain must be
    // in the same partition, before it. Kafka grows other topics when bus.partitions is raised.
    expect(
      allTopics
        .filter((t) => topicSpec(t, 8).fixedPartitions)
        .map((t) => t.name)
        .sort(),
    ).toEqual([chainEvents.name, chainHeights.name]);
  });

  it('keys relay commands by transfer so commands for one transfer stay in order', () => {
    const command = {
      commandId: 'c1',
      action: 'confirm_out' as const,
      systemChainId: '9006',
      transactionType: 'LOCAL_PADDING',
      gasPrice: 'STANDARD' as const,
      transferId: '0x' + '44'.repeat(32),
      call: {
        sender: transferOut.sender,
        receiver: transferOut.receiver,
        token: transferOut.token,
        tokenAmount: '1',
        ethAmount: '0',
        hashlock: transferOut.hashlock,
        expectedSingleStepTime: 60,
        tolerantSingleStepTime: 120,
        earliestRefundTime: 1_700_001_000,
        agreementReachedTime: 1_700_000_000,
        preimage: '0x' + '55'.repeat(32),
      },
    };
    expect(
      encode(relayCommands, envelope(relayCommands, command, { occurredAt: 1, source: 'relay' })).key,
    ).toBe(command.transferId);
  });
});
