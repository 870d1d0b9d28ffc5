/**
 * Model-based test: random sequences of "violation arrives", "verdicts arrive", "a message is delivered
 * again", "KYC changes", "time moves" and queries, run against the real projection (handler, applyOnce, SQL on
 * the test database) and the score cache, the real KYC cache over HTTP to the relay-admin stand-in, and a naive reference model
 * that keeps every fact in a list and recomputes each score from the specification's rules.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { BusMessage, HandlerContext } from '../../shared/bus/port.js';
import { encode, envelope, type TopicDefinition } from '../../topics/envelope.js';
import { swapVerdicts, verdictId } from '../../topics/swap.verdicts.js';
import { violationId, violations } from '../../topics/violations.js';
import { startRelayAdminStandIn, type RelayAdminStandIn } from '../stand-ins/relay-admin/server.js';
import { CachedLookup } from './cached-lookup.js';
import { FactsCache } from './facts-cache.js';
import { pointsBatchHandler } from './consumer.js';
import { pointsMigrations } from './migrations.js';
import { fetchKyc } from './external-services.js';
import { PointsQueries } from './queries.js';
import { PointsStore } from './store.js';
import { hex32, userAddress, verdictPayload, violationPayload } from './test-harness.js';

const DAY = 86_400;
const WINDOW_DAYS = 90;
const W = WINDOW_DAYS * DAY;
const REFRESH_MS = 3_600_000;
const START = 1_800_000_000;
const USERS = [userAddress(0x100), userAddress(0x200), userAddress(0x300)];
// One LP per tier row, so batches sized around one row's boundaries rarely mix.
const LPS = ['lp-a', 'lp-b', 'lp-c', 'lp-d', 'lp-e'];

// The specification's table (§2.4), its own copy: basis tenths, swaps ≥, success % ≥, average seconds <.
const SPEC_TIERS = [
  [50, 720, 99, 60],
  [40, 150, 95, 300],
  [30, 30, 90, 900],
  [20, 6, 80, 3_600],
  [10, 2, 60, 86_400],
] as const;

// ---- the naive reference model -------------------------------------------------------------------------
interface ModelSwap {
  lpId: string;
  blockTime: number;
  kind: 'normal' | 'lp' | 'user';
  response: number;
}
interface Model {
  now: number;
  violations: Array<{ party: 'user' | 'lp'; subject: string; blockTime: number }>;
  swaps: ModelSwap[];
  kycTruth: Map<string, boolean>;
  /** What Points' cache saw and when (ms): the model of "follows a KYC change at the next refresh". */
  kycSeen: Map<string, { value: boolean; atMs: number }>;
}

const counts = (blockTime: number, at: number) => blockTime > at - W && blockTime <= at;

function modelUserScore(m: Model, address: string, at: number): { score: number; basis: number } {
  const nowMs = m.now * 1000;
  let seen = m.kycSeen.get(address);
  if (!seen || nowMs - seen.atMs >= REFRESH_MS) {
    seen = { value: m.kycTruth.get(address) ?? false, atMs: nowMs };
    m.kycSeen.set(address, seen);
  }
  const basis = seen.value ? 50 : 20;
  const n = m.violations.filter(
    (v) => v.party === 'user' && v.subject === address && counts(v.blockTime, at),
  ).length;
  return { score: Math.max(0, basis - n), basis };
}

function modelLpScore(m: Model, lpId: string, at: number): { score: number; basis: number } {
  const swaps = m.swaps.filter((s) => s.lpId === lpId && s.kind !== 'user' && counts(s.blockTime, at));
  const normal = swaps.filter((s) => s.kind === 'normal');
  const total = normal.reduce((a, s) => a + BigInt(s.response), 0n);
  let basis = 0;
  for (const [tenths, minSwaps, percent, below] of SPEC_TIERS) {
    const enough = swaps.length >= minSwaps;
    const rate = swaps.length > 0 && BigInt(normal.length) * 100n >= BigInt(percent) * BigInt(swaps.length);
    const fast = normal.length > 0 && total < BigInt(below) * BigInt(normal.length);
    if (enough && rate && fast) {
      basis = tenths;
      break;
    }
  }
  const n = m.violations.filter(
    (v) => v.party === 'lp' && v.subject === lpId && counts(v.blockTime, at),
  ).length;
  return { score: Math.max(0, basis - n), basis };
}

