import type { Archive } from '../archive/port.js';
import { PostgresArchive } from '../archive/postgres-archive.js';
import type { DeliveryObserver, EventBus } from '../bus/port.js';
import { PostgresBus } from '../bus/postgres/postgres-bus.js';
import type { AppConfig } from '../config/index.js';
import { redactUrl } from '../config/redact.js';
import {
  embeddedOwner,
  runningEmbeddedUrl,
  startEmbeddedPostgres,
  type EmbeddedServer,
} from '../db/embedded.js';
import { migrate, type MigrationSet } from '../db/migrate.js';
import { coreMigrations } from '../db/migrations/core.js';
import { createPool, type Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { withDeadline } from './deadline.js';

const PRUNE_INTERVAL_MS = 10 * 60_000;

export interface Infrastructure {
  db: Pool;
  dbUrl: string;
  bus: EventBus;
  archive: Archive;
  /**
   * Closes everything in dependency order: bus, archive, pool, then the embedded server. Resolves with what
   * failed to close (empty: everything closed); it never rejects.
   */
  close(options?: CloseOptions): Promise<string[]>;
}

export interface CloseOptions {
  /**
   * Time (epoch ms) by which the bus, the archive and the pool must have closed. What has not is given up
   * (a stuck holder of a pool client would keep `end()` waiting forever), and the embedded server is stopped
   * all the same: its fast shutdown ends the connections still open.
   */
  by?: number;
}

/** Database (embedded or external), migrations, event bus and archive, as the configuration says. */
export async function startInfrastructure(
  config: AppConfig,
  log: Logger,
  migrations: readonly MigrationSet[],
  options: { shareRunningEmbedded?: boolean; observer?: DeliveryObserver } = {},
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
    // A server another live process runs is shared, never restarted under it (its work would be cut off, and
    // whichever stopped first would stop it under the other): it stops when that process stops.
    const owner = await embeddedOwner(target.dataDir);
    const share = options.shareRunningEmbedded || (owner !== undefined && owner !== process.pid);
    const running = share ? await runningEmbeddedUrl(target) : undefined;
    if (running)
      log.info({ owner }, 'using the embedded PostgreSQL another process runs: it stops when that one stops');
    else embedded = await startEmbeddedPostgres(target);
    dbUrl = running ?? embedded!.url;
  } else {
    dbUrl = config.database.url;
    log.info({ database: redactUrl(dbUrl) }, 'using external PostgreSQL');
  }

  const db = createPool(dbUrl, { max: config.database.poolSize, log });
  // A client held out of the pool when its connection ends (the embedded server stopping under a service
  // given up at shutdown) has no listener of pg's: its 'error' would end the process before the stop is
  // done. As in withTransaction, its holder sees the failure at its next query.
  db.on('connect', (client) => client.on('error', () => undefined));
  const closers: Array<{ what: string; close: () => Promise<void> }> = [];
  try {
    await migrate(db, [coreMigrations, ...migrations], log);

    let bus: EventBus;
    if (config.bus.adapter === 'kafka') {
      const { KafkaBus } = await import('../bus/kafka/kafka-bus.js');
      const kafka = config.bus.kafka;
      bus = new KafkaBus({
        brokers: config.bus.kafkaBrokers!,
        clientId: config.bus.clientId,
        log,
        // Positions, delivery attempts and the outbox live in the service database, beside the effects.
        pool: db,
        connectionString: dbUrl,
        maxAttempts: config.bus.maxAttempts,
        replicationFactor: kafka.replicationFactor,
        minInsyncReplicas: kafka.minInsyncReplicas,
        publishTimeoutMs: kafka.publishTimeoutMs,
        topicPrefix: kafka.topicPrefix,
        observer: options.observer,
        ssl: kafka.ssl
          ? { caFile: kafka.caFile, certFile: kafka.certFile, keyFile: kafka.keyFile }
          : undefined,
        sasl:
          kafka.saslMechanism && kafka.saslUsername && config.bus.kafkaSaslPassword
            ? {
                mechanism: kafka.saslMechanism,
                username: kafka.saslUsername,
                password: config.bus.kafkaSaslPassword,
              }
            : undefined,
      });
    } else {
      const postgresBus = new PostgresBus({
        pool: db,
        connectionString: dbUrl,
        log,
        maxAttempts: config.bus.maxAttempts,
        observer: options.observer,
      });
      // Kafka enforces retention itself; the postgres log deletes expired messages on a timer.
      const pruner = setInterval(() => {
        postgresBus
          .prune()
          .then((n) => n > 0 && log.info({ deleted: n }, 'expired bus messages pruned'))
          .catch((err) => log.warn({ err: (err as Error).message }, 'bus prune failed'));
      }, PRUNE_INTERVAL_MS);
      pruner.unref();
      closers.push({ what: 'bus pruner', close: async () => clearInterval(pruner) });
      bus = postgresBus;
    }
    closers.push({ what: 'bus', close: () => bus.close() });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, config.bus.partitions)));

    let archive: Archive;
    if (config.archive.adapter === 'mongodb') {
      const { MongoArchive } = await import('../archive/mongodb-archive.js');
      archive = await MongoArchive.connect(config.archive.mongo!);
    } else {
      archive = new PostgresArchive(db);
    }
    closers.push({ what: 'archive', close: () => archive.close() });
    log.info(
      { bus: bus.kind, archive: archive.kind, database: config.database.mode },
      'infrastructure ready',
    );

    return {
      db,
      dbUrl,
      bus,
      archive,
      async close({ by } = {}) {
        const failed: string[] = [];
        const closeIt = async (what: string, work: Promise<void>) => {
          const bounded =
            by === undefined
              ? work
              : withDeadline(work, Math.max(0, by - Date.now()), () => new Error('did not close in time'));
          await bounded.catch((err: Error) => {
            failed.push(what);
            log.warn({ what, err: err.message }, 'close failed');
          });
        };
        for (const { what, close } of closers.reverse()) await closeIt(what, close());
        await closeIt('database pool', db.end());
        await embedded?.stop();
        return failed;
      },
    };
  } catch (err) {
    for (const { close } of closers.reverse()) await close().catch(() => undefined);
    await db.end().catch(() => undefined);
    await embedded?.stop();
    throw err;
  }
}
