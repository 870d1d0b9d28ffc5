/**
 * One wallet's crash-safe transaction sender (used by the relay, and by the Agent for complaints).
 *
 * Per job (a contract call that must happen once inside a window of block times):
 * 1. it waits until the window is open on the chain's block time; a window that has closed, or closes
 *    within `windowMarginSeconds`, fails the job before anything is signed;
 * 2. eth_estimateGas catches calls the contract refuses (decoded by `decodeRevert`) and calls that need more
 *    than `maxGasLimit`;
 * 3. the nonce and the signed transaction are stored in one database transaction before broadcast;
 * 4. the stored transaction is broadcast to every RPC endpoint until its receipt is `confirmations` blocks
 *    deep (re-checked against the block at its height: a reorged receipt is followed again);
 * 5. a transaction unmined after `bumpAfterBlocks` blocks is replaced at the same nonce with ≥ +10 % on
 *    both fee fields (never above `maxFeePerGas`), unless it waits behind an earlier unmined nonce; when its window is about to close, or the node refused it
 *    `maxRefusals` times, the nonce is freed by a 0-value self-transfer: every transaction of a job shares
 *    one nonce, so at most one of them is ever mined, and later jobs never wait behind a dead nonce.
 * After a restart the stored attempts are asked for first (receipts, the nonce already used); nothing that
 * could conflict is ever signed. One sender per wallet works at a time (a PostgreSQL advisory lock).
 */
import { Transaction, type TransactionReceipt, type Wallet } from 'ethers';
import type { Pool, PoolClient } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import { callFails, classifyBroadcastError } from './broadcast-errors.js';
import { bumpedFee, initialFee, loadFee, storeFee, type Fee, type Market } from './fees.js';
import type { RpcPool } from './rpc.js';
import type { SenderJob, SenderStore, SignedAttempt } from './types.js';

export interface SenderCaps {
  /** Most wei per gas any transaction may offer (maxFeePerGas, or gasPrice on a legacy chain). */
  maxFeePerGas: bigint;
  /** Most gas any transaction may use: a call estimated above it is refused, never sent. */
  maxGasLimit: bigint;
}

export interface SenderOptions {
  pool: Pool;
  store: SenderStore;
  rpc: RpcPool;
  /** The signing key (no provider needed: every chain call goes through `rpc`). */
  wallet: Wallet;
  chainId: number;
  pollIntervalMs: number;
  caps: SenderCaps;
  /** Blocks a receipt must be deep (1 = mined) before the job is confirmed. */
  confirmations: number;
  /** Seconds before a window's end from which nothing is sent and a pending call is cancelled. */
  windowMarginSeconds: number;
  /** Blocks a transaction may stay unmined before it is replaced with a higher fee. */
  bumpAfterBlocks: number;
  /** Outright refusals of a broadcast after which the nonce is freed. */
  maxRefusals: number;
  /** Extra gas over the estimate, in percent (the state moves between estimate and inclusion). */
  gasLimitPercent?: bigint;
  /** Names a contract's custom error in an estimate or replay failure. */
  decodeRevert?: (error: unknown) => { name: string; reason: string } | undefined;
  /** A revert that only means "not yet" (the node's pending block may be just before the window). */
  notYet?: (revertName: string, now: number, job: SenderJob) => boolean;
  /** Called when a job reaches its final status; `missed` = its window closed before it could be made. */
  onSettled?: (job: SenderJob, outcome: 'confirmed' | 'failed' | 'missed') => void;
  scrub: (text: string) => string;
  log: Logger;
}

export interface SenderState {
  /** The node answered and reports the configured chain id. */
  chainOk: boolean;
  /** This process holds the wallet lock and sends. */
  active: boolean;
  lastError?: string;
  /** The wallet's balance at the last pass (wei, decimal string). */
  balanceWei?: string;
  /** Wall-clock ms when the oldest still unconfirmed transaction was first signed. */
  oldestUnconfirmedSinceMs?: number;
}

interface Head {
  number: number;
  timestamp: number;
  baseFeePerGas: bigint | null;
}

const CANCEL_GAS = 21_000n;

export class Sender {
  private stopped = false;
  private running?: Promise<void>;
  private wakeUp?: () => void;
  private lockClient?: PoolClient;
  private chainChecked = false;
  private passes: Promise<void> = Promise.resolve();
  /** Per job id, the (lower-case) address that signed its transactions (recovered once from the raw one). */
  private readonly signers = new Map<string, string>();
  /** Jobs of another wallet already logged and noted by this process. */
  private readonly foreignTold = new Set<string>();
  readonly state: SenderState = { chainOk: false, active: false };