// ---- the real system ------------------------------------------------------------------------------------
interface Real {
  deliver(message: BusMessage): Promise<void>;
  delivered: BusMessage[];
  /** Through the score cache, and straight from SQL: both must agree with the model. */
  queries: PointsQueries;
  sqlQueries: PointsQueries;
  standIn: RelayAdminStandIn;
  clock: { now: number };
  nextBid: number;
}

function message<P>(topic: TopicDefinition<P>, payload: P, id: string): BusMessage {
  const out = encode(topic, envelope(topic, payload, { occurredAt: 0, source: 'model', id }));
  return {
    topic: topic.name,
    partition: 0,
    offset: 0n,
    key: out.key,
    value: out.value,
    headers: out.headers ?? {},
    timestamp: new Date(),
  };
}

type Command = fc.AsyncCommand<Model, Real>;

/** A block time near the window's edges relative to now (the bounds to the second), or anywhere in it. */
const offsetArb = fc.oneof(
  { arbitrary: fc.constantFrom(0, -1, 1, -W, -W + 1, -W - 1), weight: 4 },
  { arbitrary: fc.integer({ min: -W - DAY, max: DAY }), weight: 1 },
);

class ViolationArrives implements Command {
  constructor(
    readonly party: 'user' | 'lp',
    readonly index: number,
    readonly offset: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const subject = this.party === 'user' ? USERS[this.index % USERS.length]! : LPS[this.index % LPS.length]!;
    const blockTime = m.now + this.offset;
    const bid = hex32(r.nextBid++, 17);
    m.violations.push({ party: this.party, subject, blockTime });
    // Users arrive in mixed case from some producers: Points keys them lower-case.
    const sent =
      this.party === 'user' && this.index % 2 === 1
        ? subject.replace(/[a-f]/g, (c) => c.toUpperCase())
        : subject;
    await r.deliver(
      message(
        violations,
        violationPayload({ bid, party: this.party, subject: sent, blockTime }),
        violationId(bid),
      ),
    );
  }
  toString = () => `violation(${this.party} ${this.index}, now${this.offset >= 0 ? '+' : ''}${this.offset})`;
}

/** Many violations of one user at once: around the floor at 0 from basis 2 (20) and basis 5 (50). */
class ViolationBurst implements Command {
  constructor(
    readonly index: number,
    readonly count: number,
    readonly offset: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    for (let i = 0; i < this.count; i++)
      await new ViolationArrives('user', this.index, this.offset).run(m, r);
    await new QueryUser(this.index, null).run(m, r);
  }
  toString = () =>
    `burst(user ${this.index}: ${this.count} violations, now${this.offset >= 0 ? '+' : ''}${this.offset})`;
}

/** A batch of verdicts for one LP, sized around a tier boundary. */
class VerdictsArrive implements Command {
  constructor(
    readonly lp: number,
    readonly decided: number,
    readonly normal: number,
    readonly response: number,
    readonly firstDelta: number,
    readonly userBroken: number,
    readonly offset: number,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const lpId = LPS[this.lp]!;
    const blockTime = m.now + this.offset;
    const batch: BusMessage[] = [];
    const add = (kind: ModelSwap['kind'], response: number) => {
      const bid = hex32(r.nextBid++, 23);
      m.swaps.push({ lpId, blockTime, kind, response });
      const verdict =
        kind === 'normal'
          ? verdictPayload({ bid, lpId, outcome: 'normal', blockTime, responseTimeSeconds: response })
          : verdictPayload({
              bid,
              lpId,
              outcome: 'violation',
              party: kind,
              case: kind === 'lp' ? 6 : 5,
              blockTime,
            });
      batch.push(message(swapVerdicts, verdict, verdictId(bid)));
    };
    for (let i = 0; i < this.normal; i++)
      add('normal', Math.max(0, this.response + (i === 0 ? this.firstDelta : 0)));
    for (let i = this.normal; i < this.decided; i++) add('lp', 0);
    for (let i = 0; i < this.userBroken; i++) add('user', 0);
    for (let i = 0; i < batch.length; i += 16)
      await Promise.all(batch.slice(i, i + 16).map((b) => r.deliver(b)));
    // Checked at once, before later commands move time or add more swaps of this LP.
    await new QueryLp(this.lp, null).run(m, r);
  }
  toString = () =>
    `verdicts(${LPS[this.lp]}: ${this.decided} decided, ${this.normal} normal @${this.response}s${this.firstDelta >= 0 ? '+' : ''}${this.firstDelta}, ${this.userBroken} user-broken, now${this.offset >= 0 ? '+' : ''}${this.offset})`;
}

