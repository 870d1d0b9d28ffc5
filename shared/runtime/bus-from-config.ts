/**
 * The event bus the configuration names, on a pool it is given: what the services' infrastructure starts,
 * and what a replay thread opens again in its own isolate (a bus object cannot cross threads).
 */
import type { EventBus } from '../bus/port.js';
import { PostgresBus } from '../bus/postgres/postgres-bus.js';
import type { AppConfig } from '../config/index.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../logging/logger.js';

export async function busFromConfig(
  bus: AppConfig['bus'],
  db: Pool,
  dbUrl: string,
  log: Logger,
): Promise<EventBus> {
  if (bus.adapter === 'kafka') {
    const { KafkaBus } = await import('../bus/kafka/kafka-bus.js');
    const kafka = bus.kafka;
    return new KafkaBus({
      brokers: bus.kafkaBrokers!,
      clientId: bus.clientId,
      log,
      // Positions, delivery attempts and the outbox live in the service database, beside the effects.
      pool: db,
      connectionString: dbUrl,
      maxAttempts: bus.maxAttempts,
      replicationFactor: kafka.replicationFactor,
      minInsyncReplicas: kafka.minInsyncReplicas,
      publishTimeoutMs: kafka.publishTimeoutMs,
      ssl: kafka.ssl ? { caFile: kafka.caFile, certFile: kafka.certFile, keyFile: kafka.keyFile } : undefined,
      sasl:
        kafka.saslMechanism && kafka.saslUsername && bus.kafkaSaslPassword
          ? { mechanism: kafka.saslMechanism, username: kafka.saslUsername, password: bus.kafkaSaslPassword }
          : undefined,
    });
  }
  return new PostgresBus({ pool: db, connectionString: dbUrl, log, maxAttempts: bus.maxAttempts });
}
