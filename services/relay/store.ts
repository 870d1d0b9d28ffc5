/**
 * The relay's PostgreSQL state: behalf commands (idempotent by id, published to relay.commands in the same
 * transaction on the postgres log), their single transaction, and the relay wallet's local nonce.
 */
import type { EventBus } from '../../shared/bus/port.js';
import { withTransaction, type Pool, type PoolClient, type Queryable } from '../../shared/db/pool.js';
import { encode, envelope } from '../../topics/envelope.js';
import { relayCommands, type RelayCommand } from '../../topics/relay.commands.js';
import type { ParsedCommand } from './command-body.js';
import { callWindow } from './windows.js';

export type CommandStatus = 'accepted' | 'scheduled' | 'signed' | 'sent' | 'confirmed' | 'failed';

export interface CommandRow {
  id: string;
  action: RelayCommand['action'];
  transferId: string;
  command: RelayCommand;
  metadata: Record<string, string>;
  status: CommandStatus;
  windowStart: number;
  windowEnd: number | null;
  reason: string | null;
  nonce: number | null;
  rawTx: string | null;
  txHash: string | null;
  blockNumber: number | null;
  attempts: number;
  createdAt: Date;
  updatedAt: Date;
}

interface DbRow {
  id: string;
  action: RelayCommand['action'];
  transfer_id: string;
  command: RelayCommand;
  metadata: Record<string, string>;
  status: CommandStatus;
  window_start: string;
  window_end: string | null;
  reason: string | null;
  nonce: string | null;
  raw_tx: string | null;
  tx_hash: string | null;
  block_number: string | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
}

