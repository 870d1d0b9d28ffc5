/**
 * How many rounds of DID lookups an lpSign costs (judge.ts lpSignerOf). Each candidate signer of a false lpSign
 * must be known to be no address of the LP's before the user is blamed (case 2); asked one at a time, that was
 * one round of waiting and judging again per candidate. A wait now also asks for as many of the next candidates
 * as were ruled out before it, and an honest swap asks for nothing more than before.
 */
import { describe, expect, it } from 'vitest';
import { agreementOfTransferOut } from '../../shared/otmoic/agreement.js';
import { candidateSigners } from './consent.js';
import type { JudgeEnv, SwapFacts } from './facts.js';
import { envAt, unansweredLock } from './judge-test-kit.js';
import { judge, type Judgement } from './judge.js';
import { DID_NAMES, DST, LP, SRC } from './swap-timeline.js';

const clocks = { [SRC.chainId]: 2_000, [DST.chainId]: 2_000, reputation: 2_000 };

/** Judges until decided, answering after each round the addresses it asked for. Returns the rounds' asks. */
function lookupRounds(facts: SwapFacts): {
  rounds: string[][];
  last: Judgement;
} {
  const known = new Map<string, readonly string[]>();
  const env: JudgeEnv = { ...envAt(clocks), didNames: (address) => known.get(address) };
  const rounds: string[][] = [];
  for (;;) {
    const judgement = judge(facts, env);
    if (judgement.status === 'decided' || judgement.wait.kind !== 'did') return { rounds, last: judgement };
    const asked = [judgement.wait.address, ...judgement.alsoAsk];
    rounds.push(asked);
    for (const address of asked) known.set(address, DID_NAMES[address] ?? []);
    if (rounds.length > 64) throw new Error('no progress');
  }
}

describe('the DID lookups of an lpSign', () => {
  it('a false lpSign: every candidate asked for, in rounds that double, and the verdict of asking one at a time', () => {
    const { out, facts } = unansweredLock('stranger', 77);
    const agreement = agreementOfTransferOut(out);
    const candidates = [...candidateSigners(agreement, agreement.lpSign, DST.evm)];
    expect(candidates.length).toBeGreaterThanOrEqual(8);

    const { rounds, last } = lookupRounds(facts);
    // The user's requestor and the receiver are asked about too (DID names of the parties): only the lpSign's
    // candidates are counted here, in the order they were asked for.
    const candidateRounds = rounds.filter((asked) => asked.some((a) => candidates.includes(a)));
    expect(candidateRounds.flat()).toEqual(candidates);
    // 1, 1, 2, 4, 8, 16: as many as were ruled out before, at least one.
    let ruledOut = 0;
    for (const asked of candidateRounds) {
      expect(asked).toHaveLength(Math.min(Math.max(1, ruledOut), candidates.length - ruledOut));
      ruledOut += asked.length;
    }
    expect(candidateRounds.length).toBeLessThanOrEqual(Math.ceil(Math.log2(candidates.length)) + 1);

    // Decided as with every answer known at once: case 2, every candidate's answer recorded.
    expect(last.status).toBe('decided');
    const allKnown = judge(facts, envAt(clocks));
    expect(last).toEqual(allKnown);
    if (last.status !== 'decided') return;
    expect(last.verdict.case).toBe(2);
    for (const candidate of candidates) expect(last.verdict.evidence.didNames).toHaveProperty(candidate);
  });

  it("an honest lpSign: the LP's address alone is asked for, once", () => {
    const { facts } = unansweredLock('lp', 77);
    const { rounds, last } = lookupRounds(facts);
    const lp = LP.address.toLowerCase();
    expect(rounds.filter((asked) => asked.includes(lp))).toEqual([[lp]]);
    for (const asked of rounds) expect(asked).toHaveLength(1);
    expect(last).toEqual(judge(facts, envAt(clocks)));
  });
});
