/**
 * One wallet's crash-safe transaction sender (used by the relay, and by the Agent for complaints).
 *
 * Per job (a contract call that must happen once inside a window of block times):
 * 1. it waits until the window is open on the chain's block time; a window that has closed, or closes
 *    within `windowMarginSeconds`, fails the job before anything is signed;
 * 2. eth_estimateGas catches calls the contract refuses (decoded by `decodeRevert`) and calls that need more
 *    than `maxGasLimit`;
 * 3. the nonce and the signed transaction are stored in one database transaction before broadcast, at a fee
 *    the wallet's balance covers beside its other unmined transactions (else the job waits unsigned);
 * 4. the stored transaction is broadcast to every RPC endpoint until its receipt is `confirmations` blocks
 *    deep (re-checked against the block at its height: a reorged receipt is followed again);
 * 5. a transaction unmined after `bumpAfterBlocks` blocks is replaced at the same nonce with ≥ +10 % on
 *    both fee fields (never above `maxFeePerGas`), unless it waits behind an earlier unmined nonce; a call is
 *    first replayed on the head block (eth_call), and one that would revert now (someone else settled it
 *    meanwhile) is not sped up. Then, or when its window is about to close, or the node refused it
 *    `maxRefusals` times, the nonce is freed by a 0-value self-transfer: every transaction of a job shares
 *    one nonce, so at most one of them is ever mined, and later jobs never wait behind a dead nonce.
 * After a restart the stored attempts are asked for first (receipts, the nonce already used); nothing that
 * could conflict is ever signed. One sender per wallet works at a time (a PostgreSQL advisory lock).
 * A stop that cuts an RPC call off (RpcPool's stop signal) ends the pass where it is: nothing is failed, noted
 * or counted as a refusal for it, and the job is taken up where it stood after the restart.
 */
import { Transaction, type TransactionReceipt, type Wallet } from 'ethers';
import type { Pool, PoolClient } from '../db/pool.js';
import { SessionLock } from '../db/session-lock.js';
import { errorText } from '../logging/error-text.js';
import type { Logger } from '../logging/logger.js';
import { shownHealthError } from '../runtime/http.js';
import { callFails, classifyBroadcastError } from './broadcast-errors.js';
import {
  bumpedFee,
  cappedFee,
  feePerGas,
  initialFee,
  loadFee,
  MARKET,
  maxCost,
  perGasWithin,
  storeFee,
  type Fee,
  type Market,
} from './fees.js';
import { RpcError, stoppedCall, type RpcPool } from './rpc.js';
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

/** A plain transfer's gas on most chains: what a self-transfer freeing a nonce needs there (cancelGas). */
const CANCEL_GAS = 21_000n;
/** Within a pass, the head is read again before a job once it is older than this. */
const HEAD_MAX_AGE_MS = 1_000;
/**
 * Blocks the wallet's mined count must stay past a job's nonce, with none of the job's receipts found, before
 * the job is failed as "nonce used by another transaction": behind a load balancer, the count may come from a
 * node that has the block and the receipt lookups from one that has not yet.
 */
const NONCE_USED_GRACE_BLOCKS = 3;
const min = (a: bigint, b: bigint) => (a < b ? a : b);
/** Per-job memos of one process are bounded: the oldest entry goes when a new one would pass this. */
const MEMO_LIMIT = 10_000;
const makeRoom = (memo: Map<string, unknown> | Set<string>, key: string): void => {
  if (memo.size >= MEMO_LIMIT && !memo.has(key)) memo.delete(memo.keys().next().value!);
};
/** Blocks since `block` first saw what `memo` remembers under `key` (0, and remembered, the first time). */
const blocksSinceFirstSeen = (memo: Map<string, number>, key: string, block: number): number => {
  const since = memo.get(key) ?? block;
  makeRoom(memo, key);
  memo.set(key, since);
  return block - since;
};

/**
 * A database driver's error: the server's (a SQLSTATE's severity) or the socket's (a syscall). A host with two
 * addresses (localhost: ::1 and 127.0.0.1) fails with an AggregateError of the sockets' errors, with no syscall.
 */
