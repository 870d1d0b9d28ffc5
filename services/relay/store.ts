/**
 * The relay's PostgreSQL state: behalf commands (idempotent by id, published to relay.commands in the same
 * transaction on the postgres log), their single transaction, and the relay wallet's local nonce.
 */
import type { EventBus } from '../../shared/bus/port.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../shared/db/pool.js';
import { encode, envelope } from '../../topics/envelope.js';
import { relayCommands, type RelayCommand } from '../../topics/relay.commands.js';
import { Transaction } from 'ethers';
import {
  CLEARED_TRANSACTION_STATE,
  JOB_ROW_STATUSES,
  jobColumns,
  JobTable,
  OPEN_STATUS_LIST,
  paidFailures,
  storeFee,
  type JobColumns,
  type JobColumnsRow,
  type JobCounts,
  type JobRowStatus,
  type SignedAttempt,
} from '../../shared/sender/index.js';
import type { ParsedCommand } from './command-body.js';
import { callWindow, type CallWindow } from './windows.js';

export type CommandStatus = JobRowStatus;
export const COMMAND_STATUSES = JOB_ROW_STATUSES;

export interface CommandRow extends JobColumns {
  id: string;
  action: RelayCommand['action'];
  transferId: string;
  command: RelayCommand;
  metadata: Record<string, string>;
  windowStart: number;
  windowEnd: number | null;
  rawTx: string | null;
}

interface DbRow extends JobColumnsRow {
  id: string;
  action: RelayCommand['action'];
  transfer_id: string;
  command: RelayCommand;
  metadata: Record<string, string>;
  window_start: string;
  window_end: string | null;
  raw_tx: string | null;
}

const toRow = (r: DbRow): CommandRow => ({
  id: r.id,
  action: r.action,
  transferId: r.transfer_id,
  command: r.command,
  metadata: r.metadata,
  windowStart: Number(r.window_start),
  windowEnd: r.window_end === null ? null : Number(r.window_end),
  rawTx: r.raw_tx,
  ...jobColumns(r),
  txs: r.txs.length === 0 && r.raw_tx !== null ? [legacyAttempt(r.raw_tx)] : r.txs,
});

/** A transaction stored before replacements were recorded (migration 2): one legacy-priced attempt. */
function legacyAttempt(raw: string): SignedAttempt {
  const tx = Transaction.from(raw);
  const fee =
    tx.type === 2
      ? { type: 2 as const, maxFeePerGas: tx.maxFeePerGas!, maxPriorityFeePerGas: tx.maxPriorityFeePerGas! }
      : { type: 0 as const, gasPrice: tx.gasPrice! };
  return {
    kind: 'call',
    hash: tx.hash!,
    raw,
    fee: storeFee(fee),
    gasLimit: tx.gasLimit.toString(),
    signedAtBlock: 0,
    signedAtMs: Date.now(),
  };
}

