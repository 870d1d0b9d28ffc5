import { Kafka, logLevel } from 'kafkajs';
import { waitFor } from './wait.js';

/** Deletes `topic` as an operator would (a separate admin client), and waits until the broker lists it no more. */
export async function deleteTopic(brokers: string[], topic: string): Promise<void> {
  const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: [topic] });
    await waitFor(async () => !(await admin.listTopics()).includes(topic), `${topic} deleted`, 20_000);
  } finally {
    await admin.disconnect();
  }
}
