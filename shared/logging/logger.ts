import { pino, type Logger, type LoggerOptions } from 'pino';

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

export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  const config: LoggerOptions = {
    level: options.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '***' },
    base: { pid: process.pid, ...(options.name ? { name: options.name } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  // Synchronous writes: the last lines before an exit (shutdown, fatal start-up errors) are never lost.
  return pino(config, pino.destination({ dest: 1, sync: true }));
}
