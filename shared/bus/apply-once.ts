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
