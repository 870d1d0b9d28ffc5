import type { Queryable } from '../db/pool.js';
import { PartitionFencedError } from './errors.js';

/**
 * A group's position per partition in PostgreSQL (bus_group_offsets): the postgres log's committed offsets and,
 * on Kafka, the authoritative position a consumer seeks to (DESIGN §4). Writing it in the transaction of an
 * effect makes the effect and the position one atomic step.
 */
export interface PartitionRef {
  group: string;
  topic: string;
  partition: number;
}

/** Creates the row at `start` unless one exists (a group's first start: earliest or latest). */
export async function initPosition(db: Queryable, ref: PartitionRef, start: bigint): Promise<void> {
  await db.query(
    `INSERT INTO bus_group_offsets (group_id, topic, partition, next_offset) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [ref.group, ref.topic, ref.partition, start.toString()],
  );
}

export async function loadPosition(db: Queryable, ref: PartitionRef): Promise<bigint | undefined> {
  const { rows } = await db.query<{ next_offset: string }>(
    'SELECT next_offset FROM bus_group_offsets WHERE group_id = $1 AND topic = $2 AND partition = $3',
    [ref.group, ref.topic, ref.partition],
  );
  return rows[0] ? BigInt(rows[0].next_offset) : undefined;
}

/** Every stored position of a group on `topics`, keyed `topic/partition`. */
export async function loadPositions(
  db: Queryable,
  group: string,
  topics: readonly string[],
): Promise<Map<string, bigint>> {
  const { rows } = await db.query<{ topic: string; partition: number; next_offset: string }>(
    'SELECT topic, partition, next_offset FROM bus_group_offsets WHERE group_id = $1 AND topic = ANY($2)',
    [group, topics],
  );
  return new Map(rows.map((r) => [`${r.topic}/${r.partition}`, BigInt(r.next_offset)]));
}

/**
 * Compare-and-set of the position: fails with PartitionFencedError if anyone moved it since it was read
 * (a seek, or another member that took the partition), so the caller's transaction rolls back with it.
 * With `armNext` it also records a try of the batch starting at `next`, as startBatchAttempt would (see
 * BatchTries): the delivery that goes on from there needs no statement of its own to start that batch.
 */
export async function commitPosition(
  db: Queryable,
  ref: PartitionRef,
  expected: bigint,
  next: bigint,
  armNext = false,
): Promise<void> {
  const attempt = armNext
    ? 'attempt_offset = $4, attempts = 1, attempt_batch = true'
    : 'attempt_offset = NULL, attempts = 0, attempt_batch = false';
  const result = await db.query(
    `UPDATE bus_group_offsets SET next_offset = $4, ${attempt}, updated_at = now()
     WHERE group_id = $1 AND topic = $2 AND partition = $3 AND next_offset = $5`,
    [ref.group, ref.topic, ref.partition, next.toString(), expected.toString()],
  );
  if (result.rowCount !== 1) throw new PartitionFencedError(ref.topic, ref.partition);
}

/**
 * Moves the position unconditionally (seek); running members notice at their next commit or check. The attempt
 * counts start over, except the try of the next batch that the last commit recorded (armNext) when the seek
 * leaves the position where it is: the member that committed goes on from there without a statement of its own
 * (BatchTries), so its try must stay on record, or a member killed in that batch would leave nothing and its
 * successor would try the same batch whole again.
 */
export async function setPosition(db: Queryable, ref: PartitionRef, next: bigint): Promise<void> {
  const armed = `COALESCE(bus_group_offsets.next_offset = EXCLUDED.next_offset
                   AND bus_group_offsets.attempt_offset = EXCLUDED.next_offset
                   AND bus_group_offsets.attempt_batch AND bus_group_offsets.attempts = 1, false)`;
  await db.query(
    `INSERT INTO bus_group_offsets (group_id, topic, partition, next_offset) VALUES ($1, $2, $3, $4)
     ON CONFLICT (group_id, topic, partition) DO UPDATE
       SET next_offset = EXCLUDED.next_offset,
           attempt_offset = CASE WHEN ${armed} THEN bus_group_offsets.attempt_offset END,
           attempts = CASE WHEN ${armed} THEN 1 ELSE 0 END,
           attempt_batch = ${armed},
           updated_at = now()`,
    [ref.group, ref.topic, ref.partition, next.toString()],
  );
}

/**
 * Counts one more delivery attempt of the message at `offset`, including attempts made by processes that
 * died while handling it. Committed before the handler runs, so a crash cannot lose it. Returns the count;
 * a batch try at the offset (startBatchAttempt) is not part of it.
 */
export async function recordAttempt(db: Queryable, ref: PartitionRef, offset: bigint): Promise<number> {
  // Every right-hand side reads the row as it was (attempt_offset before this update).
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE bus_group_offsets
     SET attempts = CASE WHEN attempt_offset = $4 THEN attempts + 1 ELSE 1 END,
         attempt_batch = CASE WHEN attempt_offset = $4 THEN attempt_batch ELSE false END,
         attempt_offset = $4
     WHERE group_id = $1 AND topic = $2 AND partition = $3
     RETURNING attempts - CASE WHEN attempt_batch THEN 1 ELSE 0 END AS attempts`,
    [ref.group, ref.topic, ref.partition, offset.toString()],
  );
  if (!rows[0]) throw new PartitionFencedError(ref.topic, ref.partition);
  return rows[0].attempts;
}

