import type { EventBus } from '../bus/port.js';
import type { AppConfig } from '../config/index.js';
import type { MigrationSet } from '../db/migrate.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';

/** What `npm run replay -- <name>` hands a replay: configuration and the shared infrastructure. */
export interface ReplayContext {
  config: AppConfig;
  log: Logger;
  db: Pool;
  bus: EventBus;
  /** Keep the rebuilt tables for inspection instead of dropping them. */
  keep: boolean;
  /** Give up when the rebuild has not reached the ends of its topics after this long. */
  timeoutMs: number;
}

export interface ReplayReport {
  identical: boolean;
  /** Human-readable lines: what was replayed, and each difference found. */
  lines: string[];
}

/**
 * A projection that can be rebuilt from the beginning of its topics into fresh tables and compared with the
 * live ones (DESIGN §4). bin/replay.ts lists them by name.
 */
export interface ReplayModule {
  /** Migrations of the live tables (applied if missing, so a replay can run on a fresh database). */
  migrations: readonly MigrationSet[];
  replay(context: ReplayContext): Promise<ReplayReport>;
}
