/**
 * The arbitration of one swap (DESIGN §7, spec §3): a pure function of the swap's facts and the chains'
 * clocks. It decides only what is settled, so deciding later, after more events, never changes the answer:
 * - every window is judged on the block time of the chain that decides it, once that chain's clock (which
 *   only moves when every event up to it has been handled) has passed the window's end;
 * - cases are tried in the order 0, 1, 2, 3, 4, 7, 5, 6; the first that holds wins, and while an earlier
 *   case is still open the swap waits, even if a later one already holds;
 * - nobody is blamed without on-chain or signed proof; what fits no rule once every window closed is
 *   "unknown" (recorded, never deducted).
 *
 * Case 0 makes a complaint worthless, not a swap innocent: an invalid complaint is recorded, and a swap
 * with a TransferOut is still judged on the chain (otherwise anyone could shield a cheat by filing a bogus
 * complaint first, since the contract takes one complaint per bid).
 */
import { readComplaintAgreement } from '../../shared/otmoic/complaint-agreement.js';
import { didNamesInclude } from '../../shared/otmoic/did-lookup.js';
import {
  AgreementFieldError,
  agreementOfComplaint,
  agreementOfTransferOut,
  differingTerms,
} from '../../shared/otmoic/agreement.js';
import type { SignedAgreement } from '../../shared/otmoic/agreement.js';
import type { ChainEvent, SwapTransaction, SwapVerdict } from '../../topics/index.js';
import { candidateSigners, userConsents } from './consent.js';
import { answersOf, complaintKeyOf } from './facts.js';
import type {
  AgreementLock,
  ComplaintEvent,
  JudgeEnv,
  SwapFacts,
  TransferIn,
  TransferOut,
  Wait,
} from './facts.js';
import { differsButHashlock, inAnswerWindow, mismatchesOf, seconds, windowsOf } from './lock-terms.js';

export type Judgement =
  | {
      status: 'pending';
      wait: Wait;
      reason: string;
      /** Addresses whose DID names the next judgements will ask for: worth asking for now, with the wait's. */
      alsoAsk: readonly string[];
    }
  | { status: 'decided'; verdict: SwapVerdict };

/** Thrown inside the decision when a fact it needs is not settled yet; becomes a pending judgement. */
class Waiting {
  constructor(
    readonly wait: Wait,
    readonly reason: string,
    readonly alsoAsk: readonly string[] = [],
  ) {}
}

/**
 * How long after an invalid complaint (unreadable, naming chains not watched, or not proving its party) a
 * TransferOut with its bid is still awaited on every watched chain before the complaint alone decides the
 * bid. Its fields are not the agreement: the bid hash joins them without separators, so fields shifted
 * across their borders (a digit of srcChainId moved into srcAddress) hash to a genuine swap's bid, and their
 * times say nothing of the genuine window. Decided at once, such a complaint, filed before the TransferOut is
 * seen, would close the bid as case 0 and keep the swap from ever being judged; waiting on every chain's
 * block time makes the outcome the same in every arrival order for any swap whose TransferOut comes within
 * this time of the complaint (its T+E; a day is far above any real swap's window).
 */
export const INVALID_COMPLAINT_HOLD_SECONDS = 86_400;
const lower = (s: string) => s.toLowerCase();

interface ComplaintReading {
  event: ComplaintEvent;
  agreement: SignedAgreement | null;
  valid: boolean;
  invalidReason: string | null;
  party: 'user' | 'lp' | null;
  /** Both signatures prove the agreement (whoever the complainant): its times are the agreement's. */
  proven: boolean;
  /** The complaint names chains this deployment does not watch: it cannot be checked. */
  unjudgeable: string | null;
}

export function judge(facts: SwapFacts, env: JudgeEnv): Judgement {
  try {
    return { status: 'decided', verdict: decide(facts, new Judging(env)) };
  } catch (signal) {
    if (signal instanceof Waiting)
      return { status: 'pending', wait: signal.wait, reason: signal.reason, alsoAsk: signal.alsoAsk };
    throw signal;
  }
}

/**
 * The fact time of a DID lookup the decision rests on in every arrival order: its answer is recorded with the
 * verdict whatever the verdict's own time (Judging.evidence), so a replay decides on the same answer.
 */
const DECISIVE = Number.NEGATIVE_INFINITY;

/**
 * What one judgement asks of the world, and the DID answers it used. A class rather than closures made at
 * every judgement (a swap is judged at each of its events and clock moves).
 */
