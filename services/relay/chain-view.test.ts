import { describe, expect, it } from 'vitest';
import type { RpcPool } from '../../shared/sender/index.js';
import { chainView } from './chain-view.js';

/** An RPC pool over a fake node at block 200,015 with no LogNewTransferIn, counting eth_getLogs calls. */
function countingRpc() {
  const calls = { getLogs: 0 };
  const provider = {
    getBlockNumber: async () => 200_015,
    getLogs: async () => {
      calls.getLogs += 1;
      await new Promise((resolve) => setTimeout(resolve, 1)); // a node takes a moment to answer
      return [];
    },
  };
  const rpc = {
    read: (work: (p: typeof provider) => Promise<unknown>) => work(provider),
  } as unknown as RpcPool;
  return { rpc, calls };
}

describe('relay chain view: the sender of a transferIn', () => {
  it('remembers a scan that found nothing for a while: a repeated request costs no second scan', async () => {
    const { rpc, calls } = countingRpc();
    const view = chainView({
      rpc,
      contractAddr: '0x' + '11'.repeat(20),
      lookbackBlocks: 200_000,
      cacheMs: 1_000,
      missTtlMs: 2_000,
    });
    const transferId = '0x' + 'ab'.repeat(32);
    expect(await view.transferInSender(transferId)).toBeUndefined();
    expect(calls.getLogs).toBe(41); // the whole look-back, 5,000 blocks a call
    expect(await view.transferInSender(transferId.toUpperCase().replace('0X', '0x'))).toBeUndefined();
    expect(calls.getLogs).toBe(41);
    // Another transfer is scanned; the first again once its miss is forgotten.
    await view.transferInSender('0x' + 'cd'.repeat(32));
    expect(calls.getLogs).toBe(82);
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await view.transferInSender(transferId);
    expect(calls.getLogs).toBe(123);
  });

  it('identical look-ups sent at once share one scan of the look-back, not one each', async () => {
    const { rpc, calls } = countingRpc();
    const view = chainView({
      rpc,
      contractAddr: '0x' + '11'.repeat(20),
      lookbackBlocks: 200_000,
      cacheMs: 1_000,
    });
    const transferId = '0x' + 'ab'.repeat(32);
    const answers = await Promise.all(Array.from({ length: 10 }, () => view.transferInSender(transferId)));
    expect(answers.every((a) => a === undefined)).toBe(true);
    // One scan: 41 eth_getLogs of 5,000 blocks (it was 410).
    expect(calls.getLogs).toBe(41);
  });
});
