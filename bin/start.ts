#!/usr/bin/env node
// `npm start` runs every service whose configuration sections are present, in one process (embedded profile
// unless DATABASE_URL / KAFKA_BROKERS / MONGO_HOST say otherwise); `npm run start-<name>` runs one.
// `npm start -- --demo` also plays the demo's traffic (bin/demo.ts) once everything is up.
import { services } from '../services/index.js';
import { runServices } from '../shared/runtime/runner.js';
import { commandLine, usageError } from './command-line.js';

const usage = `usage: npm start [-- <service> …] [--demo]
  with no service, every service whose configuration sections are present
  (services: ${services.map((s) => s.name).join(', ')}); --demo also plays the demo's traffic`;
const { values, positionals } = commandLine(usage, {
  options: { demo: { type: 'boolean', default: false } },
  allowPositionals: true,
});
// A mistyped name is refused as any wrong word is (README, Scripts: what is wrong, the usage, exit 2), before the
// configuration is read: it was a configuration error (exit 78) without the usage, or, with the file missing,
// reported as the file alone.
const unknown = positionals.filter((name) => !services.some((s) => s.name === name));
if (unknown.length > 0) usageError(usage, `unknown service "${unknown.join('", "')}"`);
await runServices(services, { names: positionals });
if (values.demo) {
  const { startDemoInProcess } = await import('../shared/demo/in-process.js');
  await startDemoInProcess();
}