class Judging {
  readonly didUsed = new Map<string, { names: readonly string[]; at: number }>();

  constructor(readonly env: JudgeEnv) {}

  /**
   * DID names of an address, asked for because of a fact at block time `at`. The verdict records the answers
   * asked for by facts up to its own block time: those are the same whenever the decision ran.
   */
  didNames(address: string, at: number): readonly string[] {
    const key = lower(address);
    const names = this.env.didNames(key);
    if (names === undefined) throw new Waiting({ kind: 'did', address: key }, `DID names of ${key}`);
    this.didUsed.set(key, { names, at: Math.min(at, this.didUsed.get(key)?.at ?? at) });
    return names;
  }

  /** The chain's clock, once it reached `until` (else the judgement waits for it). */
  clock(chainId: string, until: number, why: string): number {
    const now = this.env.now(chainId);
    if (now === undefined || now < until)
      throw new Waiting(
        { kind: 'clock', chainId, until },
        `chain ${chainId} block time to reach ${until}: ${why}`,
      );
    return now;
  }

  /** The evidence of a verdict: consents, and the DID answers asked for by facts up to `horizon`. */
  evidence(
    userConsent: boolean | null,
    lpSigner: string | null,
    lpConsentKnown: boolean,
    horizon = Number.POSITIVE_INFINITY,
  ): SwapVerdict['evidence'] {
    return {
      userConsent,
      lpConsent: lpConsentKnown ? lpSigner !== null : null,
      lpSigner,
      didNames: Object.fromEntries(
        [...this.didUsed.entries()]
          .filter(([, used]) => used.at <= horizon)
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([k, used]) => [k, [...used.names]]),
      ),
    };
  }
}

/**
 * An agreement read from an event, remembered per event object: a swap is judged at each of its events and
 * clock moves, and reading checksums every address. The same object gives the same answer (or error).
 */
const readAgreements = new WeakMap<object, { agreement: SignedAgreement } | { error: unknown }>();
function remembered<E extends object>(read: (event: E) => SignedAgreement, event: E): SignedAgreement {
  let known = readAgreements.get(event);
  if (!known) {
    try {
      known = { agreement: read(event) };
    } catch (error) {
      known = { error };
    }
    readAgreements.set(event, known);
  }
  if ('error' in known) throw known.error;
  return known.agreement;
}

/**
 * The first candidate signer of lpSign whose DID names include lpId: the LP's consent, or null once every
 * candidate is known to be no address of the LP's. Candidates are looked up in order, each only once the ones
 * before it are known not to be the LP's (so the verdict records the same answers whatever was cached).
 *
 * A genuine signature is found among the first candidates; a false one has up to 32, each a DID lookup. One at
 * a time, that is 32 rounds of waiting and judging again; so a wait also asks for as many of the next
 * candidates as were ruled out before it (1, 1, 2, 4, 8, 16: six rounds), and an honest swap asks for nothing
 * more than before.
 */
function lpSignerOf(agreement: SignedAgreement, evmChainId: number, j: Judging, at: number): string | null {
  const candidates = candidateSigners(agreement, agreement.lpSign, evmChainId);
  let ruledOut = 0;
  for (const candidate of candidates) {
    let names: readonly string[];
    try {
      names = j.didNames(candidate, at);
    } catch (signal) {
      if (!(signal instanceof Waiting)) throw signal;
      const next: string[] = [];
      if (ruledOut > 1) for (const more of candidates) if (next.push(more) >= ruledOut - 1) break;
      throw new Waiting(signal.wait, signal.reason, next);
    }
    if (didNamesInclude(names, agreement.lpId)) return candidate;
    ruledOut++;
  }
  return null;
}

