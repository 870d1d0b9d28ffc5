import type { EventBus, OutgoingMessage, PublishOptions } from './port.js';

export interface TopicBatch {
  topic: string;
  messages: readonly OutgoingMessage[];
}

/** A bus that writes batches for several topics in one database statement (both adapters do). */
export interface BatchPublisher {
  publishMany(batches: readonly TopicBatch[], options?: PublishOptions): Promise<void>;
}

/**
 * Publishes batches for several topics in one step where the bus can (one statement on the postgres log, one
 * outbox write on Kafka in a transaction), else one publish per topic in the given order.
 */
export async function publishMany(
  bus: EventBus,
  batches: readonly TopicBatch[],
  options: PublishOptions = {},
): Promise<void> {
  const many = (bus as Partial<BatchPublisher>).publishMany;
  if (typeof many === 'function') return many.call(bus, batches, options);
  for (const b of batches) await bus.publish(b.topic, b.messages, options);
}
