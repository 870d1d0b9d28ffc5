// The devnet helper and its CLI against real Hardhat chains: start-up time, chain ids, deployed and
// funded contracts, time control, and a stop that leaves nothing listening.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contract } from 'ethers';
import { compileContracts } from '../../contracts/compile.js';
import type { CompiledContracts } from '../../contracts/compile.js';
import { startDevnet } from './devnet.js';
import type { Devnet } from './devnet.js';

const CHAIN_IDS = [97, 11155420];
const STARTUP_BUDGET_MS = 10_000;
// The vectors' signer (otmoic-relay.json eip712.signer_private_key) is Hardhat account 0.
const VECTOR_SIGNER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const VECTOR_SIGNER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await response.json()) as { result?: unknown; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

async function isListening(url: string): Promise<boolean> {
  try {
    await rpc(url, 'eth_chainId');
    return true;
  } catch {
    return false;
  }
}

let compiled: CompiledContracts;

beforeAll(async () => {
  // Compiling is a build step (cached on disk); the start-up budget is about chains and deployment.
  compiled = await compileContracts();
});

describe('startDevnet with two chains', () => {
  let devnet: Devnet;
  let wallClockMs: number;

  beforeAll(async () => {
    const started = performance.now();
    devnet = await startDevnet({ chains: CHAIN_IDS.map((chainId) => ({ chainId })) });
    wallClockMs = performance.now() - started;
    console.log(`two-chain devnet ready in ${Math.round(wallClockMs)} ms (startupMs ${devnet.startupMs})`);
  });

  afterAll(async () => {
    await devnet?.stop();
  });

  it(`starts in under ${STARTUP_BUDGET_MS / 1000} s, contracts deployed`, () => {
    expect(wallClockMs).toBeLessThan(STARTUP_BUDGET_MS);
    expect(devnet.startupMs).toBeGreaterThan(0);
    expect(devnet.startupMs).toBeLessThanOrEqual(Math.ceil(wallClockMs));
  });

  it('serves each chain id on its own loopback RPC URL, in the order asked for', async () => {
    expect(devnet.chains.map((chain) => chain.chainId)).toEqual(CHAIN_IDS);
    const urls = devnet.chains.map((chain) => chain.rpcUrl);
    expect(new Set(urls).size).toBe(urls.length);
    for (const chain of devnet.chains) {
      expect(chain.rpcUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(BigInt((await rpc(chain.rpcUrl, 'eth_chainId')) as string)).toBe(BigInt(chain.chainId));
      expect((await chain.provider.getNetwork()).chainId).toBe(BigInt(chain.chainId));
    }
    expect(devnet.chain(11155420)).toBe(devnet.chains[1]);
    expect(() => devnet.chain(1)).toThrow(/no chain 1/);
  });

  it('has the three contracts deployed and owned by account 0, and the accounts funded', async () => {
    for (const chain of devnet.chains) {
      expect(chain.accounts[0]).toEqual({ address: VECTOR_SIGNER, privateKey: VECTOR_SIGNER_KEY });
      expect(chain.accounts).toHaveLength(20);
      for (const address of Object.values(chain.contracts)) {
        expect((await chain.provider.getCode(address)).length).toBeGreaterThan(2);
      }
      const otmoic = new Contract(chain.contracts.otmoic, compiled.Otmoic.abi, chain.provider);
      const reputation = new Contract(chain.contracts.reputation, compiled.Reputation.abi, chain.provider);
      const token = new Contract(chain.contracts.token, compiled.TestToken.abi, chain.provider);
      expect(await otmoic.getFunction('owner')()).toBe(VECTOR_SIGNER);
      expect(await otmoic.getFunction('basisPointsRate')()).toBe(0n);
      expect(await reputation.getFunction('owner')()).toBe(VECTOR_SIGNER);
      expect(await token.getFunction('balanceOf')(chain.accounts[9]!.address)).toBe(1_000_000n * 10n ** 18n);
      expect(await token.getFunction('balanceOf')(chain.accounts[10]!.address)).toBe(0n);
      expect(await chain.provider.getBalance(chain.accounts[19]!.address)).toBe(10_000n * 10n ** 18n);
    }
  });

  it('controls time per chain: setNextBlockTimestamp, increaseTime, mine, latestTimestamp', async () => {
    const [a, b] = devnet.chains;
    const target = (await a!.latestTimestamp()) + 3600;
    await a!.setNextBlockTimestamp(target);
    await a!.mine();
    expect(await a!.latestTimestamp()).toBe(target);
    expect(Number((await a!.provider.getBlock('latest'))!.timestamp)).toBe(target);

    await a!.increaseTime(600);
    expect(await a!.latestTimestamp()).toBeGreaterThanOrEqual(target + 600);
    expect(await a!.latestTimestamp()).toBeLessThan(target + 610);

    const height = await a!.provider.getBlockNumber();
    await a!.mine(5);
    expect(await a!.provider.getBlockNumber()).toBe(height + 5);

    // The other chain's clock is its own.
    expect(await b!.latestTimestamp()).toBeLessThan(target);
    await expect(a!.setNextBlockTimestamp(1.5)).rejects.toThrow(RangeError);
  });

  it('snapshot and revert restore the chain', async () => {
    const chain = devnet.chains[0]!;
    const height = await chain.provider.getBlockNumber();
    const id = await chain.snapshot();
    await chain.mine(3);
    await chain.revert(id);
    expect(await chain.provider.getBlockNumber()).toBe(height);
    await expect(chain.revert(id)).rejects.toThrow(/unknown snapshot/);
  });
});

describe('stop()', () => {
  it('closes every RPC endpoint and can be called twice', async () => {
    const devnet = await startDevnet({
      chains: [{ chainId: 31337 }, { chainId: 10 }],
      compiled,
      fundedAccounts: 0,
    });
    const urls = devnet.chains.map((chain) => chain.rpcUrl);
    expect(await Promise.all(urls.map(isListening))).toEqual([true, true]);
    await devnet.stop();
    expect(await Promise.all(urls.map(isListening))).toEqual([false, false]);
    await devnet.stop();
  });

  it('refuses bad chain lists before starting anything', async () => {
    await expect(startDevnet({ chains: [], compiled })).rejects.toThrow(/no chains/);
    await expect(startDevnet({ chains: [{ chainId: 97 }, { chainId: 97 }], compiled })).rejects.toThrow(
      /duplicate/,
    );
  });
});

describe('CLI bin/devnet.ts', () => {
  const cli = fileURLToPath(new URL('../../bin/devnet.ts', import.meta.url));

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`prints RPC URLs and addresses, its start-up time, and stops cleanly on ${signal}`, async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', cli, '--chains', '97,11155420'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const exited = once(child, 'exit');

        await expect.poll(() => stderr, { timeout: 30_000, interval: 100 }).toMatch(/devnet ready in \d+ ms/);
        const readyMs = Number(/devnet ready in (\d+) ms/.exec(stderr)![1]);
        expect(readyMs).toBeLessThan(STARTUP_BUDGET_MS);

        const summary = JSON.parse(stdout.split('\n')[0]!) as {
          startupMs: number;
          chains: { chainId: number; rpcUrl: string; contracts: Record<string, string> }[];
        };
        expect(summary.startupMs).toBe(readyMs);
        expect(summary.chains.map((chain) => chain.chainId)).toEqual(CHAIN_IDS);
        for (const chain of summary.chains) {
          expect(Object.keys(chain.contracts).sort()).toEqual(['otmoic', 'reputation', 'token']);
          expect(BigInt((await rpc(chain.rpcUrl, 'eth_chainId')) as string)).toBe(BigInt(chain.chainId));
        }

        child.kill(signal);
        const [code] = await exited;
        expect(code).toBe(0);
        expect(stderr).toContain(`devnet stopped (${signal})`);
        expect(await Promise.all(summary.chains.map((chain) => isListening(chain.rpcUrl)))).toEqual([
          false,
          false,
        ]);
      } finally {
        // Only if an assertion failed before the signal: never leave the child behind.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    });
  }
});
