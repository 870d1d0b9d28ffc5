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
import { progressBar } from './progress.js';

export interface ReplayContext {
  config: AppConfig;
  db: Pool;
  bus: EventBus;
  log: Logger;
  keep: boolean;
}

export interface Replayer {
  sections: readonly SectionName[];
  migrations: readonly MigrationSet[];
  replay(context: ReplayContext): Promise<{ identical: boolean }>;
}

/** In pipeline order: `npm run replay` without a name replays them all, in this order. */
export const replayers: Record<string, Replayer> = {
  classifier: {
    sections: ['classifier', 'chainClients'],
    migrations: [classifierMigrations],
    replay: ({ config, db, bus, log, keep }) => {
      const bar = progressBar('classifier replay');
      return replayClassifier({
        pool: db,
        bus,
        chainClients: config.chainClients!,
        didSupportUrl: config.classifier!.didSupportUrl,
        log,
        keep,
        onProgress: (done, left) => bar.update(left, done),
      });
    },
  },
  points: {
    sections: [],
    migrations: [pointsMigrations],
    replay: ({ db, bus, log, keep }) => {
      const bar = progressBar('points replay');
      return replayPoints({ db, bus, log, keep, onProgress: (left) => bar.update(left) });
    },
  },
};
