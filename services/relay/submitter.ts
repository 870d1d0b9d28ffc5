/**
 * Sends the behalf commands' contract calls from the relay wallet, crash-safe:
 * 1. a scheduled command waits until its window is open on the chain's block time (a command whose window
 *    has closed fails, naming the window);
 * 2. a pre-flight eth_estimateGas catches calls the contract would refuse (decoded custom error → failed);
 * 3. nonce allocation and the signed raw transaction are stored in one database transaction before anything
 *    is broadcast, so a command owns exactly one transaction;
 * 4. the stored transaction is (re-)broadcast until its receipt is seen; after a restart the chain is asked
 *    first (receipt by hash, or the nonce already used), never a second transaction signed.
 * One submitter per wallet sends at a time (a PostgreSQL advisory lock); others stand by.
 */
import { Transaction, type JsonRpcProvider, type TransactionReceipt, type Wallet } from 'ethers';
import type { Pool, PoolClient } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import { callDataOf } from './call-data.js';
import { resolveGasPrice } from './gas-price.js';
import { contractRevertOf } from './revert-reason.js';
import type { CommandRow, CommandStore } from './store.js';
import { callWindow, describeWindow } from './windows.js';

/** Extra gas over the estimate: the state can move a little between estimate and inclusion. */
const GAS_LIMIT_PERCENT = 130n;

export interface SubmitterOptions {
  pool: Pool;
  store: CommandStore;
  provider: JsonRpcProvider;
  wallet: Wallet;
  contractAddr: string;
  chainId: number;
  systemChainId: string;
  pollIntervalMs: number;
  maxGasPriceWei?: bigint;
  /** Called when a command reaches its final status. */
  onSettled?: (action: CommandRow['action'], outcome: 'confirmed' | 'failed') => void;
  log: Logger;
}

export interface SubmitterState {
  /** The node answered and reports the configured chain id. */
  chainOk: boolean;
  /** This process holds the wallet lock and sends. */
  active: boolean;
  lastError?: string;
}

export class Submitter {
  private stopped = false;
  private running?: Promise<void>;
  private wakeUp?: () => void;
  private lockClient?: PoolClient;
  private chainChecked = false;
  private passes: Promise<void> = Promise.resolve();
  readonly state: SubmitterState = { chainOk: false, active: false };

  constructor(private readonly options: SubmitterOptions) {}

  start(): void {
    this.running = this.loop();
  }

