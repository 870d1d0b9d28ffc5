/**
 * Strings PostgreSQL cannot keep as they came. A lone UTF-16 surrogate (JSON text may escape one, "\ud800";
 * jsonb refuses it) in a complaint's strings got the message retried, then dead-lettered, and the complaint was
 * never shown: it is stored with U+FFFD in its place (withoutNul in projection.ts), as U+0000 is stored escaped.
 * An LP id (the LP's own DID name) over the 2,704 bytes an index row holds failed every insert: the LP's
 * verdicts and violations were dead-lettered and it escaped every deduction. It is stored shortened, with its
 * digest (storedLpId), and found by its full id.
 */
import type { ChainEvent } from '../../topics/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseForSuite } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import { MAX_STORED_LP_ID_BYTES, storedLpId } from './projection.js';
import {
  complaintEvent,
  hex32,
  pointTestConfig,
  publishChainEvent,
  publishVerdict,
  publishViolation,
  startTestPoints,
  verdictPayload,
  violationPayload,
} from './test-harness.js';

const NOW = 1_800_000_000;

describe('points: a lone surrogate in a complaint', () => {
  const db = databaseForSuite([pointsMigrations]);
  let points: Awaited<ReturnType<typeof startTestPoints>>;
  beforeAll(async () => {
    points = await startTestPoints(db, pointTestConfig(), { nowSeconds: () => NOW });
  });
  afterAll(async () => {
    await points?.close();
  });

  it('is kept with U+FFFD in its place, not dead-lettered', async () => {
    const complaint = {
      ...complaintEvent({ bid: hex32(2), blockTime: NOW - 50, agreementReachedTime: NOW - 1000 }),
      complainant: 'alice\ud800.example',
    } as ChainEvent;
    await publishChainEvent(points.bus, complaint);
    await waitFor(
      async () =>
        (await points.bus.lag('points', ['chain.events'])).every((p) => p.lag === 0n) &&
        (await points.get(`/complaint?bid=${hex32(2)}`)).status !== 404,
      'the complaint applied',
      10_000,
    ).catch(async (err) => {
      const dead = await db.pool.query(`SELECT headers FROM bus_messages WHERE topic LIKE '%.dlq'`);
      throw new Error(`${(err as Error).message}; dead letters: ${JSON.stringify(dead.rows)}`);
    });
    const answer = await points.get(`/complaint?bid=${hex32(2)}`);
    expect(answer.status).toBe(200);
    expect(JSON.stringify(answer.body)).toContain('alice\ufffd.example');
    const dead = await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic = 'chain.events.dlq'`);
    expect(dead.rowCount).toBe(0);
  });

  // 900 distinct CJK characters: 2,700 bytes of UTF-8 that compression cannot shrink.
  const longLpId = Array.from({ length: 900 }, (_, i) =>
    String.fromCharCode(0x4e00 + ((i * 7919) % 20000)),
  ).join('');

  it('an LP id over the index row limit is stored shortened with its digest, and found by its full id', async () => {
    await publishVerdict(
      points.bus,
      verdictPayload({
        bid: hex32(11),
        lpId: longLpId,
        outcome: 'violation',
        party: 'lp',
        case: 3,
        blockTime: NOW - 100,
      }),
    );
    await publishViolation(
      points.bus,
      violationPayload({ bid: hex32(11), party: 'lp', subject: longLpId, blockTime: NOW - 100 }),
    );
    await waitFor(
      async () =>
        (await points.bus.lag('points', ['violations', 'swap.verdicts'])).every((p) => p.lag === 0n) &&
        (await points.get(`/complaint?bid=${hex32(11)}`)).status === 200,
      'the verdict applied',
      10_000,
    );
    const lp = await points.get(`/lp-point?lp_id=${encodeURIComponent(longLpId)}`);
    expect(lp.status).toBe(200);
    expect(lp.body.subject.lp_id).toBe(storedLpId(longLpId));
    expect(lp.body.deductions.violations).toBe(1);
    const records = await points.get(`/lp-deduction-records?lp_id=${encodeURIComponent(longLpId)}`);
    expect(records.body.records).toHaveLength(1);
    const dead = await db.pool.query(`SELECT 1 FROM bus_messages WHERE topic LIKE '%.dlq'`);
    expect(dead.rowCount).toBe(0);
  });

  it('storedLpId: as it is up to the limit; past it, whole characters, its digest, distinct ids stay distinct', () => {
    const atLimit = 'x'.repeat(MAX_STORED_LP_ID_BYTES);
    expect(storedLpId(atLimit)).toBe(atLimit);
    const stored = storedLpId(longLpId);
    expect(Buffer.byteLength(stored)).toBeLessThanOrEqual(MAX_STORED_LP_ID_BYTES);
    expect(stored.startsWith(longLpId.slice(0, 300))).toBe(true); // 3 bytes a character: 300 whole ones
    expect(stored).not.toContain('\ufffd');
    expect(storedLpId(longLpId + 'x')).not.toBe(stored);
    expect(storedLpId(stored)).toBe(stored); // a stored id is looked up as it is
  });
});
