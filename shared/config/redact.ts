// Secrets (agent.priv, relay keys, database and Mongo passwords) must never reach logs, errors or responses.

const SECRET_KEYS =
  /^(priv|privateKey|password|pass|DBPASS|MONGO_PASS|kafkaSaslPassword|KAFKA_SASL_PASSWORD|secret|token)$/i;

/** A connection URL with its password replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

/** A deep copy with secret-named keys masked and URL passwords removed, safe to print. */
export function redactConfig<T>(value: T): T {
  return walk(value) as T;
}

function walk(value: unknown, key?: string): unknown {
  if (key !== undefined && SECRET_KEYS.test(key) && value !== undefined) return '***';
  if (typeof value === 'string') return /^[a-z+]+:\/\/[^/]*:[^/]*@/i.test(value) ? redactUrl(value) : value;
  if (Array.isArray(value)) return value.map((v) => walk(v));
  if (value instanceof Set) return [...value];
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
  }
  return value;
}
