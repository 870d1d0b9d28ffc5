import type { ServiceDefinition } from '../shared/runtime/service.js';
import { agentService } from './agent/index.js';
import { chainClientService } from './chain-client/index.js';
import { classifierService } from './classifier/index.js';
import { connectorService } from './connector/index.js';
import { devnetService } from './devnet/index.js';
import { notifierService } from './notifier/index.js';
import { pointsService } from './points/index.js';
import { relayService } from './relay/index.js';

/** Every service this build has, in start order (producers before consumers). */
export const services: readonly ServiceDefinition[] = [
  devnetService,
  chainClientService,
  connectorService,
  classifierService,
  pointsService,
  agentService,
  relayService,
  notifierService,
];
