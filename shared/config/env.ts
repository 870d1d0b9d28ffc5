import { z } from 'zod';

// Environment variables of the specification (DB*, MONGO_*) plus ours (DATABASE_URL, KAFKA_BROKERS, CONFIG_PATH).
// Empty strings count as unset, as docker-compose and shells often pass them.
const optionalText = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());
const optionalPort = z.preprocess(
  (v) => (v === '' || v === undefined ? undefined : Number(v)),
  z.number().int().min(1).max(65_535).optional(),
);

export const envSchema = z.object({
  CONFIG_PATH: optionalText,
  DATABASE_URL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' }).optional(),
  ),
  DBHOST: optionalText,
  DBPORT: optionalPort,
  DBUSER: optionalText,
  DBPASS: optionalText,
  DBNAME: optionalText,
  MONGO_HOST: optionalText,
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
  LOG_LEVEL: z.preprocess(
    (v) => (v === '' ? undefined : v),
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).optional(),
  ),
});

export type Env = z.infer<typeof envSchema>;
