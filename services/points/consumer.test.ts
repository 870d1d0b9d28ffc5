import { describe, expect, it } from 'vitest';
import { PoisonMessageError } from '../../shared/bus/errors.js';
import type { BusMessage, OutgoingMessage } from '../../shared/bus/port.js';
import { chainEventId, chainEvents, type ChainEvent } from '../../topics/chain.events.js';
import { encode, envelope } from '../../topics/envelope.js';
import { violationId, violations } from '../../topics/violations.js';
import { effectsOfMessage } from './consumer.js';
import { changedSubjects } from './projection.js';
import { complaintEvent, hex32, violationPayload } from './test-harness.js';

const asMessage = (m: OutgoingMessage, override: Partial<BusMessage> = {}): BusMessage => ({
  topic: chainEvents.name,
  partition: 0,
  offset: 0n,
  key: m.key,
  value: m.value,
  headers: m.headers ?? {},
  timestamp: new Date(0),
  ...override,
});

const encoded = (e: ChainEvent) =>
  encode(
    chainEvents,
    envelope(chainEvents, e, { occurredAt: e.blockTimestamp, source: 't', id: chainEventId(e) }),
  );

const complaint = complaintEvent({ bid: hex32(7), blockTime: 1_000, agreementReachedTime: 900 });
const refund: ChainEvent = {
  kind: 'RefundOut',
  chainId: '9006',
  contract: complaint.contract,
  blockNumber: 5,
  blockTimestamp: 1_000,
  txHash: hex32(5, 1),
  logIndex: 0,
  txFrom: complaint.txFrom,
  transferId: hex32(5, 2),
};

describe("Points' reading of chain.events", () => {
  it('takes a complaint, which the producer marks with its kind header', () => {
    const message = encoded(complaint);
    expect(message.headers?.kind).toBe('Complaint');
    const decoded = effectsOfMessage(asMessage(message));
    expect(decoded?.id).toBe(chainEventId(complaint));
    expect(decoded?.effects).toHaveLength(1);
    expect(decoded?.effects[0]?.kind).toBe('complaint');
  });

  it('passes over another event on its kind header without parsing it', () => {
    const message = encoded(refund);
    expect(message.headers?.kind).toBe('RefundOut');
    expect(effectsOfMessage(asMessage(message))).toBeNull();
    // Not read at all: what the header says is enough (the classifier validates and dead-letters the payload).
    expect(effectsOfMessage(asMessage(message, { value: 'not json' }))).toBeNull();
  });

  it('checks a message without the header (written before it existed) as before', () => {
    const { kind: _kind, ...older } = encoded(refund).headers!;
    expect(effectsOfMessage(asMessage(encoded(refund), { headers: older }))?.effects).toEqual([]);
    expect(() => effectsOfMessage(asMessage(encoded(refund), { headers: older, value: 'not json' }))).toThrow(
      PoisonMessageError,
    );
    const complaintWithoutHeader = asMessage(encoded(complaint), { headers: older });
    expect(effectsOfMessage(complaintWithoutHeader)?.effects).toHaveLength(1);
  });

  it('refuses a complaint header on a payload that is not a valid complaint', () => {
    const message = encoded(complaint);
    const broken = JSON.parse(message.value) as { payload: Record<string, unknown> };
    delete broken.payload.bidId;
    expect(() => effectsOfMessage(asMessage(message, { value: JSON.stringify(broken) }))).toThrow(
      PoisonMessageError,
    );
  });
});

describe('a NUL character in a string of a message', () => {
  it('is decoded to rows holding the six characters \\u0000 instead, subjects included', () => {
    const v = violationPayload({ bid: hex32(9), party: 'lp', subject: 'lp\u0000x', blockTime: 1_000 });
    v.rule = 'case 3: \u0000';
    const message = encode(
      violations,
      envelope(violations, v, { occurredAt: 0, source: 't', id: violationId(v.bidId) }),
    );
    const decoded = effectsOfMessage(asMessage(message, { topic: violations.name }));
    const row = decoded?.effects[0]?.kind === 'deduction' ? decoded.effects[0].row : undefined;
    expect(row).toMatchObject({ subject: 'lp\\u0000x', rule: 'case 3: \\u0000' });
    expect(changedSubjects(decoded!.effects)).toEqual(['lp:lp\\u0000x']);
  });
});