class DeliveredAgain implements Command {
  constructor(readonly pick: number) {}
  check = () => true;
  async run(_m: Model, r: Real) {
    if (r.delivered.length === 0) return;
    await r.deliver(r.delivered[this.pick % r.delivered.length]!);
  }
  toString = () => `again(${this.pick})`;
}

class KycChanges implements Command {
  constructor(
    readonly index: number,
    readonly verified: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const address = USERS[this.index]!;
    m.kycTruth.set(address, this.verified);
    await r.standIn.setVerified(address, this.verified);
  }
  toString = () => `kyc(${this.index} → ${this.verified})`;
}

class TimeMoves implements Command {
  constructor(readonly seconds: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    m.now += this.seconds;
    r.clock.now = m.now;
  }
  toString = () => `time(+${this.seconds})`;
}

class QueryUser implements Command {
  constructor(
    readonly index: number,
    readonly atOffset: number | null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const address = USERS[this.index]!;
    const at = this.atOffset === null ? undefined : m.now + this.atOffset;
    const expected = modelUserScore(m, address, at ?? m.now);
    for (const queries of [r.queries, r.sqlQueries]) {
      const answer = await queries.userPoint({ address, at });
      expect({ score: answer.score_tenths, basis: answer.basis.tenths }).toEqual(expected);
      expect(answer.score).toBe(`${Math.floor(expected.score / 10)}.${expected.score % 10}`);
    }
  }
  toString = () =>
    `user?(${this.index}${this.atOffset === null ? '' : `, at now${this.atOffset >= 0 ? '+' : ''}${this.atOffset}`})`;
}

class QueryLp implements Command {
  constructor(
    readonly lp: number,
    readonly atOffset: number | null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const lpId = LPS[this.lp]!;
    const at = this.atOffset === null ? undefined : m.now + this.atOffset;
    const expected = modelLpScore(m, lpId, at ?? m.now);
    for (const queries of [r.queries, r.sqlQueries]) {
      const answer = await queries.lpPoint({ lp_id: lpId, at });
      expect({ score: answer.score_tenths, basis: answer.basis.tenths }).toEqual(expected);
    }
  }
  toString = () =>
    `lp?(${LPS[this.lp]}${this.atOffset === null ? '' : `, at now${this.atOffset >= 0 ? '+' : ''}${this.atOffset}`})`;
}

/** Sizes on both sides of every boundary: swaps 720/150/30/6/2, rates 99/95/90/80/60 %, times 1 min … 24 h. */
const boundaryBatch = fc
  .record({
    row: fc.integer({ min: 0, max: SPEC_TIERS.length - 1 }),
    otherLp: fc.nat(LPS.length - 1),
    mix: fc.boolean(),
    swapsSide: fc.constantFrom(-1, 0),
    rateSide: fc.constantFrom(-1, 0),
    timeSide: fc.constantFrom(-1, 0),
    firstDelta: fc.constantFrom(-1, 0, 1),
    userBroken: fc.integer({ min: 0, max: 2 }),
    offset: fc.oneof({ arbitrary: fc.constant(0), weight: 3 }, { arbitrary: offsetArb, weight: 1 }),
  })
  .map(({ row, otherLp, mix, swapsSide, rateSide, timeSide, firstDelta, userBroken, offset }) => {
    const [, minSwaps, percent, below] = SPEC_TIERS[row]!;
    const decided = minSwaps + swapsSide;
    const leastNormal = Math.ceil((percent * decided) / 100);
    const normal = Math.max(0, Math.min(decided, leastNormal + rateSide));
    // Half the time the row's own LP, else any LP, so batches also add up.
    const lp = mix ? otherLp : row;
    return new VerdictsArrive(lp, decided, normal, below + timeSide, firstDelta, userBroken, offset);
  });

