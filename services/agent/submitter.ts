/**
 * The Agent's use of the shared sender (shared/sender): each complaint is one `submitComplaint` call from
 * the Agent wallet, with no window (it may be made at any time). The rows of agent_complaints hold the
 * jobs' state; this file maps between the two and decides what a refusal by the contract means.
 */
import { Contract, type Wallet } from 'ethers';
import type { Pool } from '../../shared/db/pool.js';
import { decodeRevert } from '../../shared/devnet/revert-error.js';
import type { Logger } from '../../shared/logging/logger.js';
import { reputationInterface } from '../../shared/otmoic/abi.js';
import { parseComplaint, withCanonicalV } from '../../shared/chain/index.js';
import {
  Sender,
  type RpcPool,
  type SenderCaps,
  type SenderJob,
  type SenderStore,
} from '../../shared/sender/index.js';
import type { ComplaintRow, ComplaintStore } from './store.js';

export interface AgentSenderOptions {
  pool: Pool;
  store: ComplaintStore;
  rpc: RpcPool;
  wallet: Wallet;
  contractAddr: string;
  chainId: number;
  pollIntervalMs: number;
  caps: SenderCaps;
  confirmations: number;
  bumpAfterBlocks: number;
  maxRefusals: number;
  onSettled?: (outcome: 'confirmed' | 'already_on_chain' | 'failed') => void;
  scrub: (text: string) => string;
  log: Logger;
}

/** The contract's custom errors, readable. */
export function reputationRevertOf(error: unknown): { name: string; reason: string } | undefined {
  const revert = decodeRevert(error, reputationInterface);
  if (revert === undefined) return undefined;
  const a = revert.args.map(String);
  const reasons: Record<string, string> = {
    DuplicateBidId: `DuplicateBidId: bid ${a[0]} already has a complaint on chain`,
    DomainNoExists: 'DomainNoExists: the DID domain has no owner in the contract’s DID registry',
    InvalidSigner: `InvalidSigner: the signature recovers ${a[0]}, the DID domain is owned by ${a[1]}`,
  };
  return { name: revert.name, reason: reasons[revert.name] ?? `${revert.name}(${a.join(', ')})` };
}

export function callDataOf(row: Pick<ComplaintRow, 'complaint' | 'signature' | 'domain'>): string {
  return reputationInterface.encodeFunctionData('submitComplaint', [
    parseComplaint(row.complaint),
    // A row stored before signatures were made canonical at intake may hold v 0/1.
    withCanonicalV(row.signature),
    row.domain,
  ]);
}

export function jobOf(row: ComplaintRow, contractAddr: string): SenderJob {
  return {
    id: row.bidId,
    // 'accepted' rows are not open; the sender only sees scheduled ones and later.
    status: row.status as SenderJob['status'],
    window: { start: 0, end: null },
    windowText: 'submitComplaint has no window',
    call: { to: contractAddr, data: callDataOf(row), value: 0n },
    strategy: { percent: 110n },
    nonce: row.nonce,
    attempts: row.txs,
    refusals: row.refusals,
    minedBlock: row.minedBlock,
    cancelReason: row.cancelReason,
  };
}

/** hasComplaint(bidId) of the reputation contract. */
export function hasComplaintReader(rpc: RpcPool, contractAddr: string): (bidId: string) => Promise<boolean> {
  return (bidId) =>
    rpc.read(
      (p) =>
        new Contract(contractAddr, reputationInterface, p)
          .getFunction('hasComplaint')
          .staticCall(bidId) as Promise<boolean>,
    );
}

export function createAgentSender(options: AgentSenderOptions): Sender {
  const { store, contractAddr } = options;
  const hasComplaint = hasComplaintReader(options.rpc, contractAddr);
  const onChainAlready = new Set<string>();
  const jobs: SenderStore = {
    async open() {
      return (await store.open()).map((row) => jobOf(row, contractAddr));
    },
    signFirst: (id, wallet, sign) => store.signFirst(id, wallet, sign),
    addAttempt: (id, known, attempt, reason) => store.addAttempt(id, known, attempt, reason),
    markSent: (id) => store.markSent(id),
    note: (id, problem, refused) => store.note(id, problem, refused),
    setMinedBlock: (id, block) => store.setMinedBlock(id, block),
    async finish(id, outcome) {
      // The contract checks hasComplaint first and reverts DuplicateBidId: a failure while the bid has its
      // complaint on chain (ours raced another submitter, or was sent twice) means the goal is reached.
      // A read failure throws: the sender keeps the job open and decides again on its next pass.
      if (outcome.status === 'failed' && (await hasComplaint(id))) {
        onChainAlready.add(id);
        options.log.info({ bid: id, reason: outcome.reason }, 'complaint already on chain (DuplicateBidId)');
        return store.finishAlreadyOnChain(
          id,
          `already on chain (DuplicateBidId): the bid's complaint was submitted by another transaction; ours: ${outcome.reason}`,
        );
      }
      return store.finish(id, outcome);
    },
  };
  return new Sender({
    pool: options.pool,
    store: jobs,
    rpc: options.rpc,
    wallet: options.wallet,
    chainId: options.chainId,
    pollIntervalMs: options.pollIntervalMs,
    caps: options.caps,
    confirmations: options.confirmations,
    // No window end: nothing ever closes, a nonce is only freed after repeated refusals.
    windowMarginSeconds: 0,
    bumpAfterBlocks: options.bumpAfterBlocks,
    maxRefusals: options.maxRefusals,
    decodeRevert: reputationRevertOf,
    onSettled: (job, outcome) => {
      const already = onChainAlready.delete(job.id);
      options.onSettled?.(already ? 'already_on_chain' : outcome === 'confirmed' ? 'confirmed' : 'failed');
    },
    scrub: options.scrub,
    log: options.log,
  });
}
