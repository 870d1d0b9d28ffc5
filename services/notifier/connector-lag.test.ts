import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HealthWatch } from './watch.js';

/** The Connector's own gauges, as services/connector registers them: it processed `height`, `lag` behind. */
function connectorGauges(registry: Registry, chain: string, height: number, lag: number) {
  const labels = { chain, stream: 'swap' };
  new Gauge({
    name: 'connector_height',
    help: 't',
    labelNames: ['chain', 'stream'],
    registers: [registry],
  }).set(labels, height);
  new Gauge({
    name: 'connector_lag_blocks',
    help: 't',
    labelNames: ['chain', 'stream'],
    registers: [registry],
  }).set(labels, lag);
}

const toldKinds = async (registry: Registry) =>
  (await new HealthWatch(registry).look(7_000)).map((d) => d.notification);

/**
 * A lagging Connector (DESIGN §5.7) was read only as our chain client's height minus the Connector's, so it
 * was told only when our chain client ran in the same process. With the Otmoic chain client (a separate
 * program posting callbacks), or the notifier started beside the Connector alone as the README advises, the
 * Connector's own connector_lag_blocks was right there and no lag was ever told.
 */
describe('a lagging Connector', () => {
  it('is told with our chain client in the process (its height minus the Connector height)', async () => {
    const registry = new Registry();
    connectorGauges(registry, '614', 1_000, 500);
    new Gauge({
      name: 'chain_client_height',
      help: 't',
      labelNames: ['instance'],
      registers: [registry],
    }).set({ instance: '614' }, 1_500);
    expect(await toldKinds(registry)).toMatchObject([
      { kind: 'connector_lagging', payload: { chain: '614', lagBlocks: 500 } },
    ]);
  });

  it('is told from connector_lag_blocks when the chain client runs elsewhere', async () => {
    const registry = new Registry();
    connectorGauges(registry, '614', 1_000, 500);
    expect(await toldKinds(registry)).toMatchObject([
      { kind: 'connector_lagging', payload: { chain: '614', lagBlocks: 500 } },
    ]);
  });

  it('is not told when the Connector keeps up', async () => {
    const registry = new Registry();
    connectorGauges(registry, '614', 1_000, 3);
    expect(await toldKinds(registry)).toEqual([]);
  });
});
