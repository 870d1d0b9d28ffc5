// Time and block control of a Hardhat chain. Every time is unix seconds of block timestamps.

export type JsonRpcRequest = (method: string, params?: unknown[]) => Promise<unknown>;

export interface ChainClock {
  /** Moves chain time forward by `seconds` and mines a block, so the latest block shows the new time. */
  increaseTime(seconds: number): Promise<void>;
  /** The next mined block (e.g. the next transaction's) gets exactly this timestamp. */
  setNextBlockTimestamp(timestamp: number): Promise<void>;
  /** Mines `blocks` empty blocks (default 1). */
  mine(blocks?: number): Promise<void>;
  /** Timestamp of the latest block. */
  latestTimestamp(): Promise<number>;
  /** Saves the whole chain state; `revert` returns to it (each id can be reverted to once). */
  snapshot(): Promise<string>;
  revert(snapshotId: string): Promise<void>;
}

function assertWholeSeconds(value: number, what: string): void {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError(`${what} must be whole seconds >= 0, got ${value}`);
}

export function chainClock(request: JsonRpcRequest): ChainClock {
  return {
    async increaseTime(seconds) {
      assertWholeSeconds(seconds, 'increaseTime');
      await request('evm_increaseTime', [seconds]);
      await request('evm_mine');
    },
    async setNextBlockTimestamp(timestamp) {
      assertWholeSeconds(timestamp, 'setNextBlockTimestamp');
      await request('evm_setNextBlockTimestamp', [timestamp]);
    },
    async mine(blocks = 1) {
      assertWholeSeconds(blocks, 'mine');
      await request('hardhat_mine', [`0x${blocks.toString(16)}`]);
    },
    async latestTimestamp() {
      const block = (await request('eth_getBlockByNumber', ['latest', false])) as { timestamp: string };
      return Number(BigInt(block.timestamp));
    },
    async snapshot() {
      return (await request('evm_snapshot')) as string;
    },
    async revert(snapshotId) {
      const reverted = (await request('evm_revert', [snapshotId])) as boolean;
      if (!reverted) throw new Error(`evm_revert: unknown snapshot ${snapshotId}`);
    },
  };
}