const fromDriver = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  (typeof (error as { severity?: unknown }).severity === 'string' ||
    typeof (error as { syscall?: unknown }).syscall === 'string' ||
    (error instanceof AggregateError && error.errors.some(fromDriver)));

/**
 * What the wallet can pay, per pass: its balance at the pass's head block, and the most each job's unmined
 * transaction may still cost (gas limit × max fee + value of its latest attempt). A node refuses a transaction
 * whose cost, with the wallet's other pending ones, exceeds the balance (geth: "insufficient funds"), a
 * replacement included (its own job's earlier attempt does not count then).
 */
interface Funds {
  block: number;
  balance: bigint;
  reserved: Map<string, bigint>;
}

export class Sender {
  private stopped = false;
  private running?: Promise<void>;
  private wakeUp?: () => void;
  /** One sender per (chain id, wallet) sends: the others stand by. */
  private readonly walletLock: SessionLock;
  private chainChecked = false;
  private passes: Promise<void> = Promise.resolve();
  /**
   * Per job's first transaction hash, the (lower-case) address that signed the job's transactions (recovered
   * once from the raw one: a recovery costs milliseconds, and is asked twice per job and pass). Not per job id:
   * a job its owner re-opens is signed afresh, by this wallet, which may not be the one that signed it before.
   */
  private readonly signers = new Map<string, string>();
  /** Jobs of another wallet already logged and noted by this process. */
  private readonly foreignTold = new Set<string>();
  /** This pass's view of the wallet's balance (undefined: it could not be read, and nothing new is signed). */
  private funds?: Funds;
  /**
   * Per job's first transaction hash (as `signers`: a re-opened job's new nonce gets its own grace): the head
   * block at which its nonce was first seen used with none of its receipts found. Dropped on a receipt, and when
   * the count shows the nonce free again.
   */
  private readonly nonceUsedSince = new Map<string, number>();
  /**
   * Per job's first transaction hash, for a job another wallet signed: the head block at which its window was
   * first seen closed with its nonce unused (see `follow`).
   */
  private readonly foreignPastWindowSince = new Map<string, number>();
  /** Jobs whose wait for funds was logged and noted (once per wait: see `waitForFunds`). */
  private readonly unfundedTold = new Set<string>();
  readonly state: SenderState = { chainOk: false, active: false };

  constructor(private readonly options: SenderOptions) {
    this.walletLock = new SessionLock(
      options.pool,
      `otmoic:sender-wallet:${options.chainId}:${options.wallet.address}`,
    );
  }

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
    await this.walletLock.release();
    this.standDown();
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

  /**
   * One pass over the open jobs; passes never overlap (tests may call it beside the loop). A pass the stop cut
   * off (an RPC call aborted) just ends.
   */
  tick(): Promise<void> {
    const pass = this.passes
      .then(() => this.pass())
      .catch((error: unknown) => {
        if (!this.halted(error)) throw error;
      });
    this.passes = pass.catch(() => undefined);
    return pass;
  }

  /**
   * The RPC pool is stopped (the process stops): `error` says nothing of the job or the chain, and the pass
   * ends without recording it.
   */
  private halted(error?: unknown): boolean {
    return this.options.rpc.stopped === true || (error !== undefined && stoppedCall(error));
  }

  /** An error's text for the log: scrubbed of the RPC endpoints' URLs. */
  private logged(error: unknown): string {
    return this.options.scrub(errorText(error)).slice(0, 500);
  }

  /**
   * An error's text for what clients read: the jobs' notes (the relay's and the Agent's status routes) and
   * `state.lastError` (their /status and /health). A database driver's message names hosts, ports and users
   * ("connect ECONNREFUSED 10.0.0.5:5432", 'password authentication failed for user "…"'): only its code is
   * shown, the log has it whole. The RPC's errors (RpcError, scrubbed) and the sender's own are shown.
   */
  private text(error: unknown): string {
    return !(error instanceof RpcError) && fromDriver(error) ? shownHealthError(error) : this.logged(error);
  }

  private problem(message: string, error: unknown, extra: Record<string, unknown> = {}): string {
    const text = this.text(error);
    this.state.lastError = text;
    this.options.log.warn({ ...extra, err: this.logged(error) }, message);
    return text;
  }