const commands = [
  fc
    .tuple(fc.constantFrom<'user' | 'lp'>('user', 'lp'), fc.nat(5), offsetArb)
    .map(([p, i, o]) => new ViolationArrives(p, i, o)),
  boundaryBatch,
  fc
    .tuple(
      fc.nat(USERS.length - 1),
      fc.constantFrom(19, 20, 21, 49, 50, 51),
      fc.oneof(fc.constant(0), offsetArb),
    )
    .map(([i, n, o]) => new ViolationBurst(i, n, o)),
  fc.nat(50).map((n) => new DeliveredAgain(n)),
  fc.tuple(fc.nat(USERS.length - 1), fc.boolean()).map(([i, v]) => new KycChanges(i, v)),
  fc
    .oneof(
      fc.constantFrom(1, W - 1, W, REFRESH_MS / 1000 - 1, REFRESH_MS / 1000),
      fc.integer({ min: 1, max: 30 * DAY }),
    )
    .map((s) => new TimeMoves(s)),
  fc.tuple(fc.nat(USERS.length - 1), fc.option(offsetArb)).map(([i, o]) => new QueryUser(i, o)),
  fc.tuple(fc.nat(LPS.length - 1), fc.option(offsetArb)).map(([i, o]) => new QueryLp(i, o)),
];

describe('points against a naive reference model', () => {
  let db: TestDatabase;
  let standIn: RelayAdminStandIn;

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    standIn = await startRelayAdminStandIn();
  });
  afterAll(async () => {
    await standIn?.close();
    await db?.drop();
  });

  it('scores every user and LP as the model does, after any sequence of events, KYC changes and time', async () => {
    const store = new PointsStore(db.pool);
    // Scores come through the in-process score cache, which the consumer tells what changed.
    let cache = new FactsCache(store);
    const handler = pointsBatchHandler({
      pool: db.pool,
      store,
      consumer: 'points-model',
      onChanged: (subjects) => subjects.forEach((key) => cache.invalidateSubject(key)),
    });
    const context: HandlerContext = {
      attempt: 1,
      lastAttempt: false,
      signal: new AbortController().signal,
      commitIn: async () => undefined,
    };
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 20 }), async (cmds) => {
        await db.pool.query(
          'TRUNCATE points_deductions, points_verdicts, points_lp_swaps, points_complaints, processed_events',
        );
        for (const address of USERS) await standIn.setVerified(address, false);
        cache = new FactsCache(store);
        cache.setListening(true);
        const clock = { now: START };
        const delivered: BusMessage[] = [];
        // One set of KYC / DID caches for both query paths, as in one process.
        const lookups = {
          windowDays: WINDOW_DAYS,
          kyc: new CachedLookup({
            name: 'kyc',
            fetch: fetchKyc(standIn.url),
            refreshIntervalMs: REFRESH_MS,
            timeoutMs: 2_000,
            clock: () => clock.now * 1000,
          }),
          didNames: new CachedLookup({
            name: 'did',
            fetch: async () => [] as string[],
            refreshIntervalMs: REFRESH_MS,
            timeoutMs: 2_000,
          }),
          didOwner: new CachedLookup({
            name: 'did',
            fetch: async () => null,
            refreshIntervalMs: REFRESH_MS,
            timeoutMs: 2_000,
          }),
          nowSeconds: () => clock.now,
        };
        const real: Real = {
          async deliver(m) {
            delivered.push(m);
            await handler([m], context);
          },
          delivered,
          standIn,
          clock,
          nextBid: 1,
          queries: new PointsQueries({ ...lookups, store, figures: cache }),
          sqlQueries: new PointsQueries({ ...lookups, store }),
        };
        const model: Model = {
          now: START,
          violations: [],
          swaps: [],
          kycTruth: new Map(),
          kycSeen: new Map(),
        };
        await fc.asyncModelRun(() => ({ model, real }), cmds);
        // Whatever happened, every subject is checked at the end too.
        for (let i = 0; i < USERS.length; i++) await new QueryUser(i, null).run(model, real);
        for (let i = 0; i < LPS.length; i++) await new QueryLp(i, null).run(model, real);
      }),
      { numRuns: Number(process.env.POINTS_MODEL_RUNS ?? 80) },
    );
  });
});

