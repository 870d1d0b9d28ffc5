import type { ServiceDefinition } from '../../shared/runtime/service.js';
import { startHttpService } from '../../shared/runtime/http-service.js';

/**
 * Points: serves reputation points from the violations topic (spec §1, §2.4). This is its service shell
 * (configuration, HTTP with /health and /metrics); scoring and the queries come in a later issue.
 */
export const pointsService: ServiceDefinition = {
  name: 'points',
  sections: ['point'],
  async start(context) {
    return startHttpService(context, 'points', context.config.point!.port);
  },
};
