// `.ci/run` and first-time setup: fetches the Kafka broker's jars and builds FerretDB into ~/.cache/otmoic,
// so the test run itself only starts them. Prints what it did and how long it took.
import { ensureFerretdb, ferretdbProblem } from './ferretdb.js';
import { ensureKafkaJars, kafkaProblem } from './kafka.js';

const started = Date.now();
const problems = [await kafkaProblem(), await ferretdbProblem()].filter(Boolean);
if (problems.length > 0) {
  console.error(`cannot prepare the production servers: ${problems.join('; ')}`);
  process.exit(1);
}
const [libs, ferretdb] = await Promise.all([ensureKafkaJars(), ensureFerretdb()]);
console.log(
  `Kafka jars: ${libs}\nFerretDB: ${ferretdb}\nready in ${Math.round((Date.now() - started) / 1000)} s`,
);
