#!/usr/bin/env node
// `npm start` runs every service whose configuration sections are present, in one process (embedded profile
// unless DATABASE_URL / KAFKA_BROKERS / MONGO_HOST say otherwise); `npm run start-<name>` runs one.
// `npm start -- --demo` also plays the demo's traffic (bin/demo.ts) once everything is up.
import { services } from '../services/index.js';
import { runServices } from '../shared/runtime/runner.js';

const args = process.argv.slice(2);
const demo = args.includes('--demo');
await runServices(services, { names: args.filter((a) => a !== '--demo') });
if (demo) {
  const { startDemoInProcess } = await import('../shared/demo/in-process.js');
  await startDemoInProcess();
}
