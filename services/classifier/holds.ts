/**
 * The operator's view of the chain events the Classifier dead-lettered and never applied (tables.ts
 * missingEventsDdl): each holds its chain stream's clock, so the swaps of that chain wait. The cure is to fix
 * what failed and redrive (npm run dead-letters -- redrive chain.events); one that can never apply is released
 * here, and the Classifier's next batch lets the clock pass it. Swaps it belonged to are then judged without it.
 */
import type { Queryable } from '../../shared/db/pool.js';
import type { ClassifierTables } from './tables.js';

export interface MissingEventRow {
  chainId: string;
  stream: string;
  eventId: string;
  block: number;
  error: string;
  released: boolean;
  deadLetteredAt: string;
}

export async function listMissingEvents(db: Queryable, tables: ClassifierTables): Promise<MissingEventRow[]> {
  const { rows } = await db.query<{
    chain_id: string;
    stream: string;
    event_id: string;
    block_number: string;
    error: string;
    released: boolean;
    dead_lettered_at: Date;
  }>(
    `SELECT chain_id, stream, event_id, block_number, error, released, dead_lettered_at
       FROM ${tables.missingEvents} ORDER BY dead_lettered_at, chain_id, stream`,
  );
  return rows.map((r) => ({
    chainId: r.chain_id,
    stream: r.stream,
    eventId: r.event_id,
    block: Number(r.block_number),
    error: r.error,
    released: r.released,
    deadLetteredAt: r.dead_lettered_at.toISOString(),
  }));
}

/** Marks `eventId` released (every stream it holds); the number of rows it named (0: not held). */
export async function releaseMissingEvent(
  db: Queryable,
  tables: ClassifierTables,
  eventId: string,
): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE ${tables.missingEvents} SET released = true WHERE event_id = $1`,
    [eventId],
  );
  return rowCount ?? 0;
}