  constructor(private readonly options: SenderOptions) {}

  get address(): string {
    return this.options.wallet.address;
  }

  start(): void {
    this.running = this.loop();
  }

  /** Look again now (a job was scheduled). */
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
        this.problem('sender pass failed; retrying', error);
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

  /** One pass over the open jobs; passes never overlap (tests may call it beside the loop). */
  tick(): Promise<void> {
    const pass = this.passes.then(() => this.pass());
    this.passes = pass.catch(() => undefined);
    return pass;
  }

  private text(error: unknown): string {
    return this.options.scrub(error instanceof Error ? error.message : String(error)).slice(0, 500);
  }

  private problem(message: string, error: unknown, extra: Record<string, unknown> = {}): string {
    const text = this.text(error);
    this.state.lastError = text;
    this.options.log.warn({ ...extra, err: text }, message);
    return text;
  }

  private async pass(): Promise<void> {
    if (!(await this.holdWalletLock())) {
      // Standby: another process sends, and tells. A figure kept from when this one sent would grow for ever.
      this.state.oldestUnconfirmedSinceMs = undefined;
      return;
    }
    if (!(await this.checkChain())) return;
    const head = await this.head();
    const jobs = await this.options.store.open();
    await this.observeWallet(jobs);
    for (const job of jobs) {
      if (this.stopped) return;
      try {
        if (job.status === 'scheduled') await this.send(job, head);
        else await this.follow(job, head);
      } catch (error) {
        // Network trouble and the like: retried on the next pass; the window check ends hopeless ones.
        const problem = this.problem('sender job step failed; will retry', error, { job: job.id });
        await this.options.store.note(job.id, `retrying after: ${problem}`);
      }
    }
  }

  private async observeWallet(jobs: SenderJob[]): Promise<void> {
    const { rpc, wallet } = this.options;
    try {
      this.state.balanceWei = (await rpc.read((p) => p.getBalance(wallet.address))).toString();
    } catch {
      // shown through lastError of the next failing call; the gauge keeps its last value
    }
    const signed = jobs.filter((j) => j.attempts.length > 0).map((j) => j.attempts[0]!.signedAtMs);
    this.state.oldestUnconfirmedSinceMs = signed.length > 0 ? Math.min(...signed) : undefined;
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
        [`otmoic:sender-wallet:${this.options.chainId}:${this.options.wallet.address}`],
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
    this.state.oldestUnconfirmedSinceMs = undefined;
    client?.release(true);
  }

  /** Signing for the wrong chain would be refused at best; the node must report the configured chain id. */
  private async checkChain(): Promise<boolean> {
    try {
      const reported = Number(await this.options.rpc.read((p) => p.send('eth_chainId', [])));
      if (reported !== this.options.chainId) {
        this.state.chainOk = false;
        this.state.lastError = `the RPC reports chain ${reported}, not the configured chain ${this.options.chainId}; nothing is sent`;
        if (!this.chainChecked) this.options.log.error(this.state.lastError);
        this.chainChecked = true;
        return false;
      }
      this.state.chainOk = true;
      return true;
    } catch (error) {
      const text = this.text(error);
      // Logged when the chain goes down, not on every pass; /status shows it meanwhile.
      if (this.state.chainOk || !this.chainChecked)
        this.options.log.warn({ err: text }, 'chain unreachable; retrying');
      this.chainChecked = true;
      this.state.chainOk = false;
      this.state.lastError = `chain unreachable: ${text}`;
      return false;
    }
  }

  private async head(): Promise<Head> {
    const block = await this.options.rpc.read((p) => p.getBlock('latest'));
    if (block === null) throw new Error('the node returned no latest block');
    return { number: block.number, timestamp: block.timestamp, baseFeePerGas: block.baseFeePerGas };
  }

  private async market(head: Head): Promise<Market> {
    const { rpc } = this.options;
    const gasPrice = BigInt(await rpc.read((p) => p.send('eth_gasPrice', [])));
    if (head.baseFeePerGas === null) return { baseFeePerGas: null, priorityFeePerGas: gasPrice, gasPrice };
    let tip: bigint;
    try {
      tip = BigInt(await rpc.read((p) => p.send('eth_maxPriorityFeePerGas', [])));
    } catch {
      tip = gasPrice > head.baseFeePerGas ? gasPrice - head.baseFeePerGas : 1_000_000_000n;
    }
    return { baseFeePerGas: head.baseFeePerGas, priorityFeePerGas: tip, gasPrice };
  }

  private closing(job: SenderJob, head: Head): boolean {
    return job.window.end !== null && head.timestamp >= job.window.end - this.options.windowMarginSeconds;
  }