function readComplaint(event: ComplaintEvent, j: Judging): ComplaintReading {
  const env = j.env;
  const reading = (fields: Partial<ComplaintReading>): ComplaintReading => ({
    event,
    agreement: null,
    valid: false,
    invalidReason: null,
    party: null,
    proven: false,
    unjudgeable: null,
    ...fields,
  });
  const read = readComplaintAgreement(
    event.complaint,
    (chain) => env.evmChainId(chain),
    (fields) => remembered(agreementOfComplaint, fields),
  );
  if (read.kind === 'invalid') return reading({ invalidReason: `case 0: ${read.reason}` });
  if (read.kind === 'unwatched') return reading({ agreement: read.agreement, unjudgeable: read.reason });
  const { agreement, srcEvmChainId: srcEvm, dstEvmChainId: dstEvm } = read;
  if (!userConsents(agreement, agreement.userSign, srcEvm)) {
    return reading({
      agreement,
      invalidReason: `case 0: userSign does not recover the requestor ${agreement.requestor} under OtmoicSwap{chainId ${srcEvm}}`,
    });
  }
  const at = event.blockTimestamp;
  const lpSigner = lpSignerOf(agreement, dstEvm, j, at);
  if (lpSigner === null) {
    return reading({
      agreement,
      invalidReason: `case 0: lpSign does not recover an address whose DID names include ${agreement.lpId} under OtmoicSwap{chainId ${dstEvm}}`,
    });
  }
  const complainant = event.complainant;
  if (complainant === agreement.lpId || didNamesInclude(j.didNames(lpSigner, at), complainant))
    return reading({ agreement, valid: true, party: 'lp', proven: true });
  if (
    /^0x[0-9a-fA-F]{40}$/.test(agreement.requestor) &&
    didNamesInclude(j.didNames(agreement.requestor, at), complainant)
  )
    return reading({ agreement, valid: true, party: 'user', proven: true });
  return reading({
    agreement,
    proven: true,
    invalidReason: `case 0: the complainant ${complainant} is neither the user's nor the LP's DID`,
  });
}

function complaintField(c: ComplaintReading | null): SwapVerdict['complaint'] {
  return c === null
    ? null
    : {
        complainant: c.event.complainant,
        complainantParty: c.party,
        valid: c.valid,
        invalidReason: c.invalidReason ?? c.unjudgeable,
        fields: { ...c.event.complaint },
      };
}

function complaintTx(c: ComplaintReading | null): SwapTransaction[] {
  return c === null ? [] : [tx('complaint', c.event)];
}

/** The fields every verdict starts from. */
interface Base {
  bidId: string;
  transferOutId: string | null;
  transferInId: string | null;
  responseTimeSeconds: number | null;
}

