import { inject } from 'vitest';

/**
 * Where the Kafka and MongoDB suites get a real server: the address in KAFKA_BROKERS / MONGO_HOST, else the
 * broker and FerretDB the global setup started (test/support/production-servers.ts), else nowhere — then the
 * suite is skipped and says why. Never a fake.
 */
export interface External<T> {
  target?: T;
  skipReason?: string;
}

export function kafkaForTests(): External<{ brokers: string[] }> {
  const brokers = process.env.KAFKA_BROKERS || inject('kafkaBrokers');
  if (brokers) return { target: { brokers: brokers.split(',') } };
  return { skipReason: `no KAFKA_BROKERS and no broker started (${inject('kafkaSkip')})` };
}

export function mongoForTests(): External<{ host: string; port: number; user?: string; pass?: string }> {
  if (process.env.MONGO_HOST) {
    return {
      target: {
        host: process.env.MONGO_HOST,
        port: Number(process.env.MONGO_PORT ?? 27_017),
        user: process.env.MONGO_USER || undefined,
        pass: process.env.MONGO_PASS || undefined,
      },
    };
  }
  const url = inject('mongoUrl');
  if (url) {
    const u = new URL(url);
    return { target: { host: u.hostname, port: Number(u.port) } };
  }
  return { skipReason: `no MONGO_HOST and no FerretDB started (${inject('mongoSkip')})` };
}

export function announceSkip(suite: string, reason: string): void {
  // Printed so a green run cannot be mistaken for one that exercised the adapter.
  console.warn(`SKIPPED ${suite}: ${reason}`);
}
