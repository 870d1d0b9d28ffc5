import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { startHttpService } from '../../shared/runtime/http-service.js';

/**
 * Connector: talks to the chain clients and publishes heights and events (spec §1). This is its service shell
 * (configuration, HTTP with /health and /metrics); the callbacks, registration and history backfill are issue #5.
 */
export const connectorService: ServiceDefinition = {
  name: 'connector',
  sections: ['connector', 'chainClients'],
  async start(context) {
    const config = context.config.connector!;
    return startHttpService(context, 'connector', config.port);
  },
};
