// Reads the revert data out of an ethers v6 error and decodes it with a contract's ABI.
//
// Where the data sits depends on the path: an estimateGas failure gives `error.data` (CALL_EXCEPTION),
// while a transaction sent with an explicit gas limit fails inside eth_sendRawTransaction, which ethers
// cannot classify, so the data is only in the JSON-RPC error it wraps (`error.error.data`, nested in
// Hardhat's `{message, txHash, data}`). Both are searched.
import type { Interface } from 'ethers';

export interface DecodedRevert {
  /** Custom error name, e.g. "ExpiredOp"; "Error"/"Panic" for require strings and panics. */
  name: string;
  /** Error arguments as ethers decodes them (bigint for integers). */
  args: unknown[];
  /** Raw revert data. */
  data: string;
}

const HEX = /^0x(?:[0-9a-fA-F]{2})*$/;

/** First plausible revert payload (hex, at least a 4-byte selector) under a `data` key, depth-first. */
export function revertDataOf(error: unknown, depth = 0): string | undefined {
  if (depth > 6 || typeof error !== 'object' || error === null) return undefined;
  const record = error as Record<string, unknown>;
  const data = record['data'];
  if (typeof data === 'string' && HEX.test(data) && data.length >= 10) return data;
  for (const key of ['data', 'error', 'info', 'cause']) {
    const found = revertDataOf(record[key], depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The decoded revert of `error`, or undefined when the error carries no revert data `iface` knows. */
export function decodeRevert(error: unknown, iface: Interface): DecodedRevert | undefined {
  const data = revertDataOf(error);
  if (data === undefined) return undefined;
  const parsed = iface.parseError(data);
  if (parsed === null) return undefined;
  return { name: parsed.name, args: [...parsed.args], data };
}
