#!/usr/bin/env node
// `npm run replay -- <name> [--keep] [--timeout-ms N]`: rebuilds a service's projections from the beginning of
// their topics into fresh tables and compares them with the live ones. Exit code 0 when identical, 1 when not.
import { ConfigError, loadConfig } from '../shared/config/index.js';
import { createLogger } from '../shared/logging/logger.js';
import { startInfrastructure } from '../shared/runtime/infrastructure.js';
import type { ReplayModule } from '../shared/runtime/replay.js';
import { EXIT_CONFIG } from '../shared/runtime/runner.js';

/** Every replayable projection, by name: add a line here for a new one. */
const replays: Record<string, () => Promise<ReplayModule>> = {
  points: () => import('../services/points/replay.js'),
};

const args = process.argv.slice(2);
const name = args.find((a) => !a.startsWith('--'));
const load = name === undefined ? undefined : replays[name];
if (!load) {
  console.error(`usage: npm run replay -- <${Object.keys(replays).join('|')}> [--keep] [--timeout-ms N]`);
  process.exit(2);
}
const timeoutArg = args.indexOf('--timeout-ms');
const timeoutMs = timeoutArg >= 0 ? Number(args[timeoutArg + 1]) : 10 * 60_000;
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
  console.error('--timeout-ms must be a positive integer');
  process.exit(2);
}

let config;
try {
  config = loadConfig({ require: [] });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  for (const line of err.lines()) console.error(line);
  process.exit(EXIT_CONFIG);
}
const log = createLogger({ name: 'replay', level: config.log.level === 'info' ? 'warn' : config.log.level });
const module = await load();
const infra = await startInfrastructure(config, log, module.migrations);
let identical = false;
try {
  const report = await module.replay({
    config,
    log,
    db: infra.db,
    bus: infra.bus,
    keep: args.includes('--keep'),
    timeoutMs,
  });
  for (const line of report.lines) console.log(line);
  identical = report.identical;
} finally {
  await infra.close();
}
process.exit(identical ? 0 : 1);