  private async send(job: SenderJob, head: Head): Promise<void> {
    const { rpc, wallet, store, log, caps } = this.options;
    const now = head.timestamp;
    if (job.window.end !== null && now >= job.window.end) {
      return this.fail(job, `window closed: ${job.windowText}; the chain is at block time ${now}`, 'missed');
    }
    if (this.closing(job, head)) {
      return this.fail(
        job,
        `window closing: ${job.windowText}, less than the ${this.options.windowMarginSeconds} s safety margin away; the chain is at block time ${now}`,
        'missed',
      );
    }
    if (now + 1 < job.window.start) return; // not yet: the next block could still be before the window

    // Estimated within the cap: a call that needs more fails here, and a gas-burning callee cannot make the
    // node search up to the block gas limit on every pass.
    const request = {
      from: wallet.address,
      to: job.call.to,
      data: job.call.data,
      value: job.call.value,
      gasLimit: caps.maxGasLimit,
    };
    let estimate: bigint;
    try {
      estimate = await rpc.read((p) => p.estimateGas(request));
    } catch (error) {
      const original = (error as { original?: unknown }).original ?? error;
      const revert = this.options.decodeRevert?.(original);
      if (revert !== undefined && this.options.notYet?.(revert.name, now, job)) return;
      const within = `within the cap of ${caps.maxGasLimit} gas per transaction`;
      if (revert !== undefined)
        return this.fail(job, `the contract refuses the call ${within}: ${revert.reason}; nothing was sent`);
      if (callFails(original))
        return this.fail(
          job,
          `the call fails ${within} (out of gas, or a revert without data); nothing was sent`,
        );
      // A node's trouble (a missing header, a rate limit), which ethers labels CALL_EXCEPTION too: the next
      // pass estimates again.
      throw error;
    }
    if (estimate > caps.maxGasLimit) {
      return this.fail(
        job,
        `the call needs ${estimate} gas, above the cap of ${caps.maxGasLimit} gas per transaction; nothing was sent`,
      );
    }
    const withMargin = (estimate * (this.options.gasLimitPercent ?? 130n)) / 100n;
    const gasLimit = withMargin > caps.maxGasLimit ? caps.maxGasLimit : withMargin;
    const fee = initialFee(await this.market(head), job.strategy, caps.maxFeePerGas);
    const chainLatest = await rpc.read((p) => p.getTransactionCount(wallet.address, 'latest'));
    const signed = await store.signFirst(
      job.id,
      { chainId: this.options.chainId, address: wallet.address, chainLatest },
      (nonce) => this.sign('call', job, nonce, fee, gasLimit, head),
    );
    if (signed === undefined) return;
    log.info(
      { job: job.id, nonce: signed.nonce, tx: signed.attempt.hash, gasLimit: gasLimit.toString() },
      'transaction signed',
    );
    await this.follow(
      { ...job, status: 'signed', nonce: signed.nonce, attempts: [signed.attempt] },
      head,
      true,
    );
  }

  private async sign(
    kind: 'call' | 'cancel',
    job: SenderJob,
    nonce: number,
    fee: Fee,
    gasLimit: bigint,
    head: Head,
  ): Promise<SignedAttempt> {
    const { wallet, chainId } = this.options;
    const body =
      kind === 'call'
        ? { to: job.call.to, data: job.call.data, value: job.call.value }
        : { to: wallet.address, data: '0x', value: 0n };
    const raw = await wallet.signTransaction({ ...body, chainId, nonce, gasLimit, ...fee });
    return {
      kind,
      hash: Transaction.from(raw).hash!,
      raw,
      fee: storeFee(fee),
      gasLimit: gasLimit.toString(),
      signedAtBlock: head.number,
      signedAtMs: Date.now(),
    };
  }

  /** Receipt of any attempt of the job (at most one can exist: they share a nonce). */
  private async findReceipt(
    job: SenderJob,
  ): Promise<{ attempt: SignedAttempt; receipt: TransactionReceipt } | undefined> {
    for (const attempt of [...job.attempts].reverse()) {
      const receipt = await this.options.rpc.read((p) => p.getTransactionReceipt(attempt.hash));
      if (receipt !== null) return { attempt, receipt };
    }
    return undefined;
  }

  /** The address that signed a job's transactions (another wallet's when the key changed in flight). */
  private signerOf(job: SenderJob): string {
    let signer = this.signers.get(job.id);
    if (signer === undefined) {
      signer = Transaction.from(job.attempts[0]!.raw).from!.toLowerCase();
      if (this.signers.size >= 10_000) this.signers.delete(this.signers.keys().next().value!);
      this.signers.set(job.id, signer);
    }
    return signer;
  }

