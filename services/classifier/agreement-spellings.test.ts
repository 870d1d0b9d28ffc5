/**
 * One signed agreement has many bids: the bid hashes free strings (a token's casing, the signatures as text:
 * hex casing, 65-byte or EIP-2098 compact, v as 27/28 or 0/1; and the LP can always sign its part again), while
 * the classifier reads every one of those spellings as the same agreement (consent.ts tries every casing of the
 * Message). The LP filed a complaint quoting the honest user's agreement re-spelled: the contract hashed it to a
 * bid nothing was locked under, the complaint was valid, and the user who locked that very agreement got case 1.
 * A complaint whose agreement (agreementKey) was locked under another bid by T+E is now `unknown`, never case 1.
 */
import { Signature, SigningKey } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bidId } from '../../shared/chain/bid-id.js';
import { swapDigest } from '../../shared/chain/otmoic-swap-eip712.js';
import {
  agreementKey,
  agreementKeys,
  agreementOfComplaint,
  agreementOfTransferOut,
  bidIdOfAgreement,
  swapMessage,
  transferOutBid,
  uniform,
} from '../../shared/otmoic/agreement.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { chainEventId, type ChainEvent, type SwapVerdict } from '../../topics/index.js';
import type { ClassifierInput } from './engine.js';
import type { AgreementLock } from './facts.js';
import {
  batchContext,
  envAt,
  factsOf,
  finalHeights,
  swapSignedAs,
  syntheticEngine,
} from './judge-test-kit.js';
import { judge } from './judge.js';
import { classifierMigrations } from './migrations.js';
import { CONTRACT, DST, LP, SRC, STRANGER, USER } from './swap-timeline.js';
import { agreementLocksBackfill } from './tables.js';

type Complaint = Extract<ChainEvent, { kind: 'Complaint' }>;
type Fields = Complaint['complaint'];

/** The bid the reputation contract computes for a complaint's fields. */
const bidOf = (f: Fields) =>
  bidId({
    ...(f as Record<string, string>),
    srcChainId: BigInt(f.srcChainId!),
    srcAddress: BigInt(f.srcAddress!),
    dstChainId: BigInt(f.dstChainId!),
    dstAddress: BigInt(f.dstAddress!),
    expectedSingleStepTime: BigInt(f.expectedSingleStepTime!),
    tolerantSingleStepTime: BigInt(f.tolerantSingleStepTime!),
    earliestRefundTime: BigInt(f.earliestRefundTime!),
    agreementReachedTime: BigInt(f.agreementReachedTime!),
  } as Parameters<typeof bidId>[0]);

/** userSign as 65 bytes with v 0/1 instead of 27/28. */
const vAsParity = (sig: string) => {
  const s = Signature.from(sig);
  return s.r + s.s.slice(2) + (s.yParity === 0 ? '00' : '01');
};

// The SDK's form (src_address the LP's receiving address), an ERC-20 source token: the LP node's bid.
const erc20 = swapSignedAs({ src_address: LP.address, src_token: CONTRACT });
// The same with the native coins on both sides (no token with a casing).
const native = swapSignedAs({ src_address: LP.address });

const genuineComplaint = (swap: typeof erc20) =>
  swap.events.find((e): e is Complaint => e.kind === 'Complaint')!;

/** The LP signs its part again, the Message's address members in lower case (consent.ts accepts that too). */
function lpSignsAgain(swap: typeof erc20): Fields {
  const fields = genuineComplaint(swap).complaint;
  const message = swapMessage(agreementOfComplaint(fields), uniform('lower'));
  return {
    ...fields,
    lpSign: new SigningKey(LP.privateKey).sign(swapDigest(message, DST.evm, 'swap')).serialized,
  };
}

/** The LP's complaint of the honest user's agreement, re-spelled: each hashes to a bid nothing was locked under. */
const respellings: Array<[string, typeof erc20, (f: Fields) => Fields]> = [
  ['the source token in lower case', erc20, (f) => ({ ...f, srcToken: f.srcToken!.toLowerCase() })],
  [
    'userSign in EIP-2098 compact form',
    native,
    (f) => ({ ...f, userSign: Signature.from(f.userSign!).compactSerialized }),
  ],
  ['userSign with v as 0/1', native, (f) => ({ ...f, userSign: vAsParity(f.userSign!) })],
  [
    'userSign in upper-case hex',
    native,
    (f) => ({ ...f, userSign: '0x' + f.userSign!.slice(2).toUpperCase() }),
  ],
  ['lpSign made again by the LP over another casing of the Message', erc20, () => lpSignsAgain(erc20)],
];