const toRow = (r: DbRow): CommandRow => ({
  id: r.id,
  action: r.action,
  transferId: r.transfer_id,
  command: r.command,
  metadata: r.metadata,
  status: r.status,
  windowStart: Number(r.window_start),
  windowEnd: r.window_end === null ? null : Number(r.window_end),
  reason: r.reason,
  nonce: r.nonce === null ? null : Number(r.nonce),
  rawTx: r.raw_tx,
  txHash: r.tx_hash,
  blockNumber: r.block_number === null ? null : Number(r.block_number),
  attempts: r.attempts,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const INSERT = `
  INSERT INTO relay_commands (id, system_chain_id, action, transfer_id, command, metadata, status, window_start, window_end)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

function insertParams(command: RelayCommand, metadata: Record<string, string>, status: CommandStatus) {
  const window = callWindow(command.action, command.call);
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

export class CommandStore {
  constructor(
    private readonly pool: Pool,
    private readonly bus: EventBus,
    private readonly source: string,
  ) {}

  /**
   * Stores a command once and publishes it to relay.commands in the same transaction (postgres log).
   * The same command again finds its row and publishes nothing. Returns whether it was new.
   */
  async accept(parsed: ParsedCommand): Promise<{ id: string; created: boolean }> {
    const { command, metadata } = parsed;
    return withTransaction(this.pool, async (tx) => {
      const inserted = await tx.query(
        `${INSERT} ON CONFLICT (id) DO NOTHING`,
        insertParams(command, metadata, 'accepted'),
      );
      if (inserted.rowCount === 1) {
        const message = envelope(relayCommands, command, {
          id: command.commandId,
          occurredAt: Math.floor(Date.now() / 1000),
          source: this.source,
        });
        await this.bus.publish(relayCommands.name, [encode(relayCommands, message)], { tx });
      }
      return { id: command.commandId, created: inserted.rowCount === 1 };
    });
  }

  /**
   * The consumer's effect: the command is due for the submitter. Inserts it when this database has not seen
   * it (another relay instance accepted it, Kafka profile); a command already past `accepted` is untouched.
   */
  async schedule(tx: PoolClient, command: RelayCommand): Promise<void> {
    await tx.query(
      `${INSERT} ON CONFLICT (id) DO UPDATE SET status = 'scheduled', updated_at = now()
       WHERE relay_commands.status = 'accepted'`,
      insertParams(command, {}, 'scheduled'),
    );
  }

  async get(id: string, db: Queryable = this.pool): Promise<CommandRow | undefined> {
    const { rows } = await db.query<DbRow>('SELECT * FROM relay_commands WHERE id = $1', [id]);
    return rows[0] ? toRow(rows[0]) : undefined;
  }

  /** Commands the submitter still has to move: in-flight transactions first, then by window start. */
  async open(systemChainId: string): Promise<CommandRow[]> {
    const { rows } = await this.pool.query<DbRow>(
      `SELECT * FROM relay_commands WHERE system_chain_id = $1 AND status IN ('scheduled', 'signed', 'sent')
       ORDER BY (status = 'scheduled'), window_start, created_at LIMIT 100`,
      [systemChainId],
    );
    return rows.map(toRow);
  }

  async fail(id: string, reason: string): Promise<void> {
    await this.pool.query(
      `UPDATE relay_commands SET status = 'failed', reason = $2, updated_at = now()
       WHERE id = $1 AND status IN ('scheduled', 'signed', 'sent')`,
      [id, reason],
    );
  }

  async noteAttempt(id: string, problem: string): Promise<void> {
    await this.pool.query(
      'UPDATE relay_commands SET attempts = attempts + 1, reason = $2, updated_at = now() WHERE id = $1',
      [id, problem],
    );
  }

  async markSent(id: string): Promise<void> {
    await this.pool.query(
      `UPDATE relay_commands SET status = 'sent', updated_at = now() WHERE id = $1 AND status = 'signed'`,
      [id],
    );
  }

  async settle(
    id: string,
    outcome: { status: 'confirmed' | 'failed'; blockNumber: number; reason?: string },
  ): Promise<void> {
    await this.pool.query(
      `UPDATE relay_commands SET status = $2, block_number = $3, reason = $4, updated_at = now()
       WHERE id = $1 AND status IN ('signed', 'sent')`,
      [id, outcome.status, outcome.blockNumber, outcome.reason ?? null],
    );
  }

  /**
   * LOCAL_PADDING: allocates the wallet's next nonce (never below `chainPending`, the node's count) and
   * stores the transaction `sign` makes with it, in one transaction. After this commits the command owns
   * that transaction for good: a crash before broadcasting only means broadcasting it later.
   * Returns undefined when the command is no longer waiting to be sent.
   */
  async signWithNextNonce(
    id: string,
    wallet: { chainId: number; address: string; chainPending: number },
    sign: (nonce: number) => Promise<{ raw: string; hash: string }>,
  ): Promise<{ nonce: number; raw: string; hash: string } | undefined> {
    return withTransaction(this.pool, async (tx) => {
      const claimed = await tx.query(
        `SELECT 1 FROM relay_commands WHERE id = $1 AND status = 'scheduled' AND raw_tx IS NULL FOR UPDATE`,
        [id],
      );
      if (claimed.rowCount !== 1) return undefined;
      await tx.query(
        `INSERT INTO relay_nonces (chain_id, address, next_nonce) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
        [wallet.chainId, wallet.address, wallet.chainPending],
      );
      const { rows } = await tx.query<{ next_nonce: string }>(
        'SELECT next_nonce FROM relay_nonces WHERE chain_id = $1 AND address = $2 FOR UPDATE',
        [wallet.chainId, wallet.address],
      );
      const nonce = Math.max(Number(rows[0]!.next_nonce), wallet.chainPending);
      const signed = await sign(nonce);
      await tx.query(
        `UPDATE relay_commands SET status = 'signed', nonce = $2, raw_tx = $3, tx_hash = $4, reason = NULL, updated_at = now()
         WHERE id = $1`,
        [id, nonce, signed.raw, signed.hash],
      );
      await tx.query('UPDATE relay_nonces SET next_nonce = $3 WHERE chain_id = $1 AND address = $2', [
        wallet.chainId,
        wallet.address,
        nonce + 1,
      ]);
      return { nonce, ...signed };
    });
  }
}
