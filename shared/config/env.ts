import { z } from 'zod';
import { kafkaTopicPrefix } from './schema.js';

// Environment variables of the specification (DB*, MONGO_*) plus ours (DATABASE_URL, KAFKA_BROKERS, CONFIG_PATH).
// Empty strings count as unset, as docker-compose and shells often pass them.
const optionalText = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());
// Decimal digits only: Number() also reads 0x1538, 1e3 and 0b1, which are no ports as written.
const optionalPort = z.preprocess(
  (v) =>
    v === '' || v === undefined ? undefined : typeof v === 'string' && /^\d{1,5}$/.test(v) ? Number(v) : v,
  z.number({ error: 'must be a port (1 to 65535, decimal digits)' }).int().min(1).max(65_535).optional(),
);

/**
 * DBHOST / MONGO_HOST as the host of a URL: a name or an IPv4 address as given, an IPv6 literal in brackets;
 * undefined when it is none of these (a port, a path, a space). The URL's host setter ignores what it cannot
 * parse, which would leave the URL pointing at its placeholder host without a word.
 */
export function urlHost(host: string): string | undefined {
  const literal = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const url = new URL('postgres://placeholder');
  url.hostname = literal;
  return url.hostname.toLowerCase() === literal.toLowerCase() ? literal : undefined;
}
const hostText = (portVariable: string) =>
  optionalText.refine((v) => v === undefined || urlHost(v) !== undefined, {
    error: `must be a host name or an IP address (the port goes in ${portVariable})`,
  });

export const envSchema = z.object({
  CONFIG_PATH: optionalText,
  DATABASE_URL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
  ),
  DBHOST: hostText('DBPORT'),
  DBPORT: optionalPort,
  DBUSER: optionalText,
  DBPASS: optionalText,
  DBNAME: optionalText,
  MONGO_HOST: hostText('MONGO_PORT'),
  MONGO_PORT: optionalPort,
  MONGO_USER: optionalText,
  MONGO_PASS: optionalText,
  MONGO_DB: optionalText,
  KAFKA_BROKERS: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z
      .string()
      .regex(/^[^,\s]+:\d+(,[^,\s]+:\d+)*$/, 'must be a comma-separated list of host:port')
      .optional(),
  ),
  /** Kafka TLS/SASL overrides of [bus.kafka]; the SASL password exists only here. */
  KAFKA_SSL: z.preprocess((v) => (v === '' ? undefined : v), z.enum(['true', 'false']).optional()),
  KAFKA_SASL_MECHANISM: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  ),
  KAFKA_SASL_USERNAME: optionalText,
  KAFKA_SASL_PASSWORD: optionalText,
  /** Override of bus.kafka.topicPrefix (empty: the file's value). */
  KAFKA_TOPIC_PREFIX: z.preprocess((v) => (v === '' ? undefined : v), kafkaTopicPrefix.optional()),
  LOG_LEVEL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  ),
});

export type Env = z.infer<typeof envSchema>;