function decide(facts: SwapFacts, j: Judging): SwapVerdict {
  const base: Base = {
    bidId: facts.bidId,
    transferOutId: facts.out?.transferId ?? null,
    transferInId: null,
    responseTimeSeconds: null,
  };
  const out = facts.out;
  if (out === null) {
    // A complaint about a swap whose TransferOut we have not seen (cases 0 and 1).
    const event = facts.complaints[0];
    if (event === undefined) throw new Error(`swap ${facts.bidId} has no facts`);
    // The earliest complaint decides: one filed earlier on another reputation contract may not be seen yet.
    const seen = j.env.complaintsSeenThrough();
    if (seen === undefined || seen <= event.blockTimestamp)
      throw new Waiting(
        { kind: 'complaints', until: event.blockTimestamp + 1 },
        `complaints filed up to ${event.blockTimestamp} (reputation streams seen through ${seen ?? 'nothing yet'})`,
      );
    const c = readComplaint(event, j);
    const a = c.agreement;
    const verdictOf = (
      fields: Omit<SwapVerdict, keyof typeof base | 'transactions' | 'complaint' | 'evidence'>,
    ) => ({
      ...base,
      ...fields,
      transactions: complaintTx(c),
      complaint: complaintField(c),
      evidence: j.evidence(null, null, false),
    });
    // Once every watched chain passed the hold, no TransferOut with this bid is coming (see the constant).
    const holdForTransferOut = () => {
      for (const chainId of j.env.swapChains())
        j.clock(
          chainId,
          event.blockTimestamp + INVALID_COMPLAINT_HOLD_SECONDS + 1,
          "a TransferOut with this bid may still come: an invalid complaint's fields are not the agreement",
        );
    };
    if (a === null || c.unjudgeable !== null) {
      holdForTransferOut();
      return verdictOf({
        srcChainId: a?.srcChainId.toString() ?? event.chainId,
        dstChainId: a?.dstChainId.toString() ?? null,
        user: a ? lower(a.requestor) : null,
        lpId: a?.lpId ?? null,
        outcome: c.unjudgeable === null ? 'invalid_complaint' : 'unknown',
        case: c.unjudgeable === null ? 0 : null,
        party: null,
        subject: null,
        rule: (c.invalidReason ?? c.unjudgeable)!,
        blockTime: event.blockTimestamp,
        decidedOn: event.chainId,
      });
    }
    const src = a.srcChainId.toString();
    const transferOutDeadline = a.agreementReachedTime + a.expectedSingleStepTime;
    // A TransferOut can only happen by T+E: once the source chain passed it, its absence is settled. Only the
    // times of an agreement both signatures prove are a window: a complaint whose signatures prove nothing has
    // no agreement (the hold alone bounds its wait), or anyone could file one with T near 2^64 and keep it
    // pending for ever.
    if (c.proven)
      j.clock(src, seconds(transferOutDeadline) + 1, 'a TransferOut with this bid can happen until T+E');
    const common = {
      srcChainId: src,
      dstChainId: a.dstChainId.toString(),
      user: lower(a.requestor),
      lpId: a.lpId,
    };
    if (!c.valid) {
      holdForTransferOut();
      return verdictOf({
        ...common,
        outcome: 'invalid_complaint',
        case: 0,
        party: null,
        subject: null,
        rule: c.invalidReason!,
        blockTime: event.blockTimestamp,
        decidedOn: event.chainId,
      });
    }
    // One signed agreement has many bids (the bid hashes free strings: a token's casing, the signatures' encoding,
    // srcAddress's form; the LP can even sign its part again), and the classifier reads them all as the same
    // agreement. A complaint quoting it under another bid than the one it was locked under is no proof that the
    // user did not lock it: any lock of its key (the same signed terms, however spelled) by T+E answers case 1.
    // Every such lock is seen by now: the contract takes a lock only by its own T+E, which is this one.
    const key = complaintKeyOf(event);
    const lock = key === null ? undefined : earliestLock(j.env.agreementLocks(key), src, transferOutDeadline);
    if (lock !== undefined)
      return verdictOf({
        ...common,
        outcome: 'unknown',
        case: null,
        party: null,
        subject: null,
        rule: `unknown: no TransferOut with this bid, but its agreement (the same signed terms, spelled otherwise) was locked on chain ${src} by T+E = ${transferOutDeadline} under bid ${lock.bidId} (transfer ${lock.transferId}): not case 1`,
        blockTime: seconds(transferOutDeadline),
        decidedOn: src,
      });
    return verdictOf({
      ...common,
      outcome: 'violation',
      case: 1,
      party: 'user',
      subject: lower(a.requestor),
      rule: `case 1: no TransferOut with this bid on chain ${src} by T+E = ${transferOutDeadline}`,
      blockTime: seconds(transferOutDeadline),
      decidedOn: src,
    });
  }

  return new TransferOutDecision(facts, out, j, base).decide();
}

/** The first lock on chain `src` by `deadline` (T+E), in a fixed order whatever the order they were recorded in. */
function earliestLock(
  locks: readonly AgreementLock[],
  src: string,
  deadline: bigint,
): AgreementLock | undefined {
  let first: AgreementLock | undefined;
  for (const l of locks) {
    if (l.chainId !== src || BigInt(l.blockTime) > deadline) continue;
    if (
      first === undefined ||
      l.blockTime < first.blockTime ||
      (l.blockTime === first.blockTime && l.transferId < first.transferId)
    )
      first = l;
  }
  return first;
}

function tx(
  step: SwapTransaction['step'],
  e: { chainId: string; txHash: string; blockTimestamp: number },
): SwapTransaction {
  return { step, chainId: e.chainId, txHash: e.txHash, blockTime: e.blockTimestamp };
}

type Outcome = Pick<
  SwapVerdict,
  'outcome' | 'case' | 'party' | 'subject' | 'rule' | 'blockTime' | 'decidedOn'
> & {
  responseTimeSeconds?: number;
};

/**
 * The decision of a swap with a TransferOut. A class rather than a function of closures: one is made at every
 * judgement, and what the steps find (consents, the LP's answer, the complaint counted, the verdict's block
 * time) is read by the verdict they end in.
 */
class TransferOutDecision {
  private readonly S: string;
  private readonly D: string;
  private readonly user: string;
  private userConsent: boolean | null = null;
  private lpSigner: string | null = null;
  private lpConsentKnown = false;
  /** The LP's signer, once known. */
  private lp: string | null = null;
  private tin: TransferIn | null = null;
  private counted: ComplaintReading | null = null;
  private settled = Number.MAX_SAFE_INTEGER;
  /**
   * The facts of this TransferOut: the lists may also hold events of another lock of the same agreement
   * that was the swap until this earlier one came (facts.ts), which are not this swap's.
   */
  private readonly confirmOuts: SwapFacts['confirmOuts'];
  private readonly refundOuts: SwapFacts['refundOuts'];

