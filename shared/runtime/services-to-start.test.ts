import { describe, expect, it } from 'vitest';
import { agentService } from '../../services/agent/index.js';
import { classifierService } from '../../services/classifier/index.js';
import { connectorService } from '../../services/connector/index.js';
import { pointsService } from '../../services/points/index.js';
import { servicesToStart } from './runner.js';

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
