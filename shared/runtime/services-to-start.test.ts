import { describe, expect, it } from 'vitest';
import { agentService } from '../../services/agent/index.js';
import { classifierService } from '../../services/classifier/index.js';
import { connectorService } from '../../services/connector/index.js';
import { pointsService } from '../../services/points/index.js';
import { sectionsToLoad, servicesToStart } from './runner.js';

/**
 * `npm start` without names starts every service whose sections are all in the file. One whose own section is
 * there but not the others (`[connector]` without `[rpc-urls]`) was skipped without a word.
 */
describe('the services npm start starts from the file', () => {
  const available = [connectorService, classifierService, pointsService, agentService];

  it('names a service whose own section is there but not all of its others, and what it misses', () => {
    const { chosen, incomplete } = servicesToStart(
      available,
      new Set(['connector', 'chainClients', 'point', 'agent']),
    );
    expect(chosen.map((s) => s.name)).toEqual(['points', 'agent']);
    expect(incomplete).toEqual([{ service: 'connector', missing: ['rpc-urls'] }]);
  });

  it('does not name a service none of whose own section is there (chainClients alone is no classifier)', () => {
    const { chosen, incomplete } = servicesToStart(
      available,
      new Set(['connector', 'chainClients', 'rpc-urls']),
    );
    expect(chosen.map((s) => s.name)).toEqual(['connector']);
    expect(incomplete).toEqual([]);
  });
});

/**
 * The Agent started alone (`npm run start-agent`) checks a complaint's agreement signatures with the EVM chain
 * ids of [[chainClients]]: it loads (and validates) that section when the file has it, and starts without.
 */
describe('the sections loaded for the services started', () => {
  it("loads a service's optional section when the file has it, never demands it", () => {
    expect(sectionsToLoad([agentService], new Set(['agent', 'chainClients', 'point']))).toEqual([
      'agent',
      'chainClients',
    ]);
    expect(sectionsToLoad([agentService], new Set(['agent']))).toEqual(['agent']);
    expect(
      sectionsToLoad(
        [connectorService, agentService],
        new Set(['agent', 'connector', 'chainClients', 'rpc-urls']),
      ),
    ).toEqual(['connector', 'chainClients', 'rpc-urls', 'agent']);
  });
});
