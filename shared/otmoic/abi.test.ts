import { Interface } from 'ethers';
import { describe, expect, it } from 'vitest';
import { compileContracts } from '../../contracts/compile.js';
import { OTMOIC_REPUTATION_ABI, OTMOIC_SWAP_ABI } from './abi.js';

/** Every function, event and error real Otmoic clients use exists in our compiled contracts with that exact signature. */
describe('Otmoic ABI fragments vs our compiled contracts', () => {
  const cases = [
    ['Otmoic', OTMOIC_SWAP_ABI],
    ['Reputation', OTMOIC_REPUTATION_ABI],
  ] as const;
  for (const [name, fragments] of cases) {
    it(`${name} implements every fragment`, async () => {
      const compiled = new Interface((await compileContracts())[name].abi);
      const expected = new Interface(fragments);
      // What the wire depends on: selector, output types, mutability (parameter names may differ).
      expected.forEachFunction((f) => {
        const actual = compiled.getFunction(f.selector);
        expect(actual?.format('sighash'), f.format('sighash')).toBe(f.format('sighash'));
        expect(actual?.outputs.map((o) => o.format('sighash'))).toEqual(
          f.outputs.map((o) => o.format('sighash')),
        );
        expect(actual?.constant).toBe(f.constant); // view and pure are both static calls to a client
        expect(actual?.payable).toBe(f.payable);
      });
      expected.forEachEvent((e) =>
        expect(compiled.getEvent(e.topicHash)?.format('sighash')).toBe(e.format('sighash')),
      );
      for (const fragment of expected.fragments.filter((f) => f.type === 'error')) {
        const sighash = (fragment as { format(f: 'sighash'): string }).format('sighash');
        expect(compiled.getError(sighash)?.format('sighash')).toBe(sighash);
      }
    });
  }
});
