import { ferretdbProblem, startFerretdb } from './ferretdb.js';
import { kafkaProblem, startKafka } from './kafka.js';

export interface ProductionServers {
  kafkaBrokers?: string;
  kafkaSkip?: string;
  mongoUrl?: string;
  mongoSkip?: string;
  stop(): Promise<void>;
}

/**
 * The production profile's servers for a test run: KAFKA_BROKERS / MONGO_HOST when set (used as they are),
 * else a Kafka broker and FerretDB started here from the cache when java/mvn and go are on the machine.
 * A server that cannot be had is reported with the reason; its suites print SKIPPED.
 */
export async function startProductionServers(): Promise<ProductionServers> {
  const [kafka, mongo] = await Promise.allSettled([
    (async () => {
      if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS, stop: async () => {} };
      const problem = await kafkaProblem();
      if (problem) return { skip: problem };
      const broker = await startKafka();
      return { brokers: broker.brokers.join(','), stop: () => broker.close() };
    })(),
    (async () => {
      if (process.env.MONGO_HOST) return {};
      const problem = await ferretdbProblem();
      if (problem) return { skip: problem };
      const server = await startFerretdb();
      return { url: server.url, stop: () => server.stop() };
    })(),
  ]);
  const reason = (r: PromiseRejectedResult) =>
    `could not start: ${(r.reason as Error).message.split('\n')[0]}`;
  const k = kafka.status === 'fulfilled' ? kafka.value : { skip: reason(kafka) };
  const m = mongo.status === 'fulfilled' ? mongo.value : { skip: reason(mongo) };
  return {
    kafkaBrokers: 'brokers' in k ? k.brokers : undefined,
    kafkaSkip: 'skip' in k ? k.skip : undefined,
    mongoUrl: 'url' in m ? m.url : undefined,
    mongoSkip: 'skip' in m ? m.skip : undefined,
    async stop() {
      await Promise.all([
        'stop' in k && k.stop ? k.stop() : undefined,
        'stop' in m && m.stop ? m.stop() : undefined,
      ]);
    },
  };
}
