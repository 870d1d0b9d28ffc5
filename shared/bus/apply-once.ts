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
  ledger?: ProcessedInMemory,
): Promise<ReadonlySet<string>> {
  // With a ledger the ids are taken before the transaction and given back if it fails; without, they are
  // rows of the transaction itself.
  const taken = ledger?.take(eventIds);
  try {
    return await withTransaction(pool, async (tx) => {
      const fresh = taken ?? (await recordProcessed(tx, consumer, eventIds));
      if (fresh.size > 0) await effect(tx, fresh);
      await context.commitIn(tx);
      return fresh;
    });
  } catch (err) {
    if (taken) ledger!.release(taken);
    throw err;
  }
}

/**
 * applyOnceBatch's record of applied ids kept in memory instead of processed_events, for a rebuild: one
 * process writing fresh tables under a fresh group from the first offset to the last, which is started over
 * when it fails and never resumed, so its ids need not outlive it (at 50,000 swaps they were 137,401 logged
 * rows, written and deleted again). An id is taken when its batch starts, so a concurrent batch of another
 * partition finds it taken as it would find the row, and given back when the batch's transaction fails, so
 * the redelivered messages apply again.
 */
export class ProcessedInMemory {
  private readonly ids = new Set<string>();

  /** The ids not taken before (duplicates within `eventIds` count once), now taken. */
  take(eventIds: readonly string[]): Set<string> {
    const fresh = new Set<string>();
    for (const id of eventIds) {
      if (this.ids.has(id)) continue;
      this.ids.add(id);
      fresh.add(id);
    }
    return fresh;
  }

  release(eventIds: Iterable<string>): void {
    for (const id of eventIds) this.ids.delete(id);
  }

  get size(): number {
    return this.ids.size;
  }
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
