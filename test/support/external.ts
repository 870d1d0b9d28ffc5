/**
 * Where the Kafka and MongoDB conformance suites get a real server: the address in KAFKA_BROKERS / MONGO_HOST,
 * else a container started with testcontainers when a container runtime answers, else nowhere — then the
 * suite is skipped and says why. Never a fake.
 */
export interface External<T> {
  target?: T;
  skipReason?: string;
  stop(): Promise<void>;
}

let runtimeAnswer: Promise<string | undefined> | undefined;

/** undefined when a container runtime is usable, else the reason it is not. */
export function containerRuntimeProblem(): Promise<string | undefined> {
  runtimeAnswer ??= (async () => {
    try {
      const { getContainerRuntimeClient } = await import('testcontainers');
      await getContainerRuntimeClient();
      return undefined;
    } catch (err) {
      return (err as Error).message.split('\n')[0];
    }
  })();
  return runtimeAnswer;
}

export async function kafkaForTests(): Promise<External<{ brokers: string[] }>> {
  if (process.env.KAFKA_BROKERS)
    return { target: { brokers: process.env.KAFKA_BROKERS.split(',') }, stop: async () => undefined };
  const problem = await containerRuntimeProblem();
  if (problem)
    return {
      skipReason: `no KAFKA_BROKERS and no container runtime (${problem})`,
      stop: async () => undefined,
    };
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const container = await new KafkaContainer('confluentinc/cp-kafka:7.6.1').withKraft().start();
  return {
    target: { brokers: [`${container.getHost()}:${container.getMappedPort(9093)}`] },
    stop: async () => void (await container.stop()),
  };
}

export async function mongoForTests(): Promise<
  External<{ host: string; port: number; user?: string; pass?: string }>
> {
  if (process.env.MONGO_HOST) {
    return {
      target: {
        host: process.env.MONGO_HOST,
        port: Number(process.env.MONGO_PORT ?? 27_017),
        user: process.env.MONGO_USER || undefined,
        pass: process.env.MONGO_PASS || undefined,
      },
      stop: async () => undefined,
    };
  }
  const problem = await containerRuntimeProblem();
  if (problem)
    return { skipReason: `no MONGO_HOST and no container runtime (${problem})`, stop: async () => undefined };
  const { MongoDBContainer } = await import('@testcontainers/mongodb');
  const container = await new MongoDBContainer('mongo:7').start();
  return {
    target: { host: container.getHost(), port: container.getMappedPort(27_017) },
    stop: async () => void (await container.stop()),
  };
}

export function announceSkip(suite: string, reason: string): void {
  // Printed so a green run cannot be mistaken for one that exercised the adapter.
  console.warn(`SKIPPED ${suite}: ${reason}`);
}
