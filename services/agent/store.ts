/**
 * The Agent's PostgreSQL state: one complaint per bid, stored and published to complaint.commands in one
 * transaction (postgres log), and the sender's view of it (nonce, signed attempts, receipt).
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { EventBus } from '../../shared/bus/port.js';
import { withCanonicalV } from '../../shared/chain/index.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../shared/db/pool.js';
import {
  CLEARED_TRANSACTION_STATE,
  JOB_ROW_STATUSES,
  jobColumns,
  JobTable,
  OPEN_STATUS_LIST,
  paidFailures,
  type JobColumns,
  type JobColumnsRow,
} from '../../shared/sender/index.js';
import { complaintCommands, type ComplaintCommand } from '../../topics/complaint.commands.js';
import { encode, envelope } from '../../topics/envelope.js';

export const COMPLAINT_STATUSES = JOB_ROW_STATUSES;

export interface ComplaintRow extends JobColumns {
  bidId: string;
  complaint: Record<string, string>;
  signature: string;
  domain: string;
  signer: string;
  alreadyOnChain: boolean;
  /** The failed complaints this one replaced (another complainant's), oldest first. */
  history: ReplacedComplaint[];
}

/** What is kept of a failed complaint when another complainant's takes its place. */
export interface ReplacedComplaint {
  signer: string;
  domain: string;
  signature: string;
  reason: string | null;
  nonce: number | null;
  /** The transaction the failure was settled by (a reverted call, a freeing self-transfer), if any. */
  tx_hash: string | null;
  block_number: number | null;
  transactions: { kind: string; tx_hash: string }[];
  /**
   * Transactions of this DID domain's complaints for the bid mined and failed, up to this replacement (absent
   * in entries from before agent migration 3: their own mined failure, if any, counts).
   */
  paid_failures?: number;
  created_at: string;
  replaced_at: string;
}

interface DbRow extends JobColumnsRow {
  bid_id: string;
  complaint: Record<string, string>;
  signature: string;
  domain: string;
  signer: string;
  already_on_chain: boolean;
  history: ReplacedComplaint[];
}

const toRow = (r: DbRow): ComplaintRow => ({
  bidId: r.bid_id,
  complaint: r.complaint,
  signature: r.signature,
  domain: r.domain,
  signer: r.signer,
  alreadyOnChain: r.already_on_chain,
  history: r.history,
  ...jobColumns(r),
});

const INSERT = `INSERT INTO agent_complaints (bid_id, complaint, signature, domain, signer, status)
  VALUES ($1, $2, $3, $4, $5, $6)`;

export interface NewComplaint extends ComplaintCommand {
  signer: string;
}

export type AcceptOutcome =
  | { kind: 'created'; row: ComplaintRow }
  | { kind: 'repeated'; row: ComplaintRow }
  | { kind: 'reopened'; row: ComplaintRow }
  /** The bid's complaint here had failed and was another complainant's: this one took its place. */
  | { kind: 'replaced'; row: ComplaintRow; previous: ComplaintRow }
  /** The bid's complaint here is another complainant's (or another signature's). */
  | { kind: 'taken'; row: ComplaintRow }
  /**
   * The bid's complaint failed, and this complainant's complaints for it were mined and failed `paid` times
   * (at least `maxPaidFailures`): nothing changed.
   */
  | { kind: 'exhausted'; row: ComplaintRow; paid: number };

/** The success messages of POST /submit-complaint by outcome (the OpenAPI document lists them). */
export const ACCEPT_MESSAGES = {
  created: 'complaint accepted',
  replaced: 'complaint accepted (it replaces a failed complaint of this bid)',
  reopened: 'complaint accepted again (it had failed)',
  repeated: 'complaint already accepted',
} as const satisfies Record<Exclude<AcceptOutcome['kind'], 'taken' | 'exhausted'>, string>;

/**
 * Transactions of DID `domain`'s complaints for the row's bid that were mined and failed, each paid by the
 * Agent wallet (shared/sender, `paidFailures`). Counted per complainant domain, not per bid: a squatter's
 * failures must not use up the genuine complainant's chances (the reason failed complaints are replaceable),
 * and a domain is scarce where addresses are free (a signer can hand its DID to a fresh address). The row's
 * own count when the domain is its complainant's (it carries what the domain's earlier complaints for the bid
 * cost); else the latest count among the domain's replaced complaints in `history`.
 */
