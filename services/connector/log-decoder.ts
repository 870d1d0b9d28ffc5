import { getAddress, type EventFragment, type ParamType } from 'ethers';
import { lenientUtf8 } from '../../shared/otmoic/parse-log.js';

// ethers' decodeEventLog builds a coder tree, copies the data several times, wraps every value in a Result
// and hashes the event signature on each call (about 0.2 ms for a TransferOut). The Otmoic events use a few
// ABI types only, so each event's layout is compiled once from its ABI fragment into a plan that reads the
// data in place. Values and refusals are ethers' (log-decoder.test.ts compares both on real and mutated
// logs), except that a value ethers would only fail on when read (a bad address) fails here at once, and that a
// string whose bytes are not UTF-8 is read as the chain client reads it (parseLogLenient), not refused.

/** A decoded value: bigint (uint), string (address checksummed, bytes32 lower-case hex, string), boolean, or a tuple. */
export type Decoded = bigint | string | boolean | DecodedTuple;
export interface DecodedTuple {
  [name: string]: Decoded;
}

type Plan =
  | { kind: 'uint'; bytes: number }
  | { kind: 'address' }
  | { kind: 'bool' }
  | { kind: 'fixedBytes'; size: number }
  | { kind: 'string' }
  | { kind: 'bytes' }
  | { kind: 'tuple'; fields: Array<{ name: string; plan: Plan }>; dynamic: boolean };

const WORD = 32;

export class LogDecodeError extends Error {}

function planOf(param: ParamType): Plan | undefined {
  const type = param.type;
  if (param.isTuple()) {
    const fields: Array<{ name: string; plan: Plan }> = [];
    for (const component of param.components) {
      const plan = planOf(component);
      if (!plan || !component.name) return undefined;
      fields.push({ name: component.name, plan });
    }
    return { kind: 'tuple', fields, dynamic: fields.some((f) => isDynamic(f.plan)) };
  }
  if (type === 'address') return { kind: 'address' };
  if (type === 'bool') return { kind: 'bool' };
  if (type === 'string') return { kind: 'string' };
  if (type === 'bytes') return { kind: 'bytes' };
  const uint = /^uint(\d+)$/.exec(type);
  if (uint) return { kind: 'uint', bytes: Number(uint[1]) / 8 };
  const fixed = /^bytes(\d+)$/.exec(type);
  if (fixed) return { kind: 'fixedBytes', size: Number(fixed[1]) };
  // Signed integers, arrays: not in the Otmoic ABI; the caller falls back to ethers.
  return undefined;
}

function isDynamic(plan: Plan): boolean {
  return plan.kind === 'string' || plan.kind === 'bytes' || (plan.kind === 'tuple' && plan.dynamic);
}

/** Bytes [at, at + 32) or BUFFER_OVERRUN, as ethers. */
function word(data: Buffer, at: number): number {
  if (at + WORD > data.length) throw new LogDecodeError('data out-of-bounds');
  return at;
}

/** A word read as an offset or length: ethers' toNumber refuses anything above 2^53 - 1. */
function index(data: Buffer, at: number): number {
  word(data, at);
  for (let i = at; i < at + 24; i++) if (data[i] !== 0) throw new LogDecodeError('overflow');
  const value = data.readBigUInt64BE(at + 24);
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new LogDecodeError('overflow');
  return Number(value);
}

// Contract, sender and receiver addresses repeat from log to log; a checksum is a keccak each time.
const checksums = new Map<string, string>();
export function checksummed(address: string): string {
  let known = checksums.get(address);
  if (known === undefined) {
    // Lower-cased first: a chain client's hex is never a typed address, and a mixed case that is not a valid
    // checksum would throw (a 500 for a body that is only unusual).
    known = getAddress(address.toLowerCase());
    if (checksums.size >= 10_000) checksums.clear();
    checksums.set(address, known);
  }
  return known;
}

/** A dynamic bytes value at `at`: its length word, then the bytes (the last word's padding may be cut off). */
function dynamicBytes(data: Buffer, at: number): Buffer {
  const length = index(data, at);
  const start = at + WORD;
  const padded = Math.ceil(length / WORD) * WORD;
  // ethers reads events loosely: unpadded data is allowed at the very end only.
  if (start + padded > data.length && start + length > data.length)
    throw new LogDecodeError('data out-of-bounds');
  return data.subarray(start, start + length);
}

function decodeAt(data: Buffer, at: number, plan: Plan): Decoded {
  switch (plan.kind) {
    case 'uint':
      word(data, at);
      // ethers masks to the type's width (the higher bytes are ignored).
      return plan.bytes === 32
        ? BigInt('0x' + data.toString('hex', at, at + WORD))
        : plan.bytes === 8
          ? data.readBigUInt64BE(at + 24)
          : BigInt('0x' + (data.toString('hex', at + WORD - plan.bytes, at + WORD) || '0'));
    case 'address':
      word(data, at);
      for (let i = at; i < at + 12; i++)
        if (data[i] !== 0) throw new LogDecodeError('value exceeds width (20 bytes)');
      return checksummed('0x' + data.toString('hex', at + 12, at + WORD));
    case 'bool':
      word(data, at);
      return data.subarray(at, at + WORD).some((b) => b !== 0);
    case 'fixedBytes':
      word(data, at);
      return '0x' + data.toString('hex', at, at + plan.size);
    case 'string':
      // Not refused when its bytes are not UTF-8: the contracts take any bytes there, so anyone could emit such
      // an event, and refused, its chunk was refused for good (history and the RPC give the same log): the
      // chain's stream stopped there. Ill-formed sequences read as U+FFFD, as the chain client reads them.
      return lenientUtf8.decode(dynamicBytes(data, at));
    case 'bytes':
      return '0x' + dynamicBytes(data, at).toString('hex');
    case 'tuple': {
      // Head words in order; a dynamic member's head is its offset from the tuple's start.
      const out: DecodedTuple = {};
      let head = at;
      for (const field of plan.fields) {
        out[field.name] = isDynamic(field.plan)
          ? decodeAt(data, at + index(data, head), field.plan)
          : decodeAt(data, head, field.plan);
        head += headSize(field.plan);
      }
      return out;
    }
  }
}

function headSize(plan: Plan): number {
  if (plan.kind === 'tuple' && !plan.dynamic) return plan.fields.reduce((n, f) => n + headSize(f.plan), 0);
  return WORD;
}

/** Decodes the non-indexed data of one event fragment; built once per fragment. */
export type EventDecoder = (data: string) => DecodedTuple;

/**
 * A decoder for `fragment`'s data, or undefined when the fragment has indexed parameters or a type the
 * plans do not cover (the caller then uses ethers). `data`: 0x-prefixed hex of whole bytes, already checked.
 */
export function compileEventDecoder(fragment: EventFragment): EventDecoder | undefined {
  if (fragment.inputs.some((p) => p.indexed)) return undefined;
  const fields: Array<{ name: string; plan: Plan }> = [];
  for (const input of fragment.inputs) {
    const plan = planOf(input);
    if (!plan || !input.name) return undefined;
    fields.push({ name: input.name, plan });
  }
  const plan: Plan = { kind: 'tuple', fields, dynamic: true };
  return (data) => decodeAt(Buffer.from(data.slice(2), 'hex'), 0, plan) as DecodedTuple;
}
