import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventBus } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import { replayPoints } from './replay.js';
import {
  complaintEvent,
  hex32,
  pointTestConfig,
  publishChainEvent,
  publishVerdict,
  publishViolation,
  startTestPoints,
  userAddress,
  verdictPayload,
  violationPayload,
} from './test-harness.js';

const NOW = 1_800_000_000;

/** Waits until the live Points consumer has handled everything published. */
const caughtUp = (bus: EventBus) =>
  waitFor(
    async () =>
      (await bus.lag('points', ['violations', 'swap.verdicts', 'chain.events'])).every((p) => p.lag === 0n),
    'the live consumer to catch up',
  );

describe('npm run replay -- points', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const run = () =>
    replayPoints({
      log: createLogger({ level: 'silent' }),
      db: db.pool,
      bus: points.bus,
      keep: false,
      timeoutMs: 30_000,
    });

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig());
    for (let i = 0; i < 20; i++) {
      await publishViolation(
        points.bus,
        violationPayload({
          bid: hex32(i),
          party: i % 3 ? 'user' : 'lp',
          subject: i % 3 ? userAddress(i % 4) : 'lp-1',
          blockTime: NOW - i * 1000,
        }),
      );
      await publishVerdict(
        points.bus,
        verdictPayload({
          bid: hex32(100 + i),
          lpId: `lp-${i % 2}`,
          outcome: i % 4 ? 'normal' : 'violation',
          party: i % 4 ? null : 'lp',
          blockTime: NOW - i,
        }),
      );
    }
    await publishChainEvent(
      points.bus,
      complaintEvent({ bid: hex32(200), blockTime: NOW, agreementReachedTime: NOW - 100 }),
    );
    await points.bus.publish('swap.verdicts', [{ key: 'k', value: 'not json' }]);
    await caughtUp(points.bus);
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('rebuilds the same tables from the topics, and says so', async () => {
    const report = await run();
    expect(report.identical).toBe(true);
    expect(report.lines).toContain('  points_deductions: identical (20 rows)');
    expect(report.lines).toContain('  points_lp_swaps: identical (20 rows)');
    expect(report.lines).toContain('  points_complaints: identical (1 rows)');
    expect(report.lines.join('\n')).toMatch(/1 malformed message\(s\) skipped/);
    expect(Object.keys(report.phases)).toEqual(['setup', 'consume', 'compare', 'cleanup']);
    expect(report.phases.consume).toBeGreaterThan(0);
    // Nothing left behind: no schema, no dedupe rows, and the poison message was not dead-lettered twice.
    const schemas = await db.pool.query(
      `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'points_replay_%'`,
    );
    expect(schemas.rows).toEqual([]);
    const dedupe = await db.pool.query(
      `SELECT count(*)::int AS n FROM processed_events WHERE consumer LIKE 'points-replay-%'`,
    );
    expect(dedupe.rows[0].n).toBe(0);
    const dlq = await db.pool.query(
      `SELECT count(*)::int AS n FROM bus_messages WHERE topic = 'swap.verdicts.dlq'`,
    );
    expect(dlq.rows[0].n).toBe(1);
  });

  it("compares at the live consumer's position while it keeps handling new messages", async () => {
    // Verdicts and violations keep coming while the replay runs and compares (a deployment at work).
    let publishing = true;
    let n = 0;
    const traffic = (async () => {
      while (publishing) {
        n++;
        await publishVerdict(
          points.bus,
          verdictPayload({
            bid: hex32(1_000 + n),
            lpId: 'lp-1',
            outcome: 'normal',
            party: null,
            blockTime: NOW,
          }),
        );
        await publishViolation(
          points.bus,
          violationPayload({ bid: hex32(5_000 + n), party: 'lp', subject: 'lp-1', blockTime: NOW - n }),
        );
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    try {
      await waitFor(() => n >= 5, 'traffic');
      const report = await run();
      expect(report.identical, report.lines.join('\n')).toBe(true);
      expect(report.lines.join('\n')).not.toMatch(/note:/);
      expect(n).toBeGreaterThan(10);
    } finally {
      publishing = false;
      await traffic;
    }
    await caughtUp(points.bus);
  });

  it('reports a live table that differs from its rebuild, naming the rows', async () => {
    await db.pool.query('DELETE FROM points_deductions WHERE bid_id = $1', [hex32(3)]);
    await db.pool.query('UPDATE points_lp_swaps SET block_time = block_time + 1 WHERE bid_id = $1', [
      hex32(105),
    ]);
    const report = await run();
    expect(report.identical).toBe(false);
    const text = report.lines.join('\n');
    expect(text).toMatch(
      /points_deductions: DIFFERENT: 0 live row\(s\) not rebuilt, 1 rebuilt row\(s\) not live/,
    );
    expect(text).toContain(`rebuilt only: bid_id = ${hex32(3)}`);
    expect(text).toMatch(
      /points_lp_swaps: DIFFERENT: 1 live row\(s\) not rebuilt, 1 rebuilt row\(s\) not live/,
    );
    expect(text).toContain(`live only: bid_id = ${hex32(105)}`);
    expect(text).toContain('points_verdicts: identical');
  });
});

describe('a NUL character in an on-chain string (PostgreSQL text and jsonb cannot hold it)', () => {
  let db: TestDatabase;
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  const LP = 'lp\u0000x';
  const STORED = 'lp\\u0000x'; // the six characters \u0000 stand in for it

  beforeAll(async () => {
    db = await createTestDatabase([pointsMigrations]);
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
    // Any DID owner can submit a complaint with such a struct string; the verdict carries it on. (A violation
    // of such an LP is keyed by it, which the postgres log cannot hold: consumer.test.ts decodes one.)
    const base = complaintEvent({ bid: hex32(1), blockTime: NOW - 50, agreementReachedTime: NOW - 100 });
    if (base.kind !== 'Complaint') throw new Error('not a complaint');
    const complaint = { ...base, complaint: { ...base.complaint, lpId: LP } };
    await publishChainEvent(points.bus, complaint);
    const verdict = verdictPayload({
      bid: hex32(1),
      lpId: LP,
      outcome: 'violation',
      party: 'lp',
      case: 3,
      blockTime: NOW - 10,
    });
    verdict.complaint = {
      complainant: 'alice.example',
      complainantParty: 'user',
      valid: true,
      invalidReason: null,
      fields: { lpId: LP },
    };
    await publishVerdict(points.bus, verdict);
    await caughtUp(points.bus);
  });
  afterAll(async () => {
    await points?.close();
    await db?.drop();
  });

  it('stores it as \\u0000, dead-letters nothing, answers for it, and replays it identically', async () => {
    const dlq = await db.pool.query(`SELECT count(*)::int AS n FROM bus_messages WHERE topic LIKE '%.dlq'`);
    expect(dlq.rows[0].n).toBe(0);
    const complaint = await points.get(`/complaint?bid=${hex32(1)}`);
    expect(complaint.body.complaints_on_chain[0].fields.lpId).toBe(STORED);
    expect(complaint.body.verdict.lp_id).toBe(STORED);
    const lp = await points.get(`/lp-point?lp_id=${encodeURIComponent(STORED)}`);
    expect(lp.body).toMatchObject({ statistics: { decided_swaps: 1 } });

    const report = await replayPoints({
      log: createLogger({ level: 'silent' }),
      db: db.pool,
      bus: points.bus,
      keep: false,
      timeoutMs: 30_000,
    });
    expect(report.identical).toBe(true);
    expect(report.lines.join('\n')).not.toMatch(/malformed/);
  });
});
