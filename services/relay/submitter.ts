/**
 * The relay's use of the shared sender (shared/sender): its behalf commands as sender jobs. The command
 * rows (relay_commands) hold the jobs' state; this file only maps between the two.
 */
import type { Wallet } from 'ethers';
import type { Pool } from '../../shared/db/pool.js';
import type { Logger } from '../../shared/logging/logger.js';
import {
  Sender,
  type FeeStrategy,
  type RpcPool,
  type SenderCaps,
  type SenderJob,
  type SenderStore,
} from '../../shared/sender/index.js';
import { actionOfCallData, callDataOf } from './call-data.js';
import { GAS_LEVEL_PERCENT, GAS_LEVELS, type GasLevel } from './gas-price.js';
import { contractRevertOf } from './revert-reason.js';
import type { CommandRow, CommandStore } from './store.js';
import { describeWindow, type CallWindow } from './windows.js';

export interface RelaySenderOptions {
  pool: Pool;
  store: CommandStore;
  rpc: RpcPool;
  wallet: Wallet;
  contractAddr: string;
  chainId: number;
  pollIntervalMs: number;
  caps: SenderCaps;
  confirmations: number;
  windowMarginSeconds: number;
  bumpAfterBlocks: number;
  maxRefusals: number;
  /** Called when a command reaches its final status (`missed`: its window closed before it was made). */
  onSettled?: (action: CommandRow['action'], outcome: 'confirmed' | 'failed' | 'missed') => void;
  scrub: (text: string) => string;
  log: Logger;
}

export function strategyOf(gasPrice: string): FeeStrategy {
  return (GAS_LEVELS as readonly string[]).includes(gasPrice)
    ? { percent: GAS_LEVEL_PERCENT[gasPrice as GasLevel] }
    : { weiPerGas: BigInt(gasPrice) };
}

/** `window`: when this relay may make the call (CommandStore.windowOf). */
export function jobOf(row: CommandRow, contractAddr: string, window: CallWindow): SenderJob {
  return {
    id: row.id,
    // 'accepted' rows are not open; the sender only sees scheduled ones and later.
    status: row.status as SenderJob['status'],
    window: { start: window.start, end: window.end },
    windowText: describeWindow(window),
    call: { to: contractAddr, data: callDataOf(row.action, row.command.call), value: 0n },
    strategy: strategyOf(row.command.gasPrice),
    nonce: row.nonce,
    attempts: row.txs,
    refusals: row.refusals,
    minedBlock: row.minedBlock,
    cancelReason: row.cancelReason,
  };
}

export function createRelaySender(options: RelaySenderOptions): Sender {
  const { store, contractAddr } = options;
  const jobs: SenderStore = {
    async open() {
      const rows = await store.open();
      return rows.map((row) => jobOf(row, contractAddr, store.windowOf(row.action, row.command.call)));
    },
    signFirst: (id, wallet, sign) => store.signFirst(id, wallet, sign),
    addAttempt: (id, known, attempt, reason) => store.addAttempt(id, known, attempt, reason),
    markSent: (id) => store.markSent(id),
    note: (id, problem, refused) => store.note(id, problem, refused),
    setMinedBlock: (id, block) => store.setMinedBlock(id, block),
    finish: (id, outcome) => store.finish(id, outcome),
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
    windowMarginSeconds: options.windowMarginSeconds,
    bumpAfterBlocks: options.bumpAfterBlocks,
    maxRefusals: options.maxRefusals,
    decodeRevert: contractRevertOf,
    // The node's pending block may still be just before the window: look again on the next pass.
    notYet: (name, now, job) =>
      (name === 'NotInOpWindow' || name === 'NotUnlock') && now < job.window.start + 2,
    // The action from the call's selector: a map of job ids filled at every read of open jobs was never emptied
    // (a long-running relay kept an entry per command it ever sent).
    onSettled: (job, outcome) => {
      const action = actionOfCallData(job.call.data);
      if (action !== undefined) options.onSettled?.(action, outcome);
    },
    scrub: options.scrub,
    log: options.log,
  });
}