  /** A job with stored transactions: settle from a receipt, replace, or broadcast (again). */
  private async follow(job: SenderJob, head: Head, fresh = false): Promise<void> {
    const { rpc, wallet, store, log } = this.options;
    const found = fresh ? undefined : await this.findReceipt(job);
    if (found !== undefined) return this.onReceipt(job, found, head);
    if (job.minedBlock !== null) {
      log.warn(
        { job: job.id, block: job.minedBlock },
        'receipt gone after a reorg; following the nonce again',
      );
      await store.setMinedBlock(job.id, null);
    }
    // Signed by another key (the service restarted with a new one while the job was in flight): its nonce is
    // the other wallet's, so it is only followed, never replaced or cancelled. Signing at it with this key
    // would send a second transaction for one job, and the other wallet's could still be mined.
    const signer = this.signerOf(job);
    const ours = signer === wallet.address.toLowerCase();

    const mined = await rpc.read((p) => p.getTransactionCount(signer, 'latest'));
    if (mined > job.nonce!) {
      // The nonce is used; ask once more in case the receipt was just not indexed.
      const again = await this.findReceipt(job);
      if (again !== undefined) return this.onReceipt(job, again, head);
      log.error({ job: job.id, nonce: job.nonce }, 'nonce used by a transaction this job did not sign');
      const whose = ours ? 'of the wallet' : `of ${signer}, which signed this job before the key changed,`;
      return this.fail(
        job,
        `nonce ${job.nonce} ${whose} was used by another transaction; none of this job's ${job.attempts.length} transaction(s) was mined`,
      );
    }

    let latest = job.attempts.at(-1)!;
    if (!ours) {
      if (!this.foreignTold.has(job.id)) {
        this.foreignTold.add(job.id);
        log.warn(
          { job: job.id, signer, nonce: job.nonce },
          'job signed by another wallet: followed, never replaced',
        );
        await store.note(
          job.id,
          `signed by ${signer}, not this service's wallet (its key changed while the job was in flight): followed, never replaced`,
        );
      }
    } else {
      const replacement = await this.replacementFor(job, latest, head, mined);
      if (replacement !== undefined) {
        const stored = await store.addAttempt(
          job.id,
          job.attempts.length,
          replacement.attempt,
          replacement.reason,
        );
        if (!stored) return; // another pass moved the job
        log.info(
          { job: job.id, nonce: job.nonce, tx: replacement.attempt.hash, kind: replacement.attempt.kind },
          replacement.attempt.kind === 'cancel' ? 'freeing the nonce with a self-transfer' : 'speeding up',
        );
        latest = replacement.attempt;
      }
    }

    try {
      await rpc.broadcast(latest.raw);
    } catch (error) {
      const message = this.text(error);
      const outcome = classifyBroadcastError(message);
      if (outcome !== 'known') {
        await store.note(job.id, `broadcast ${outcome}, retrying: ${message}`, outcome === 'refused');
        log.warn({ job: job.id, err: message, outcome }, 'broadcast not taken');
      }
    }
    if (job.status === 'signed') await store.markSent(job.id);
  }

  /**
   * A replacement to store and broadcast now, if the latest attempt must be sped up or cancelled. `mined`: the
   * wallet's mined transaction count. A transaction behind an earlier unmined nonce is not sped up: it cannot
   * mine before that one whatever it offers, and would then pay the raised fee for nothing. Once the earlier
   * one mines it is stuck by the same count of blocks, so it is sped up on the next pass if it still must be.
   */
  private async replacementFor(
    job: SenderJob,
    latest: SignedAttempt,
    head: Head,
    mined: number,
  ): Promise<{ attempt: SignedAttempt; reason?: string } | undefined> {
    const { caps, maxRefusals, bumpAfterBlocks } = this.options;
    const closing = this.closing(job, head);
    const refused = job.refusals >= maxRefusals;
    const cancelling = latest.kind === 'call' && (closing || refused);
    const stuck = head.number - latest.signedAtBlock >= bumpAfterBlocks && mined === job.nonce;
    if (!cancelling && !stuck) return undefined;

    const market = await this.market(head);
    const fresh = initialFee(market, { percent: 100n }, caps.maxFeePerGas);
    const fee = bumpedFee(loadFee(latest.fee), fresh, caps.maxFeePerGas);
    if (cancelling) {
      // A refused call may never have reached a pool: then any fee does; otherwise it must be outbid.
      const cancelFee = fee ?? (refused ? fresh : undefined);
      if (cancelFee === undefined) {
        await this.options.store.note(job.id, 'cannot outbid the pending call within maxFeePerGas; waiting');
        return undefined;
      }
      const why = closing
        ? `window closing: ${job.windowText}; the chain is at block time ${head.timestamp}`
        : `the node refused the transaction ${job.refusals} times`;
      return {
        attempt: await this.sign('cancel', job, job.nonce!, cancelFee, CANCEL_GAS, head),
        reason: `nonce ${job.nonce} freed by a 0-value self-transfer: ${why}`,
      };
    }
    if (fee === undefined) return undefined; // at the cap already: keep broadcasting what we have
    // Signed under a higher gas cap than the one configured now (lowered since, and restarted): a faster copy
    // at that gas limit would pay past the cap, so what was signed is broadcast as it is.
    if (BigInt(latest.gasLimit) > caps.maxGasLimit) {
      await this.options.store.note(
        job.id,
        `not sped up: its gas limit ${latest.gasLimit} is above the configured maxGasLimit ${caps.maxGasLimit}`,
      );
      return undefined;
    }
    return { attempt: await this.sign(latest.kind, job, job.nonce!, fee, BigInt(latest.gasLimit), head) };
  }