  constructor(
    private readonly facts: SwapFacts,
    private readonly out: TransferOut,
    private readonly j: Judging,
    private readonly base: Base,
  ) {
    this.S = out.chainId;
    this.D = out.dstChainId;
    this.user = lower(out.sender);
    const ofOut = <E extends { transferId: string }>(list: E[]) =>
      list.every((e) => e.transferId === out.transferId)
        ? list
        : list.filter((e) => e.transferId === out.transferId);
    this.confirmOuts = ofOut(facts.confirmOuts);
    this.refundOuts = ofOut(facts.refundOuts);
  }

  private transactions(): SwapTransaction[] {
    const { facts, tin } = this;
    const list: SwapTransaction[] = [tx('transferOut', this.out)];
    if (tin) list.push(tx('transferIn', tin));
    const co = this.confirmOuts[0];
    if (co) list.push(tx('confirmOut', co));
    const ci = tin
      ? facts.confirmIns.find((e) => e.transferId === tin.transferId && e.chainId === tin.chainId)
      : undefined;
    if (ci) list.push(tx('confirmIn', ci));
    const ro = this.refundOuts[0];
    if (ro) list.push(tx('refundOut', ro));
    const ri = tin
      ? facts.refundIns.find((e) => e.transferId === tin.transferId && e.chainId === tin.chainId)
      : undefined;
    if (ri) list.push(tx('refundIn', ri));
    return [...list.filter((t) => t.blockTime <= this.settled), ...complaintTx(this.counted)];
  }

  /**
   * A chain verdict is final only once every complaint filed up to its block time has been seen; a valid
   * complaint among them whose agreement the TransferOut does not match turns it into case 2.
   */
  private finish(o: Outcome, watched: readonly string[] = [this.S, this.D]): SwapVerdict {
    const { out, j } = this;
    const settledAt = Math.max(o.blockTime, out.blockTimestamp);
    // The verdict lists the swap's transactions up to its block time: all of them must have been seen. A clock
    // at X may still miss a later block of the same second (chains with several blocks a second), so every
    // "all up to X" waits for X + 1, as the windows do.
    for (const chainId of watched)
      j.clock(chainId, settledAt + 1, 'the transactions up to the verdict must be known');
    this.settled = settledAt;
    const seen = j.env.complaintsSeenThrough();
    if (seen === undefined || seen <= settledAt) {
      throw new Waiting(
        { kind: 'complaints', until: settledAt + 1 },
        `complaints filed up to ${settledAt} (reputation streams seen through ${seen ?? 'nothing yet'})`,
      );
    }
    const event = this.facts.complaints.find((c) => c.blockTimestamp <= settledAt);
    const counted = event ? readComplaint(event, j) : null;
    this.counted = counted;
    let outcome = o;
    if (counted?.valid && counted.agreement) {
      const differences = differingTerms(counted.agreement, remembered(agreementOfTransferOut, out));
      if (differences.length > 0) {
        outcome = {
          outcome: 'violation',
          case: 2,
          party: 'user',
          subject: this.user,
          rule: `case 2: the TransferOut differs from the complaint's agreement: ${differences.join('; ')}`,
          blockTime: out.blockTimestamp,
          decidedOn: this.S,
        };
      }
    }
    return {
      ...this.base,
      srcChainId: this.S,
      dstChainId: this.D,
      user: this.user,
      lpId: out.lpId,
      transferInId: this.tin?.transferId ?? null,
      ...outcome,
      responseTimeSeconds: outcome.responseTimeSeconds ?? null,
      transactions: this.transactions(),
      complaint: complaintField(counted),
      evidence: j.evidence(this.userConsent, this.lpSigner, this.lpConsentKnown, this.settled),
    };
  }

  private violation(
    party: 'user' | 'lp',
    caseNumber: number,
    rule: string,
    blockTime: number,
    decidedOn: string,
  ): SwapVerdict {
    return this.finish({
      outcome: 'violation',
      case: caseNumber,
      party,
      subject: party === 'user' ? this.user : this.out.lpId,
      rule,
      blockTime,
      decidedOn,
    });
  }

