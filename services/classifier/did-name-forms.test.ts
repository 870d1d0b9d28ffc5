/**
 * The real SDK submits a complaint's domain as `name.replace('@', '.')` of the DID name the DID support service
 * gives (the Terminus domain the Reputation contract checks). A service answering `alice@olares.com` made every
 * such complainant "neither the user's nor the LP's DID" (case 0): a name matches with its first `@` read as
 * `.` (didNameIs), as the SDK reads it, in the LP's consent too.
 */
import { describe, expect, it } from 'vitest';
import { didNameIs } from '../../shared/otmoic/did-lookup.js';
import { envAt, factsOf } from './judge-test-kit.js';
import { judge } from './judge.js';
import { buildTimeline, DID_NAMES, LP, USER, USER_DID } from './swap-timeline.js';

/** The DID support service's answers with each name's last `.` before its domain written `@`. */
const atForm = (name: string) => name.replace('.', '@');

describe('DID names in the form user@domain', () => {
  it('didNameIs: as it is, or with its first @ read as .; nothing else', () => {
    expect(didNameIs('alice@olares.com', 'alice.olares.com')).toBe(true);
    expect(didNameIs('alice.olares.com', 'alice.olares.com')).toBe(true);
    expect(didNameIs('alice@olares.com', 'alice@olares.com')).toBe(true);
    expect(didNameIs('bob@olares.com', 'alice.olares.com')).toBe(false);
    expect(didNameIs('alice.olares.com', 'alice@olares.com')).toBe(false);
    expect(didNameIs('a@b@c', 'a.b.c')).toBe(false); // the SDK replaces the first @ only
  });

  it("a user's complaint is the user's when the DID support names the user user@domain", () => {
    const timeline = buildTimeline({
      T: 1000,
      E: 3,
      Tol: 2,
      lpSign: 'lp',
      userSign: 'user',
      out: { kind: 'ok', at: 1000 },
      in: { kind: 'none' },
      complaint: { by: 'user', at: 1004 },
    });
    expect(USER_DID).toContain('.');
    const events = Object.values(timeline.streams).flat();
    const clocks = { '9006': 5_000, '614': 5_000 };
    const asDotted = judge(factsOf(timeline.bidId, events), envAt(clocks, 5_000));
    const atNames: Record<string, readonly string[]> = {
      ...DID_NAMES,
      [USER.address.toLowerCase()]: DID_NAMES[USER.address.toLowerCase()]!.map(atForm),
      [LP.address.toLowerCase()]: DID_NAMES[LP.address.toLowerCase()]!,
    };
    const withAt = judge(factsOf(timeline.bidId, events), {
      ...envAt(clocks, 5_000),
      didNames: (address) => atNames[address],
    });
    expect(asDotted.status).toBe('decided');
    // The same verdict; its evidence records the names as the service gave them.
    const decision = (j: typeof asDotted) =>
      j.status === 'decided' ? { ...j.verdict, evidence: undefined } : j;
    expect(decision(withAt)).toEqual(decision(asDotted));
    expect(JSON.stringify(withAt)).not.toMatch(/neither the user's nor the LP's DID/);
  });
});
