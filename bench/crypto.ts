/**
 * Signer-recovery throughput: recoverSwapSigner (native libsecp256k1 and the JS fallback) beside
 * ethers.verifyTypedData on the same signed agreements, plus where the time goes in each.
 *
 * Each case cycles through a pool of distinct agreements signed by distinct keys (no input repeats
 * back to back), warms up, then runs for a fixed time budget. Run: `npx tsx bench/crypto.ts`.
 */
import { pathToFileURL } from 'node:url';
import { recoverAddress, SigningKey, TypedDataEncoder, verifyTypedData } from 'ethers';
import { keccakBackend } from '../shared/chain/keccak.js';
import { recoverAddressFromDigest } from '../shared/chain/recover-address.js';
import {
  parseSwapAgreement,
  recoverSwapSigner,
  swapDigest,
  swapTypedDataTypes,
  type SwapAgreement,
} from '../shared/chain/otmoic-swap-eip712.js';
import { jsSecp256k1Backend, nativeSecp256k1Backend } from '../shared/chain/secp256k1-backend.js';
import type { BenchRow, BenchSection } from './report.js';

const POOL_SIZE = 64;
const CHAIN_ID = 97;
const WARM_UP_MS = 300;
const BUDGET_MS = 2_000;

interface SignedAgreement {
  json: Record<string, unknown>;
  parsed: SwapAgreement;
  signature: string;
  digest: string;
  digestBytes: Uint8Array;
  signer: string;
}

function makePool(): SignedAgreement[] {
  const domain = { name: 'OtmoicSwap', version: '1', chainId: CHAIN_ID };
  const types = swapTypedDataTypes('swap');
  return Array.from({ length: POOL_SIZE }, (_, index) => {
    const key = new SigningKey('0x' + (0x1000n + BigInt(index) * 7919n).toString(16).padStart(64, '0'));
    const json = {
      src_chain_id: 9006,
      src_address: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      src_token: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      src_amount: (10n ** 18n + BigInt(index)).toString(),
      dst_chain_id: 60,
      dst_address: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
      dst_token: '0x0000000000000000000000000000000000000000',
      dst_amount: (99n * 10n ** 16n + BigInt(index)).toString(),
      dst_native_amount: '0',
      requestor: `did:requestor-${index}`,
      lp_id: `lp-${index}`,
      agreement_reached_time: 1_700_000_000 + index,
      expected_single_step_time: 60,
      tolerant_single_step_time: 120,
      earliest_refund_time: 1_700_000_541 + index,
    };
    const digest = TypedDataEncoder.hash(domain, types, json);
    return {
      json,
      parsed: parseSwapAgreement(json, 'swap'),
      signature: key.sign(digest).serialized,
      digest,
      digestBytes: Buffer.from(digest.slice(2), 'hex'),
      signer: verifyTypedData(domain, types, json, key.sign(digest).serialized),
    };
  });
}

type Operation = (item: SignedAgreement) => unknown;

/** Runs `operation` cycling over the pool for about `ms`; returns the operation count and time taken. */
function runFor(pool: SignedAgreement[], operation: Operation, ms: number): { ops: number; elapsed: number } {
  const start = performance.now();
  let ops = 0;
  let elapsed = 0;
  do {
    for (let batch = 0; batch < 16; batch++) operation(pool[(ops + batch) % pool.length]!);
    ops += 16;
    elapsed = performance.now() - start;
  } while (elapsed < ms);
  return { ops, elapsed };
}

/**
 * Operations per second of each case. The budget is split into slices run round-robin across the
 * cases, so a load change on the shared 2-core machine hits every case alike and the ratios hold.
 */
function measureInterleaved(
  pool: SignedAgreement[],
  operations: Operation[],
  budgetMs: number,
  slices = 4,
): number[] {
  for (const operation of operations) runFor(pool, operation, WARM_UP_MS);
  const totals = operations.map(() => ({ ops: 0, elapsed: 0 }));
  for (let slice = 0; slice < slices; slice++) {
    operations.forEach((operation, index) => {
      const { ops, elapsed } = runFor(pool, operation, budgetMs / slices);
      totals[index]!.ops += ops;
      totals[index]!.elapsed += elapsed;
    });
  }
  return totals.map(({ ops, elapsed }) => (ops / elapsed) * 1000);
}

const format = (opsPerSecond: number) => Math.round(opsPerSecond).toLocaleString('en-US');
const micros = (opsPerSecond: number) => (1e6 / opsPerSecond).toFixed(1);

