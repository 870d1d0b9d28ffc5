import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { type EventFragment, type Interface } from 'ethers';
import { describe, expect, it } from 'vitest';
import { reputationInterface, swapInterface } from '../../shared/otmoic/abi.js';
import { parseLogLenient } from '../../shared/otmoic/parse-log.js';
import { compileEventDecoder } from './log-decoder.js';

const vectors = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../test/fixtures/otmoic-relay.json'), 'utf8'),
);

/**
 * ethers' answer as the chain client reads a log (parseLogLenient: a string that is not UTF-8 is read with
 * U+FFFD, not refused): the decoded values, or that it refuses (at decoding or, deferred, when a value is read).
 */
function ethersDecode(iface: Interface, fragment: EventFragment, data: string): unknown {
  try {
    return parseLogLenient(iface, { topics: [fragment.topicHash], data })!.args.toObject(true);
  } catch {
    return 'refused';
  }
}

function fastDecode(fragment: EventFragment, data: string): unknown {
  try {
    return compileEventDecoder(fragment)!(data);
  } catch {
    return 'refused';
  }
}

// A value of every event of both interfaces, encoded by ethers.
const sample = (type: string, i: number): unknown => {
  if (type === 'address') return '0x' + randomBytes(20).toString('hex');
  if (type === 'bytes32') return '0x' + randomBytes(32).toString('hex');
  if (type === 'string') return ['', 'lp-1', 'é€😀', 'x'.repeat(33 + i)][i % 4];
  if (type === 'uint64') return BigInt(2) ** BigInt(64) - BigInt(1 + i);
  if (type === 'uint256') return BigInt('0x' + randomBytes(32).toString('hex'));
  throw new Error(type);
};
function encoded(iface: Interface, fragment: EventFragment, i: number): string {
  const values = fragment.inputs.map((p) =>
    p.isTuple() ? p.components.map((c) => sample(c.type, i)) : sample(p.type, i),
  );
  return iface.encodeEventLog(fragment, values).data;
}

const fragments: Array<[Interface, EventFragment]> = [];
for (const iface of [swapInterface, reputationInterface])
  iface.forEachEvent((f) => fragments.push([iface, f]));

describe('compiled event decoders decode exactly what ethers decodes', () => {
  it('covers every Otmoic event (none falls back to ethers)', () => {
    for (const [, fragment] of fragments) expect(compileEventDecoder(fragment), fragment.name).toBeDefined();
  });

  it('gives the same values on the golden logs and on encoded logs of every event', () => {
    for (const v of vectors.events.filter((e: { log_data?: string }) => e.log_data)) {
      const fragment = swapInterface.getEvent(v.topic0)!;
      expect(fastDecode(fragment, v.log_data)).toEqual(ethersDecode(swapInterface, fragment, v.log_data));
    }
    for (const [iface, fragment] of fragments)
      for (let i = 0; i < 8; i++) {
        const data = encoded(iface, fragment, i);
        const expected = ethersDecode(iface, fragment, data);
        expect(expected).not.toBe('refused');
        expect(fastDecode(fragment, data)).toEqual(expected);
      }
  });

  it('refuses what ethers refuses and agrees on the rest, for truncated and corrupted logs', () => {
    const cases: string[] = [];
    for (const [iface, fragment] of fragments) {
      const data = encoded(iface, fragment, 3);
      const bytes = Buffer.from(data.slice(2), 'hex');
      // Truncated at every word boundary and inside the last word.
      for (let n = 0; n < bytes.length; n += 32)
        cases.push(fragment.name + ':' + bytes.subarray(0, n).toString('hex'));
      cases.push(fragment.name + ':' + bytes.subarray(0, bytes.length - 5).toString('hex'));
      // One byte set in every position (offsets, lengths, address padding, uint64 padding, UTF-8).
      for (let at = 0; at < bytes.length; at++)
        for (const value of [0x01, 0x80, 0xff]) {
          const copy = Buffer.from(bytes);
          copy[at] = value;
          cases.push(fragment.name + ':' + copy.toString('hex'));
        }
    }
    const byName = new Map(fragments.map(([iface, f]) => [f.name, [iface, f] as const]));
    let refused = 0;
    for (const c of cases) {
      const [name, hex] = c.split(':') as [string, string];
      const [iface, fragment] = byName.get(name)!;
      const expected = ethersDecode(iface, fragment, '0x' + hex);
      if (expected === 'refused') refused++;
      expect(fastDecode(fragment, '0x' + hex), `${name} 0x${hex.slice(0, 80)}…`).toEqual(expected);
    }
    // The corruption reaches both sides of the line.
    expect(refused).toBeGreaterThan(100);
    expect(cases.length - refused).toBeGreaterThan(100);
  });
});
