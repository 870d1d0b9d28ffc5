// What an operator's command (`npm run dead-letters`, `replay`, `classifier-holds`) starts: its configuration
// (a bad one is printed line by line, exit EXIT_CONFIG) and the database and bus of the deployment, shared with
// a running `npm start`.
import { ConfigError, loadConfig, type AppConfig, type LoadOptions } from '../shared/config/index.js';
import type { MigrationSet } from '../shared/db/migrate.js';
import { errorText } from '../shared/logging/error-text.js';
import { createLogger, type Logger } from '../shared/logging/logger.js';
import { startInfrastructure, type Infrastructure } from '../shared/runtime/infrastructure.js';
import { EXIT_CONFIG } from '../shared/runtime/runner.js';

export async function operatorInfrastructure(
  name: string,
  options: { require?: LoadOptions['require']; migrations?: readonly MigrationSet[] } = {},
): Promise<{ config: AppConfig; log: Logger; infra: Infrastructure }> {
  const config = configOrExit({ require: options.require });
  // After loadConfig, which refuses a LOG_LEVEL pino does not know: pino threw on it (and on an empty one,
  // which counts as unset) with a stack trace. Quieter than the services: warn unless LOG_LEVEL says otherwise.
  const log = createLogger({ name, level: process.env.LOG_LEVEL || 'warn' });
  let infra: Infrastructure;
  try {
    infra = await startInfrastructure(config, log, options.migrations ?? [], {
      shareRunningEmbedded: true,
    });
  } catch (err) {
    commandFailed(name, err);
  }
  return { config, log, infra };
}

/**
 * The configuration a command reads, or, when it is bad, one line per problem on stderr and exit EXIT_CONFIG
 * (README, Configuration), as `npm start` does: not the loader's stack trace and exit 1.
 */
export function configOrExit(options: Pick<LoadOptions, 'require'> = {}): AppConfig {
  try {
    return loadConfig(options);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const line of err.lines()) process.stderr.write(line + '\n');
    process.exit(EXIT_CONFIG);
  }
}

/**
 * Runs an operator command's work on `infra` and closes it, whether the work ends or fails; a failure is then
 * told in one line and ends the process with exit 1 (commandFailed).
 */
export async function runCommand<T>(name: string, infra: Infrastructure, work: () => Promise<T>): Promise<T> {
  let result: T;
  try {
    result = await work();
  } catch (err) {
    await infra.close();
    commandFailed(name, err);
  }
  await infra.close();
  return result;
}

/**
 * An operator command's failure (the database unreachable, a statement refused): one line on stderr naming the
 * command and the cause, exit 1. Node's default was a stack trace of the driver's internals.
 */
export function commandFailed(name: string, err: unknown): never {
  const { code } = (err ?? {}) as { code?: unknown };
  let text = errorText(err);
  // 42P01 undefined_table: the command reads a service's tables that its migrations never made here.
  if (code === '42P01') text += ": that service's tables are not in this database (has it ever run on it?)";
  process.stderr.write(`${name}: ${text}\n`);
  process.exit(1);
}
