/**
 * `test/support/schemathesis.sh` runs this: the Connector's callback route (chain 9006) on a fresh database,
 * then schemathesis against its served OpenAPI document (schemathesis-target.ts). Generated bodies that pass
 * validation are ingested for real (archived, published, heights moved), so later cases meet stored heights,
 * gaps and held events.
 */
import { connectorMigrations } from '../../services/connector/migrations.js';
import { startTestConnector } from '../../services/connector/test-harness.js';
import { runSchemathesis } from './schemathesis-target.js';

await runSchemathesis({
  name: 'connector',
  migrations: [connectorMigrations],
  async serve({ pool, url }, cleanups) {
    const connector = await startTestConnector({ pool, url });
    cleanups.push(() => connector.close());
    await connector.heights.init('9006', 'swap', 10);
    await connector.heights.init('9006', 'reputation', 10);
    await connector.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = connector.app.server.address() as { port: number };
    // Heights around the stored 10 (chunks end on multiples of 5): heartbeats that are processed, known
    // already, or leave a gap, instead of random heights that almost all leave one.
    return {
      base: `http://127.0.0.1:${port}`,
      openapiPath: '/openapi.json',
      known: { 'body.height': [10, 15, 20, 25, 40] },
    };
  },
});
