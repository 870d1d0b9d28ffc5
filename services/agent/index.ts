import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { startHttpService } from '../../shared/runtime/http-service.js';

/**
 * Agent: takes complaints and submits them on chain (spec §1). This is its service shell (configuration, HTTP
 * with /health and /metrics); /submit-complaint and the submitter come in a later issue.
 */
export const agentService: ServiceDefinition = {
  name: 'agent',
  sections: ['agent'],
  async start(context) {
    return startHttpService(context, 'agent', context.config.agent!.port);
  },
};
