// compileContracts: artifacts usable by ethers, and the on-disk cache keyed by sources + solc version.
import { copyFile, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Interface } from 'ethers';
import { CONTRACT_NAMES, compileContracts, solcVersion } from './compile.js';

const BUILD_DIR = fileURLToPath(new URL('./build', import.meta.url));

describe('compileContracts', () => {
  it('returns an ethers-ready ABI and creation bytecode for every contract', async () => {
    const compiled = await compileContracts();
    expect(Object.keys(compiled).sort()).toEqual([...CONTRACT_NAMES].sort());
    for (const name of CONTRACT_NAMES) {
      expect(compiled[name].bytecode).toMatch(/^0x(?:[0-9a-f]{2})+$/);
      expect(() => new Interface(compiled[name].abi)).not.toThrow();
    }
    expect(new Interface(compiled.Otmoic.abi).getFunction('swapStatus')?.format('sighash')).toBe(
      'swapStatus(bytes32)',
    );
  });

  it('uses the pinned solc-js from npm', () => {
    expect(solcVersion()).toBe('0.8.30');
  });

  it('serves a repeated compile from the cache file named by the source hash', async () => {
    await compileContracts();
    const cached = (await readdir(BUILD_DIR)).filter((file) => /^contracts-[0-9a-f]+\.json$/.test(file));
    expect(cached.length).toBeGreaterThan(0);

    // The same file names in another cache dir, with a marker: if it comes back, a cache file was read
    // (and solc was not run). Older outputs may linger beside the current one, so all are copied.
    const otherDir = await mkdtemp(join(tmpdir(), 'otmoic-build-'));
    try {
      for (const file of cached) {
        const copy = join(otherDir, file);
        await copyFile(join(BUILD_DIR, file), copy);
        const artifacts = JSON.parse(await readFile(copy, 'utf8')) as Record<string, { bytecode: string }>;
        artifacts['TestToken']!.bytecode = '0xfeed';
        await writeFile(copy, JSON.stringify(artifacts));
      }

      const started = performance.now();
      const fromCache = await compileContracts({ cacheDir: otherDir });
      expect(fromCache.TestToken.bytecode).toBe('0xfeed');
      expect(performance.now() - started).toBeLessThan(1000);
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
  });
});
