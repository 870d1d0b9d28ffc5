/** Kafka's legal topic characters; a prefix is part of every topic name, so it may hold only these. */
export const KAFKA_NAME_CHARS = /^[A-Za-z0-9._-]*$/;
/** Kafka topic names are at most 249 characters; a prefix leaves room for the logical names after it. */
export const MAX_TOPIC_PREFIX = 100;

/**
 * The names the Kafka adapter uses on the broker, from the logical ones the rest of the program uses
 * (`bus.kafka.topicPrefix`): every topic and consumer group id sent to or read from Kafka is prefix + logical
 * name, so deployments (or test files) sharing one cluster never see each other's topics or join each other's
 * groups. Everything outside the adapter stays logical: BusMessage.topic, PartitionLag.topic, the positions
 * in bus_group_offsets, outbox rows, dead-letter topic names and their headers, metrics and logs.
 * Every call to kafkajs maps at that boundary through this object. An empty prefix: today's names exactly.
 */
export class KafkaNames {
  constructor(readonly prefix = '') {
    if (!KAFKA_NAME_CHARS.test(prefix) || prefix.length > MAX_TOPIC_PREFIX)
      throw new Error(
        `Kafka topic prefix ${JSON.stringify(prefix)} must be at most ${MAX_TOPIC_PREFIX} of A-Z a-z 0-9 . _ -`,
      );
  }

  /** The Kafka topic of a logical topic. */
  toKafka(topic: string): string {
    return this.prefix + topic;
  }

  /** The logical topic of a Kafka topic; undefined for a topic without this prefix (not this bus's). */
  fromKafka(name: string): string | undefined {
    return name.startsWith(this.prefix) ? name.slice(this.prefix.length) : undefined;
  }

  /** The logical topics of a Kafka topic listing (admin.listTopics): other prefixes' topics left out. */
  logicalTopics(names: readonly string[]): string[] {
    return names.flatMap((n) => this.fromKafka(n) ?? []);
  }

  /** The logical topic of a Kafka topic this bus asked for (fetched, assigned): it has the prefix. */
  logical(name: string): string {
    const topic = this.fromKafka(name);
    if (topic === undefined) throw new Error(`Kafka topic ${name} is not under the prefix ${this.prefix}`);
    return topic;
  }

  /** A log line's topic fields: the logical topic, and the Kafka topic when they differ (for an operator). */
  logFields(topic: string): { topic: string; kafkaTopic?: string } {
    return this.prefix ? { topic, kafkaTopic: this.toKafka(topic) } : { topic };
  }

  /** The kafkajs consumer group id of a logical group. */
  groupId(group: string): string {
    return this.prefix + group;
  }
}
