/**
 * A complaint whose fields are shifted across their borders hashes to a genuine swap's bid (the bid joins the
 * fields without separators). Filed before the swap's TransferOut is seen, it must not close the bid as an
 * invalid complaint: the swap is judged on its chains in every arrival order. And a complaint-only verdict
 * waits for every complaint filed up to the one that decides it, on every reputation contract.
 */
import { keccak256, toUtf8Bytes } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bidIdPreimage } from '../../shared/chain/bid-id.js';
import type { Complaint } from '../../shared/chain/index.js';
import { complaintOfAgreement } from '../../shared/otmoic/agreement.js';
import { databaseForSuite } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import { batchContext, envAt, factsOf, finalHeights, syntheticEngine } from './judge-test-kit.js';
import { INVALID_COMPLAINT_HOLD_SECONDS, judge } from './judge.js';
import { classifierMigrations } from './migrations.js';
import {
  buildTimeline,
  DST,
  REPUTATION,
  REPUTATION_CHAIN,
  SRC,
  STRANGER,
  STRANGER_DID,
  type TimelineSpec,
} from './swap-timeline.js';

// The LP never answers: case 3 on the LP.
const spec: TimelineSpec = {
  T: 1000,
  E: 3,
  Tol: 2,
  lpSign: 'lp',
  userSign: 'user',
  out: { kind: 'ok', at: 1001 },
  in: { kind: 'none' },
  confirmOut: { by: 'user', at: 1005 },
};
const FILED_AT = 1000;

/** The genuine swap's complaint with srcChainId's last digit moved to the front of srcAddress. */
function craftedComplaint(timeline: ReturnType<typeof buildTimeline>, salt: string): ChainEvent {
  const genuine = complaintOfAgreement(timeline.agreement);
  const fields = {
    ...genuine,
    srcChainId: genuine.srcChainId.slice(0, -1),
    srcAddress: genuine.srcChainId.slice(-1) + genuine.srcAddress,
  };
  // The same preimage, so the same bid.
  expect(bidIdPreimage(fields as unknown as Complaint)).toBe(bidIdPreimage(genuine as unknown as Complaint));
  expect(keccak256(toUtf8Bytes(bidIdPreimage(fields as unknown as Complaint)))).toBe(timeline.bidId);
  return {
    kind: 'Complaint',
    chainId: REPUTATION_CHAIN,
    contract: REPUTATION,
    blockNumber: 1,
    blockTimestamp: FILED_AT,
    txHash: '0x' + salt.repeat(32),
    logIndex: 0,
    txFrom: STRANGER.address,
    bidId: timeline.bidId,
    complainant: STRANGER_DID,
    complaint: fields,
  } as ChainEvent;
}

