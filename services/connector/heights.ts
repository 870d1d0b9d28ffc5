import type { Pool, PoolClient } from '../../shared/db/pool.js';
import { Statement } from '../../shared/db/statement.js';

export type Stream = 'swap' | 'reputation';
/** Every stream there is; a chain has those of streamsOf. */
export const STREAMS: readonly Stream[] = ['swap', 'reputation'];

/**
 * The streams the Connector follows for a chain: swap, and reputation only when its chainClients entry names a
 * reputation contract. A chain without one has no complaints to follow, and a chain client without one reads
 * none: its heights would move the stream past complaints nobody read. The Classifier follows the same.
 */
export function streamsOf(chain: { reputation?: string }): readonly Stream[] {
  return chain.reputation === undefined ? ['swap'] : STREAMS;
}

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
   * The stored height and last published event id, the live start marks (see markLiveStart) and, in the same
   * round trip, the held single events of blocks up to `upTo` (their bodies, in block order, those of one
   * block newest first) that the chunk ending there may have to take along.
   */
  async chunkState(
    chainId: string,
    stream: Stream,
    upTo: number,
  ): Promise<{
    height: number;
    lastEventId: string | null;
    pending: unknown[];
    pendingIds: string[];
    liveStart: string[];
  }> {
    const { rows } = await this.pool.query<{
      height: string;
      last_event_id: string | null;
      live_start: string[];
      pending: Array<{ id: string; body: unknown }> | null;
    }>(
      `SELECT h.height, h.last_event_id, h.live_start,
              (SELECT json_agg(json_build_object('id', p.event_id, 'body', p.body)
                               ORDER BY p.block_number, p.received_at DESC, p.event_id) FROM connector_pending_events p
                WHERE p.chain_id = h.chain_id AND p.stream = h.stream AND p.block_number <= $3) AS pending
         FROM connector_heights h WHERE h.chain_id = $1 AND h.stream = $2`,
      [chainId, stream, upTo],
    );
    if (!rows[0]) throw new Error(`no stored height for chain ${chainId} (${stream})`);
    const pending = rows[0].pending ?? [];
    return {
      height: Number(rows[0].height),
      lastEventId: rows[0].last_event_id,
      pending: pending.map((p) => p.body),
      pendingIds: pending.map((p) => p.id),
      liveStart: rows[0].live_start,
    };
  }

  /**
   * Marks the stream's next live chunk as possibly partial for `owner` (one Connector process), before its
   * registration is sent: a chain client that takes it as new restarts its live delivery mid-chunk. In the
   * database, so the mark holds whichever process that chunk reaches. Returns whether `owner`'s mark was
   * there already (an earlier registration of this process whose first chunk is still awaited).
   */
  async markLiveStart(chainId: string, stream: Stream, owner: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ pending: boolean }>(
      `WITH h AS (SELECT live_start FROM connector_heights WHERE chain_id = $1 AND stream = $2),
            marked AS (
              UPDATE connector_heights SET live_start = array_append(live_start, $3)
               WHERE chain_id = $1 AND stream = $2 AND NOT ($3 = ANY(live_start)))
       SELECT $3 = ANY(live_start) AS pending FROM h`,
      [chainId, stream, owner],
    );
    if (!rows[0]) throw new Error(`no stored height for chain ${chainId} (${stream})`);
    return rows[0].pending;
  }

  /** Takes back `owner`'s live start mark (its registration was already there); others' stay. */
  async unmarkLiveStart(chainId: string, stream: Stream, owner: string): Promise<void> {
    await this.pool.query(
      `UPDATE connector_heights SET live_start = array_remove(live_start, $3)
        WHERE chain_id = $1 AND stream = $2 AND $3 = ANY(live_start)`,
      [chainId, stream, owner],
    );
  }

  /**
   * A live chunk read the marks `read` and is asked through history: they are consumed. Marks set since the
   * read (a registration sent meanwhile) stay, for the chunk after it.
   */
  async consumeLiveStart(chainId: string, stream: Stream, read: readonly string[]): Promise<void> {
    await this.pool.query(
      `UPDATE connector_heights SET live_start = ARRAY(SELECT m FROM unnest(live_start) m WHERE m <> ALL($3::text[]))
        WHERE chain_id = $1 AND stream = $2 AND live_start && $3::text[]`,
      [chainId, stream, [...read]],
    );
  }

  /**
   * Holds a single event of a block above the stored height, read under a lock on the height's row (it waits
   * for a chunk write in flight, and reads the height that write left). Returns the stored height: when it is
   * at or above the event's block, nothing was held (another process's chunk went past the block meanwhile,
   * and the caller publishes the event late). A repeat of the same body changes nothing.
   */
  async hold(
    chainId: string,
    stream: Stream,
    eventId: string,
    block: number,
    body: unknown,
  ): Promise<number> {
    const { rows } = await this.pool.query<{ height: string }>(
      `WITH h AS (SELECT height FROM connector_heights WHERE chain_id = $1 AND stream = $2 FOR SHARE),
            held AS (
              INSERT INTO connector_pending_events (chain_id, stream, event_id, block_number, body)
              SELECT $1, $2, $3, $4, $5::json FROM h WHERE h.height < $4
              ON CONFLICT (chain_id, stream, event_id) DO UPDATE
                 SET body = EXCLUDED.body, block_number = EXCLUDED.block_number, received_at = now()
               WHERE connector_pending_events.body::text IS DISTINCT FROM EXCLUDED.body::text)
       SELECT height FROM h`,
      [chainId, stream, eventId, block, JSON.stringify(body)],
    );
    if (!rows[0]) throw new Error(`no stored height for chain ${chainId} (${stream})`);
    return Number(rows[0].height);
  }

  /** addLastEvent inside `tx`, unconditionally (the caller decided within the transaction). */
  async setLastEvent(tx: PoolClient, chainId: string, stream: Stream, lastEventId: string): Promise<void> {
    const statement = new Statement();
    addLastEvent(statement, { chainId, stream, lastEventId, guard: 'TRUE' });
    await statement.run(tx);
  }

  /**
   * Moves the height from `expected` to `next` inside `tx`, recording `lastEventId` when the chunk published
   * events, and (only if it moved) removes the held single events of blocks up to `next` when
   * `dropPending`: one statement. Returns the stream's last published event id (null: none ever), or false
   * when another writer moved the height first.
   */
  async advance(
    tx: PoolClient,
    move: HeightMove,
    /** The transaction commits without waiting for the WAL flush (Statement.commitWithoutFlush). */
    commitWithoutFlush = false,
  ): Promise<{ lastEventId: string | null } | false> {
    const statement = new Statement();
    const moved = addAdvance(statement, move);
    if (commitWithoutFlush) statement.commitWithoutFlush();
    statement.output('moved', `(SELECT count(*) FROM ${moved})`);
    statement.output('last_event_id', `(SELECT last_event_id FROM ${moved})`);
    const row = await statement.run<{ moved: string; last_event_id: string | null }>(tx);
    return Number(row.moved) === 1 ? { lastEventId: row.last_event_id } : false;
  }
}

