import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevnet } from './devnet.js';

/** A journalled devnet chain comes back after a restart with the same blocks, state and clock. */
describe('devnet journal', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('replays every mined block: same hashes, balances, contracts and time after a restart', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'otmoic-journal-'));
    dirs.push(dir);
    const genesis = Math.floor(Date.now() / 1000) - 86_400;
    let devnet = await startDevnet({ chains: [{ chainId: 97, initialTimestamp: genesis }], stateDir: dir });
    let chain = devnet.chain(97);
    const first = { contracts: chain.contracts };
    await (await chain.wallet(4).sendTransaction({ to: chain.accounts[5]!.address, value: 123n })).wait();
    await chain.increaseTime(1_000);
    await chain.mine(7);
    // A reverted transaction is mined too, and must be replayed as one.
    await chain
      .wallet(4)
      .sendTransaction({ to: chain.contracts.otmoic, data: '0xdeadbeef', gasLimit: 100_000 })
      .catch(() => undefined);
    const before = await chain.provider.getBlock('latest');
    const balance = await chain.provider.getBalance(chain.accounts[5]!.address);
    await devnet.stop();

    devnet = await startDevnet({ chains: [{ chainId: 97 }], stateDir: dir });
    try {
      chain = devnet.chain(97);
      const after = await chain.provider.getBlock('latest');
      expect(after!.number).toBe(before!.number);
      expect(after!.hash).toBe(before!.hash);
      expect(after!.timestamp).toBe(before!.timestamp);
      expect(await chain.provider.getBalance(chain.accounts[5]!.address)).toBe(balance);
      expect(chain.contracts).toEqual(first.contracts);
      expect((await chain.provider.getBlock(0))!.timestamp).toBe(genesis);
      // New blocks continue from there and are journalled as well.
      await chain.mine(1);
      expect(await chain.provider.getBlockNumber()).toBe(before!.number + 1);
      const lines = (await readFile(path.join(dir, '97.jsonl'), 'utf8')).trim().split('\n');
      expect(JSON.parse(lines[0]!)).toEqual({ chainId: 97, genesis });
      expect(JSON.parse(lines.at(-1)!)).toMatchObject({ m: 'hardhat_mine' });
    } finally {
      await devnet.stop();
    }
  }, 60_000);
});
