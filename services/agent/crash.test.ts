import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Wallet } from 'ethers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerDids } from '../../shared/devnet/agreements.js';
import { startDevnet, type Devnet, type DevnetChain } from '../../shared/devnet/devnet.js';
import { freePort } from '../../shared/net/free-port.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { isolatedEnv, spawnTs, type Spawned } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { agentMigrationSets } from './migrations.js';
import {
  AGENT_DEV_KEY,
  hasComplaintOnChain,
  sampleComplaint,
  sdkBody,
  submitComplaintLogs,
} from './test-harness.js';

/**
 * Crash safety of the Agent as its own process (`bin/start.ts agent`): SIGKILL after the complaint
 * transaction was signed and broadcast but before its receipt, with the transaction then lost from the
 * node's pool, loses no complaint and sends no second transaction after the restart.
 */
describe('Agent process killed between signing and receipt', () => {
  let db: TestDatabase;
  let devnet: Devnet;
  let chain: DevnetChain;
  let dir: string;
  let port: number;
  const processes: Spawned[] = [];
  const agentAddress = new Wallet(AGENT_DEV_KEY).address;
  const DOMAIN = 'crash-5.devnet';

  const start = async () => {
    const agent = spawnTs(
      'bin/start.ts',
      ['agent'],
      isolatedEnv({ DATABASE_URL: db.url, CONFIG_PATH: path.join(dir, 'config.toml'), LOG_LEVEL: 'info' }),
    );
    processes.push(agent);
    await agent.waitFor(/"msg":"ready"/, 60_000);
    await agent.waitFor(/agent bound to its chain/, 30_000);
    return agent;
  };
  const row = async (bid: string) =>
    (
      await db.pool.query<{ status: string; tx_hash: string | null; nonce: string | null }>(
        'SELECT status, tx_hash, nonce FROM agent_complaints WHERE bid_id = $1',
        [bid],
      )
    ).rows[0];

  beforeAll(async () => {
    [db, devnet, dir, port] = await Promise.all([
      createTestDatabase(agentMigrationSets),
      startDevnet({ chains: [{ chainId: 97 }] }),
      mkdtemp(path.join(os.tmpdir(), 'agent-crash-')),
      freePort(),
    ]);
    chain = devnet.chain(97);
    await registerDids(chain, { [DOMAIN]: chain.accounts[5]!.address });
    await writeFile(
      path.join(dir, 'config.toml'),
      [
        '[agent]',
        `port = ${port}`,
        `rpc = "${chain.rpcUrl}"`,
        `priv = "${AGENT_DEV_KEY}"`,
        `contractAddr = "${chain.contracts.reputation}"`,
        'didSource = "contract"',
        'blockTimeSeconds = 0.2',
        'confirmations = 1',
        '[log]',
        'level = "info"',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    for (const p of processes) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await Promise.all(processes.map((p) => p.exited));
    await chain?.provider.send('evm_setAutomine', [true]).catch(() => undefined);
    await devnet?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('re-broadcasts the one stored transaction after a SIGKILL: one transaction, one complaint on chain', async () => {
    const first = await start();
    const body = await sdkBody(new Wallet(chain.accounts[5]!.privateKey), sampleComplaint(), DOMAIN, {
      chainId: chain.chainId,
      reputation: chain.contracts.reputation,
    });
    const post = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/submit-complaint`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await response.json()) as { code: number; bid_id: string; status: string };
    };
    // Transactions wait in the pool until the test mines: the Agent is killed while its tx is unmined.
    await chain.provider.send('evm_setAutomine', [false]);
    const accepted = await post();
    expect(accepted.code).toBe(0);
    const bid = accepted.bid_id;
    await waitFor(
      async () => (await row(bid))?.status === 'sent',
      'transaction signed and broadcast',
      20_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const stored = (await row(bid))!;
    expect(stored.nonce).toBe('0');
    // The node loses it too (as a dropped or never-sent transaction would be).
    expect(await chain.provider.send('hardhat_dropTransaction', [stored.tx_hash])).toBe(true);
    expect(await chain.provider.getTransactionCount(agentAddress, 'pending')).toBe(0);

    const second = await start();
    // The same body after the restart is that one complaint, with its status.
    const again = await post();
    expect(again).toMatchObject({ code: 0, bid_id: bid });
    await waitFor(
      async () => (await chain.provider.getTransactionCount(agentAddress, 'pending')) === 1,
      'the stored transaction re-broadcast',
      20_000,
    );
    await chain.provider.send('evm_setAutomine', [true]);
    await chain.mine();
    await waitFor(async () => (await row(bid))?.status === 'confirmed', 'complaint confirmed', 20_000);

    expect((await row(bid))!.tx_hash).toBe(stored.tx_hash);
    expect(await chain.provider.getTransactionCount(agentAddress, 'latest')).toBe(1);
    expect(await hasComplaintOnChain(chain, bid)).toBe(true);
    expect((await submitComplaintLogs(chain)).filter((l) => l.bidId === bid)).toEqual([
      { bidId: bid, txHash: stored.tx_hash },
    ]);
    const status = (await (
      await fetch(`http://127.0.0.1:${port}/complaint-status?bid=${bid}`)
    ).json()) as Record<string, unknown>;
    expect(status).toMatchObject({ code: 0, status: 'confirmed', tx_hash: stored.tx_hash, nonce: 0 });
    second.child.kill('SIGTERM');
    expect((await second.exited).code).toBe(0);
    // Neither the key nor the RPC URL ever reached the logs.
    const output = first.output() + second.output();
    expect(output).not.toContain(AGENT_DEV_KEY.slice(2));
    expect(output).not.toContain(chain.rpcUrl);
  }, 120_000);
});