export function paidFailuresOf(row: ComplaintRow, domain: string): number {
  if (row.domain === domain) return paidFailures(row);
  let paid = 0;
  for (const entry of row.history) {
    if (entry.domain !== domain) continue;
    paid = Math.max(paid, entry.paid_failures ?? (entry.block_number !== null ? 1 : 0));
  }
  return paid;
}

/**
 * Whether `complaint` is the stored one again: the same signer and domain, the same fields and the same
 * signature (v as 27/28 or 0/1 alike). The bid id joins the fields without separators, so another complaint
 * of the same complainant can share it; taken for the stored one, it was answered "already accepted" and never
 * sent, or a re-open sent the stored one in its place.
 */
export function sameComplaint(
  row: Pick<ComplaintRow, 'signer' | 'domain' | 'complaint' | 'signature'>,
  complaint: Pick<NewComplaint, 'signer' | 'domain' | 'complaint' | 'signature'>,
): boolean {
  return (
    row.signer === complaint.signer &&
    row.domain === complaint.domain &&
    isDeepStrictEqual(row.complaint, complaint.complaint) &&
    withCanonicalV(row.signature) === withCanonicalV(complaint.signature)
  );
}

export class ComplaintStore extends JobTable {
  constructor(
    pool: Pool,
    private readonly bus: EventBus,
    private readonly source: string,
  ) {
    super(pool, 'agent_complaints', 'bid_id');
  }

  /**
   * One complaint per bid: a new one is stored and published to complaint.commands in the same transaction
   * (postgres log). The same complaint again (sameComplaint) finds its row; a failed one is re-opened when
   * `reopen` is set, and replaced by another complaint (another complainant's, or the same one's with other
   * fields or another signature) when `replaceFailed` is set (the
   * caller has checked DID ownership and hasComplaint again), unless the complainant's domain has
   * `maxPaidFailures` paid failures on the bid already (`exhausted`, nothing changes): whoever controls the
   * DID can move it ahead of the Agent's transaction in its block, so that a call that estimated fine reverts,
   * and each re-open would cost the Agent wallet gas again.
   */
  async accept(
    complaint: NewComplaint,
    options: { reopen?: boolean; replaceFailed?: boolean; maxPaidFailures?: number } = {},
  ): Promise<AcceptOutcome> {
    const maxPaidFailures = options.maxPaidFailures ?? Infinity;
    return withTransaction(this.pool, async (tx) => {
      const inserted = await tx.query(`${INSERT} ON CONFLICT (bid_id) DO NOTHING`, [
        complaint.bidId,
        JSON.stringify(complaint.complaint),
        complaint.signature,
        complaint.domain,
        complaint.signer,
        'accepted',
      ]);
      if (inserted.rowCount === 1) {
        await this.publish(tx, complaint, complaint.bidId);
        return { kind: 'created', row: (await this.get(complaint.bidId, tx))! };
      }
      const { rows } = await tx.query<DbRow>('SELECT * FROM agent_complaints WHERE bid_id = $1 FOR UPDATE', [
        complaint.bidId,
      ]);
      const row = toRow(rows[0]!);
      if (!sameComplaint(row, complaint)) {
        if (row.status !== 'failed' || options.replaceFailed !== true) return { kind: 'taken', row };
        const paid = paidFailuresOf(row, complaint.domain);
        if (paid >= maxPaidFailures) return { kind: 'exhausted', row, paid };
        return this.replace(tx, row, complaint, paid);
      }
      if (row.status === 'failed' && options.reopen === true) {
        const paid = paidFailures(row);
        if (paid >= maxPaidFailures) return { kind: 'exhausted', row, paid };
        await tx.query(
          `UPDATE agent_complaints SET status = 'scheduled', ${CLEARED_TRANSACTION_STATE},
             already_on_chain = false, reason = $2, paid_failures = $3, updated_at = now() WHERE bid_id = $1`,
          [row.bidId, `re-opened; it had failed: ${row.reason ?? 'no reason recorded'}`, paid],
        );
        return { kind: 'reopened', row: (await this.get(row.bidId, tx))! };
      }
      return { kind: 'repeated', row };
    });
  }

