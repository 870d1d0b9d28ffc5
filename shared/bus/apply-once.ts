import { withTransaction, type Pool, type PoolClient } from '../db/pool.js';
import type { HandlerContext } from './port.js';

/**
 * Effects exactly once (DESIGN §4): records `eventId` for `consumer` and runs `effect` in one PostgreSQL
 * transaction, which also carries the offset commit on the postgres log. A redelivered or replayed event
 * finds its id already recorded and changes nothing. Returns whether the effect ran.
 */
export async function applyOnce(
  pool: Pool,
  consumer: string,
  eventId: string,
  context: HandlerContext,
  effect: (tx: PoolClient) => Promise<void>,
): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const inserted = await tx.query(
      'INSERT INTO processed_events (consumer, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [consumer, eventId],
    );
    const fresh = inserted.rowCount === 1;
    if (fresh) await effect(tx);
    await context.commitIn(tx);
    return fresh;
  });
}

/**
 * applyOnce for a batch (one transaction, one statement for the ids): records every id in `eventIds` for
 * `consumer`, runs `effect` with the ids not recorded before (duplicates within the batch count once), and
 * commits the batch's position in the same transaction. Returns the fresh ids.
 */
export async function applyOnceBatch(
  pool: Pool,
  consumer: string,
  eventIds: readonly string[],
  context: HandlerContext,
  effect: (tx: PoolClient, fresh: ReadonlySet<string>) => Promise<void>,
): Promise<ReadonlySet<string>> {
  return withTransaction(pool, async (tx) => {
    const fresh = await recordProcessed(tx, consumer, eventIds);
    if (fresh.size > 0) await effect(tx, fresh);
    await context.commitIn(tx);
    return fresh;
  });
}

/** Records the ids for `consumer` in one statement; returns those that were not recorded before. */
export async function recordProcessed(
  tx: PoolClient,
  consumer: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const { rows } = await tx.query<{ event_id: string }>(
    `INSERT INTO processed_events (consumer, event_id) SELECT $1, id FROM unnest($2::text[]) AS id
     ON CONFLICT DO NOTHING RETURNING event_id`,
    [consumer, [...new Set(eventIds)]],
  );
  return new Set(rows.map((r) => r.event_id));
}
