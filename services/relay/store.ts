/**
 * The relay's PostgreSQL state: behalf commands (idempotent by id, published to relay.commands in the same
 * transaction on the postgres log), their single transaction, and the relay wallet's local nonce.
 */
import type { EventBus } from '../../shared/bus/port.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../shared/db/pool.js';
import { encode, envelope } from '../../topics/envelope.js';
import { relayCommands, type RelayCommand } from '../../topics/relay.commands.js';
import { getAddress, Transaction } from 'ethers';
import { CodedError } from '../../shared/errors/coded-error.js';
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
import { commandIdOf } from './command-id.js';
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
  INSERT INTO relay_commands (id, system_chain_id, action, transfer_id, command, metadata, status, window_start, window_end,
    chain_id, contract_addr)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`;

/** The EVM chain and swap contract a relay sends its commands to, under its systemChainId. */
export interface RelayDeployment {
  systemChainId: string;
  chainId: number;
  contractAddr: string;
}

/**
 * The rows of a deployment, with its system chain id, chain id and lowercase contract as $1, $2, $3. A row
 * without a deployment (stored before migration 6) is the one that owns its system chain id in this database
 * (claimDeployment): adopted at start, and seen meanwhile should an older instance still store one.
 */
const OF_DEPLOYMENT = `system_chain_id = $1 AND (contract_addr IS NULL OR (chain_id = $2 AND contract_addr = $3))`;

export const DEPLOYMENT_CONFLICT = 'RELAY_DEPLOYMENT_CONFLICT';

export class CommandStore extends JobTable {
  private readonly deployment: RelayDeployment;

  constructor(
    pool: Pool,
    private readonly bus: EventBus,
    private readonly source: string,
    /** The address the relay sends from: its windows depend on it (windows.ts). */
    private readonly relayWallet: string,
    /** Every read and lookup is of this deployment's commands only. */
    deployment: RelayDeployment,
  ) {
    super(pool, 'relay_commands', 'id');
    this.deployment = { ...deployment, contractAddr: deployment.contractAddr.toLowerCase() };
  }

  /** $1, $2, $3 of OF_DEPLOYMENT. */
  private get scope(): [string, number, string] {
    const { systemChainId, chainId, contractAddr } = this.deployment;
    return [systemChainId, chainId, contractAddr];
  }

  private insertParams(
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
      this.deployment.chainId,
      this.deployment.contractAddr,
    ];
  }

  /**
   * At start, before anything is read or sent: makes this deployment the owner of its system chain id in this
   * database, or refuses when another deployment (another contract or EVM chain) owns it, since each relay
   * would send the other's commands to its own contract. Adopts the commands stored before deployments were
   * recorded, and stores the windows of the unsettled ones as they are computed now (the formula or the
   * relay wallet may have changed since they were accepted; the sender takes jobs in window order).
   */
  async claimDeployment(): Promise<{ adopted: number; windowsUpdated: number }> {
    const [systemChainId, chainId, contractAddr] = this.scope;
    return withTransaction(this.pool, async (tx) => {
      await tx.query(
        `INSERT INTO relay_deployments (system_chain_id, chain_id, contract_addr) VALUES ($1, $2, $3)
         ON CONFLICT (system_chain_id) DO NOTHING`,
        this.scope,
      );
      const { rows } = await tx.query<{ chain_id: string; contract_addr: string }>(
        'SELECT chain_id, contract_addr FROM relay_deployments WHERE system_chain_id = $1 FOR UPDATE',
        [systemChainId],
      );
      const owner = rows[0]!;
      if (Number(owner.chain_id) !== chainId || owner.contract_addr !== contractAddr) {
        const theirs = getAddress(owner.contract_addr);
        throw new CodedError(
          DEPLOYMENT_CONFLICT,
          `relay.systemChainId ${systemChainId} belongs in this database to contract ${theirs} on chain ${owner.chain_id}, ` +
            `but this relay is configured for contract ${getAddress(contractAddr)} on chain ${chainId}: nothing was started. ` +
            `Two deployments under one systemChainId in one database would send each other's commands to the wrong contract. ` +
            `If the configuration is a copy, correct relay.contractAddr / relay.chainId / relay.systemChainId; ` +
            `to run both, give this relay its own database; if ${theirs} is retired and none of its commands is still open, ` +
            `release it (DELETE FROM relay_deployments WHERE system_chain_id = '${systemChainId}'; its commands stay its own) and start again.`,
        );
      }
      const adopted = await tx.query(
        `UPDATE relay_commands SET chain_id = $2, contract_addr = $3 WHERE system_chain_id = $1 AND contract_addr IS NULL`,
        this.scope,
      );
      const unsettled = await tx.query<
        Pick<DbRow, 'id' | 'action' | 'command' | 'window_start' | 'window_end'>
      >(
        `SELECT id, action, command, window_start, window_end FROM relay_commands
          WHERE ${OF_DEPLOYMENT} AND status NOT IN ('confirmed', 'failed')`,
        this.scope,
      );
      let windowsUpdated = 0;
      for (const row of unsettled.rows) {
        const window = this.windowOf(row.action, row.command.call);
        const storedEnd = row.window_end === null ? null : Number(row.window_end);
        if (Number(row.window_start) === window.start && storedEnd === window.end) continue;
        await tx.query('UPDATE relay_commands SET window_start = $2, window_end = $3 WHERE id = $1', [
          row.id,
          window.start,
          window.end,
        ]);
        windowsUpdated++;
      }
      return { adopted: adopted.rowCount ?? 0, windowsUpdated };
    });
  }

  /**
   * This deployment's command for the command's (action, transferId), whatever id scheme it was stored under:
   * its own id first, then one still under way or done, then the newest (older id schemes could store several).
   */
  async find(
    command: RelayCommand,
    db: Queryable = this.pool,
    lock = false,
  ): Promise<CommandRow | undefined> {
    const { rows } = await db.query<DbRow>(
      `SELECT * FROM relay_commands WHERE ${OF_DEPLOYMENT} AND action = $4 AND transfer_id = $5
        ORDER BY (id = $6) DESC, (status = 'failed'), created_at DESC LIMIT 1${lock ? ' FOR UPDATE' : ''}`,
      [...this.scope, command.action, command.transferId.toLowerCase(), command.commandId],
    );
    return rows[0] ? toRow(rows[0]) : undefined;
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
    const window = this.windowOf(command.action, command.call);
    return withTransaction(this.pool, async (tx) => {
      // A command stored under an older id scheme is found here, so a retry never makes a second one.
      let row = await this.find(command, tx, true);
      if (row === undefined) {
        const inserted = await tx.query(
          `${INSERT} ON CONFLICT (id) DO NOTHING`,
          this.insertParams(command, metadata, 'accepted', window),
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
        // A concurrent first accept of the same command stored it meanwhile.
        row = await this.find(command, tx, true);
        if (row === undefined) throw new Error(`command id ${command.commandId} is another deployment's`);
      }
      if (row.status === 'failed' && options.reopen === true) {
        const paid = paidFailures(row);
        if (paid >= (options.maxPaidFailures ?? Infinity)) {
          return { id: row.id, created: false, status: row.status, reopened: false, exhausted: paid };
        }
        await tx.query(
          `UPDATE relay_commands SET status = 'scheduled', command = $2, ${CLEARED_TRANSACTION_STATE},
             reason = $3, paid_failures = $4, window_start = $5, window_end = $6, updated_at = now() WHERE id = $1`,
          [
            row.id,
            // The re-post's spelling, with the stored id and the first accepted gas strategy.
            JSON.stringify({ ...command, commandId: row.id, gasPrice: row.command.gasPrice }),
            `re-opened; it had failed: ${row.reason ?? 'no reason recorded'}`,
            paid,
            window.start,
            window.end,
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

  /** This deployment's commands of one transfer (any action), newest first. */
  async byTransfer(transferId: string): Promise<CommandRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM relay_commands WHERE ${OF_DEPLOYMENT} AND transfer_id = $4 ORDER BY created_at DESC LIMIT 20`,
      [...this.scope, transferId.toLowerCase()],
    );
    return rows.map(toRow);
  }

  /** This deployment's commands by status and their failures so far (the /metrics gauges). */
  jobCounts(): Promise<JobCounts> {
    return this.countJobs({ where: OF_DEPLOYMENT, params: this.scope });
  }

  /**
   * The consumer's effect: the command is due for the submitter. Inserts it when this database has not seen
   * it (another relay instance accepted it, Kafka profile); a command already past `accepted` is untouched.
   * Only a command whose id is this deployment's (v3) is inserted: another deployment's under the same
   * systemChainId (the bus is shared) is not ours to send, and one published under an older id scheme before
   * an upgrade can only be this database's own row.
   */
  async schedule(tx: PoolClient, command: RelayCommand): Promise<void> {
    if (command.commandId !== commandIdOf(command, this.deployment)) {
      await tx.query(
        `UPDATE relay_commands SET status = 'scheduled', updated_at = now()
          WHERE ${OF_DEPLOYMENT} AND id = $4 AND status = 'accepted'`,
        [...this.scope, command.commandId],
      );
      return;
    }
    await tx.query(
      `${INSERT} ON CONFLICT (id) DO UPDATE SET status = 'scheduled', updated_at = now()
       WHERE relay_commands.status = 'accepted'`,
      this.insertParams(command, {}, 'scheduled', this.windowOf(command.action, command.call)),
    );
  }

  /** This deployment's command with this id. */
  async get(id: string, db: Queryable = this.pool): Promise<CommandRow | undefined> {
    const { rows } = await db.query<DbRow>(
      `SELECT * FROM relay_commands WHERE ${OF_DEPLOYMENT} AND id = $4`,
      [...this.scope, id],
    );
    return rows[0] ? toRow(rows[0]) : undefined;
  }

  /** Commands the sender still has to move: in-flight transactions first (by nonce), then by window start. */
  async open(): Promise<CommandRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM relay_commands WHERE ${OF_DEPLOYMENT} AND status IN ${OPEN_STATUS_LIST}
       ORDER BY (status = 'scheduled'), nonce, window_start, created_at LIMIT 100`,
      this.scope,
    );
    return rows.map(toRow);
  }
}
