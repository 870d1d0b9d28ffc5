import { readFileSync } from 'node:fs';
import path from 'node:path';
import TOML from '@iarna/toml';
import type { z } from 'zod';
import { ConfigError, type ConfigIssue } from './errors.js';
import { envSchema, urlHost, type Env } from './env.js';
import {
  httpUrl,
  archiveSection,
  busSection,
  configFileSchema,
  databaseSection,
  httpSection,
  notifierSection,
  logSection,
  sectionSchemas,
  type ChainClientConfig,
  type ChainClientInstanceConfig,
  type ConnectorConfig,
  type AgentConfig,
  type PointConfig,
  type RelayConfig,
  type DevnetConfig,
  type SectionName,
  type ClassifierConfig,
} from './schema.js';

export type DatabaseTarget =
  | { mode: 'embedded'; dataDir: string; port: number; name: string; poolSize: number }
  | { mode: 'url'; url: string; poolSize: number };

export interface AppConfig {
  /** The file the configuration came from. */
  source: string;
  /** Sections present in the file (validated or not). */
  present: ReadonlySet<SectionName>;
  /** Top-level keys of the file this build does not know: ignored, and worth a warning (a typo?). */
  unknownKeys: readonly string[];
  n8nUrl?: string;
  point?: PointConfig;
  agent?: AgentConfig;
  connector?: ConnectorConfig;
  classifier?: ClassifierConfig;
  rpcUrls?: Record<string, string>;
  chainClients?: ChainClientConfig[];
  chainClient?: ChainClientInstanceConfig[];
  relay?: RelayConfig;
  devnet?: DevnetConfig;
  database: DatabaseTarget;
  bus: z.infer<typeof busSection> & { kafkaBrokers?: string[]; kafkaSaslPassword?: string };
  archive: z.infer<typeof archiveSection> & { mongo?: MongoTarget };
  log: z.infer<typeof logSection>;
  http: z.infer<typeof httpSection>;
  notifier: z.infer<typeof notifierSection>;
}

export interface MongoTarget {
  host: string;
  port: number;
  user?: string;
  pass?: string;
  db: string;
}

export interface LoadOptions {
  /** Sections that must be present and valid (those of the services being started). */
  require?: readonly SectionName[];
  /** Project root; relative paths (config file, data dir) resolve against it. */
  root?: string;
  env?: NodeJS.ProcessEnv;
  /** Inline TOML text instead of a file (tests). */
  text?: string;
}

export function defaultRoot(): string {
  return process.cwd();
}