  private unknown(
    rule: string,
    blockTime: number,
    decidedOn: string,
    watched?: readonly string[],
  ): SwapVerdict {
    return this.finish(
      { outcome: 'unknown', case: null, party: null, subject: null, rule, blockTime, decidedOn },
      watched,
    );
  }

  /** An address of the LP: its signer, or one whose DID names include its id. */
  private isLp(address: string, at: number): boolean {
    return lower(address) === this.lp || didNamesInclude(this.j.didNames(address, at), this.out.lpId);
  }

  /** An address that acts for the LP on its answer: the answer's sender, or one of the LP's own. */
  private isLpTx(address: string, answer: TransferIn, at: number): boolean {
    return lower(address) === lower(answer.sender) || this.isLp(address, at);
  }

  /**
   * The LP's answer a ConfirmIn names: `first` (the LP's first answer), or another answer that is its sender's
   * first and whose sender is an address of the LP (asked about at `at`, else at that answer's time).
   */
  private lpAnswerConfirmed(
    confirmIn: SwapFacts['confirmIns'][number],
    first: TransferIn,
    at?: number,
  ): TransferIn | undefined {
    const { facts, out, D } = this;
    if (confirmIn.chainId !== D) return undefined;
    if (confirmIn.transferId === first.transferId) return first;
    const answers = answersOf(facts.ins, out);
    const other = answers.find((e) => e.transferId === confirmIn.transferId);
    return other !== undefined &&
      answers.find((e) => lower(e.sender) === lower(other.sender)) === other &&
      this.isLp(other.sender, at ?? other.blockTimestamp)
      ? other
      : undefined;
  }

  /**
   * The LP's answer that was confirmed in first, with that ConfirmIn; else `first` (the LP's first answer) and
   * none. The contract lets several TransferIns name one lock: an LP that answered from two of its wallets and
   * confirmed in the second answered in full (it was case 6 on the LP), and a user who confirms in the second
   * without confirming out is the known cheat (case 7). Another answer's sender is asked about only when that
   * answer was confirmed in. One sender's later answers are not answers: a transfer's id hashes its sender and
   * terms, so the contract takes one sender's answer on the lock's terms once (the facts keep the first of each
   * sender's, facts.ts `covers`).
   */
  private confirmedAnswer(first: TransferIn): {
    answer: TransferIn;
    confirmIn: SwapFacts['confirmIns'][number] | undefined;
  } {
    for (const confirmIn of this.facts.confirmIns) {
      const answer = this.lpAnswerConfirmed(confirmIn, first);
      if (answer !== undefined) return { answer, confirmIn };
    }
    return { answer: first, confirmIn: undefined };
  }

