// What `npm run replay` can rebuild: each consumer's sections, migrations and replay function.
import type { AppConfig, SectionName } from '../shared/config/index.js';
import type { MigrationSet } from '../shared/db/migrate.js';
import type { EventBus } from '../shared/bus/port.js';
import type { Pool } from '../shared/db/pool.js';
import type { Logger } from '../shared/logging/logger.js';
import { classifierMigrations } from '../services/classifier/migrations.js';
import { replayClassifier } from '../services/classifier/replay.js';
import { pointsMigrations } from '../services/points/migrations.js';
import { replayPoints } from '../services/points/replay.js';

export interface ReplayContext {
  config: AppConfig;
  db: Pool;
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
        signerMemoEntries: config.classifier!.signerMemoEntries,
        log,
        keep,
        onProgress,
      }),
  },
  points: {
    sections: [],
    migrations: [pointsMigrations],
    replay: ({ db, bus, log, keep, onProgress }) => {
      let total = 0;
      return replayPoints({
        db,
        bus,
        log,
        keep,
        onProgress: (left) => {
          total = Math.max(total, left);
          onProgress(total - left, left);
        },
      });
    },
  },
};