/** A move of a stream's height from `expected` to `next` (addAdvance, HeightStore.advance). */
export interface HeightMove {
  chainId: string;
  stream: Stream;
  expected: number;
  next: number;
  lastEventId: string | null;
  expectedLastEventId?: string | null;
  dropPending: boolean;
  /**
   * Move only if no single event is held for the blocks up to `next` but these (the ones the caller read and
   * publishes; [] when it read none). Another process may hold one after the caller's read: moved past its
   * block without it, the event was published only late. Undefined: not checked.
   */
  heldRead?: readonly string[];
  /**
   * A live chunk: move only while no live start is marked (HeightStore.markLiveStart). The chunk may be the
   * first of a chain client's restarted delivery, covering only the tail of its 5 blocks; the caller, told
   * nothing moved, reads the marks and asks its blocks through history. History and RPC chunks cover their
   * blocks and move regardless.
   */
  live?: boolean;
}

/**
 * Adds the compare-and-set of a stream's height to `statement` (see HeightStore.advance) and returns the
 * name of its CTE, which holds one row when the height moved and none when another writer moved it first.
 * `expectedLastEventId`: also require the stored last event id to be this one (when the caller built
 * messages from it before the statement ran).
 */
export function addAdvance(statement: Statement, a: HeightMove): string {
  const moved = statement.name('height_moved');
  const chain = statement.param(a.chainId, 'text');
  const stream = statement.param(a.stream, 'text');
  const next = statement.param(a.next, 'bigint');
  statement.with(
    moved,
    `UPDATE connector_heights
        SET height = ${next}, last_event_id = COALESCE(${statement.param(a.lastEventId, 'text')}, last_event_id),
            updated_at = now()
      WHERE chain_id = ${chain} AND stream = ${stream} AND height = ${statement.param(a.expected, 'bigint')}
        ${a.live ? `AND cardinality(live_start) = 0` : ''}
        ${a.expectedLastEventId === undefined ? '' : `AND last_event_id IS NOT DISTINCT FROM ${statement.param(a.expectedLastEventId, 'text')}`}
        ${
          a.heldRead === undefined
            ? ''
            : `AND NOT EXISTS (SELECT 1 FROM connector_pending_events
                 WHERE chain_id = ${chain} AND stream = ${stream} AND block_number <= ${next}${
                   a.heldRead.length === 0
                     ? ''
                     : ` AND event_id <> ALL(${statement.param([...a.heldRead], 'text[]')})`
                 })`
        }
      RETURNING last_event_id`,
  );
  if (a.dropPending)
    statement.with(
      statement.name('pending_dropped'),
      `DELETE FROM connector_pending_events
        WHERE chain_id = ${chain} AND stream = ${stream} AND block_number <= ${next}
          AND EXISTS (SELECT 1 FROM ${moved})`,
    );
  return moved;
}

/**
 * Adds the recording of `lastEventId` as a stream's last published event, without moving its height, when
 * `guard` (an SQL condition on the statement's other CTEs) holds: an event published late.
 */
export function addLastEvent(
  statement: Statement,
  a: { chainId: string; stream: Stream; lastEventId: string; guard: string },
): void {
  statement.with(
    statement.name('last_event_set'),
    `UPDATE connector_heights SET last_event_id = ${statement.param(a.lastEventId, 'text')}, updated_at = now()
      WHERE chain_id = ${statement.param(a.chainId, 'text')} AND stream = ${statement.param(a.stream, 'text')}
        AND ${a.guard}`,
  );
}

/** First block of the chunk a chain client reports as `height` (chunks end at multiples of 5). */
export function chunkStart(height: number): number {
  return height === 0 ? 0 : Math.floor((height - 1) / 5) * 5 + 1;
}
