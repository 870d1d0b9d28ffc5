export {
  loadConfig,
  type AppConfig,
  type DatabaseTarget,
  type MongoTarget,
  type LoadOptions,
} from './load.js';
export { ConfigError, type ConfigIssue } from './errors.js';
export { redactUrl, redactConfig } from './redact.js';
export type * from './schema.js';