describe('classifier: a crafted complaint filed before the TransferOut', () => {
  const db = databaseForSuite([classifierMigrations]);

  it('alone, it waits on every watched chain for a TransferOut until the hold has passed', () => {
    const timeline = buildTimeline(spec);
    const facts = factsOf(timeline.bidId, [craftedComplaint(timeline, 'ab')]);
    const past = FILED_AT + INVALID_COMPLAINT_HOLD_SECONDS + 1;
    expect(judge(facts, envAt({ [SRC.chainId]: past, [DST.chainId]: past - 1 }))).toMatchObject({
      status: 'pending',
      wait: { kind: 'clock', chainId: DST.chainId, until: past },
    });
    // Its srcChainId (the genuine one without its last digit) is a chain this deployment does not watch, so its
    // srcAddress, no EVM address, says nothing against it: unknown, not case 0. Neither deducts anything.
    const decided = judge(facts, envAt({ [SRC.chainId]: past, [DST.chainId]: past }));
    expect(decided).toMatchObject({
      status: 'decided',
      verdict: { outcome: 'unknown', case: null, rule: expect.stringContaining('is not watched') },
    });
  });

  it("a complaint about a swap to a chain not watched, with that chain's 32-byte address, is unknown, not case 0", () => {
    const timeline = buildTimeline(spec);
    const solana = {
      ...complaintOfAgreement(timeline.agreement),
      dstChainId: '501',
      dstAddress: BigInt('0x' + 'c3'.repeat(32)).toString(),
    };
    const event = { ...craftedComplaint(timeline, 'ef'), complaint: solana } as ChainEvent;
    const past = FILED_AT + INVALID_COMPLAINT_HOLD_SECONDS + 1;
    const decided = judge(
      factsOf(timeline.bidId, [event]),
      envAt({ [SRC.chainId]: past, [DST.chainId]: past }),
    );
    expect(decided).toMatchObject({
      status: 'decided',
      verdict: { outcome: 'unknown', case: null, rule: expect.stringContaining('chain 501 is not watched') },
    });
    // The same complaint with a 32-byte source address (a watched chain's side) is still unreadable: case 0.
    const badSource = {
      ...solana,
      dstChainId: timeline.agreement.dstChainId.toString(),
      srcAddress: solana.dstAddress,
    };
    const invalid = judge(
      factsOf(timeline.bidId, [{ ...event, complaint: badSource } as ChainEvent]),
      envAt({ [SRC.chainId]: past, [DST.chainId]: past }),
    );
    expect(invalid).toMatchObject({ status: 'decided', verdict: { outcome: 'invalid_complaint', case: 0 } });
  });

  it.each([true, false])(
    'the swap gets its chain verdict (case 3 on the LP); complaint first: %s',
    async (first) => {
      const timeline = buildTimeline({ ...spec, id: first ? 1 : 2 });
      const complaint = craftedComplaint(timeline, first ? 'ab' : 'cd');
      const chainEvents = [...timeline.streams[SRC.chainId]!, ...timeline.streams[DST.chainId]!];
      const inputs: ClassifierInput[] = [
        ...(first ? [complaint, ...chainEvents] : [...chainEvents, complaint]).map((event) => ({
          kind: 'event' as const,
          id: chainEventId(event),
          event,
        })),
        ...finalHeights(FILED_AT + INVALID_COMPLAINT_HOLD_SECONDS + 10),
      ];
      const { engine, tables } = await syntheticEngine(db.pool, `crafted_${first ? 1 : 2}`);
      const context = batchContext();
      for (const input of inputs) await engine.handleBatch([input], context);
      const { rows } = await db.pool.query<{ verdict: SwapVerdict }>(
        `SELECT verdict FROM ${tables.verdicts}`,
      );
      expect(rows.map((r) => [r.verdict.outcome, r.verdict.case, r.verdict.party])).toEqual([
        ['violation', 3, 'lp'],
      ]);
      expect(rows[0]!.verdict.complaint).toMatchObject({ valid: false });
    },
  );
});

describe('classifier: a complaint-only verdict with complaints on several reputation contracts', () => {
  it('waits until every complaint filed up to the earliest is seen, so arrival order changes nothing', () => {
    // The user never locks; the LP's valid complaint on one reputation contract, a stranger's earlier
    // complaint of the same bid on another (on the source chain).
    const timeline = buildTimeline({
      T: 1000,
      E: 3,
      Tol: 2,
      lpSign: 'lp',
      userSign: 'user',
      out: { kind: 'none' },
      in: { kind: 'none' },
      complaint: { by: 'lp', at: 1002 },
    });
    const lp = timeline.streams.reputation![0]!;
    const stranger = {
      ...lp,
      chainId: SRC.chainId,
      blockTimestamp: 1001,
      txHash: '0x' + 'ee'.repeat(32),
      complainant: STRANGER_DID,
    } as ChainEvent;
    const clocks = { [SRC.chainId]: 1004, [DST.chainId]: 1004 };
    // Reputation streams not seen past 1001 yet: nothing is decided on the LP's complaint alone.
    expect(judge(factsOf(timeline.bidId, [lp]), envAt(clocks, 1001))).toMatchObject({
      status: 'pending',
      wait: { kind: 'complaints', until: 1003 },
    });
    // Seen through 1003: the stranger's earlier complaint is the one that counts, in either arrival order.
    const after = envAt(clocks, 1003);
    const one = judge(factsOf(timeline.bidId, [lp, stranger]), after);
    const other = judge(factsOf(timeline.bidId, [stranger, lp]), after);
    expect(one).toEqual(other);
    expect(one).toMatchObject({ status: 'pending', wait: { kind: 'clock' } }); // an invalid complaint's hold
  });
});