export async function run(): Promise<BenchSection[]> {
  const pool = makePool();
  const domain = { name: 'OtmoicSwap', version: '1', chainId: CHAIN_ID };
  const types = swapTypedDataTypes('swap');

  // Correctness first: a fast wrong answer is worthless.
  for (const item of pool) {
    const backends = nativeSecp256k1Backend
      ? [nativeSecp256k1Backend, jsSecp256k1Backend]
      : [jsSecp256k1Backend];
    for (const backend of backends) {
      if (recoverSwapSigner(item.parsed, item.signature, CHAIN_ID, 'swap', backend) !== item.signer) {
        throw new Error(`recoverSwapSigner (${backend.name}) disagrees with ethers`);
      }
    }
  }

  console.log(`signer recovery, OtmoicSwap Message (15 members), ${POOL_SIZE} distinct signed agreements`);
  console.log(
    `node ${process.version}, keccak: ${keccakBackend}, native secp256k1: ${nativeSecp256k1Backend ? 'loaded' : 'NOT available'}`,
  );
  console.log(`warm-up ${WARM_UP_MS} ms, budget ${BUDGET_MS} ms per case\n`);

  const native = nativeSecp256k1Backend;
  const cases: [string, Operation][] = [
    ['ethers.verifyTypedData', (item) => verifyTypedData(domain, types, item.json, item.signature)],
  ];
  if (native) {
    cases.push([
      'fast/native recoverSwapSigner',
      (item) => recoverSwapSigner(item.parsed, item.signature, CHAIN_ID, 'swap', native),
    ]);
    cases.push([
      'fast/native parse + recover',
      (item) =>
        recoverSwapSigner(parseSwapAgreement(item.json, 'swap'), item.signature, CHAIN_ID, 'swap', native),
    ]);
  }
  cases.push([
    'fast/js recoverSwapSigner',
    (item) => recoverSwapSigner(item.parsed, item.signature, CHAIN_ID, 'swap', jsSecp256k1Backend),
  ]);

  const rates = measureInterleaved(
    pool,
    cases.map(([, operation]) => operation),
    BUDGET_MS,
  );
  const ethersOps = rates[0]!;
  const rows: BenchRow[] = cases.map(([label], index) =>
    index === 0
      ? { measure: label, value: `${format(rates[index]!)} ops/s`, note: 'baseline' }
      : {
          measure: label,
          value: `${format(rates[index]!)} ops/s`,
          baseline: `${format(ethersOps)} ops/s`,
          ratio: rates[index]! / ethersOps,
        },
  );
  cases.forEach(([label], index) => {
    const ops = rates[index]!;
    const comparison =
      index === 0
        ? ''
        : ` = ${(ops / ethersOps).toFixed(1).padStart(5)}x ethers.verifyTypedData ${format(ethersOps)} ops/s`;
    console.log(
      `${label.padEnd(30)} ${format(ops).padStart(7)} ops/s (${micros(ops).padStart(7)} µs/op)${comparison}`,
    );
  });

  console.log('\nwhere the time goes (µs per operation, 500 ms per part):');
  const parts: [string, Operation][] = [
    ['ethers TypedDataEncoder.hash', (item) => TypedDataEncoder.hash(domain, types, item.json)],
    ['ethers recoverAddress(digest)', (item) => recoverAddress(item.digest, item.signature)],
    ['fast parseSwapAgreement (zod)', (item) => parseSwapAgreement(item.json, 'swap')],
    ['fast swapDigest', (item) => swapDigest(item.parsed, CHAIN_ID, 'swap')],
    [
      'fast/js recoverAddressFromDigest',
      (item) => recoverAddressFromDigest(item.digestBytes, item.signature, jsSecp256k1Backend),
    ],
  ];
  if (native)
    parts.push([
      'fast/native recoverAddressFromDigest',
      (item) => recoverAddressFromDigest(item.digestBytes, item.signature, native),
    ]);
  const partRates = measureInterleaved(
    pool,
    parts.map(([, operation]) => operation),
    500,
    2,
  );
  parts.forEach(([label], index) =>
    console.log(`  ${label.padEnd(38)} ${micros(partRates[index]!).padStart(8)}`),
  );
  return [
    {
      title: `signer recovery, ${POOL_SIZE} distinct signed agreements (keccak: ${keccakBackend}, native secp256k1: ${native ? 'loaded' : 'not available'})`,
      rows,
    },
    {
      title: 'where the time goes',
      rows: parts.map(([label], index) => ({
        measure: label,
        value: `${micros(partRates[index]!)} µs/op`,
      })),
    },
  ];
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await run();
}