  private async onReceipt(
    job: SenderJob,
    found: { attempt: SignedAttempt; receipt: TransactionReceipt },
    head: Head,
  ): Promise<void> {
    const { rpc, store, log } = this.options;
    const { attempt, receipt } = found;
    const depth = head.number - receipt.blockNumber + 1;
    if (depth < this.options.confirmations) {
      if (job.minedBlock !== receipt.blockNumber) await store.setMinedBlock(job.id, receipt.blockNumber);
      if (job.status === 'signed') await store.markSent(job.id);
      return;
    }
    // Reorg re-check: the block at the receipt's height must still be the receipt's block.
    const block = await rpc.read((p) => p.getBlock(receipt.blockNumber));
    if (block === null || block.hash !== receipt.blockHash) {
      log.warn({ job: job.id, block: receipt.blockNumber }, 'receipt block reorged away; looking again');
      await store.setMinedBlock(job.id, null);
      return;
    }
    if (attempt.kind === 'cancel') {
      const missed =
        job.window.end !== null && block.timestamp >= job.window.end - this.options.windowMarginSeconds;
      await store.finish(job.id, {
        status: 'failed',
        blockNumber: receipt.blockNumber,
        txHash: receipt.hash,
        reason: `${(await this.reasonOf(job)) ?? 'the call was not made'}; the self-transfer ${receipt.hash} used the nonce`,
      });
      this.options.onSettled?.(job, missed ? 'missed' : 'failed');
      log.warn({ job: job.id, tx: receipt.hash }, 'job failed: its nonce was freed');
      return;
    }
    if (receipt.status === 1) {
      await store.finish(job.id, {
        status: 'confirmed',
        blockNumber: receipt.blockNumber,
        txHash: receipt.hash,
      });
      this.options.onSettled?.(job, 'confirmed');
      log.info({ job: job.id, tx: receipt.hash, block: receipt.blockNumber }, 'job confirmed');
      return;
    }
    // Replaying the call at its block names the custom error (a window that closed, a transfer settled first).
    let reason = 'reverted on chain';
    try {
      await rpc.read((p) =>
        p.call({
          from: this.options.wallet.address,
          to: job.call.to,
          data: job.call.data,
          value: job.call.value,
          blockTag: receipt.blockNumber,
        }),
      );
    } catch (error) {
      const revert = this.options.decodeRevert?.((error as { original?: unknown }).original ?? error);
      if (revert !== undefined) reason = `reverted on chain: ${revert.reason}`;
    }
    await store.finish(job.id, {
      status: 'failed',
      blockNumber: receipt.blockNumber,
      txHash: receipt.hash,
      reason: `${reason} (tx ${receipt.hash})`,
    });
    this.options.onSettled?.(job, 'failed');
    log.warn({ job: job.id, tx: receipt.hash, reason }, 'job failed on chain');
  }

  /** The cancel's reason as stored on the job (set when the cancel was stored). */
  private async reasonOf(job: SenderJob): Promise<string | undefined> {
    return job.cancelReason ?? undefined;
  }

  private async fail(job: SenderJob, reason: string, outcome: 'failed' | 'missed' = 'failed'): Promise<void> {
    const text = this.options.scrub(reason);
    await this.options.store.finish(job.id, { status: 'failed', reason: text });
    this.options.onSettled?.(job, outcome);
    this.options.log.warn({ job: job.id, reason: text }, 'job failed');
  }
}
