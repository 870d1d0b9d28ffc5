import type { Pool, PoolClient } from '../../shared/db/pool.js';

export type Stream = 'swap' | 'reputation';
export const STREAMS: readonly Stream[] = ['swap', 'reputation'];

/** Stored processed heights. The first start writes `initBlockHeight`; later starts load what is stored. */
export class HeightStore {
  constructor(private readonly pool: Pool) {}

  async init(chainId: string, stream: Stream, initBlockHeight: number): Promise<number> {
    await this.pool.query(
      'INSERT INTO connector_heights (chain_id, stream, height) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
      [chainId, stream, initBlockHeight],
    );
    return this.get(chainId, stream);
  }

  async get(chainId: string, stream: Stream): Promise<number> {
    const { rows } = await this.pool.query<{ height: string }>(
      'SELECT height FROM connector_heights WHERE chain_id = $1 AND stream = $2',
      [chainId, stream],
    );
    if (!rows[0]) throw new Error(`no stored height for chain ${chainId} (${stream})`);
    return Number(rows[0].height);
  }

  /**
   * The stored height and, in the same round trip, the held single events of blocks up to `upTo` (their
   * bodies, in block order) that the chunk ending there may have to take along.
   */
  async chunkState(
    chainId: string,
    stream: Stream,
    upTo: number,
  ): Promise<{ height: number; pending: unknown[] }> {
    const { rows } = await this.pool.query<{ height: string; pending: unknown[] | null }>(
      `SELECT h.height,
              (SELECT json_agg(p.body ORDER BY p.block_number) FROM connector_pending_events p
                WHERE p.chain_id = h.chain_id AND p.stream = h.stream AND p.block_number <= $3) AS pending
         FROM connector_heights h WHERE h.chain_id = $1 AND h.stream = $2`,
      [chainId, stream, upTo],
    );
    if (!rows[0]) throw new Error(`no stored height for chain ${chainId} (${stream})`);
    return { height: Number(rows[0].height), pending: rows[0].pending ?? [] };
  }

  /**
   * Moves the height from `expected` to `next` inside `tx`, recording `lastEventId` when the chunk published
   * events, and (only if it moved) removes the held single events of blocks up to `next` when
   * `dropPending`: one statement. Returns the stream's last published event id (null: none ever), or false
   * when another writer moved the height first.
   */
  async advance(
    tx: PoolClient,
    chainId: string,
    stream: Stream,
    expected: number,
    next: number,
    lastEventId: string | null,
    dropPending = false,
  ): Promise<{ lastEventId: string | null } | false> {
    const result = await tx.query<{ last_event_id: string | null }>(
      `WITH moved AS (
         UPDATE connector_heights SET height = $4, last_event_id = COALESCE($5, last_event_id), updated_at = now()
          WHERE chain_id = $1 AND stream = $2 AND height = $3
          RETURNING last_event_id
       ), dropped AS (
         DELETE FROM connector_pending_events
          WHERE $6 AND chain_id = $1 AND stream = $2 AND block_number <= $4 AND EXISTS (SELECT 1 FROM moved)
       )
       SELECT last_event_id FROM moved`,
      [chainId, stream, expected, next, lastEventId, dropPending],
    );
    return result.rows[0] ? { lastEventId: result.rows[0].last_event_id } : false;
  }
}

/** First block of the chunk a chain client reports as `height` (chunks end at multiples of 5). */
export function chunkStart(height: number): number {
  return height === 0 ? 0 : Math.floor((height - 1) / 5) * 5 + 1;
}
