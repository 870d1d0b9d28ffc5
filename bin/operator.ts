// What an operator's command (`npm run dead-letters`, `replay`, `classifier-holds`) starts: its configuration
// (a bad one is printed line by line, exit EXIT_CONFIG) and the database and bus of the deployment, shared with
// a running `npm start`.
import { ConfigError, loadConfig, type AppConfig, type LoadOptions } from '../shared/config/index.js';
import type { MigrationSet } from '../shared/db/migrate.js';
import { createLogger, type Logger } from '../shared/logging/logger.js';
import { startInfrastructure, type Infrastructure } from '../shared/runtime/infrastructure.js';
import { EXIT_CONFIG } from '../shared/runtime/runner.js';

export async function operatorInfrastructure(
  name: string,
  options: { require?: LoadOptions['require']; migrations?: readonly MigrationSet[] } = {},
): Promise<{ config: AppConfig; log: Logger; infra: Infrastructure }> {
  let config: AppConfig;
  try {
    config = loadConfig({ require: options.require });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const line of err.lines()) process.stderr.write(line + '\n');
    process.exit(EXIT_CONFIG);
  }
  // After loadConfig, which refuses a LOG_LEVEL pino does not know: pino threw on it (and on an empty one,
  // which counts as unset) with a stack trace. Quieter than the services: warn unless LOG_LEVEL says otherwise.
  const log = createLogger({ name, level: process.env.LOG_LEVEL || 'warn' });
  const infra = await startInfrastructure(config, log, options.migrations ?? [], {
    shareRunningEmbedded: true,
  });
  return { config, log, infra };
}
