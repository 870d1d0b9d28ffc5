/**
 * The sender's view of a command: a contract call (to, data, value) a wallet must make once, inside a window
 * of block times, with a fee strategy. Whoever owns commands (the relay's behalf commands, the Agent's
 * complaints) keeps them in its own table and implements SenderStore over it.
 */
import type { FeeStrategy, StoredFee } from './fees.js';

/**
 * scheduled: due, no transaction yet. signed: a transaction is stored, maybe not broadcast. sent: broadcast,
 * waiting for its receipt and N confirmations. cancelling: the call is being replaced by a 0-value
 * self-transfer at its nonce (window closing, or the node refuses it for good). confirmed / failed: final.
 */
export type JobStatus = 'scheduled' | 'signed' | 'sent' | 'cancelling' | 'confirmed' | 'failed';
export const OPEN_STATUSES: readonly JobStatus[] = ['scheduled', 'signed', 'sent', 'cancelling'];

/** One signed transaction at the job's nonce; a job may hold several (replacements), oldest first. */
export interface SignedAttempt {
  kind: 'call' | 'cancel';
  hash: string;
  raw: string;
  fee: StoredFee;
  gasLimit: string;
  /** The chain's head block number when it was signed (a speed-up counts blocks from there). */
  signedAtBlock: number;
  /** Wall clock of signing, for the operator's "oldest unconfirmed" signal only (never for windows). */
  signedAtMs: number;
}

export interface SenderJob {
  id: string;
  status: JobStatus;
  /** Inclusive block timestamps (unix seconds); end null = no end. */
  window: { start: number; end: number | null };
  /** Human text of the window for reasons ("non-lp confirm in is allowed from … to …"). */
  windowText: string;
  call: { to: string; data: string; value: bigint };
  strategy: FeeStrategy;
  nonce: number | null;
  attempts: SignedAttempt[];
  /** Broadcasts the node refused outright (not "underpriced", not a network failure). */
  refusals: number;
  /** Block of the receipt seen while waiting for confirmations (null: none seen, or reorged away). */
  minedBlock: number | null;
  /** Why the nonce is being freed (set with the cancel). */
  cancelReason: string | null;
}

export interface WalletRef {
  chainId: number;
  address: string;
  /** The node's mined ('latest') transaction count: the local nonce never goes below it (see takeNonce). */
  chainLatest: number;
}

export type Settlement =
  | { status: 'confirmed'; blockNumber: number; txHash: string }
  | { status: 'failed'; reason: string; blockNumber?: number; txHash?: string };

/** Persistence of jobs; every method is one database transaction. */
export interface SenderStore {
  /** Jobs still to move, in-flight ones (by nonce) before scheduled ones (by window start). */
  open(): Promise<SenderJob[]>;
  /**
   * Allocates the wallet's next nonce and stores the attempt `sign` makes with it, in one transaction,
   * only while the job is still scheduled. After it commits the job owns that nonce for good.
   */
  signFirst(
    id: string,
    wallet: WalletRef,
    sign: (nonce: number) => Promise<SignedAttempt>,
  ): Promise<{ nonce: number; attempt: SignedAttempt } | undefined>;
  /**
   * Stores a replacement at the job's nonce before it is broadcast, only if the job still has
   * `knownAttempts` attempts (a concurrent pass lost). A cancel moves the job to `cancelling` with `reason`.
   */
  addAttempt(id: string, knownAttempts: number, attempt: SignedAttempt, reason?: string): Promise<boolean>;
  markSent(id: string): Promise<void>;
  /** Shows a problem on the job; `refused` counts a refusal towards freeing the nonce. */
  note(id: string, problem: string, refused?: boolean): Promise<void>;
  setMinedBlock(id: string, block: number | null): Promise<void>;
  finish(id: string, outcome: Settlement): Promise<void>;
}
