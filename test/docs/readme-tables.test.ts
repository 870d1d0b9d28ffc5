import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AGENT_ERRORS } from '../../services/agent/errors.js';
import { POINTS_ERRORS } from '../../services/points/errors.js';
import { RELAY_ERRORS } from '../../services/relay/errors.js';

/**
 * The READMEs' error tables are what an operator and a client read: every registered code must be there with
 * its HTTP status, and the tables must list no code the service cannot answer (errors.ts is the one table).
 */
describe('README error tables hold every registered code', () => {
  const registries = [
    ['services/relay/README.md', RELAY_ERRORS],
    ['services/agent/README.md', AGENT_ERRORS],
    ['services/points/README.md', POINTS_ERRORS],
  ] as const;

  for (const [file, registry] of registries) {
    it(`${file}: code and HTTP status of each registered error, nothing more`, () => {
      const rows = new Map<number, number>();
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        const row = /^\|\s*(\d{5})\s*\|\s*(\d{3})\s*\|/.exec(line);
        if (row) rows.set(Number(row[1]), Number(row[2]));
      }
      const registered = new Map(
        Object.values(registry as Record<string, { code: number; status: number }>).map((e) => [
          e.code,
          e.status,
        ]),
      );
      expect(rows).toEqual(registered);
    });
  }
});