/** Reads config.toml (or CONFIG_PATH) and the environment, validates what is asked for, and returns one typed object. */
export function loadConfig(options: LoadOptions = {}): AppConfig {
  const root = options.root ?? defaultRoot();
  const issues: ConfigIssue[] = [];

  const envResult = envSchema.safeParse(options.env ?? process.env);
  if (!envResult.success)
    throw new ConfigError('environment', toIssues(envResult.error, 'env', options.env ?? process.env));
  const env = envResult.data;

  const source =
    options.text !== undefined ? '<inline>' : path.resolve(root, env.CONFIG_PATH ?? 'config.toml');
  const raw = readToml(source, options.text);

  const file = configFileSchema.safeParse(raw);
  if (!file.success) throw new ConfigError(source, toIssues(file.error, undefined, raw));
  const doc = file.data as Record<string, unknown>;

  const present = new Set(
    (Object.keys(sectionSchemas) as SectionName[]).filter((name) => doc[name] !== undefined),
  );
  const known = new Set(Object.keys(configFileSchema.shape));
  const unknownKeys = Object.keys(doc).filter((key) => !known.has(key));
  const config: Partial<AppConfig> = { source, present, unknownKeys };

  for (const name of options.require ?? []) {
    if (doc[name] === undefined) {
      issues.push({ key: name, problem: 'is required by the service being started but missing' });
      continue;
    }
    const parsed = sectionSchemas[name].safeParse(doc[name]);
    if (!parsed.success) {
      issues.push(...toIssues(parsed.error, name, doc[name]));
      continue;
    }
    assignSection(config, name, parsed.data);
  }
  // agent.didSupportUrl defaults to point.didSupportUrl, also for the Agent started alone (`npm run start-agent`
  // loads [agent] only): it asked the contract instead, or refused to start with didSource = "didSupport".
  if (config.agent && config.agent.didSupportUrl === undefined && config.point === undefined) {
    const pointUrl = httpUrl.safeParse((doc.point as { didSupportUrl?: unknown } | undefined)?.didSupportUrl);
    if (pointUrl.success) config.agent = { ...config.agent, didSupportUrl: pointUrl.data };
  }

  issues.push(...chainClientConflicts(config));

  const database = parseOwn(databaseSection, doc.database, 'database', issues);
  const bus = parseOwn(busSection, doc.bus, 'bus', issues);
  const archive = parseOwn(archiveSection, doc.archive, 'archive', issues);
  const log = parseOwn(logSection, doc.log, 'log', issues);
  const http = parseOwn(httpSection, doc.http, 'http', issues);
  const notifier = parseOwn(notifierSection, doc.notifier, 'notifier', issues);

  if (issues.length > 0) throw new ConfigError(source, issues);

  config.database = databaseTarget(database!, env, root);
  config.bus = env.KAFKA_BROKERS
    ? { ...bus!, adapter: 'kafka', kafkaBrokers: env.KAFKA_BROKERS.split(',') }
    : bus!;
  config.bus.kafka = {
    ...config.bus.kafka,
    ...(env.KAFKA_SSL && { ssl: env.KAFKA_SSL === 'true' }),
    ...(env.KAFKA_SASL_MECHANISM && { saslMechanism: env.KAFKA_SASL_MECHANISM }),
    ...(env.KAFKA_SASL_USERNAME && { saslUsername: env.KAFKA_SASL_USERNAME }),
    ...(env.KAFKA_TOPIC_PREFIX && { topicPrefix: env.KAFKA_TOPIC_PREFIX }),
  };
  if (env.KAFKA_SASL_PASSWORD) config.bus.kafkaSaslPassword = env.KAFKA_SASL_PASSWORD;
  if (config.bus.kafka.saslMechanism && !(config.bus.kafka.saslUsername && config.bus.kafkaSaslPassword)) {
    throw new ConfigError(source, [
      {
        key: 'bus.kafka.saslMechanism',
        problem: 'is set but saslUsername or KAFKA_SASL_PASSWORD is missing',
      },
    ]);
  }
  if (config.bus.adapter === 'kafka' && !config.bus.kafkaBrokers) {
    throw new ConfigError(source, [
      { key: 'bus.adapter', problem: 'is "kafka" but KAFKA_BROKERS is not set' },
    ]);
  }
  config.archive = env.MONGO_HOST ? { ...archive!, adapter: 'mongodb', mongo: mongoTarget(env) } : archive!;
  if (config.archive.adapter === 'mongodb' && !config.archive.mongo) {
    throw new ConfigError(source, [
      { key: 'archive.adapter', problem: 'is "mongodb" but MONGO_HOST is not set' },
    ]);
  }
  config.log = env.LOG_LEVEL ? { level: env.LOG_LEVEL } : log!;
  config.http = http!;
  config.notifier = notifier!;
  return config as AppConfig;
}