  private async pass(): Promise<void> {
    // Standby: another process sends, and tells.
    if (!(await this.holdWalletLock())) return this.standDown();
    if (!(await this.checkChain())) return;
    let head = await this.head();
    let headReadAt = Date.now();
    const jobs = await this.options.store.open();
    await this.observeWallet(jobs, head);
    for (const job of jobs) {
      if (this.stopped || this.halted()) return;
      try {
        // Windows are judged on the chain's time: after the jobs before this one (up to 100), the pass's head
        // may be old (a speed-up signed where a closing window wants the nonce freed).
        if (Date.now() - headReadAt > HEAD_MAX_AGE_MS) {
          head = await this.head();
          headReadAt = Date.now();
        }
        if (job.status === 'scheduled') await this.send(job, head);
        else await this.follow(job, head);
      } catch (error) {
        // Cut off by the stop: the job stays as it is, taken up after the restart.
        if (this.halted(error)) return;
        // Network trouble and the like: retried on the next pass; the window check ends hopeless ones.
        const problem = this.problem('sender job step failed; will retry', error, { job: job.id });
        await this.options.store.note(job.id, `retrying after: ${problem}`);
      }
    }
  }

  private async observeWallet(jobs: SenderJob[], head: Head): Promise<void> {
    const { rpc, wallet } = this.options;
    this.funds = undefined;
    try {
      // At the head's block: a receipt at or below it is in this balance (see `settled`). A load-balanced
      // endpoint may answer from a node that has not seen that block yet ("header not found"): then at
      // 'latest', which can only be later, so a transaction mined since stays reserved and is paid twice in
      // the sum: a lower budget, never a higher one.
      const balance = await rpc
        .read((p) => p.getBalance(wallet.address, head.number))
        .catch(() => rpc.read((p) => p.getBalance(wallet.address, 'latest')));
      this.state.balanceWei = balance.toString();
      const reserved = new Map<string, bigint>();
      for (const job of jobs) {
        if (job.attempts.length === 0 || job.minedBlock !== null) continue;
        if (this.signerOf(job) !== wallet.address.toLowerCase()) continue; // another wallet's funds
        reserved.set(job.id, this.costOf(job, job.attempts.at(-1)!));
      }
      this.funds = { block: head.number, balance, reserved };
    } catch {
      // shown through lastError of the next failing call; the gauge keeps its last value
    }
    const signed = jobs.filter((j) => j.attempts.length > 0).map((j) => j.attempts[0]!.signedAtMs);
    this.state.oldestUnconfirmedSinceMs = signed.length > 0 ? Math.min(...signed) : undefined;
  }

  /** The most `attempt` of `job` can cost the wallet: gas limit × max fee, plus the call's value. */
  private costOf(job: SenderJob, attempt: SignedAttempt): bigint {
    const value = attempt.kind === 'call' ? job.call.value : 0n;
    return maxCost(loadFee(attempt.fee), BigInt(attempt.gasLimit)) + value;
  }

  /**
   * The most wei per gas a transaction of `job` with `gasLimit` and `value` may offer so that the wallet can
   * pay it beside its other unmined transactions; undefined when the balance is unknown this pass (then
   * nothing new is signed, see `send`, and what is signed is followed as before).
   */
  private balanceCap(job: SenderJob, gasLimit: bigint, value: bigint): bigint | undefined {
    if (this.funds === undefined) return undefined;
    return perGasWithin(this.funds.balance - value - this.reservedByOthers(job), gasLimit);
  }

  /** What the wallet's unmined transactions of other jobs than `job` may still cost (this pass's view). */
  private reservedByOthers(job: SenderJob): bigint {
    let sum = 0n;
    for (const [id, cost] of this.funds?.reserved ?? []) if (id !== job.id) sum += cost;
    return sum;
  }

  /** The fee cap of a transaction: maxFeePerGas, lowered to what the wallet can pay (`payable`: balanceCap). */
  private feeCap(payable: bigint | undefined): bigint {
    const cap = this.options.caps.maxFeePerGas;
    return payable === undefined ? cap : min(cap, payable);
  }

