/**
 * Strings PostgreSQL cannot keep as they came: a lone UTF-16 surrogate (JSON text may escape one, "\ud800";
 * jsonb refuses it) in a complaint's strings got the message retried, then dead-lettered, and the complaint was
 * never shown. It is stored with U+FFFD in its place (withoutNul in projection.ts), as U+0000 is stored escaped.
 */
import type { ChainEvent } from '../../topics/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseForSuite } from '../../test/support/database.js';
import { waitFor } from '../../test/support/wait.js';
import { pointsMigrations } from './migrations.js';
import {
  complaintEvent,
  hex32,
  pointTestConfig,
  publishChainEvent,
  startTestPoints,
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
});
