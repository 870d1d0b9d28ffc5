import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger } from 'pino';

// Paths pino masks wherever they appear in a log object. Secrets also never get logged on purpose;
// this is the second line of defence.
const REDACT_PATHS = [
  'priv',
  '*.priv',
  '*.*.priv',
  'password',
  '*.password',
  '*.*.password',
  'pass',
  '*.pass',
  'DBPASS',
  'MONGO_PASS',
  '*.privateKey',
  'privateKey',
  'connectionString',
  '*.connectionString',
];

/**
 * LOG_LEVEL when it names a level, else info: the first logger is made before the environment is checked
 * (an unknown level is then refused as a config error, exit 78), and pino throws on one it does not know.
 */
function levelFromEnv(): string {
  const level = process.env.LOG_LEVEL;
  return level && (level === 'silent' || level in pino.levels.values) ? level : 'info';
}

export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  const config: LoggerOptions = {
    level: options.level ?? levelFromEnv(),
    redact: { paths: REDACT_PATHS, censor: '***' },
    base: { pid: process.pid, ...(options.name ? { name: options.name } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Synchronous writes: the last lines before an exit (shutdown, fatal start-up errors) are never lost.
  return pino(config, prettyStream() ?? pino.destination({ dest: 1, sync: true }));
}

/**
 * On a terminal, one readable line per event (pino-pretty, a dev dependency: present after `npm install`);
 * JSON lines otherwise, or with LOG_FORMAT=json. Without pino-pretty (a production install) JSON as well.
 */
function prettyStream(): DestinationStream | undefined {
  const format = process.env.LOG_FORMAT;
  if (format === 'json' || (format !== 'pretty' && !process.stdout.isTTY)) return undefined;
  try {
    const pretty = createRequire(import.meta.url)('pino-pretty') as (options: object) => DestinationStream;
    return pretty({
      sync: true,
      singleLine: true,
      colorize: process.stdout.isTTY,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,service',
      messageFormat: '{if service}{service}: {end}{msg}',
    });
  } catch {
    return undefined;
  }
}
