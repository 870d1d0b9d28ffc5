/**
 * The sender's writes (SenderStore without open()) over an owner's table of jobs: the relay's behalf commands,
 * the Agent's complaints. The table keys its rows by `key` and has the sender's columns: status, nonce,
 * raw_tx, tx_hash, txs (jsonb array of SignedAttempt), reason, attempts, refusals, mined_block,
 * cancel_reason, block_number, paid_failures, failures, updated_at. Every method is one statement or one transaction, and each moves a
 * job only from the statuses the sender's state machine allows, so a stale pass changes nothing.
 */
import { withTransaction, type Pool } from '../db/pool.js';
import { takeNonce } from './nonces.js';
import {
  OPEN_STATUSES,
  type JobStatus,
  type Settlement,
  type SignedAttempt,
  type WalletRef,
} from './types.js';

/**
 * SQL assignments that forget a job's transaction state (nonce, signed attempts, receipt, refusals), so a failed
 * job an owner re-opens or replaces is signed afresh at a new nonce.
 */
export const CLEARED_TRANSACTION_STATE = `nonce = NULL, raw_tx = NULL, tx_hash = NULL, block_number = NULL, txs = '[]',
  refusals = 0, mined_block = NULL, cancel_reason = NULL`;

/** `('scheduled', 'signed', …)`: the open statuses as an SQL list. */
export const OPEN_STATUS_LIST = `(${OPEN_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/** A job row's status: `accepted` (stored by the API, not yet scheduled by the consumer), then the sender's. */
export type JobRowStatus = 'accepted' | JobStatus;
export const JOB_ROW_STATUSES: readonly JobRowStatus[] = [
  'accepted',
  'scheduled',
  'signed',
  'sent',
  'cancelling',
  'confirmed',
  'failed',
];

/** The sender's columns of a job table, as `SELECT *` gives them (bigints as text). */
export interface JobColumnsRow {
  status: JobRowStatus;
  reason: string | null;
  nonce: string | null;
  tx_hash: string | null;
  block_number: string | null;
  attempts: number;
  txs: SignedAttempt[];
  refusals: number;
  mined_block: string | null;
  cancel_reason: string | null;
  paid_failures: number;
  created_at: Date;
  updated_at: Date;
}

/** The sender's columns of a job, as the owners' stores return them. */
export interface JobColumns {
  status: JobRowStatus;
  reason: string | null;
  nonce: number | null;
  txHash: string | null;
  blockNumber: number | null;
  attempts: number;
  /** Every transaction signed at `nonce`, oldest first. */
  txs: SignedAttempt[];
  refusals: number;
  minedBlock: number | null;
  cancelReason: string | null;
  /** Transactions of the job mined and failed before its last re-open or hand-over (see `paidFailures`). */
  paidFailuresBefore: number;
  createdAt: Date;
  updatedAt: Date;
}

const numberOrNull = (v: string | null) => (v === null ? null : Number(v));

export function jobColumns(r: JobColumnsRow): JobColumns {
  return {
    status: r.status,
    reason: r.reason,
    nonce: numberOrNull(r.nonce),
    txHash: r.tx_hash,
    blockNumber: numberOrNull(r.block_number),
    attempts: r.attempts,
    txs: r.txs,
    refusals: r.refusals,
    minedBlock: numberOrNull(r.mined_block),
    cancelReason: r.cancel_reason,
    paidFailuresBefore: r.paid_failures,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * How many of a job's transactions were mined and failed, each paid for by the owner's wallet: a call that
 * reverted, or the self-transfer that freed its nonce. A failure without a mined transaction of ours (refused
 * at the estimate, the nonce used by another transaction) cost nothing and is not counted. Owners refuse to
 * re-open a job past their cap: whoever controls what the call touches can make a call that estimated fine
 * revert in its block, and each re-open would cost the wallet gas again.
 */
export function paidFailures(row: Pick<JobColumns, 'status' | 'blockNumber' | 'paidFailuresBefore'>): number {
  return row.paidFailuresBefore + (row.status === 'failed' && row.blockNumber !== null ? 1 : 0);
}

/** A job table's jobs by status, and the failures of its jobs so far (`failures`' total, never lower). */
export interface JobCounts {
  byStatus: Record<string, number>;
  failures: number;
  /**
   * Per status with jobs: seconds since the job longest in it entered it (`updated_at`, read on the database's
   * clock, so the process's clock does not matter).
   */
  oldestSeconds: Record<string, number>;
}

export class JobTable {
  /** `table` and `key` are identifiers of the owner's code, never input. */
  constructor(
    protected readonly pool: Pool,
    private readonly table: string,
    private readonly key: string,
  ) {}

  /**
   * Jobs by status and their failures so far (the sender's /metrics gauges). `only`: the owner's rows (a
   * relay's deployment); `where` is SQL of the owner's code, never input, with `params` as $1, $2, ….
   */
  async countJobs(only?: { where: string; params: readonly unknown[] }): Promise<JobCounts> {
    const { rows } = await this.pool.query<{
      status: string;
      n: string;
      failures: string | null;
      oldest: string;
    }>(
      `SELECT status, count(*) AS n, sum(failures) AS failures,
              greatest(0, extract(epoch FROM clock_timestamp() - min(updated_at))) AS oldest
         FROM ${this.table} ${only ? `WHERE ${only.where}` : ''} GROUP BY status`,
      only ? [...only.params] : [],
    );
    return {
      byStatus: Object.fromEntries(rows.map((r) => [r.status, Number(r.n)])),
      failures: rows.reduce((sum, r) => sum + Number(r.failures ?? 0), 0),
      oldestSeconds: Object.fromEntries(rows.map((r) => [r.status, Number(r.oldest)])),
    };
  }

  /**
   * Allocates the wallet's next nonce and stores the attempt `sign` makes with it, in one transaction, only
   * while the job is still scheduled and unsigned (the row is locked meanwhile).
   */
  async signFirst(
    id: string,
    wallet: WalletRef,
    sign: (nonce: number) => Promise<SignedAttempt>,
  ): Promise<{ nonce: number; attempt: SignedAttempt } | undefined> {
    return withTransaction(this.pool, async (tx) => {
      const claimed = await tx.query(
        `SELECT 1 FROM ${this.table} WHERE ${this.key} = $1 AND status = 'scheduled' AND raw_tx IS NULL FOR UPDATE`,
        [id],
      );
      if (claimed.rowCount !== 1) return undefined;
      const nonce = await takeNonce(tx, wallet);
      const attempt = await sign(nonce);
      await tx.query(
        `UPDATE ${this.table} SET status = 'signed', nonce = $2, raw_tx = $3, tx_hash = $4, txs = $5,
           reason = NULL, updated_at = now() WHERE ${this.key} = $1`,
        [id, nonce, attempt.raw, attempt.hash, JSON.stringify([attempt])],
      );
      return { nonce, attempt };
    });
  }

  /** A replacement at the job's nonce, only if it still has `knownAttempts`; a `reason` makes it a cancel. */
  async addAttempt(
    id: string,
    knownAttempts: number,
    attempt: SignedAttempt,
    reason?: string,
  ): Promise<boolean> {
    const result = await this.pool.query(
      `UPDATE ${this.table} SET txs = txs || $3::jsonb, raw_tx = $4, tx_hash = $5,
         status = CASE WHEN $6::text IS NULL THEN status ELSE 'cancelling' END,
         cancel_reason = COALESCE($6, cancel_reason), reason = COALESCE($6, reason), updated_at = now()
       WHERE ${this.key} = $1 AND status IN ('signed', 'sent', 'cancelling') AND jsonb_array_length(txs) = $2`,
      [id, knownAttempts, JSON.stringify([attempt]), attempt.raw, attempt.hash, reason ?? null],
    );
    return result.rowCount === 1;
  }

  async note(id: string, problem: string, refused = false): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET attempts = attempts + 1, refusals = refusals + $3, reason = $2,
         updated_at = now() WHERE ${this.key} = $1`,
      [id, problem, refused ? 1 : 0],
    );
  }

  async markSent(id: string): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET status = 'sent', updated_at = now() WHERE ${this.key} = $1 AND status = 'signed'`,
      [id],
    );
  }

  async setMinedBlock(id: string, block: number | null): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET mined_block = $2, updated_at = now() WHERE ${this.key} = $1`,
      [id, block],
    );
  }

  /**
   * Final status; a settlement naming a transaction records it as the job's (the one mined). A failure adds
   * one to `failures`, which nothing lowers: the table's total of it grows with every failure, a re-opened
   * job's included, so it tells a new failure from a failed count seen before (the notifier's alerts).
   */
  async finish(id: string, outcome: Settlement): Promise<void> {
    await this.pool.query(
      `UPDATE ${this.table} SET status = $2, block_number = $3, reason = $4,
         failures = failures + CASE WHEN $2 = 'failed' THEN 1 ELSE 0 END,
         tx_hash = COALESCE($5, tx_hash),
         raw_tx = COALESCE((SELECT t->>'raw' FROM jsonb_array_elements(txs) t WHERE t->>'hash' = $5 LIMIT 1), raw_tx),
         updated_at = now()
       WHERE ${this.key} = $1 AND status IN ${OPEN_STATUS_LIST}`,
      [
        id,
        outcome.status,
        outcome.blockNumber ?? null,
        outcome.status === 'failed' ? outcome.reason : null,
        outcome.txHash ?? null,
      ],
    );
  }
}