function recast(swap: typeof erc20, respell: (f: Fields) => Fields): Complaint {
  const genuine = genuineComplaint(swap);
  const complaint = respell(genuine.complaint);
  return { ...genuine, txHash: '0x' + 'c7'.repeat(32), bidId: bidOf(complaint), complaint };
}

/** The locks of the honest swap's TransferOut under each of its keys, as the engine records them. */
const locksOf = (swap: typeof erc20) => {
  const lock: AgreementLock = {
    bidId: swap.lock.bidId,
    chainId: swap.lock.chainId,
    transferId: swap.lock.transferId,
    blockTime: swap.lock.blockTimestamp,
  };
  const keys = agreementKeys(agreementOfTransferOut(swap.lock));
  return (key: string) => (keys.includes(key) ? [lock] : []);
};

const CLOCKS = { [SRC.chainId]: 2_000, [DST.chainId]: 2_000 };
const shown = (v: Pick<SwapVerdict, 'outcome' | 'case' | 'party'>) => [v.outcome, v.case, v.party];

describe('the agreement key', () => {
  it('is one for every spelling the classifier reads as the agreement, and another for other terms', () => {
    const key = agreementKey(agreementOfComplaint(genuineComplaint(erc20).complaint));
    for (const [, swap, respell] of respellings.filter(([, s]) => s === erc20))
      expect(agreementKey(agreementOfComplaint(respell(genuineComplaint(swap).complaint)))).toBe(key);
    // The lock reads its srcAddress as its sender, and as the receiver the SDK signs: the second is the complaint's.
    expect(agreementKeys(agreementOfTransferOut(erc20.lock))).toEqual([expect.any(String), key]);
    const f = genuineComplaint(erc20).complaint;
    for (const other of [
      { ...f, srcAmount: '1' },
      { ...f, requestor: f.requestor!.toUpperCase().replace('0X', '0x') },
      { ...f, lpId: f.lpId + ' ' },
      { ...f, earliestRefundTime: (BigInt(f.earliestRefundTime!) + 1n).toString() },
    ])
      expect(agreementKey(agreementOfComplaint(other))).not.toBe(key);
  });
});

describe('a complaint quoting the agreement under another bid than it was locked under', () => {
  it.each(respellings)(
    '%s: valid, another bid, and not case 1 since the agreement was locked',
    (_, swap, respell) => {
      const complaint = recast(swap, respell);
      expect(complaint.bidId).not.toBe(swap.bid);
      const env = { ...envAt(CLOCKS), agreementLocks: locksOf(swap) };
      const j = judge(factsOf(complaint.bidId, [complaint]), env);
      expect(j.status).toBe('decided');
      if (j.status !== 'decided') return;
      expect(j.verdict.complaint).toMatchObject({ valid: true, complainantParty: 'lp' });
      expect(shown(j.verdict)).toEqual(['unknown', null, null]);
      expect(j.verdict.rule).toContain(
        `under bid ${swap.bid} (transfer ${swap.lock.transferId}): not case 1`,
      );
      // Nothing of the agreement locked: case 1 on the user, as before.
      const alone = judge(factsOf(complaint.bidId, [complaint]), envAt(CLOCKS));
      expect(alone.status === 'decided' && shown(alone.verdict)).toEqual(['violation', 1, 'user']);
    },
  );

  it('a lock after T+E is none (the contract refuses it): case 1', () => {
    const complaint = recast(erc20, respellings[0]![2]);
    const late = (key: string) => locksOf(erc20)(key).map((l) => ({ ...l, blockTime: 1_004 }));
    const j = judge(factsOf(complaint.bidId, [complaint]), { ...envAt(CLOCKS), agreementLocks: late });
    expect(j.status === 'decided' && shown(j.verdict)).toEqual(['violation', 1, 'user']);
  });

  describe('through the engine, live and resident (a replay), the complaint before or after the lock', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase([classifierMigrations]);
    });
    afterAll(async () => {
      await db?.drop();
    });
    const input = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
    let schemas = 0;

    async function verdicts(events: readonly ChainEvent[], resident: boolean) {
      const { engine, tables } = await syntheticEngine(
        db.pool,
        `spellings_${++schemas}`,
        resident ? 'decisions' : undefined,
      );
      for (const e of events) await engine.handleBatch([input(e)], batchContext());
      for (const h of finalHeights(2_000)) await engine.handleBatch([h], batchContext());
      const { rows } = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
        `SELECT bid_id, verdict FROM ${tables.verdicts}`,
      );
      return new Map(rows.map((r) => [r.bid_id, r.verdict]));
    }

    for (const [name, swap, respell] of respellings)
      for (const resident of [false, true])
        for (const first of [true, false])
          it(`${name}; ${resident ? 'resident' : 'live'}, complaint ${first ? 'first' : 'last'}`, async () => {
            const complaint = recast(swap, respell);
            const chain = swap.events.filter((e) => e.kind !== 'Complaint');
            const decided = await verdicts(first ? [complaint, ...chain] : [...chain, complaint], resident);
            expect(shown(decided.get(swap.bid)!)).toEqual(['normal', null, null]);
            const verdict = decided.get(complaint.bidId)!;
            expect(shown(verdict)).toEqual(['unknown', null, null]);
            expect(verdict.rule).toContain(`under bid ${swap.bid}`);
          });

    it('a complaint whose agreement was locked only with other terms (a short amount) is still case 1', async () => {
      const complaint = genuineComplaint(erc20);
      const short = { ...erc20.lock, amount: '1', txHash: '0x' + 'a1'.repeat(32) };
      const shortLock = { ...short, bidId: bidIdOfAgreement(agreementOfTransferOut(short)) };
      const decided = await verdicts([complaint, shortLock], false);
      expect(shown(decided.get(complaint.bidId)!)).toEqual(['violation', 1, 'user']);
    });

    it('migration 8 computes, from the stored TransferOuts, the lock rows the engine writes', async () => {
      const { engine, tables } = await syntheticEngine(db.pool, `spellings_backfill`);
      const copy = {
        ...erc20.lock,
        txHash: '0x' + 'b2'.repeat(32),
        transferId: '0x' + 'b3'.repeat(32),
        blockTimestamp: 1_001,
      };
      for (const e of [...erc20.events, copy]) await engine.handleBatch([input(e)], batchContext());
      const rows = async () =>
        (
          await db.pool.query(
            `SELECT agreement_key, chain_id, transfer_id, bid_id, block_time FROM ${tables.agreementLocks}
              ORDER BY agreement_key, transfer_id`,
          )
        ).rows;
      const written = await rows();
      // Its sender and receiver forms, for the swap's lock and for its copy.
      expect(written).toHaveLength(4);
      await db.pool.query(`DELETE FROM ${tables.agreementLocks}`);
      await db.pool.query(agreementLocksBackfill(tables));
      expect(await rows()).toEqual(written);
    });
  });
});

