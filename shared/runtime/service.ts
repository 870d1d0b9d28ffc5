import type { Registry } from 'prom-client';
import type { Archive } from '../archive/port.js';
import type { EventBus } from '../bus/port.js';
import type { AppConfig, SectionName } from '../config/index.js';
import type { MigrationSet } from '../db/migrate.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import type { HealthCheck } from './http.js';

/** What the runner hands every service: configuration and the shared infrastructure. */
export interface ServiceContext {
  config: AppConfig;
  log: Logger;
  db: Pool;
  /** Connection string of `db` (for dedicated connections such as LISTEN). */
  dbUrl: string;
  bus: EventBus;
  archive: Archive;
  metrics: Registry;
  /** Makes a consumer group's lag visible on /metrics. */
  trackConsumerGroup(group: string, topics: readonly string[]): void;
  /** GET /health's `bus` check (the runner's; absent in test harnesses): degraded while the bus does not answer. */
  busHealth?: HealthCheck;
  /**
   * Aborted when the process stops and in-flight work had its grace (the runner's; absent in test harnesses):
   * outbound calls pass it on (outboundSignal), so a stop never waits out their timeouts.
   */
  stopSignal?: AbortSignal;
}

export interface RunningService {
  /** Stop taking work, finish what is in flight, release resources. */
  stop(): Promise<void>;
}

export interface ServiceDefinition {
  name: string;
  /** Configuration sections this service validates and needs; a file with them starts it. */
  sections: readonly SectionName[];
  /** Sections it validates and uses when the file has them, and starts without. */
  optionalSections?: readonly SectionName[];
  migrations?: readonly MigrationSet[];
  start(context: ServiceContext): Promise<RunningService>;
}