/** Takes back the last attempt recordAttempt counted at `offset` (a stop, not a failure, ended it). */
export async function forgetAttempt(db: Queryable, ref: PartitionRef, offset: bigint): Promise<void> {
  await db.query(
    `UPDATE bus_group_offsets SET attempts = attempts - 1
     WHERE group_id = $1 AND topic = $2 AND partition = $3 AND attempt_offset = $4 AND attempts > 0`,
    [ref.group, ref.topic, ref.partition, offset.toString()],
  );
}

/**
 * Records a try of a batch starting at `offset`, unless any attempt there is on record already (a batch or
 * a message that did not settle: then its messages go one by one). Returns whether the batch may be tried.
 */
export async function startBatchAttempt(db: Queryable, ref: PartitionRef, offset: bigint): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE bus_group_offsets SET attempts = 1, attempt_batch = true, attempt_offset = $4
     WHERE group_id = $1 AND topic = $2 AND partition = $3 AND attempt_offset IS DISTINCT FROM $4`,
    [ref.group, ref.topic, ref.partition, offset.toString()],
  );
  return rowCount === 1;
}

/**
 * The batch tries of one partition, as seen by the process that works it. A try must be on record before it
 * starts (a process that dies in it leaves the record, and its successor delivers that batch one by one).
 * The commit that settles a batch records, in its own statement, the try of the batch after it
 * (commitPosition with armNext), so a consumer that keeps going starts each batch without a statement and
 * without a commit of its own. Only this process knows that the record is one it has not acted on yet: a
 * successor that finds it delivers the first batch one by one, which costs time, never correctness. A clean
 * stop takes the record back (disarm).
 */
export class BatchTries {
  /** The offset whose try is on record by this process's last commit and not started yet. */
  private armed: bigint | undefined;

  constructor(
    private readonly db: Queryable,
    private readonly ref: PartitionRef,
  ) {}

  /** A transaction that committed the position `next` with armNext is over. */
  committed(next: bigint): void {
    this.armed = next;
  }

  /** startBatchAttempt, without a statement when this process's last commit recorded the try. */
  async start(offset: bigint): Promise<boolean> {
    const armed = this.armed;
    this.armed = undefined;
    return armed === offset || startBatchAttempt(this.db, this.ref, offset);
  }

  /** On a clean stop: the recorded try that never started is taken back, so a successor batches at once. */
  async disarm(): Promise<void> {
    const armed = this.armed;
    if (armed === undefined) return;
    this.armed = undefined;
    await this.db.query(
      `UPDATE bus_group_offsets SET attempt_offset = NULL, attempts = 0, attempt_batch = false
       WHERE group_id = $1 AND topic = $2 AND partition = $3
         AND next_offset = $4 AND attempt_offset = $4 AND attempt_batch AND attempts = 1`,
      [this.ref.group, this.ref.topic, this.ref.partition, armed.toString()],
    );
  }
}