  /** A job's transaction was signed or replaced: what it may cost is reserved for the rest of the pass. */
  private reserve(job: SenderJob, attempt: SignedAttempt): void {
    this.funds?.reserved.set(job.id, this.costOf(job, attempt));
  }

  /** A job's transaction will cost nothing more once the balance read shows it (mined at or below its block). */
  private settled(job: SenderJob, minedAt?: number): void {
    if (this.funds === undefined) return;
    if (minedAt === undefined || minedAt <= this.funds.block) this.funds.reserved.delete(job.id);
  }

  private async holdWalletLock(): Promise<boolean> {
    try {
      this.state.active = await this.walletLock.hold();
    } catch (error) {
      // The session (and with it the lock) is gone; a new one is taken on the next pass.
      this.standDown();
      throw error;
    }
    return this.state.active;
  }

  /** Not sending: a figure kept from when this process sent would grow for ever (another one tells). */
  private standDown(): void {
    this.state.active = false;
    this.state.oldestUnconfirmedSinceMs = undefined;
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
      if (this.halted(error)) throw error;
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
    } catch (error) {
      if (this.halted(error)) throw error;
      tip = gasPrice > head.baseFeePerGas ? gasPrice - head.baseFeePerGas : 1_000_000_000n;
    }
    return { baseFeePerGas: head.baseFeePerGas, priorityFeePerGas: tip, gasPrice };
  }

  private closing(job: SenderJob, head: Head): boolean {
    return job.window.end !== null && head.timestamp >= job.window.end - this.options.windowMarginSeconds;
  }

  /** Fails `job` (missed) when `head` is past its window's end or inside the margin before it; says whether. */
  private async missed(job: SenderJob, head: Head): Promise<boolean> {
    const now = head.timestamp;
    // Missed for want of funds: the reason says so (the operator's fix is a top-up, not the RPC or the fee).
    const unfunded = this.unfundedTold.has(job.id)
      ? "; it was waiting for funds: the wallet's balance could not pay it at the market's fee"
      : '';
    if (job.window.end !== null && now >= job.window.end) {
      await this.fail(
        job,
        `window closed: ${job.windowText}; the chain is at block time ${now}${unfunded}`,
        'missed',
      );
      return true;
    }
    if (this.closing(job, head)) {
      await this.fail(
        job,
        `window closing: ${job.windowText}, less than the ${this.options.windowMarginSeconds} s safety margin away; the chain is at block time ${now}${unfunded}`,
        'missed',
      );
      return true;
    }
    return false;
  }

  private async send(job: SenderJob, passHead: Head): Promise<void> {
    const { rpc, wallet, store, log, caps } = this.options;
    let head = passHead;
    const now = head.timestamp;
    if (await this.missed(job, head)) return;
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
      if (this.halted(error)) throw error;
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
    const gasLimit = this.withGasMargin(estimate);
    // Never sign what the wallet cannot pay. A node refuses it ("insufficient funds"), which is no reason to give
    // it up, so it would hold the wallet's nonce and every later job would wait behind it for good: a client may
    // choose any gas price up to maxFeePerGas. So the fee is lowered to the highest the balance covers beside
    // the wallet's other unmined transactions; below the market's fee (or the strategy's own, when lower) the
    // job waits unsigned and holds no nonce, until funds come or its window closes. A fee lowered so may be
    // outrun by the market: then it is not sped up past the balance either, and when its window is about to
    // close (or the node refuses it maxRefusals times) the nonce is freed by a self-transfer, whose gas (21,000)
    // the balance covers at a far higher fee. A job without a window end waits for the market to come back, as
    // one at maxFeePerGas does.
    if (this.funds === undefined) throw new Error('the wallet balance could not be read; nothing is signed');
    const market = await this.market(head);
    const wanted = initialFee(market, job.strategy, caps.maxFeePerGas);
    const fee = cappedFee(wanted, this.feeCap(this.balanceCap(job, gasLimit, job.call.value)));
    const floor = min(feePerGas(wanted), feePerGas(initialFee(market, MARKET, caps.maxFeePerGas)));
    if (feePerGas(fee) < floor) return this.waitForFunds(job, gasLimit, floor);
    if (feePerGas(fee) < feePerGas(wanted)) {
      log.info(
        { job: job.id, wanted: feePerGas(wanted).toString(), fee: feePerGas(fee).toString() },
        "fee lowered to what the wallet's balance covers",
      );
    }
    const chainLatest = await rpc.read((p) => p.getTransactionCount(wallet.address, 'latest'));
    // The pass's head may be seconds old by now (a slow estimate, an endpoint timing out before its fallback,
    // the jobs before this one): a call signed inside the margin is mined after the window, reverts, and the
    // wallet pays. So the chain is asked again just before signing.
    if (job.window.end !== null) {
      head = await this.head();
      if (await this.missed(job, head)) return;
    }
    const signed = await store.signFirst(
      job.id,
      { chainId: this.options.chainId, address: wallet.address, chainLatest },
      (nonce) => this.sign('call', job, nonce, fee, gasLimit, head),
    );
    if (signed === undefined) return;
    this.reserve(job, signed.attempt);
    this.unfundedTold.delete(job.id);
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

  /** A job the wallet cannot pay at the market's fee stays scheduled (no nonce taken); the job tells why. */
  private async waitForFunds(job: SenderJob, gasLimit: bigint, feePerGasNeeded: bigint): Promise<void> {
    const funds = this.funds!;
    const others = this.reservedByOthers(job);
    const needed = gasLimit * feePerGasNeeded + job.call.value;
    const problem = `waiting for funds: the wallet's balance of ${funds.balance} wei (${others} wei of it reserved for its other unmined transactions) cannot pay ${gasLimit} gas at ${feePerGasNeeded} wei per gas${job.call.value > 0n ? ` plus a value of ${job.call.value} wei` : ''} (${needed} wei); nothing is signed, no nonce is taken`;
    this.state.lastError = problem;
    // Told once per wait, not every pass: a note moves the job's updated_at, which the waiting gauges read.
    if (this.unfundedTold.has(job.id)) return;
    makeRoom(this.unfundedTold, job.id);
    this.unfundedTold.add(job.id);
    this.options.log.warn(
      { job: job.id, balance: funds.balance.toString(), needed: needed.toString() },
      'waiting for funds',
    );
    await this.options.store.note(job.id, problem);
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
    const first = job.attempts[0]!;
    let signer = this.signers.get(first.hash);
    if (signer === undefined) {
      signer = Transaction.from(first.raw).from!.toLowerCase();
      makeRoom(this.signers, first.hash);
      this.signers.set(first.hash, signer);
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
      // A failure is final: only once the count has said so for a few blocks (receipts may lag it).
      const first = job.attempts[0]!.hash;
      if (blocksSinceFirstSeen(this.nonceUsedSince, first, head.number) < NONCE_USED_GRACE_BLOCKS) return;
      this.nonceUsedSince.delete(first);
      log.error({ job: job.id, nonce: job.nonce }, 'nonce used by a transaction this job did not sign');
      const whose = ours ? 'of the wallet' : `of ${signer}, which signed this job before the key changed,`;
      return this.fail(
        job,
        `nonce ${job.nonce} ${whose} was used by another transaction; none of this job's ${job.attempts.length} transaction(s) was mined`,
      );
    }
    // Free again (a reorg took the block out, or the count came from a node that was wrong): the grace was of
    // that sighting. Kept, the next one whose receipt lagged a pass failed the job at once, its own call mined.
    this.nonceUsedSince.delete(job.attempts[0]!.hash);

    let latest = job.attempts.at(-1)!;
    if (!ours && job.window.end !== null && head.timestamp > job.window.end) {
      // Its window closed with its nonce unused: mined now, the call would revert, and nothing can replace or
      // cancel it (the key is gone). Followed for ever, the command never ended, and stayed unconfirmed for
      // good once the old wallet could not pay (drained). After the grace a lagging count gets: missed.
      const first = job.attempts[0]!.hash;
      if (blocksSinceFirstSeen(this.foreignPastWindowSince, first, head.number) >= NONCE_USED_GRACE_BLOCKS) {
        this.foreignPastWindowSince.delete(first);
        return this.fail(
          job,
          `window closed: ${job.windowText}; the chain is at block time ${head.timestamp}, and the transaction ${signer} signed (before the key changed) was not mined: mined now it would revert; no longer followed`,
          'missed',
        );
      }
    }
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
          replacement.attempt.kind === 'cancel'
            ? 'freeing the nonce with a self-transfer'
            : replacement.lowered
              ? "lowering the fee to what the wallet's balance covers"
              : 'speeding up',
        );
        this.reserve(job, replacement.attempt);
        latest = replacement.attempt;
      }
    }

    try {
      await rpc.broadcast(latest.raw);
    } catch (error) {
      // Cut off by the stop: no node's refusal, and maybe never sent. The job keeps its status; the stored
      // transaction is broadcast again after the restart.
      if (this.halted(error)) throw error;
      const message = this.text(error);
      let outcome = classifyBroadcastError(message);
      if (outcome === 'unfunded') {
        // What is broadcast here fits the balance this pass read (replacementFor lowered or cancelled it
        // otherwise). A node that still says the wallet cannot pay it sees another balance (a lagging endpoint,
        // funds spent from outside the sender): a call of ours is then counted as refused, so after maxRefusals
        // its nonce is freed by a self-transfer far cheaper than the call, rather than held for good. A cancel
        // (nothing cheaper to send) or another wallet's transaction waits for the funds.
        outcome = ours && latest.kind === 'call' && this.funds !== undefined ? 'refused' : 'transient';
      }
      // A node that holds the transaction (pooled, or mined) has not refused it, whatever its words for "sent
      // before" (every pass broadcasts it again): counted, a call waiting a few blocks had its nonce freed.
      if (outcome === 'refused' && (await this.held(latest))) outcome = 'known';
      if (outcome !== 'known') {
        await store.note(job.id, `broadcast ${outcome}, retrying: ${message}`, outcome === 'refused');
        log.warn({ job: job.id, err: message, outcome }, 'broadcast not taken');
      }
    }
    if (job.status === 'signed') await store.markSent(job.id);
  }

  /**
   * Whether the node has `attempt` (in its pool, or mined). A failed read says nothing: the refusal counts, as
   * before.
   */
  private async held(attempt: SignedAttempt): Promise<boolean> {
    try {
      return (await this.options.rpc.read((p) => p.getTransaction(attempt.hash))) !== null;
    } catch (error) {
      if (this.halted(error)) throw error;
      return false;
    }
  }

  /**
   * A replacement to store and broadcast now, if the latest attempt must be sped up, lowered or cancelled.
   * `mined`: the wallet's mined transaction count. A transaction behind an earlier unmined nonce is not sped
   * up: it cannot mine before that one whatever it offers, and would then pay the raised fee for nothing. Once
   * the earlier one mines it is stuck by the same count of blocks, so it is sped up on the next pass if it
   * still must be. A call the wallet can no longer pay (funds spent from outside, or signed before the sender
   * checked the balance) is re-signed at the highest fee the balance covers, or its nonce freed when that is
   * below the market's fee: a node would refuse it for good, and it would hold every later job behind it.
   */
  private async replacementFor(
    job: SenderJob,
    latest: SignedAttempt,
    head: Head,
    mined: number,
  ): Promise<{ attempt: SignedAttempt; reason?: string; lowered?: boolean } | undefined> {
    const { caps, maxRefusals, bumpAfterBlocks } = this.options;
    const closing = this.closing(job, head);
    const refused = job.refusals >= maxRefusals;
    const previous = loadFee(latest.fee);
    const gasLimit = BigInt(latest.gasLimit);
    const isCall = latest.kind === 'call';
    const payable = this.balanceCap(job, gasLimit, isCall ? job.call.value : 0n);
    const cap = this.feeCap(payable);
    // By the balance only: one signed under a higher maxFeePerGas (lowered since, and restarted) is kept.
    const unpayable = isCall && payable !== undefined && feePerGas(previous) > payable;
    const stuck = head.number - latest.signedAtBlock >= bumpAfterBlocks && mined === job.nonce;
    if (!(isCall && (closing || refused)) && !stuck && !unpayable) return undefined;

    const market = await this.market(head);
    const fresh = initialFee(market, MARKET, caps.maxFeePerGas);
    let unfunded = false;
    if (unpayable && !closing && !refused) {
      // Lower at the same nonce: a node that refused the call holds none of it, and one that holds it drops
      // it once it cannot be paid (geth's pool does), so at most one of them is ever mined.
      const lowered = cappedFee(previous, cap);
      if (feePerGas(lowered) >= feePerGas(fresh)) {
        await this.options.store.note(
          job.id,
          `the wallet's balance no longer covers ${feePerGas(previous)} wei per gas; re-signed at ${feePerGas(lowered)}`,
        );
        return { attempt: await this.sign('call', job, job.nonce!, lowered, gasLimit, head), lowered: true };
      }
      unfunded = true;
    }
    if (isCall && (closing || refused || unfunded)) {
      const why = closing
        ? this.closingWhy(job, head)
        : refused
          ? `the node refused the transaction ${job.refusals} times`
          : `the wallet's balance no longer pays the call at the market's fee of ${feePerGas(fresh)} wei per gas`;
      // A call the node refused, or could not be paid, may never have reached a pool: then the market's fee
      // does; otherwise it must be outbid.
      return this.freeNonce(job, previous, fresh, head, why, refused || unfunded);
    }
    if (!stuck) return undefined;
    // Someone else may have settled the transfer meanwhile: a faster copy of a call that reverts now would only
    // pay more for the revert (up to the cap). Once a cancel is signed the job's later attempts are cancels, so
    // a simulation that flips between revert and success cannot make the wallet pay for the call again.
    if (isCall) {
      const revert = await this.revertsNow(job, gasLimit, head);
      if (revert !== undefined)
        return this.freeNonce(job, previous, fresh, head, `the call would revert now (${revert})`, false);
    }
    const fee = bumpedFee(previous, fresh, cap);
    if (fee === undefined) return undefined; // at the cap (or the balance) already: keep broadcasting it
    // Signed under a higher gas cap than the one configured now (lowered since, and restarted): a faster copy
    // at that gas limit would pay past the cap, so what was signed is broadcast as it is.
    if (gasLimit > caps.maxGasLimit) {
      await this.options.store.note(
        job.id,
        `not sped up: its gas limit ${latest.gasLimit} is above the configured maxGasLimit ${caps.maxGasLimit}`,
      );
      return undefined;
    }
    // The market's reads and the replay may each have waited out endpoints' timeouts (seconds): the window is
    // judged again on the chain's head, as `send` does before signing. A faster call signed on the older head
    // inside the margin is mined after the window and reverts, and the wallet pays; its nonce is freed instead.
    if (isCall && job.window.end !== null) {
      head = await this.head();
      if (this.closing(job, head))
        return this.freeNonce(job, previous, fresh, head, this.closingWhy(job, head), false);
    }
    return { attempt: await this.sign(latest.kind, job, job.nonce!, fee, gasLimit, head) };
  }

  private closingWhy(job: SenderJob, head: Head): string {
    return `window closing: ${job.windowText}; the chain is at block time ${head.timestamp}`;
  }

  /**
   * A 0-value self-transfer at the job's nonce outbidding `previous` within maxFeePerGas and the balance, or at
   * the market's fee when the call may never have reached a pool (`unpooled`); undefined (noted: waiting) when
   * neither fits.
   */
  private async freeNonce(
    job: SenderJob,
    previous: Fee,
    fresh: Fee,
    head: Head,
    why: string,
    unpooled: boolean,
  ): Promise<{ attempt: SignedAttempt; reason: string } | undefined> {
    const gas = await this.cancelGas(job);
    const cancelCap = this.feeCap(this.balanceCap(job, gas, 0n));
    const fee = bumpedFee(previous, fresh, cancelCap);
    const cancelFee = fee ?? (unpooled && feePerGas(fresh) <= cancelCap ? fresh : undefined);
    if (cancelFee === undefined) {
      await this.options.store.note(
        job.id,
        'cannot outbid the pending call within maxFeePerGas and the wallet balance; waiting',
      );
      return undefined;
    }
    return {
      attempt: await this.sign('cancel', job, job.nonce!, cancelFee, gas, head),
      reason: `nonce ${job.nonce} freed by a 0-value self-transfer: ${why}`,
    };
  }

  /**
   * The gas of the self-transfer that frees a job's nonce: 21,000 on most chains, but a chain may count more for a
   * plain transfer (Arbitrum adds its L1 data cost to the gas), and a node there refuses a 21,000-gas one as
   * "intrinsic gas too low" every time: the nonce would never be freed and every later job would wait behind
   * it. So the chain's own estimate, when above 21,000, with the calls' margin and within maxGasLimit. A cancel
   * sped up keeps the gas it was signed with; an endpoint that cannot estimate leaves 21,000 (logged).
   */
  private async cancelGas(job: SenderJob): Promise<bigint> {
    const { rpc, wallet, log } = this.options;
    let estimate: bigint;
    try {
      estimate = await rpc.read((p) =>
        p.estimateGas({ from: wallet.address, to: wallet.address, value: 0n }),
      );
    } catch (error) {
      if (this.halted(error)) throw error;
      log.warn({ job: job.id, err: this.logged(error) }, 'self-transfer gas not estimated; 21,000 used');
      return CANCEL_GAS;
    }
    return estimate <= CANCEL_GAS ? CANCEL_GAS : this.withGasMargin(estimate);
  }

  /** An estimate plus gasLimitPercent (the state moves between estimate and inclusion), within maxGasLimit. */
  private withGasMargin(estimate: bigint): bigint {
    const withMargin = (estimate * (this.options.gasLimitPercent ?? 130n)) / 100n;
    const cap = this.options.caps.maxGasLimit;
    return withMargin > cap ? cap : withMargin;
  }

  /**
   * Why a stuck call would revert on the state of the pass's head block, or undefined when it would succeed or
   * the chain did not say. eth_call, not eth_estimateGas: a node estimates on its pending block, which may hold
   * this very call (then it "reverts" on its own effect). At the head's number, not 'latest': "not yet" is
   * judged on the head's time, and a node behind it (another endpoint, a load balancer's) would replay a call
   * whose window opened since as reverting (NotInOpWindow) and free the nonce of a call that succeeds; without
   * that block it answers "header not found", an endpoint's failure. Only a revert the contract names
   * (`decodeRevert`) or the node states (`callFails`) counts; an endpoint's failure (timeout, refused
   * connection, 5xx, rate limit, a missing block) says nothing of the call, which is then sped up as before.
   */
  private async revertsNow(job: SenderJob, gasLimit: bigint, head: Head): Promise<string | undefined> {
    const { rpc, wallet, decodeRevert, notYet } = this.options;
    const { to, data, value } = job.call;
    try {
      await rpc.read((p) =>
        p.call({ from: wallet.address, to, data, value, gasLimit, blockTag: head.number }),
      );
      return undefined;
    } catch (error) {
      if (this.halted(error)) throw error;
      const original = (error as { original?: unknown }).original ?? error;
      const revert = decodeRevert?.(original);
      if (revert !== undefined) return notYet?.(revert.name, head.timestamp, job) ? undefined : revert.reason;
      if (callFails(original)) return 'a revert without a reason the contract names, or out of gas';
      this.problem('could not simulate a stuck call; it is sped up as before', error, { job: job.id });
      return undefined;
    }
  }

  private async onReceipt(
    job: SenderJob,
    found: { attempt: SignedAttempt; receipt: TransactionReceipt },
    head: Head,
  ): Promise<void> {
    const { rpc, store, log } = this.options;
    const { attempt, receipt } = found;
    this.settled(job, receipt.blockNumber);
    this.nonceUsedSince.delete(job.attempts[0]!.hash); // found: the receipts no longer lag the count
    this.foreignPastWindowSince.delete(job.attempts[0]!.hash);
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
      // The reason is asked again after the restart rather than stored without it.
      if (this.halted(error)) throw error;
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
    this.settled(job); // none of its transactions will be mined (the nonce went elsewhere, or none was signed)
    this.unfundedTold.delete(job.id);
    const text = this.options.scrub(reason);
    await this.options.store.finish(job.id, { status: 'failed', reason: text });
    this.options.onSettled?.(job, outcome);
    this.options.log.warn({ job: job.id, reason: text }, 'job failed');
  }
}