  /**
   * A failed complaint never holds its bid: `failed` means nothing of it is on chain and nothing of it can
   * still be mined. The sender fails a job refused at estimate (nothing signed, no nonce), one whose nonce
   * another transaction used, one whose call was mined and reverted, or one whose nonce a self-transfer freed
   * (the nonce is used in those three), and the submitter turns any failure while hasComplaint(bid) is true into
   * `confirmed` (submitter.ts). So another complainant's complaint takes the row, as a new complaint:
   * `accepted`, a new complaint.commands message (its own envelope id: the bid id is recorded already), the
   * sender's columns cleared; the replaced one is kept in `history`. `paid`: what the newcomer's domain's
   * complaints for the bid cost before (paidFailuresOf).
   */
  private async replace(
    tx: PoolClient,
    row: ComplaintRow,
    complaint: NewComplaint,
    paid: number,
  ): Promise<AcceptOutcome> {
    const previous: ReplacedComplaint = {
      signer: row.signer,
      domain: row.domain,
      signature: row.signature,
      reason: row.reason,
      nonce: row.nonce,
      tx_hash: row.txHash,
      block_number: row.blockNumber,
      transactions: row.txs.map((t) => ({ kind: t.kind, tx_hash: t.hash })),
      paid_failures: paidFailures(row),
      created_at: row.createdAt.toISOString(),
      replaced_at: new Date().toISOString(),
    };
    await tx.query(
      `UPDATE agent_complaints SET complaint = $2, signature = $3, domain = $4, signer = $5, status = 'accepted',
         ${CLEARED_TRANSACTION_STATE}, attempts = 0, already_on_chain = false, reason = $6,
         history = history || $7::jsonb, paid_failures = $8, created_at = now(), updated_at = now()
       WHERE bid_id = $1 AND status = 'failed'`,
      [
        row.bidId,
        JSON.stringify(complaint.complaint),
        complaint.signature,
        complaint.domain,
        complaint.signer,
        `replaces a failed complaint from DID ${JSON.stringify(row.domain)}: ${row.reason ?? 'no reason recorded'}`,
        JSON.stringify([previous]),
        paid,
      ],
    );
    // A random suffix: a retry after a rolled-back attempt must not find its id recorded by the consumer.
    await this.publish(tx, complaint, `${row.bidId}:${randomUUID()}`);
    return { kind: 'replaced', row: (await this.get(row.bidId, tx))!, previous: row };
  }

  private async publish(tx: PoolClient, complaint: NewComplaint, id: string): Promise<void> {
    const { signer: _signer, ...payload } = complaint;
    const message = envelope(complaintCommands, payload, {
      id,
      occurredAt: Math.floor(Date.now() / 1000),
      source: this.source,
    });
    await this.bus.publish(complaintCommands.name, [encode(complaintCommands, message)], { tx });
  }

  /**
   * The consumer's effect: the complaint is due for the submitter. Inserts it when this database has not
   * seen it (Kafka profile: the message may arrive before the accepting transaction commits).
   */
  async schedule(tx: PoolClient, complaint: NewComplaint): Promise<void> {
    await tx.query(
      `${INSERT} ON CONFLICT (bid_id) DO UPDATE SET status = 'scheduled', updated_at = now()
       WHERE agent_complaints.status = 'accepted'`,
      [
        complaint.bidId,
        JSON.stringify(complaint.complaint),
        complaint.signature,
        complaint.domain,
        complaint.signer,
        'scheduled',
      ],
    );
  }

  async get(bidId: string, db: Queryable = this.pool): Promise<ComplaintRow | undefined> {
    const { rows } = await db.query<DbRow>('SELECT * FROM agent_complaints WHERE bid_id = $1', [
      bidId.toLowerCase(),
    ]);
    return rows[0] ? toRow(rows[0]) : undefined;
  }

  /** Complaints the sender still has to move: in-flight ones first (by nonce), then oldest first. */
  async open(): Promise<ComplaintRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM agent_complaints WHERE status IN ${OPEN_STATUS_LIST}
       ORDER BY (status = 'scheduled'), nonce, created_at LIMIT 100`,
    );
    return rows.map(toRow);
  }

  /**
   * The bid's complaint is on chain, but not by a transaction of ours that succeeded (the contract said
   * DuplicateBidId): a success. Our own transactions stay listed; tx_hash / block_number then name none.
   */
  async finishAlreadyOnChain(id: string, note: string): Promise<void> {
    await this.pool.query(
      `UPDATE agent_complaints SET status = 'confirmed', already_on_chain = true, reason = $2,
         tx_hash = NULL, block_number = NULL, updated_at = now()
       WHERE bid_id = $1 AND status IN ${OPEN_STATUS_LIST}`,
      [id, note],
    );
  }
}
