import type { Archive } from '../archive/port.js';
import { PostgresArchive } from '../archive/postgres-archive.js';
import type { EventBus } from '../bus/port.js';
import { PostgresBus } from '../bus/postgres/postgres-bus.js';
import type { AppConfig } from '../config/index.js';
import { redactUrl } from '../config/redact.js';
import { runningEmbeddedUrl, startEmbeddedPostgres, type EmbeddedServer } from '../db/embedded.js';
import { migrate, type MigrationSet } from '../db/migrate.js';
import { coreMigrations } from '../db/migrations/core.js';
import { createPool, type Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { busFromConfig } from './bus-from-config.js';

const PRUNE_INTERVAL_MS = 10 * 60_000;

export interface Infrastructure {
  db: Pool;
  dbUrl: string;
  bus: EventBus;
  archive: Archive;
  /** Closes everything in dependency order: bus, archive, pool, then the embedded server. */
  close(): Promise<void>;
}

/** Database (embedded or external), migrations, event bus and archive, as the configuration says. */
export async function startInfrastructure(
  config: AppConfig,
  log: Logger,
  migrations: readonly MigrationSet[],
  options: { shareRunningEmbedded?: boolean } = {},
): Promise<Infrastructure> {
  let embedded: EmbeddedServer | undefined;
  let dbUrl: string;
  if (config.database.mode === 'embedded') {
    const target = {
      dataDir: config.database.dataDir,
      port: config.database.port,
      database: config.database.name,
      log: log.child({ component: 'embedded-postgres' }),
    };
    const running = options.shareRunningEmbedded ? await runningEmbeddedUrl(target) : undefined;
    if (running) log.info('using the embedded PostgreSQL another process runs');
    else embedded = await startEmbeddedPostgres(target);
    dbUrl = running ?? embedded!.url;
  } else {
    dbUrl = config.database.url;
    log.info({ database: redactUrl(dbUrl) }, 'using external PostgreSQL');
  }

  const db = createPool(dbUrl, { max: config.database.poolSize, log });
  const closers: Array<() => Promise<void>> = [];
  try {
    await migrate(db, [coreMigrations, ...migrations], log);

    const bus = await busFromConfig(config.bus, db, dbUrl, log);
    if (bus instanceof PostgresBus) {
      // Kafka enforces retention itself; the postgres log deletes expired messages on a timer.
      const pruner = setInterval(() => {
        bus
          .prune()
          .then((n) => n > 0 && log.info({ deleted: n }, 'expired bus messages pruned'))
          .catch((err) => log.warn({ err: (err as Error).message }, 'bus prune failed'));
      }, PRUNE_INTERVAL_MS);
      pruner.unref();
      closers.push(async () => clearInterval(pruner));
    }
    closers.push(() => bus.close());
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, config.bus.partitions)));

    let archive: Archive;
    if (config.archive.adapter === 'mongodb') {
      const { MongoArchive } = await import('../archive/mongodb-archive.js');
      archive = await MongoArchive.connect(config.archive.mongo!);
    } else {
      archive = new PostgresArchive(db);
    }
    closers.push(() => archive.close());
    log.info(
      { bus: bus.kind, archive: archive.kind, database: config.database.mode },
      'infrastructure ready',
    );

    return {
      db,
      dbUrl,
      bus,
      archive,
      async close() {
        for (const close of closers.reverse())
          await close().catch((err) => log.warn({ err: err.message }, 'close failed'));
        await db.end().catch(() => undefined);
        await embedded?.stop();
      },
    };
  } catch (err) {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await embedded?.stop();
    throw err;
  }
}