function readToml(source: string, text: string | undefined): unknown {
  let content: string;
  try {
    content = text ?? readFileSync(source, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(source, [
      { key: 'CONFIG_PATH', problem: code === 'ENOENT' ? 'file not found' : `cannot be read (${code})` },
    ]);
  }
  try {
    return TOML.parse(content);
  } catch (err) {
    // @iarna/toml reports line and column; it does not echo values.
    const e = err as Error & { line?: number; col?: number };
    throw new ConfigError(source, [
      { key: `line ${(e.line ?? 0) + 1}`, problem: `not valid TOML: ${e.message.split('\n')[0]}` },
    ]);
  }
}

function parseOwn<T extends z.ZodType>(schema: T, value: unknown, key: string, issues: ConfigIssue[]) {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data as z.infer<T>;
  issues.push(...toIssues(parsed.error, key, value ?? {}));
  return undefined;
}

/**
 * A `[[chainClient]]` instance and the Connector's `[[chainClients]]` entry of the same chain must agree, when
 * both sections are loaded: one system chain, one EVM chain (a `nativeChainId` of another chain would check
 * the RPC against another chain than the one the Connector, the Classifier and the relay take it for), and one
 * reputation contract (an entry naming one whose instance has none is refused its complaint stream at run
 * time: its complaints are not followed; two different ones, every complaint is rejected).
 */
function chainClientConflicts(config: Partial<AppConfig>): ConfigIssue[] {
  if (!config.chainClient || !config.chainClients) return [];
  const entries = new Map(config.chainClients.map((c) => [c.chainId, c]));
  return config.chainClient.flatMap((instance, i) => {
    const entry = entries.get(instance.systemChainId);
    if (entry === undefined) return [];
    const issues: ConfigIssue[] = [];
    if (instance.nativeChainId !== undefined && instance.nativeChainId !== entry.nativeChainId)
      issues.push({
        key: `chainClient[${i}].nativeChainId`,
        problem: `is ${instance.nativeChainId}, but the chainClients entry of chain ${instance.systemChainId} says ${entry.nativeChainId}`,
      });
    const wanted = entry.reputationContractAddr;
    const own = instance.reputationContractAddr;
    if (wanted !== undefined && own?.toLowerCase() !== wanted.toLowerCase())
      issues.push({
        key: `chainClient[${i}].reputationContractAddr`,
        problem:
          own === undefined
            ? `is not set, but the chainClients entry of chain ${instance.systemChainId} names ${wanted} (its complaints would not be followed)`
            : `is ${own}, but the chainClients entry of chain ${instance.systemChainId} names ${wanted}`,
      });
    return issues;
  });
}

function assignSection(config: Partial<AppConfig>, name: SectionName, value: unknown): void {
  switch (name) {
    case 'rpc-urls':
      config.rpcUrls = value as Record<string, string>;
      break;
    default:
      (config as Record<string, unknown>)[name] = value;
  }
}

function databaseTarget(
  section: { dataDir: string; embeddedPort: number; name: string; poolSize: number },
  env: Env,
  root: string,
): DatabaseTarget {
  if (env.DATABASE_URL) return { mode: 'url', url: env.DATABASE_URL, poolSize: section.poolSize };
  if (env.DBHOST) {
    const url = new URL('postgres://localhost');
    url.hostname = urlHost(env.DBHOST)!; // checked by the env schema
    url.port = String(env.DBPORT ?? 5432);
    // Encoded whole: the setters leave '%' as it is, and the driver decodes it ('ab%41' would be 'abA').
    url.username = encodeURIComponent(env.DBUSER ?? 'postgres');
    if (env.DBPASS) url.password = encodeURIComponent(env.DBPASS);
    url.pathname = `/${env.DBNAME ?? section.name}`;
    return { mode: 'url', url: url.toString(), poolSize: section.poolSize };
  }
  return {
    mode: 'embedded',
    dataDir: path.resolve(root, section.dataDir),
    port: section.embeddedPort,
    name: section.name,
    poolSize: section.poolSize,
  };
}

function mongoTarget(env: Env): MongoTarget {
  return {
    host: env.MONGO_HOST!,
    port: env.MONGO_PORT ?? 27_017,
    user: env.MONGO_USER,
    pass: env.MONGO_PASS,
    db: env.MONGO_DB ?? 'otmoic',
  };
}

/** zod issues → `key: problem` lines. Messages are zod's or ours; neither echoes the offending value. */
function toIssues(error: z.ZodError, prefix?: string, input?: unknown): ConfigIssue[] {
  return error.issues.map((issue) => {
    const parts = [...(prefix ? [prefix] : []), ...issue.path.map(String)];
    const key = parts.reduce(
      (acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part),
      '',
    );
    const missing = issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined;
    return { key: key || '(root)', problem: missing ? 'is required but missing' : issue.message };
  });
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let current = value;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}