describe('every LP tier boundary, on both sides, through the real projection', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('gives the row exactly at its boundary, and less one step off on any criterion', async () => {
    const store = new PointsStore(db.pool);
    const cache = new FactsCache(store);
    cache.setListening(true);
    const handler = pointsBatchHandler({
      pool: db.pool,
      store,
      consumer: 'points-sweep',
      onChanged: (subjects) => subjects.forEach((key) => cache.invalidateSubject(key)),
    });
    const context: HandlerContext = {
      attempt: 1,
      lastAttempt: false,
      signal: new AbortController().signal,
      commitIn: async () => undefined,
    };
    const lookups = {
      windowDays: WINDOW_DAYS,
      kyc: new CachedLookup({
        name: 'kyc',
        fetch: async () => false,
        refreshIntervalMs: REFRESH_MS,
        timeoutMs: 1_000,
      }),
      didNames: new CachedLookup({
        name: 'did',
        fetch: async () => [] as string[],
        refreshIntervalMs: REFRESH_MS,
        timeoutMs: 1_000,
      }),
      didOwner: new CachedLookup({
        name: 'did',
        fetch: async () => null,
        refreshIntervalMs: REFRESH_MS,
        timeoutMs: 1_000,
      }),
      nowSeconds: () => START,
    };
    const paths = [
      new PointsQueries({ ...lookups, store, figures: cache }),
      new PointsQueries({ ...lookups, store }),
    ];
    let bid = 1;
    for (const [row, [basis, minSwaps, percent, below]] of SPEC_TIERS.entries()) {
      const least = (decided: number) => Math.ceil((percent * decided) / 100);
      const variants = {
        exact: { decided: minSwaps, normal: least(minSwaps), sumOff: -1, expectRow: true },
        'one swap fewer': {
          decided: minSwaps - 1,
          normal: least(minSwaps - 1),
          sumOff: -1,
          expectRow: false,
        },
        'one normal swap fewer': {
          decided: minSwaps,
          normal: least(minSwaps) - 1,
          sumOff: -1,
          expectRow: false,
        },
        'average exactly at the limit': {
          decided: minSwaps,
          normal: least(minSwaps),
          sumOff: 0,
          expectRow: false,
        },
      };
      for (const [name, v] of Object.entries(variants)) {
        const lpId = `sweep-${row}-${name.replace(/ /g, '-')}`;
        const swaps: ModelSwap[] = [];
        const messages: BusMessage[] = [];
        for (let i = 0; i < v.decided; i++) {
          const normal = i < v.normal;
          // All at `below` seconds, the first one adjusted: the sum is below·n + sumOff.
          const response = normal ? below + (i === 0 ? v.sumOff : 0) : 0;
          swaps.push({ lpId, blockTime: START, kind: normal ? 'normal' : 'lp', response });
          const id = hex32(bid++, 31);
          const verdict = normal
            ? verdictPayload({
                bid: id,
                lpId,
                outcome: 'normal',
                blockTime: START,
                responseTimeSeconds: response,
              })
            : verdictPayload({ bid: id, lpId, outcome: 'violation', party: 'lp', case: 6, blockTime: START });
          messages.push(message(swapVerdicts, verdict, verdictId(id)));
        }
        // Batches of 16 (one transaction each), every other one split into concurrent single messages.
        for (let i = 0; i < messages.length; i += 16) {
          const batch = messages.slice(i, i + 16);
          if ((i / 16) % 2 === 0) await handler(batch, context);
          else await Promise.all(batch.map((m) => handler([m], context)));
        }
        const model: Model = { now: START, violations: [], swaps, kycTruth: new Map(), kycSeen: new Map() };
        const expected = modelLpScore(model, lpId, START);
        if (v.expectRow) expect(expected.basis, `${lpId}: the model`).toBe(basis);
        else expect(expected.basis, `${lpId}: the model`).toBeLessThan(basis);
        for (const queries of paths) {
          const answer = await queries.lpPoint({ lp_id: lpId });
          expect({ lpId, basis: answer.basis.tenths }).toEqual({ lpId, basis: expected.basis });
        }
      }
    }
  });
});
