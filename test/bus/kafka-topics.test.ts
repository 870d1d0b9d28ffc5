import { randomBytes } from 'node:crypto';
import kafkajs, { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KafkaBus, type KafkaBusOptions } from '../../shared/bus/kafka/kafka-bus.js';
import { createLogger } from '../../shared/logging/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { announceSkip, kafkaForTests } from '../support/external.js';
import { waitFor } from '../support/wait.js';

const kafka = kafkaForTests();
if (kafka.skipReason) announceSkip('Kafka topics', kafka.skipReason);
const { ConfigResourceTypes } = kafkajs;

/** Topics as the configuration says: replication factor and min.insync.replicas, reconciled on restart. */
describe.skipIf(kafka.skipReason)('Kafka topics from configuration', () => {
  let db: TestDatabase;
  const buses: KafkaBus[] = [];
  const admin = () => new Kafka({ brokers: kafka.target!.brokers, logLevel: logLevel.NOTHING }).admin();
  const make = (extra: Partial<KafkaBusOptions> = {}) => {
    const bus = new KafkaBus({
      brokers: kafka.target!.brokers,
      clientId: 'topics-test',
      log: createLogger({ level: 'silent' }),
      pool: db.pool,
      connectionString: db.url,
      ...extra,
    });
    buses.push(bus);
    return bus;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await Promise.all(buses.map((b) => b.close()));
    await db?.drop();
  });

  async function describeTopic(name: string) {
    const a = admin();
    await a.connect();
    try {
      const { topics } = await a.fetchTopicMetadata({ topics: [name] });
      const configs = await a.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name }],
      });
      const entries = configs.resources[0]!.configEntries;
      const value = (key: string) => entries.find((e) => e.configName === key)?.configValue;
      return {
        partitions: topics[0]!.partitions.length,
        replicas: topics[0]!.partitions[0]!.replicas.length,
        minIsr: value('min.insync.replicas'),
        retention: value('retention.ms'),
      };
    } finally {
      await a.disconnect();
    }
  }

  it('creates topics with the configured replication factor and min.insync.replicas', async () => {
    const name = `topics-${randomBytes(4).toString('hex')}`;
    await make({ replicationFactor: 1, minInsyncReplicas: 1 }).ensureTopics([
      { name, partitions: 3, retentionMs: 86_400_000 },
    ]);
    expect(await describeTopic(name)).toEqual({
      partitions: 3,
      replicas: 1,
      minIsr: '1',
      retention: '86400000',
    });
    expect((await describeTopic(`${name}.dlq`)).retention).toBe('-1');
  });

  it('passes the replication factor to the broker (one broker cannot hold three replicas)', async () => {
    const name = `topics-${randomBytes(4).toString('hex')}`;
    const failure = await make({ replicationFactor: 3 })
      .ensureTopics([{ name, partitions: 1, retentionMs: null }])
      .then(
        () => undefined,
        (err: { errors?: Array<{ type: string }> }) => err,
      );
    expect(failure?.errors?.map((e) => e.type)).toEqual([
      'INVALID_REPLICATION_FACTOR',
      'INVALID_REPLICATION_FACTOR',
    ]); // the topic and its dead-letter topic
  });

  it('reconciles an existing topic: more partitions, new retention and min.insync.replicas', async () => {
    const name = `topics-${randomBytes(4).toString('hex')}`;
    await make().ensureTopics([{ name, partitions: 2, retentionMs: 60_000 }]);
    await make({ minInsyncReplicas: 2 }).ensureTopics([{ name, partitions: 5, retentionMs: 120_000 }]);
    // KRaft applies a config change through the metadata log: the broker shows it a moment after it was accepted.
    await waitFor(
      async () => {
        const topic = await describeTopic(name);
        return topic.minIsr === '2' && topic.retention === '120000';
      },
      'the new configuration visible on the broker',
      15_000,
    );
    expect(await describeTopic(name)).toMatchObject({ partitions: 5, minIsr: '2', retention: '120000' });
    // Never fewer partitions: a smaller number in the configuration leaves the topic as it is.
    await make({ minInsyncReplicas: 2 }).ensureTopics([{ name, partitions: 3, retentionMs: 120_000 }]);
    expect((await describeTopic(name)).partitions).toBe(5);
  });
});
