// What `npm run replay` can rebuild: each consumer's sections, migrations and replay function.
import type { AppConfig, SectionName } from '../shared/config/index.js';
import type { MigrationSet } from '../shared/db/migrate.js';
import type { EventBus } from '../shared/bus/port.js';
import type { Pool } from '../shared/db/pool.js';
import type { Logger } from '../shared/logging/logger.js';
import { classifierMigrations } from '../services/classifier/migrations.js';
import { replayClassifier } from '../services/classifier/replay.js';
import { pointsMigrations } from '../services/points/migrations.js';
import { replayPointsOnThread } from '../services/points/replay-thread.js';

export interface ReplayContext {
  config: AppConfig;
  db: Pool;
  /** The database's URL (a replay on a thread of its own opens its own pool). */
  dbUrl: string;
  bus: EventBus;
  log: Logger;
  keep: boolean;
  /** Messages handled so far and those left (the replayer's own count). */
  onProgress(done: number, left: number): void;
}

export interface Replayer {
  sections: readonly SectionName[];
  migrations: readonly MigrationSet[];
  replay(context: ReplayContext): Promise<{ identical: boolean }>;
}

/**
 * In pipeline order. `npm run replay` without a name replays them all at once: each rebuilds from live topics
 * (points from the live verdicts), so none waits for another, and two cores do twice the work.
 */
export const replayers: Record<string, Replayer> = {
  classifier: {
    sections: ['classifier', 'chainClients'],
    migrations: [classifierMigrations],
    replay: ({ config, db, bus, log, keep, onProgress }) =>
      replayClassifier({
        pool: db,
        bus,
        chainClients: config.chainClients!,
        didSupportUrl: config.classifier!.didSupportUrl,
        log,
        keep,
        onProgress,
      }),
  },
  points: {
    sections: [],
    migrations: [pointsMigrations],
    // On a thread of its own: beside the classifier's replay it has a core to itself.
    replay: ({ config, dbUrl, log, keep, onProgress }) => {
      let total = 0;
      return replayPointsOnThread(
        { dbUrl, bus: config.bus, poolSize: config.database.poolSize, keep, logLevel: log.level },
        (left) => {
          total = Math.max(total, left);
          onProgress(total - left, left);
        },
      );
    },
  },
};