  /** Look again now (a command was scheduled). */
  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    // Unlock explicitly: the server notices a closed connection a little later, and a standby should not wait.
    await this.lockClient?.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    this.dropLockClient();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.tick();
      } catch (error) {
        this.state.lastError = (error as Error).message;
        this.options.log.warn({ err: (error as Error).message }, 'relay submitter pass failed; retrying');
      }
      if (this.stopped) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollIntervalMs);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** One pass over the open commands; passes never overlap (tests may call it beside the loop). */
  tick(): Promise<void> {
    const pass = this.passes.then(() => this.pass());
    this.passes = pass.catch(() => undefined);
    return pass;
  }

  private async pass(): Promise<void> {
    if (!(await this.holdWalletLock())) return;
    if (!(await this.checkChain())) return;
    for (const row of await this.options.store.open(this.options.systemChainId)) {
      if (this.stopped) return;
      try {
        if (row.status === 'scheduled') await this.send(row);
        else await this.follow(row);
      } catch (error) {
        // Network trouble and the like: retried on the next pass; the window check ends hopeless ones.
        const problem = (error as Error).message.slice(0, 500);
        this.state.lastError = problem;
        await this.options.store.noteAttempt(row.id, `retrying after: ${problem}`);
        this.options.log.warn({ command: row.id, err: problem }, 'relay command step failed; will retry');
      }
    }
  }

  private async holdWalletLock(): Promise<boolean> {
    if (this.lockClient === undefined) {
      const client = await this.options.pool.connect();
      client.on('error', () => {
        // The session (and with it the lock) is gone; take a new one on the next pass.
        if (this.lockClient === client) this.dropLockClient();
      });
      this.lockClient = client;
    }
    const client = this.lockClient;
    try {
      const { rows } = await client.query<{ locked: boolean }>(
        `SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked`,
        [`otmoic:relay-wallet:${this.options.chainId}:${this.options.wallet.address}`],
      );
      this.state.active = rows[0]!.locked;
      return this.state.active;
    } catch (error) {
      this.dropLockClient();
      throw error;
    }
  }

  /** Closes the lock's connection (a session lock would outlive a plain release back to the pool). */
  private dropLockClient(): void {
    const client = this.lockClient;
    this.lockClient = undefined;
    this.state.active = false;
    client?.release(true);
  }

  /** Signing for the wrong chain would be refused at best; the node must report the configured chain id. */
  private async checkChain(): Promise<boolean> {
    try {
      const reported = Number(await this.options.provider.send('eth_chainId', []));
      if (reported !== this.options.chainId) {
        this.state.chainOk = false;
        this.state.lastError = `the RPC reports chain ${reported}, not relay.chainId ${this.options.chainId}; nothing is sent`;
        if (!this.chainChecked) this.options.log.error(this.state.lastError);
        this.chainChecked = true;
        return false;
      }
      this.state.chainOk = true;
      return true;
    } catch (error) {
      // Logged when the chain goes down, not on every pass; /status shows it meanwhile.
      if (this.state.chainOk || !this.chainChecked)
        this.options.log.warn(
          { err: (error as Error).message.slice(0, 200) },
          'relay chain unreachable; retrying',
        );
      this.chainChecked = true;
      this.state.chainOk = false;
      this.state.lastError = `chain unreachable: ${(error as Error).message.slice(0, 200)}`;
      return false;
    }
  }

  private async chainTime(): Promise<number> {
    const block = await this.options.provider.getBlock('latest');
    if (block === null) throw new Error('the node returned no latest block');
    return block.timestamp;
  }

  private async send(row: CommandRow): Promise<void> {
    const { provider, wallet, store, log } = this.options;
    const window = callWindow(row.action, row.command.call);
    const now = await this.chainTime();
    // The next block is later than `now`: once `now` reached the end, no block can still be inside.
    if (window.end !== null && now >= window.end) {
      await this.fail(row, `window closed: ${describeWindow(window)}; the chain is at block time ${now}`);
      log.warn({ command: row.id, now, window }, 'relay command failed: window closed');
      return;
    }
    if (now + 1 < window.start) return; // not yet: the next block could still be before the window

    const data = callDataOf(row.action, row.command.call);
    const request = { from: wallet.address, to: this.options.contractAddr, data };
    let gas: bigint;
    try {
      gas = await provider.estimateGas(request);
    } catch (error) {
      const revert = contractRevertOf(error);
      if (revert === undefined) throw error;
      // The node's pending block may still be just before the window: look again on the next pass.
      if ((revert.name === 'NotInOpWindow' || revert.name === 'NotUnlock') && now < window.start + 2) return;
      await this.fail(row, `the contract refuses the call: ${revert.reason}`);
      log.warn({ command: row.id, revert: revert.name }, 'relay command failed: contract refuses the call');
      return;
    }
    const nodeGasPrice = (await provider.getFeeData()).gasPrice;
    if (nodeGasPrice === null) throw new Error('the node reported no gas price (eth_gasPrice)');
    const gasPrice = resolveGasPrice(row.command.gasPrice, nodeGasPrice, this.options.maxGasPriceWei);
    const chainPending = await provider.getTransactionCount(wallet.address, 'pending');
    const signed = await store.signWithNextNonce(
      row.id,
      { chainId: this.options.chainId, address: wallet.address, chainPending },
      async (nonce) => {
        const raw = await wallet.signTransaction({
          type: 0,
          chainId: this.options.chainId,
          nonce,
          to: this.options.contractAddr,
          data,
          value: 0n,
          gasLimit: (gas * GAS_LIMIT_PERCENT) / 100n,
          gasPrice,
        });
        return { raw, hash: Transaction.from(raw).hash! };
      },
    );
    if (signed === undefined) return;
    log.info(
      { command: row.id, nonce: signed.nonce, tx: signed.hash, gasPrice: gasPrice.toString() },
      'relay transaction signed',
    );
    await this.follow({
      ...row,
      status: 'signed',
      nonce: signed.nonce,
      rawTx: signed.raw,
      txHash: signed.hash,
    });
  }

  /** A stored transaction: settle it from its receipt, or broadcast it (again) while its nonce is unused. */
  private async follow(row: CommandRow): Promise<void> {
    const { provider, wallet, store, log } = this.options;
    const receipt = await provider.getTransactionReceipt(row.txHash!);
    if (receipt !== null) return this.settle(row, receipt);

    const mined = await provider.getTransactionCount(wallet.address, 'latest');
    if (mined > row.nonce!) {
      // The nonce is used but not by our transaction; ask once more in case the receipt was just not indexed.
      const again = await provider.getTransactionReceipt(row.txHash!);
      if (again !== null) return this.settle(row, again);
      await this.fail(
        row,
        `nonce ${row.nonce} of the relay wallet was used by another transaction; ${row.txHash} was never mined`,
      );
      log.error({ command: row.id, nonce: row.nonce }, 'relay command failed: its nonce was used elsewhere');
      return;
    }
    try {
      await provider.broadcastTransaction(row.rawTx!);
    } catch (error) {
      // "already known" and "nonce too low" mean it is in the pool or mined: the receipt decides next pass.
      // Anything else (no funds, price refused) is shown on the command; it is re-broadcast on every pass.
      const message = (error as Error).message.slice(0, 300);
      if (!/already known|known transaction|nonce too low|nonce has already been used/i.test(message)) {
        await store.noteAttempt(row.id, `broadcast refused, retrying: ${message}`);
        log.warn({ command: row.id, err: message }, 'relay transaction broadcast refused');
      }
    }
    if (row.status === 'signed') await store.markSent(row.id);
    const settled = await provider.getTransactionReceipt(row.txHash!);
    if (settled !== null) await this.settle(row, settled);
  }

  private async fail(row: CommandRow, reason: string): Promise<void> {
    await this.options.store.fail(row.id, reason);
    this.options.onSettled?.(row.action, 'failed');
  }

  private async settle(row: CommandRow, receipt: TransactionReceipt): Promise<void> {
    const { store, log, provider } = this.options;
    if (receipt.status === 1) {
      await store.settle(row.id, { status: 'confirmed', blockNumber: receipt.blockNumber });
      this.options.onSettled?.(row.action, 'confirmed');
      log.info({ command: row.id, tx: receipt.hash, block: receipt.blockNumber }, 'relay command confirmed');
      return;
    }
    // Replaying the call on the state at the end of its block (with that block's time) names the custom
    // error: a window that closed, or a transfer someone else settled earlier in the block.
    let reason = 'reverted on chain';
    try {
      const tx = Transaction.from(row.rawTx!);
      await provider.call({ from: tx.from!, to: tx.to!, data: tx.data, blockTag: receipt.blockNumber });
    } catch (error) {
      const revert = contractRevertOf(error);
      if (revert !== undefined) reason = `reverted on chain: ${revert.reason}`;
    }
    await store.settle(row.id, {
      status: 'failed',
      blockNumber: receipt.blockNumber,
      reason: `${reason} (tx ${receipt.hash})`,
    });
    this.options.onSettled?.(row.action, 'failed');
    log.warn({ command: row.id, tx: receipt.hash, reason }, 'relay command failed on chain');
  }
}