  decide(): SwapVerdict {
    const { facts, out, j, S, D, user } = this;
    let agreement: SignedAgreement;
    try {
      agreement = remembered(agreementOfTransferOut, out);
    } catch (err) {
      if (!(err instanceof AgreementFieldError)) throw err;
      return this.unknown(`unknown: the TransferOut's ${err.message}`, out.blockTimestamp, S, [S]);
    }
    const srcEvm = j.env.evmChainId(S);
    const dstEvm = j.env.evmChainId(D);
    if (srcEvm === undefined || dstEvm === undefined) {
      // Unknown only once every window of the agreement has closed (DESIGN §7), on a chain still watched: decided
      // at once, a pending swap whose chain was taken out of chainClients for a moment (a configuration slip) was
      // unknown for good at its next event or clock move, its case lost, and a replay with the chain back differed.
      // With neither chain watched it waits, and /health shows it (swapsWaitingForUnwatchedChains).
      const watched = srcEvm !== undefined ? [S] : dstEvm !== undefined ? [D] : [];
      const decidedOn = watched[0] ?? S;
      j.clock(
        decidedOn,
        windowsOf(out).thirdPartyConfirmOutEnd + 1,
        'a swap on a chain not watched is unknown once every window (to T+3E+3Tol) has closed',
      );
      return this.unknown(
        `unknown: chain ${srcEvm === undefined ? S : D} is not watched by this deployment`,
        out.blockTimestamp,
        decidedOn,
        watched,
      );
    }

    this.userConsent = userConsents(agreement, out.userSign, srcEvm);
    this.lpSigner = lpSignerOf(agreement, dstEvm, j, out.blockTimestamp);
    this.lpConsentKnown = true;

    // Case 2: the user locked something the LP never agreed to.
    if (this.lpSigner === null) {
      return this.violation(
        'user',
        2,
        `case 2: TransferOut without LP consent: lpSign over its own terms does not recover an address whose DID names include ${out.lpId} under OtmoicSwap{chainId ${dstEvm}}`,
        out.blockTimestamp,
        S,
      );
    }
    this.lp = this.lpSigner;
    if (!this.isLp(out.receiver, out.blockTimestamp)) {
      return this.violation(
        'user',
        2,
        `case 2: the TransferOut pays ${out.receiver}, which is not an address of LP ${out.lpId}`,
        out.blockTimestamp,
        S,
      );
    }

    const { transferInEnd, userConfirmEnd, thirdPartyConfirmOutStart, lpConfirmEnd, thirdPartyConfirmInEnd } =
      windowsOf(out);
    // Who confirmed is proven by the contract's windows (spec §3: its caller must be the lock's sender until
    // T+3E for a ConfirmOut, T+3E+Tol for a ConfirmIn; anyone else only from T+3E+2Tol, T+3E+Tol): the
    // transaction's sender is not the caller for a smart wallet or a bundler. Only in the one second both may
    // act (Tol = 0, or the ConfirmIn at T+3E+Tol) does the transaction's sender decide.
    const confirmedOutByUser = (e: ChainEvent) =>
      e.blockTimestamp <= userConfirmEnd &&
      (e.blockTimestamp < thirdPartyConfirmOutStart || lower(e.txFrom) === user);
    // From T+3E+Tol the LP's own call reverts, but another wallet of the LP may confirm in as anyone else.
    const confirmedInByLp = (e: ChainEvent, answer: TransferIn, at: number) =>
      e.blockTimestamp < lpConfirmEnd || this.isLpTx(e.txFrom, answer, at);

    // Cases 3 and 4: the LP's answer on the destination chain (a TransferIn by anyone else is not the LP's).
    // In block order; a sender is looked up only as far as needed (griefers after the answer are not asked about).
    // Only the answers by T+2E: a TransferIn whose own differing times let the contract take it later is no
    // answer by then (case 3 at T+2E), which the verdict must not learn or not depending on when the
    // destination clock was seen. The ones that match the lock are kept apart (answersOf): while the swap
    // waits, a griefer's others are not looked at again at each judgement.
    this.tin = answersOf(facts.ins, out).find((e) => this.isLp(e.sender, e.blockTimestamp)) ?? null;
    if (this.tin === null) {
      j.clock(D, transferInEnd + 1, 'the LP may transfer in until T+2E');
      const onDst = facts.ins.filter((e) => e.srcTransferId === out.transferId && inAnswerWindow(out, e));
      // Every TransferIn up to T+2E is seen now, and each sender looked up decides between 3, 4 and an answer:
      // their answers are recorded whatever the verdict's time (case 4's is the first TransferIn's), so a
      // replay decides on the same ones.
      for (const e of onDst) if (mismatchesOf(out, e).length === 0) this.isLp(e.sender, DECISIVE);
      // The user locked the agreement twice (the swap is the earlier lock) and the LP answered the other lock
      // by T+2E, on its terms: the LP carried the agreement out, so neither case 3 nor case 4 is proven.
      const otherLock = facts.ins.find(
        (e) =>
          e.srcTransferId !== out.transferId &&
          inAnswerWindow(out, e) &&
          differsButHashlock(mismatchesOf(out, e)) &&
          this.isLp(e.sender, DECISIVE),
      );
      if (otherLock)
        return this.unknown(
          `unknown: the LP answered another lock of this agreement (transfer ${otherLock.srcTransferId}) by T+2E = ${transferInEnd}, not the swap's (the earlier lock): the rules do not say which lock is the swap`,
          transferInEnd,
          D,
        );
      const first = onDst.find((e) => this.isLp(e.sender, DECISIVE));
      if (first) {
        this.tin = first;
        return this.violation(
          'lp',
          4,
          `case 4: the LP's TransferIn differs from the TransferOut: ${mismatchesOf(out, first).join('; ')}`,
          first.blockTimestamp,
          D,
        );
      }
      return this.violation(
        'lp',
        3,
        `case 3: no TransferIn by the LP on chain ${D} by T+2E = ${transferInEnd}`,
        transferInEnd,
        D,
      );
    }
    // The LP's first answer times its response; the swap goes on with the answer confirmed in first.
    const firstAnswer = this.tin;
    const { answer, confirmIn } = this.confirmedAnswer(firstAnswer);
    this.tin = answer;
    const confirmOut = this.confirmOuts[0];

    // Case 7: someone other than the LP confirmed in one of the LP's answers while the user had not confirmed out
    // (the known cheat). Every answer's ConfirmIn counts, not only the one the swap goes on with: the LP may
    // confirm in one answer and the user the other. Whether the user confirmed out first is settled before the
    // ConfirmIn's answer and sender are asked about: the answers are then asked for in every arrival order, and
    // recorded with the verdict even when the ConfirmIn comes after the verdict's time (a case 5 at T+3E that
    // rests on a ConfirmIn by an LP wallet known through DID).
    for (const e of facts.confirmIns) {
      if (e.chainId !== D || (confirmOut !== undefined && confirmOut.blockTimestamp <= e.blockTimestamp))
        continue;
      j.clock(
        S,
        e.blockTimestamp + 1,
        'a ConfirmOut by the ConfirmIn (in a later block of the same second too) would be seen by then',
      );
      const cheated = this.lpAnswerConfirmed(e, firstAnswer, DECISIVE);
      if (cheated !== undefined && !confirmedInByLp(e, cheated, DECISIVE)) {
        this.tin = cheated;
        return this.violation(
          'user',
          7,
          `case 7: ${e.txFrom} confirmed in at ${e.blockTimestamp} while the user had not confirmed out`,
          e.blockTimestamp,
          S,
        );
      }
    }
    // An answer not confirmed in yet may still be, by anyone once the LP's window closed (a sender's later
    // answers are none, as in lpAnswerConfirmed).
    const answers = answersOf(facts.ins, out);
    const unconfirmed = answers.some(
      (a, i) =>
        answers.findIndex((e) => lower(e.sender) === lower(a.sender)) === i &&
        !facts.confirmIns.some((e) => e.transferId === a.transferId && e.chainId === D),
    );
    if (unconfirmed) {
      // Settled once no ConfirmIn can come before the ConfirmOut, or none can come at all.
      const nowD = j.env.now(D);
      const settled =
        nowD !== undefined &&
        ((confirmOut !== undefined && nowD >= confirmOut.blockTimestamp) || nowD > thirdPartyConfirmInEnd);
      if (!settled) {
        j.clock(
          D,
          confirmOut
            ? Math.min(confirmOut.blockTimestamp, thirdPartyConfirmInEnd + 1)
            : thirdPartyConfirmInEnd + 1,
          'a ConfirmIn before any ConfirmOut would be case 7',
        );
      }
    }

    // Case 5: the user did not confirm out by T+3E.
    const userConfirmedOut = confirmOut !== undefined && confirmedOutByUser(confirmOut);
    if (!userConfirmedOut) {
      j.clock(S, userConfirmEnd + 1, 'the user may confirm out until T+3E');
      return this.violation(
        'user',
        5,
        `case 5: the user did not confirm out on chain ${S} by T+3E = ${userConfirmEnd}`,
        userConfirmEnd,
        S,
      );
    }

    // Case 6: the LP did not confirm in by T+3E+Tol.
    const lpConfirmedIn =
      confirmIn !== undefined &&
      confirmIn.blockTimestamp <= lpConfirmEnd &&
      confirmedInByLp(confirmIn, answer, confirmIn.blockTimestamp);
    if (!lpConfirmedIn) {
      j.clock(D, lpConfirmEnd + 1, 'the LP may confirm in until T+3E+Tol');
      return this.violation(
        'lp',
        6,
        `case 6: the LP did not confirm in on chain ${D} by T+3E+Tol = ${lpConfirmEnd}`,
        lpConfirmEnd,
        D,
      );
    }

    // Normal: all four steps, in time, by the right parties, in order.
    if (confirmOut.blockTimestamp <= confirmIn.blockTimestamp) {
      return this.finish({
        outcome: 'normal',
        case: null,
        party: null,
        subject: null,
        rule: 'normal: TransferOut, TransferIn, ConfirmOut by the user and ConfirmIn by the LP, each in its window',
        blockTime: confirmIn.blockTimestamp,
        decidedOn: D,
        responseTimeSeconds: Math.max(0, firstAnswer.blockTimestamp - out.blockTimestamp),
      });
    }
    return this.unknown(
      `unknown: the LP confirmed in at ${confirmIn.blockTimestamp} before the user confirmed out at ${confirmOut.blockTimestamp}`,
      confirmOut.blockTimestamp,
      S,
    );
  }
}
