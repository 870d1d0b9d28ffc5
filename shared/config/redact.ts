// Secrets (agent.priv, relay keys, database and Mongo passwords) must never reach logs, errors or responses.

const SECRET_KEYS =
  /^(priv|privateKey|password|pass|DBPASS|MONGO_PASS|kafkaSaslPassword|KAFKA_SASL_PASSWORD|secret|token|callbackToken|apiKeys|rpc|rpcFallbacks)$/i;

/** Query parameters that carry a credential (libpq's `password`, `sslpassword`; API keys and tokens). */
const SECRET_PARAMS = /pass|secret|token|key|auth|cred/i;

/** A connection URL with its password, and query parameters that carry one, replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    for (const name of [...u.searchParams.keys()])
      if (SECRET_PARAMS.test(name)) u.searchParams.set(name, '***');
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

/**
 * A URL as a log line may name it when its path can hold a token (a Connector's callback URL with
 * `connector.callbackToken`): scheme, host and port, `/…` for whatever followed.
 */
export function urlOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${`${u.pathname}${u.search}`.length > 1 ? '/…' : ''}`;
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
  if (typeof value === 'string') return /^[a-z+]+:\/\//i.test(value) ? redactUrl(value) : value;
  if (Array.isArray(value)) return value.map((v) => walk(v));
  if (value instanceof Set) return [...value];
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]));
  }
  return value;
}

/** A host name label that may be a key: 16 characters or more, or 8 or more mixing letters and digits. */
const keyLike = (label: string) =>
  label.length >= 16 || (label.length >= 8 && /[a-z]/i.test(label) && /\d/.test(label));

/**
 * A function that removes the given secrets (RPC URLs carry API keys in their path or query) from any text
 * before it is stored, answered or logged: each URL, and its path and query on their own (error texts often
 * quote the request path without the host), becomes `<rpc>`; so do long or key-like host names' labels (some
 * providers put the key in a subdomain, and a failed lookup quotes the host: `getaddrinfo ENOTFOUND <host>`).
 */
export function secretScrubber(urls: readonly string[]): (text: string) => string {
  const needles = new Set<string>();
  for (const url of urls) {
    needles.add(url);
    needles.add(url.replace(/\/+$/, ''));
    try {
      const u = new URL(url);
      const rest = `${u.pathname}${u.search}`;
      // A bare "/" or a short path is no secret and would scrub every slash.
      if (rest.length > 4) needles.add(rest);
      if (u.password) needles.add(u.password);
      if (u.username) needles.add(u.username);
      for (const value of u.searchParams.values()) if (value.length >= 8) needles.add(value);
      for (const part of u.pathname.split('/')) if (part.length >= 16) needles.add(part);
      for (const label of u.hostname.split('.')) if (keyLike(label)) needles.add(label);
    } catch {
      // not a URL: scrub the text itself
    }
  }
  const sorted = [...needles].filter((n) => n.length > 0).sort((a, b) => b.length - a.length);
  return (text: string) => {
    let out = text;
    for (const needle of sorted) out = out.split(needle).join('<rpc>');
    return out;
  };
}
