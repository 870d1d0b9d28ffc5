// Compiles the Solidity sources of this folder with solc-js (the `solc` npm package, pinned), so nothing
// is ever downloaded: Hardhat's own compiler download is never used. Output is cached under
// contracts/build/ keyed by a hash of the sources, the compiler version and the settings, because
// solc-js with viaIR takes seconds and every test file needs the artifacts.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JsonFragment } from 'ethers';

export const CONTRACT_NAMES = ['Otmoic', 'Reputation', 'TestToken', 'GasBurner'] as const;
export type ContractName = (typeof CONTRACT_NAMES)[number];

/** What ethers v6 `new ContractFactory(abi, bytecode, signer)` needs. */
export interface CompiledContract {
  abi: JsonFragment[];
  bytecode: string;
}
export type CompiledContracts = Record<ContractName, CompiledContract>;

export interface CompileOptions {
  /** Where cached outputs live; default contracts/build beside this file. */
  cacheDir?: string;
  /** Ignore the cache and compile again. */
  force?: boolean;
}

/** The project's contracts/ folder, also when this module runs compiled from dist/contracts/. */
function findContractsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('compile: no package.json above this module');
    dir = parent;
  }
  return join(dir, 'contracts');
}

const CONTRACTS_DIR = findContractsDir();
const DEFAULT_CACHE_DIR = join(CONTRACTS_DIR, 'build');

// viaIR: the Otmoic events carry 20 fields and EIP-712 hashes 18 words, beyond the legacy pipeline's stack.
// cancun: supported by solc 0.8.30 and by every hardfork the Hardhat devnet runs.
const COMPILER_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  viaIR: true,
  evmVersion: 'cancun',
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
} as const;

/** Version of the pinned solc-js package, read without loading the (large) compiler itself. */
export function solcVersion(): string {
  const require = createRequire(import.meta.url);
  const pkg = require('solc/package.json') as { version: string };
  return pkg.version;
}

async function readSources(): Promise<Record<string, { content: string }>> {
  const sources: Record<string, { content: string }> = {};
  for (const name of CONTRACT_NAMES) {
    const file = `${name}.sol`;
    sources[file] = { content: await readFile(join(CONTRACTS_DIR, file), 'utf8') };
  }
  return sources;
}

function cacheKey(sources: Record<string, { content: string }>, version: string): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ version, settings: COMPILER_SETTINGS }));
  for (const [file, { content }] of Object.entries(sources).sort(([a], [b]) => a.localeCompare(b))) {
    hash.update(`\0${file}\0${content}`);
  }
  return hash.digest('hex').slice(0, 32);
}

interface SolcOutput {
  errors?: { severity: string; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: JsonFragment[]; evm: { bytecode: { object: string } } }>>;
}

async function runSolc(sources: Record<string, { content: string }>): Promise<CompiledContracts> {
  // Loaded only on a cache miss: requiring solc-js parses a multi-megabyte wasm bundle.
  const { default: solc } = await import('solc');
  const input = { language: 'Solidity', sources, settings: COMPILER_SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const compiled = {} as CompiledContracts;
  for (const name of CONTRACT_NAMES) {
    const artifact = output.contracts?.[`${name}.sol`]?.[name];
    if (artifact === undefined) throw new Error(`solc produced no output for ${name}`);
    compiled[name] = { abi: artifact.abi, bytecode: `0x${artifact.evm.bytecode.object}` };
  }
  return compiled;
}

/** Outputs of older sources are never read again; drop them so build/ does not grow without bound. */
async function removeStaleOutputs(cacheDir: string, keep: string): Promise<void> {
  for (const entry of await readdir(cacheDir)) {
    const path = join(cacheDir, entry);
    if (path !== keep && /^contracts-[0-9a-f]+\.json$/.test(entry)) await rm(path, { force: true });
  }
}

/**
 * Compiles Otmoic.sol, Reputation.sol, TestToken.sol and GasBurner.sol (a test receiver) and returns `{abi, bytecode}` per contract.
 * A cached result is reused when sources, solc version and settings are unchanged.
 */
export async function compileContracts(options: CompileOptions = {}): Promise<CompiledContracts> {
  const cacheDir = options.cacheDir ?? DEFAULT_CACHE_DIR;
  const sources = await readSources();
  const cacheFile = join(cacheDir, `contracts-${cacheKey(sources, solcVersion())}.json`);

  if (options.force !== true) {
    try {
      return JSON.parse(await readFile(cacheFile, 'utf8')) as CompiledContracts;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  const compiled = await runSolc(sources);
  await mkdir(cacheDir, { recursive: true });
  // Write then rename: parallel test workers may compile at once, and a reader must never see half a file.
  const tmpFile = `${cacheFile}.${process.pid}.tmp`;
  await writeFile(tmpFile, JSON.stringify(compiled));
  await rename(tmpFile, cacheFile);
  await removeStaleOutputs(cacheDir, cacheFile);
  return compiled;
}