/**
 * (B) The user locks the agreement a second time under another of its bids, with a fresh hashlock: the lock
 * executes its own bid, with the LP's consent, but the LP's node never saw that bid. As its own swap it was case 3
 * on the LP, which had answered the agreement's genuine lock. A lock with the copy key of another (the same
 * agreement, the same lpSign however encoded) is a copy of the agreement's swap, its earliest lock in chain order,
 * whatever its bid; the LP's answer to the other lock then joins that swap as for two locks of one bid.
 */
describe('the agreement locked again under another of its bids (same agreement and lpSign)', () => {
  type Lock = (typeof erc20)['lock'];
  /** A lock of `swap`'s agreement re-spelled by `respell` (fresh hashlock and transfer), its bid `bidOf` of it. */
  function relocked(
    swap: typeof erc20,
    respell: (l: Lock) => Lock,
    bidOf: (l: Lock) => string,
    n: number,
  ): Lock {
    const l = respell({
      ...swap.lock,
      txHash: '0x' + n.toString(16).padStart(2, '0').repeat(32),
      hashlock: '0x' + (n + 1).toString(16).padStart(2, '0').repeat(32),
      transferId: '0x' + (n + 2).toString(16).padStart(2, '0').repeat(32),
    });
    return { ...l, bidId: bidOf(l) };
  }
  const alias =
    (rendering = uniform('checksum')) =>
    (l: Lock) =>
      bidIdOfAgreement(agreementOfTransferOut(l), rendering, 'alias');
  const same = (l: Lock) => l;
  /** The user signs the Message again with its address members in lower case: another valid userSign. */
  const userSignsAgain = (l: Lock): Lock => ({
    ...l,
    userSign: new SigningKey(USER.privateKey).sign(
      swapDigest(swapMessage(agreementOfTransferOut(l), uniform('lower'), 'alias'), SRC.evm, 'swap'),
    ).serialized,
  });
  const fromWallet =
    (address: string) =>
    (l: Lock): Lock => ({ ...l, sender: address, txFrom: address });
  const relocks: Array<[string, typeof erc20, (n: number) => Lock]> = [
    [
      'srcAddress in the sender form',
      native,
      (n) =>
        relocked(
          native,
          same,
          (l) => bidIdOfAgreement(agreementOfTransferOut(l), uniform('checksum'), 'own'),
          n,
        ),
    ],
    [
      'the source token in lower case',
      erc20,
      (n) => relocked(erc20, same, alias({ ...uniform('checksum'), srcToken: 'lower' }), n),
    ],
    [
      'userSign in EIP-2098 compact form',
      native,
      (n) =>
        relocked(
          native,
          (l) => ({ ...l, userSign: Signature.from(l.userSign).compactSerialized }),
          alias(),
          n,
        ),
    ],
    [
      'lpSign with v as 0/1 and in upper-case hex',
      native,
      (n) =>
        relocked(
          native,
          (l) => ({ ...l, lpSign: '0x' + vAsParity(l.lpSign).slice(2).toUpperCase() }),
          alias(),
          n,
        ),
    ],
    ['a fresh userSign (the user signed again)', erc20, (n) => relocked(erc20, userSignsAgain, alias(), n)],
    [
      'another wallet of the user’s, the bid in the SDK’s form (which leaves the sender out), token lower-case',
      erc20,
      (n) =>
        relocked(
          erc20,
          fromWallet(STRANGER.address),
          alias({ ...uniform('checksum'), srcToken: 'lower' }),
          n,
        ),
    ],
  ];

  it('each relock names another bid and executes it (the audit: a second swap with the LP’s consent)', () => {
    for (const [, swap, relock] of relocks) {
      const l = relock(0xa0);
      expect(l.bidId).not.toBe(swap.bid);
      expect(transferOutBid(l)).toEqual({ executes: true });
    }
  });

  describe('through the engine, live and resident (a replay), in either arrival order', () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase([classifierMigrations]);
    });
    afterAll(async () => {
      await db?.drop();
    });
    const input = (e: ChainEvent): ClassifierInput => ({ kind: 'event', id: chainEventId(e), event: e });
    let schemas = 0;

    async function run(events: readonly ChainEvent[], resident: boolean) {
      const { engine, tables } = await syntheticEngine(
        db.pool,
        `relocks_${++schemas}`,
        resident ? 'keep' : undefined,
      );
      for (const e of events) await engine.handleBatch([input(e)], batchContext());
      for (const h of finalHeights(2_000)) await engine.handleBatch([h], batchContext());
      await engine.writeResident();
      const verdicts = await db.pool.query<{ bid_id: string; verdict: SwapVerdict }>(
        `SELECT bid_id, verdict FROM ${tables.verdicts}`,
      );
      const ignored = await db.pool.query<{ transfer_id: string; reason: string }>(
        `SELECT transfer_id, reason FROM ${tables.ignoredOuts} ORDER BY transfer_id`,
      );
      const links = await db.pool.query<{ in_transfer_id: string; bid_id: string }>(
        `SELECT in_transfer_id, bid_id FROM ${tables.inLinks}`,
      );
      const swaps = await db.pool.query<{ bid_id: string }>(
        `SELECT bid_id FROM ${tables.swaps} ORDER BY bid_id`,
      );
      return {
        verdicts: new Map(verdicts.rows.map((r) => [r.bid_id, r.verdict])),
        ignored: ignored.rows,
        links: new Map(links.rows.map((r) => [r.in_transfer_id, r.bid_id])),
        swaps: swaps.rows.map((r) => r.bid_id),
      };
    }

    const chainOf = (swap: typeof erc20) => swap.events.filter((e) => e.kind !== 'Complaint');
    const answerOf = (swap: typeof erc20) => swap.events.find((e) => e.kind === 'TransferIn')!;

    for (const [name, swap, relock] of relocks)
      for (const resident of [false, true])
        for (const relockFirst of [false, true]) {
          const order = `${resident ? 'resident' : 'live'}, the relock arriving ${relockFirst ? 'first' : 'last'}`;
          it(`${name}, locked after the genuine lock: a copy of its swap, no case 3; ${order}`, async () => {
            const l = relock(0xa0);
            const later = { ...l, blockTimestamp: 1_001, blockNumber: swap.lock.blockNumber + 100 };
            const chain = chainOf(swap);
            const r = await run(relockFirst ? [later, ...chain] : [...chain, later], resident);
            expect(shown(r.verdicts.get(swap.bid)!)).toEqual(['normal', null, null]);
            expect(r.verdicts.has(later.bidId)).toBe(false);
            expect(r.verdicts.size).toBe(1);
            expect(r.ignored).toEqual([{ transfer_id: later.transferId, reason: 'copy' }]);
            expect(r.swaps).toEqual([swap.bid]);
          });
          it(`${name}, locked before the genuine lock: its swap, whose LP answered the other lock (unknown, no case 3); ${order}`, async () => {
            const l = relock(0xb0);
            const earlier = { ...l, blockNumber: swap.lock.blockNumber - 1 };
            const chain = chainOf(swap);
            // The relock last: it takes over the genuine lock's swap (its TransferIn, ConfirmOut, ConfirmIn).
            const r = await run(relockFirst ? [earlier, ...chain] : [...chain, earlier], resident);
            const verdict = r.verdicts.get(earlier.bidId)!;
            expect(shown(verdict)).toEqual(['unknown', null, null]);
            expect(verdict.rule).toContain(
              `the LP answered another lock of this agreement (transfer ${swap.lock.transferId})`,
            );
            expect(verdict.transferOutId).toBe(earlier.transferId);
            expect(r.verdicts.size).toBe(1);
            expect(r.ignored).toEqual([{ transfer_id: swap.lock.transferId, reason: 'copy' }]);
            // Every link names the swap now: the LP's answer, and the genuine lock as another lock.
            expect(r.links.get(answerOf(swap).transferId)).toBe(earlier.bidId);
            expect(r.links.get(swap.lock.transferId)).toBe(earlier.bidId);
            expect(r.swaps).toEqual([earlier.bidId]);
          });
        }

    for (const resident of [false, true])
      for (const relockFirst of [false, true])
        it(`the genuine bid's complaint stays with its bid when an earlier relock takes the swap; ${resident ? 'resident' : 'live'}, relock ${relockFirst ? 'first' : 'last'}`, async () => {
          const l = relocks[1]![2](0xc0);
          const earlier = { ...l, blockNumber: erc20.lock.blockNumber - 1 };
          const r = await run(
            relockFirst ? [earlier, ...erc20.events] : [...erc20.events, earlier],
            resident,
          );
          expect(shown(r.verdicts.get(earlier.bidId)!)).toEqual(['unknown', null, null]);
          const complained = r.verdicts.get(erc20.bid)!;
          expect(shown(complained)).toEqual(['unknown', null, null]);
          expect(complained.rule).toContain('not case 1');
          expect(r.swaps).toEqual([earlier.bidId, erc20.bid].sort());
        });

    for (const resident of [false, true])
      for (const frontRunFirst of [false, true])
        it(`a front-run lock of the terms with a garbage lpSign is its own swap, the genuine lock stays the swap; ${resident ? 'resident' : 'live'}, front-run ${frontRunFirst ? 'first' : 'last'}`, async () => {
          const frontRun = relocked(
            erc20,
            (l) => ({
              ...l,
              sender: STRANGER.address,
              txFrom: STRANGER.address,
              lpSign: '0x' + '11'.repeat(65),
            }),
            alias(),
            0xd0,
          );
          expect(transferOutBid(frontRun)).toEqual({ executes: true });
          const early = { ...frontRun, blockNumber: erc20.lock.blockNumber - 1 };
          const chain = chainOf(erc20);
          const r = await run(frontRunFirst ? [early, ...chain] : [...chain, early], resident);
          expect(shown(r.verdicts.get(erc20.bid)!)).toEqual(['normal', null, null]);
          expect(shown(r.verdicts.get(early.bidId)!)).toEqual(['violation', 2, 'user']);
          expect(r.ignored).toEqual([]);
        });

    // The agreement signed in the sender form (spec §2.1): the LP locks the same terms with the same signatures from a
    // throwaway before the user, and never answers. The throwaway's lock shares the user's lock's receiver-form key
    // and lpSign, but not its sender: it is no copy-maker, and the user's lock stays a swap the LP must answer.
    const senderForm = swapSignedAs({});
    for (const resident of [false, true])
      for (const frontRunFirst of [false, true])
        it(`the LP's front-run of a sender-form agreement from another wallet does not spare it case 3; ${resident ? 'resident' : 'live'}, front-run ${frontRunFirst ? 'first' : 'last'}`, async () => {
          const frontRun = relocked(senderForm, fromWallet(STRANGER.address), alias(), 0xe0);
          expect(transferOutBid(frontRun)).toEqual({ executes: true });
          const early = { ...frontRun, blockNumber: senderForm.lock.blockNumber - 1 };
          const r = await run(frontRunFirst ? [early, senderForm.lock] : [senderForm.lock, early], resident);
          expect(shown(r.verdicts.get(senderForm.bid)!)).toEqual(['violation', 3, 'lp']);
          expect(shown(r.verdicts.get(early.bidId)!)).toEqual(['violation', 2, 'user']);
          expect(r.ignored).toEqual([]);
        });
  });
});