const INSERT = `
  INSERT INTO relay_commands (id, system_chain_id, action, transfer_id, command, metadata, status, window_start, window_end)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

function insertParams(
  command: RelayCommand,
  metadata: Record<string, string>,
  status: CommandStatus,
  window: CallWindow,
) {
  return [
    command.commandId,
    command.systemChainId,
    command.action,
    command.transferId,
    JSON.stringify(command),
    JSON.stringify(metadata),
    status,
    window.start,
    window.end,
  ];
}

export class CommandStore extends JobTable {
  constructor(
    pool: Pool,
    private readonly bus: EventBus,
    private readonly source: string,
    /** The address the relay sends from: its windows depend on it (windows.ts). */
    private readonly relayWallet: string,
  ) {
    super(pool, 'relay_commands', 'id');
  }

  /** When this relay may make the call (it depends on whether its wallet is the lock's sender: windows.ts). */
  windowOf(action: RelayCommand['action'], call: RelayCommand['call']): CallWindow {
    return callWindow(action, call, this.relayWallet);
  }

  /**
   * One command per (action, transferId): stores a new one and publishes it to relay.commands in the same
   * transaction (postgres log). A repeat finds the row and never changes its gas strategy: the first accepted
   * one stays (any client may repeat any command, and would otherwise re-price another's to maxGasPriceWei). A
   * failed one is re-opened (scheduled again, nothing of its old nonce kept) when `reopen` says its window
   * is still open, unless `maxPaidFailures` of its transactions were mined and failed already (then
   * `exhausted` gives that count and nothing changes): whoever controls the receiver or the token can make
   * a call that estimated fine revert in its block, and each re-open would cost the relay wallet gas again.
   * Returns the command's status after this.
   */
  async accept(
    parsed: ParsedCommand,
    options: { reopen?: boolean; maxPaidFailures?: number } = {},
  ): Promise<{
    id: string;
    created: boolean;
    status: CommandStatus;
    reopened: boolean;
    exhausted?: number;
  }> {
    const { command, metadata } = parsed;
    return withTransaction(this.pool, async (tx) => {
      const inserted = await tx.query(
        `${INSERT} ON CONFLICT (id) DO NOTHING`,
        insertParams(command, metadata, 'accepted', this.windowOf(command.action, command.call)),
      );
      if (inserted.rowCount === 1) {
        const message = envelope(relayCommands, command, {
          id: command.commandId,
          occurredAt: Math.floor(Date.now() / 1000),
          source: this.source,
        });
        await this.bus.publish(relayCommands.name, [encode(relayCommands, message)], { tx });
        return { id: command.commandId, created: true, status: 'accepted', reopened: false };
      }
      const { rows } = await tx.query<DbRow>('SELECT * FROM relay_commands WHERE id = $1 FOR UPDATE', [
        command.commandId,
      ]);
      const row = toRow(rows[0]!);
      if (row.status === 'failed' && options.reopen === true) {
        const paid = paidFailures(row);
        if (paid >= (options.maxPaidFailures ?? Infinity)) {
          return { id: row.id, created: false, status: row.status, reopened: false, exhausted: paid };
        }
        await tx.query(
          `UPDATE relay_commands SET status = 'scheduled', command = $2, ${CLEARED_TRANSACTION_STATE},
             reason = $3, paid_failures = $4, updated_at = now() WHERE id = $1`,
          [
            row.id,
            // The re-post's spelling, with the first accepted gas strategy.
            JSON.stringify({ ...command, gasPrice: row.command.gasPrice }),
            `re-opened; it had failed: ${row.reason ?? 'no reason recorded'}`,
            paid,
          ],
        );
        return { id: row.id, created: false, status: 'scheduled', reopened: true };
      }
      return { id: row.id, created: false, status: row.status, reopened: false };
    });
  }

  /** register_relay: the relay server's callback URLs for this deployment (the latest wins). */
  async register(systemChainId: string, callbacks: Record<string, string>): Promise<void> {
    await this.pool.query(
      `INSERT INTO relay_registrations (system_chain_id, callbacks) VALUES ($1, $2)
       ON CONFLICT (system_chain_id) DO UPDATE SET callbacks = EXCLUDED.callbacks, registered_at = now()`,
      [systemChainId, JSON.stringify(callbacks)],
    );
  }

  /** The callback set last handed to the chain client (relay.chainClientRegisterUrl), if any. */
  async forwardedRegistration(systemChainId: string): Promise<Record<string, string> | undefined> {
    const { rows } = await this.pool.query<{ forwarded: Record<string, string> | null }>(
      'SELECT forwarded FROM relay_registrations WHERE system_chain_id = $1',
      [systemChainId],
    );
    return rows[0]?.forwarded ?? undefined;
  }

  async setForwardedRegistration(systemChainId: string, callbacks: Record<string, string>): Promise<void> {
    await this.pool.query('UPDATE relay_registrations SET forwarded = $2 WHERE system_chain_id = $1', [
      systemChainId,
      JSON.stringify(callbacks),
    ]);
  }

  async registration(systemChainId: string): Promise<Record<string, string> | undefined> {
    const { rows } = await this.pool.query<{ callbacks: Record<string, string> }>(
      'SELECT callbacks FROM relay_registrations WHERE system_chain_id = $1',
      [systemChainId],
    );
    return rows[0]?.callbacks;
  }

  /** The commands of one transfer (any action), newest first. */
  async byTransfer(systemChainId: string, transferId: string): Promise<CommandRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM relay_commands WHERE system_chain_id = $1 AND transfer_id = $2 ORDER BY created_at DESC LIMIT 20`,
      [systemChainId, transferId.toLowerCase()],
    );
    return rows.map(toRow);
  }

  /** This deployment's commands by status and their failures so far (the /metrics gauges). */
  jobCounts(systemChainId: string): Promise<JobCounts> {
    return this.countJobs({ column: 'system_chain_id', value: systemChainId });
  }

  /**
   * The consumer's effect: the command is due for the submitter. Inserts it when this database has not seen
   * it (another relay instance accepted it, Kafka profile); a command already past `accepted` is untouched.
   */
  async schedule(tx: PoolClient, command: RelayCommand): Promise<void> {
    await tx.query(
      `${INSERT} ON CONFLICT (id) DO UPDATE SET status = 'scheduled', updated_at = now()
       WHERE relay_commands.status = 'accepted'`,
      insertParams(command, {}, 'scheduled', this.windowOf(command.action, command.call)),
    );
  }

  async get(id: string, db: Queryable = this.pool): Promise<CommandRow | undefined> {
    const { rows } = await db.query<DbRow>('SELECT * FROM relay_commands WHERE id = $1', [id]);
    return rows[0] ? toRow(rows[0]) : undefined;
  }

  /** Commands the sender still has to move: in-flight transactions first (by nonce), then by window start. */
  async open(systemChainId: string): Promise<CommandRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM relay_commands WHERE system_chain_id = $1 AND status IN ${OPEN_STATUS_LIST}
       ORDER BY (status = 'scheduled'), nonce, window_start, created_at LIMIT 100`,
      [systemChainId],
    );
    return rows.map(toRow);
  }
}
