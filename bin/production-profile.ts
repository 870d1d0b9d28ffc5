#!/usr/bin/env node
// `npm run profile:production [-- <service> …]`: the production profile on one machine without Docker. Starts
// an Apache Kafka broker (jars from Maven Central, KRaft, data in data/kafka) and FerretDB (built with Go,
// SQLite backend, data in data/ferretdb) on loopback, then the services with KAFKA_BROKERS and MONGO_* set.
// PostgreSQL is the configuration's (DATABASE_URL / DBHOST…, else the embedded server). Ctrl-C stops all.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { startFerretdb } from '../test/support/ferretdb.js';
import { startKafka } from '../test/support/kafka.js';

const root = path.resolve(import.meta.dirname, '..');
const kafkaPort = Number(process.env.KAFKA_PORT ?? 9092);
const mongoPort = Number(process.env.FERRETDB_PORT ?? 27017);

console.log('starting Kafka (first run: fetches the jars with Maven) …');
const kafka = await startKafka({ dataDir: path.join(root, 'data/kafka'), port: kafkaPort });
console.log(`Kafka on ${kafka.brokers.join(',')}; starting FerretDB (first run: builds it with Go) …`);
const mongo = await startFerretdb({ dataDir: path.join(root, 'data/ferretdb'), port: mongoPort }).catch(
  async (err: unknown) => {
    await kafka.stop();
    throw err;
  },
);
console.log(`FerretDB on ${mongo.url}; starting the services`);

const services = spawn(process.execPath, ['--import', 'tsx', 'bin/start.ts', ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    KAFKA_BROKERS: kafka.brokers.join(','),
    MONGO_HOST: mongo.host,
    MONGO_PORT: String(mongo.port),
  },
});
// The services stop first (they drain their work), then the servers they used.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => services.kill(signal));
services.on('exit', async (code, signal) => {
  await Promise.all([kafka.stop(), mongo.stop()]);
  process.exit(code ?? (signal ? 1 : 0));
});
