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
   * Moves the height from `expected` to `next` inside `tx`, recording `lastEventId` when the chunk published
   * events. Returns the stream's last published event id (null: none ever), or false when another writer
   * moved the height first.
   */
  async advance(
    tx: PoolClient,
    chainId: string,
    stream: Stream,
    expected: number,
    next: number,
    lastEventId: string | null,
  ): Promise<{ lastEventId: string | null } | false> {
    const result = await tx.query<{ last_event_id: string | null }>(
      `UPDATE connector_heights SET height = $4, last_event_id = COALESCE($5, last_event_id), updated_at = now()
        WHERE chain_id = $1 AND stream = $2 AND height = $3
        RETURNING last_event_id`,
      [chainId, stream, expected, next, lastEventId],
    );
    return result.rows[0] ? { lastEventId: result.rows[0].last_event_id } : false;
  }
}

/** First block of the chunk a chain client reports as `height` (chunks end at multiples of 5). */
export function chunkStart(height: number): number {
  return height === 0 ? 0 : Math.floor((height - 1) / 5) * 5 + 1;
}
