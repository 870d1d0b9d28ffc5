import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import { mongoUrl } from '../archive/mongodb-archive.js';
import { ConfigError, loadConfig, redactConfig, type SectionName } from './index.js';
import { redactUrl } from './redact.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const example = readFileSync(path.join(ROOT, 'config.toml'), 'utf8');
const load = (text: string, env: NodeJS.ProcessEnv = {}, require: readonly SectionName[] = []) =>
  loadConfig({ text, env, require, root: '/srv/otmoic' });

function issuesOf(fn: () => unknown): Array<{ key: string; problem: string }> {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('takes point.windowDays, or its alias lookBackDays, and refuses the two disagreeing', () => {
    const point =
      '[point]\nport = 1\nrelayAdminUrl = "http://a"\ndidSupportUrl = "http://b"\nrefreshInterval = 5\n';
    expect(load(point, {}, ['point']).point).toMatchObject({
      windowDays: 90,
      lookBackDays: 90,
      lookupTimeoutMs: 1_000,
      rateLimit: { max: 600, windowMs: 60_000 },
      queryTimeoutMs: 5_000,
    });
    expect(load(point + 'windowDays = 30', {}, ['point']).point?.windowDays).toBe(30);
    expect(load(point + 'lookBackDays = 45', {}, ['point']).point?.windowDays).toBe(45);
    expect(load(point + 'windowDays = 30\nlookBackDays = 30', {}, ['point']).point?.windowDays).toBe(30);
    const issues = issuesOf(() => load(point + 'windowDays = 30\nlookBackDays = 45', {}, ['point']));
    expect(issues.map((i) => i.key)).toEqual(['point.windowDays']);
  });

  it('parses every key of the specification table from the shipped config.toml', () => {
    const config = load(example, {}, ['n8nUrl', 'point', 'agent', 'connector', 'rpc-urls', 'chainClients']);
    expect(config.n8nUrl).toBe('http://127.0.0.1:5678/webhook/otmoic');
    expect(config.point).toMatchObject({ port: 9100, refreshInterval: 60_000, lookBackDays: 90 });
    expect(config.agent?.contractAddr).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(config.connector?.callbackUrl).toBe('http://127.0.0.1:9102/callback');
    expect(config.rpcUrls?.['97']).toBe('http://127.0.0.1:8545');
    expect(config.chainClients?.[1]).toEqual({
      url: 'http://127.0.0.1:9901',
      historyUrl: 'http://127.0.0.1:9901',
      initBlockHeight: 0,
      chainId: '614',
      nativeChainId: '11155420',
      registerPath: '/support/register',
      historyPath: '/support/history',
      contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      reputationContractAddr: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
      historyMerge: true,
    });
    expect(config.connector).toMatchObject({
      historyTimeoutMs: 30_000,
      rpcRangeBlocks: 100,
      stuckReportIntervalMs: 60_000,
    });
    expect(config.database).toEqual({
      mode: 'embedded',
      dataDir: '/srv/otmoic/data/postgres',
      port: 54_329,
      name: 'otmoic',
      poolSize: 10,
    });
    expect(config.bus.adapter).toBe('postgres');
    expect(config.archive.adapter).toBe('postgres');
  });

  it('validates only the sections asked for: a file with one section starts that service', () => {
    const config = load(
      '[point]\nport = 1\nrelayAdminUrl = "http://a"\ndidSupportUrl = "http://b"\nrefreshInterval = 5',
      {},
      ['point'],
    );
    expect(config.point?.port).toBe(1);
    expect([...config.present]).toEqual(['point']);
    // A broken section nobody asked for does not stop it.
    expect(() =>
      load(
        '[agent]\nport = "x"\n[point]\nport=1\nrelayAdminUrl="http://a"\ndidSupportUrl="http://b"\nrefreshInterval=5',
        {},
        ['point'],
      ),
    ).not.toThrow();
  });

  it('names the key of a missing key, a wrong type and a bad URL, one issue each', () => {
    const issues = issuesOf(() =>
      load('[point]\nport = "9100"\nrelayAdminUrl = "not a url"\nrefreshInterval = 1000', {}, ['point']),
    );
    expect(issues.map((i) => i.key).sort()).toEqual([
      'point.didSupportUrl',
      'point.port',
      'point.relayAdminUrl',
    ]);
    expect(issues.find((i) => i.key === 'point.didSupportUrl')?.problem).toBe('is required but missing');
    expect(issues.find((i) => i.key === 'point.port')?.problem).toMatch(/number/);
    expect(issues.find((i) => i.key === 'point.relayAdminUrl')?.problem).toMatch(/URL/);
  });

  it('reads http.trustProxy (none by default) and names an entry that is not an address', () => {
    expect(load('').http).toEqual({ trustProxy: [] });
    expect(load('[http]\ntrustProxy = ["10.0.0.0/8", "::1"]').http).toEqual({
      trustProxy: ['10.0.0.0/8', '::1'],
    });
    const issues = issuesOf(() => load('[http]\ntrustProxy = ["10.0.0.0/8", "proxy.local"]'));
    expect(issues).toEqual([
      { key: 'http.trustProxy[1]', problem: expect.stringMatching(/IP address or a CIDR range/) },
    ]);
  });

  it('reads notifier.port (none by default: no HTTP) and refuses one that is not a port or a stray key', () => {
    expect(load('').notifier).toEqual({ keepDeliveredDays: 90, timeoutSeconds: 30 });
    expect(load('[notifier]\nport = 9105\nkeepDeliveredDays = 7\ntimeoutSeconds = 60').notifier).toEqual({
      port: 9105,
      keepDeliveredDays: 7,
      timeoutSeconds: 60,
    });
    expect(issuesOf(() => load('[notifier]\ntimeoutSeconds = 0'))).toEqual([
      { key: 'notifier.timeoutSeconds', problem: expect.any(String) },
    ]);
    expect(issuesOf(() => load('[notifier]\nkeepDeliveredDays = 0'))).toEqual([
      { key: 'notifier.keepDeliveredDays', problem: expect.any(String) },
    ]);
    expect(issuesOf(() => load('[notifier]\nport = 70000'))).toEqual([
      { key: 'notifier.port', problem: expect.any(String) },
    ]);
    expect(issuesOf(() => load('[notifier]\nprot = 9105'))).toHaveLength(1);
  });

  it('reads connector.chunkCommit (async by default) and refuses anything but async or sync', () => {
    const connector = (extra: string) =>
      `[connector]\nport = 1\ncallbackUrl = "http://127.0.0.1:1/callback"\n${extra}`;
    expect(load(connector(''), {}, ['connector']).connector?.chunkCommit).toBe('async');
    expect(load(connector('chunkCommit = "sync"'), {}, ['connector']).connector?.chunkCommit).toBe('sync');
    const issues = issuesOf(() => load(connector('chunkCommit = "later"'), {}, ['connector']));
    expect(issues).toEqual([{ key: 'connector.chunkCommit', problem: expect.stringMatching(/async.*sync/) }]);
  });

  it('reads classifier.signerMemoEntries (2,000,000 by default) and refuses a bound too small to be a memo', () => {
    const classifier = (extra: string) =>
      `[classifier]\nport = 1\ndidSupportUrl = "http://127.0.0.1:1"\n${extra}`;
    expect(load(classifier(''), {}, ['classifier']).classifier?.signerMemoEntries).toBe(2_000_000);
    expect(
      load(classifier('signerMemoEntries = 8000000'), {}, ['classifier']).classifier?.signerMemoEntries,
    ).toBe(8_000_000);
    const issues = issuesOf(() => load(classifier('signerMemoEntries = 10'), {}, ['classifier']));
    expect(issues.map((i) => i.key)).toEqual(['classifier.signerMemoEntries']);
  });

  it('reports a missing section and bad chain-client entries by index', () => {
    expect(issuesOf(() => load('', {}, ['agent']))).toEqual([
      { key: 'agent', problem: 'is required by the service being started but missing' },
    ]);
    const issues = issuesOf(() =>
      load(
        '[[chainClients]]\nurl="http://a"\nhistoryUrl="http://a"\ninitBlockHeight=1.5\nchainId=9006\nnativeChainId="97"\nregisterPath="/r"\nhistoryPath="/h"',
        {},
        ['chainClients'],
      ),
    );
    expect(issues.map((i) => i.key).sort()).toEqual([
      'chainClients[0].chainId',
      'chainClients[0].contractAddr',
      'chainClients[0].initBlockHeight',
    ]);
  });

  it('masks a password given as a URL query parameter, as libpq takes it, wherever a URL is printed', () => {
    const url = 'postgres://svc@db:5432/otmoic?password=s3cr%40t&sslmode=require&sslpassword=k3y';
    expect(redactUrl(url)).toBe('postgres://svc@db:5432/otmoic?password=***&sslmode=require&sslpassword=***');
    const printed = JSON.stringify(redactConfig(load('', { DATABASE_URL: url })));
    expect(printed).not.toMatch(/s3cr|k3y/);
    expect(printed).toContain('sslmode=require');
  });

  it('names the top-level keys it does not know (a misspelt section is otherwise silently absent)', () => {
    const config = load(
      'n8nURL = "http://x"\n[databse]\nname = "x"\n[points]\nport = 1\n[log]\nlevel = "warn"\n',
    );
    expect(config.unknownKeys).toEqual(['n8nURL', 'databse', 'points']);
    expect(load('[log]\nlevel = "warn"\n').unknownKeys).toEqual([]);
  });

  it('refuses a chain id spelt with leading zeros, and two chain-client entries for one chain', () => {
    const entry = (chainId: string) =>
      `[[chainClients]]\nurl="http://a"\nhistoryUrl="http://a"\ninitBlockHeight=1\nchainId="${chainId}"\nnativeChainId="97"\nregisterPath="/r"\nhistoryPath="/h"\ncontractAddr="0x${'11'.repeat(20)}"\n`;
    expect(issuesOf(() => load(entry('09006'), {}, ['chainClients']))).toEqual([
      {
        key: 'chainClients[0].chainId',
        problem: 'must be a decimal chain id string without leading zeros',
      },
    ]);
    expect(issuesOf(() => load(entry('9006') + entry('614') + entry('9006'), {}, ['chainClients']))).toEqual([
      { key: 'chainClients[2].chainId', problem: 'chain 9006 has two entries' },
    ]);
    expect(load(entry('0') + entry('9006'), {}, ['chainClients']).chainClients).toHaveLength(2);
  });

  it("[[chainClient]] takes nativeChainId as the Connector's entries do (optional, a decimal string); the shipped devnet entries set it", () => {
    const entry = (more: string) =>
      `[[chainClient]]\nport=9900\nrpc="http://a"\nsystemChainId="9006"\ncontractAddr="0x${'11'.repeat(20)}"\n${more}`;
    expect(load(entry('nativeChainId="97"\n'), {}, ['chainClient']).chainClient?.[0]?.nativeChainId).toBe(
      '97',
    );
    expect(load(entry(''), {}, ['chainClient']).chainClient?.[0]?.nativeChainId).toBeUndefined();
    for (const wrong of ['nativeChainId=97', 'nativeChainId="097"', 'nativeChainId="0x61"'])
      expect(issuesOf(() => load(entry(wrong + '\n'), {}, ['chainClient'])).map((i) => i.key)).toEqual([
        'chainClient[0].nativeChainId',
      ]);
    // Each of the shipped instances checks its RPC against the chain its Connector entry names.
    const shipped = load(example, {}, ['chainClients', 'chainClient']);
    const native = new Map(shipped.chainClients!.map((c) => [c.chainId, c.nativeChainId]));
    expect(shipped.chainClient!.map((c) => [c.systemChainId, c.nativeChainId])).toEqual([
      ['9006', native.get('9006')],
      ['614', native.get('614')],
    ]);
    expect(shipped.chainClient!.every((c) => c.nativeChainId !== undefined)).toBe(true);
  });

  it("refuses a [[chainClient]] nativeChainId that differs from the Connector's entry of the same chain", () => {
    const connector = `[[chainClients]]\nurl="http://a"\nhistoryUrl="http://a"\ninitBlockHeight=1\nchainId="9006"\nnativeChainId="97"\nregisterPath="/r"\nhistoryPath="/h"\ncontractAddr="0x${'11'.repeat(20)}"\n`;
    const instance = (native: string) =>
      `[[chainClient]]\nport=9900\nrpc="http://a"\nsystemChainId="9006"\ncontractAddr="0x${'11'.repeat(20)}"\nnativeChainId="${native}"\n`;
    const both = ['chainClients', 'chainClient'] as const;
    expect(issuesOf(() => load(connector + instance('56'), {}, both))).toEqual([
      {
        key: 'chainClient[0].nativeChainId',
        problem: 'is 56, but the chainClients entry of chain 9006 says 97',
      },
    ]);
    expect(load(connector + instance('97'), {}, both).chainClient).toHaveLength(1);
    // Each section alone (a service that loads one of them) is not compared.
    expect(load(connector + instance('56'), {}, ['chainClient']).chainClient).toHaveLength(1);
  });

  it("refuses a [[chainClient]] without the reputation contract the Connector's entry of its chain names", () => {
    const rep = `0x${'22'.repeat(20)}`;
    const connector = `[[chainClients]]\nurl="http://a"\nhistoryUrl="http://a"\ninitBlockHeight=1\nchainId="614"\nnativeChainId="11155420"\nregisterPath="/r"\nhistoryPath="/h"\ncontractAddr="0x${'11'.repeat(20)}"\nreputationContractAddr="${rep}"\n`;
    const instance = (extra: string) =>
      `[[chainClient]]\nport=9901\nrpc="http://a"\nsystemChainId="614"\ncontractAddr="0x${'11'.repeat(20)}"\n${extra}`;
    const both = ['chainClients', 'chainClient'] as const;
    expect(issuesOf(() => load(connector + instance(''), {}, both))).toEqual([
      {
        key: 'chainClient[0].reputationContractAddr',
        problem: `is not set, but the chainClients entry of chain 614 names ${rep} (its complaints would not be followed)`,
      },
    ]);
    expect(
      issuesOf(() => load(connector + instance(`reputationContractAddr="0x${'33'.repeat(20)}"\n`), {}, both)),
    ).toEqual([
      {
        key: 'chainClient[0].reputationContractAddr',
        problem: `is 0x${'33'.repeat(20)}, but the chainClients entry of chain 614 names ${rep}`,
      },
    ]);
    // The same address in another case; an instance with a contract the Connector does not follow is no conflict.
    expect(
      load(
        connector + instance(`reputationContractAddr="${rep.toUpperCase().replace('0X', '0x')}"\n`),
        {},
        both,
      ).chainClient,
    ).toHaveLength(1);
    expect(
      load(
        connector.replace(/reputationContractAddr=.*\n/, '') + instance(`reputationContractAddr="${rep}"\n`),
        {},
        both,
      ).chainClient,
    ).toHaveLength(1);
  });

  it('takes n8nUrl with percent-encoded credentials and refuses ones that do not decode, without echoing them', () => {
    const url = 'https://ops%40team:t%3Ak%2Fn@n8n.example/webhook/x';
    expect(load(`n8nUrl = "${url}"`, {}, ['n8nUrl']).n8nUrl).toBe(url);
    for (const bad of ['https://ops:tok%zz@n8n.example/x', 'https://o%3Aps:tok@n8n.example/x']) {
      const issues = issuesOf(() => load(`n8nUrl = "${bad}"`, {}, ['n8nUrl']));
      expect(issues).toEqual([{ key: 'n8nUrl', problem: expect.stringMatching(/percent-encoded/) }]);
      expect(JSON.stringify(issues)).not.toContain('tok');
    }
    expect(issuesOf(() => load('n8nUrl = "not a url"', {}, ['n8nUrl']))).toHaveLength(1);
  });

  it('never echoes a secret in an error', () => {
    const secret = '0xnot-a-key-but-secret-material';
    const issues = issuesOf(() =>
      load(
        `[agent]\nport=1\nrpc="http://a"\npriv="${secret}"\ncontractAddr="0x0000000000000000000000000000000000000001"`,
        {},
        ['agent'],
      ),
    );
    expect(issues).toEqual([{ key: 'agent.priv', problem: 'must be a 32-byte 0x-prefixed hex private key' }]);
    expect(JSON.stringify(issues)).not.toContain('secret-material');
  });

  it('takes the database from DATABASE_URL, else DB*, else embedded', () => {
    expect(load('', { DATABASE_URL: 'postgres://u:p@h:1/d' }).database).toEqual({
      mode: 'url',
      url: 'postgres://u:p@h:1/d',
      poolSize: 10,
    });
    const viaParts = load('', { DBHOST: 'db', DBPORT: '6432', DBUSER: 'svc', DBPASS: 's3cr:t' }).database;
    expect(viaParts).toEqual({ mode: 'url', url: 'postgres://svc:s3cr%3At@db:6432/otmoic', poolSize: 10 });
    expect(issuesOf(() => load('', { DBPORT: 'abc' }))[0]?.key).toBe('env.DBPORT');
  });

  it('passes DB* and MONGO_* credentials as given, "%" included, and refuses a host that is no host', () => {
    // What the driver makes of the URL.
    const parse = (url: string) => new pg.Client({ connectionString: url });
    for (const pass of ['ab%41cd', 'p%zz', 'x%', 'a:b@c/d?e#f']) {
      const database = load('', { DBHOST: 'db', DBUSER: 'u%1', DBPASS: pass }).database;
      if (database.mode !== 'url') throw new Error('not a URL target');
      expect(parse(database.url).password).toBe(pass);
      expect(parse(database.url).user).toBe('u%1');
      const mongo = new MongoClient(mongoUrl({ host: 'mongo', port: 27_017, user: 'u%1', pass, db: 'x' }));
      expect(mongo.options.credentials).toMatchObject({ username: 'u%1', password: pass });
    }
    const ipv6 = load('', { DBHOST: 'fd00::5' }).database;
    expect(ipv6.mode === 'url' && parse(ipv6.url).host).toBe('fd00::5');
    expect(new URL(mongoUrl({ host: 'fd00::5', port: 27_017, db: 'x' })).hostname).toBe('[fd00::5]');
    expect(load('', { DBHOST: 'otmoic_db_1' }).database).toMatchObject({
      url: expect.stringContaining('@otmoic_db_1:'),
    });
    for (const [variable, host, port] of [
      ['DBHOST', 'db.example.com:6432', 'DBPORT'],
      ['DBHOST', 'my host', 'DBPORT'],
      ['MONGO_HOST', 'mongo/x', 'MONGO_PORT'],
    ] as const) {
      expect(issuesOf(() => load('', { [variable]: host }))).toEqual([
        {
          key: `env.${variable}`,
          problem: `must be a host name or an IP address (the port goes in ${port})`,
        },
      ]);
    }
  });

  it('switches to Kafka and MongoDB when their variables are set', () => {
    const config = load('', {
      KAFKA_BROKERS: 'k1:9092,k2:9092',
      MONGO_HOST: 'mongo',
      MONGO_USER: 'u',
      MONGO_PASS: 'p',
    });
    expect(config.bus).toMatchObject({ adapter: 'kafka', kafkaBrokers: ['k1:9092', 'k2:9092'] });
    expect(config.archive).toMatchObject({
      adapter: 'mongodb',
      mongo: { host: 'mongo', port: 27_017, db: 'otmoic' },
    });
    expect(issuesOf(() => load('[bus]\nadapter = "kafka"'))[0]?.key).toBe('bus.adapter');
    expect(issuesOf(() => load('', { KAFKA_BROKERS: 'no-port' }))[0]?.key).toBe('env.KAFKA_BROKERS');
  });

  it('reads the Kafka topic, timeout, TLS and SASL keys; the SASL password only from the environment', () => {
    const text = `[bus.kafka]
replicationFactor = 3
minInsyncReplicas = 2
ssl = true
caFile = "/etc/kafka/ca.pem"
saslMechanism = "scram-sha-512"
saslUsername = "otmoic"
`;
    const config = load(text, { KAFKA_BROKERS: 'k1:9092', KAFKA_SASL_PASSWORD: 's3cret-pass' });
    expect(config.bus.kafka).toEqual({
      replicationFactor: 3,
      minInsyncReplicas: 2,
      publishTimeoutMs: 30_000,
      ssl: true,
      caFile: '/etc/kafka/ca.pem',
      saslMechanism: 'scram-sha-512',
      saslUsername: 'otmoic',
      topicPrefix: '',
    });
    expect(config.bus.kafkaSaslPassword).toBe('s3cret-pass');
    expect(JSON.stringify(redactConfig(config))).not.toContain('s3cret-pass');
    expect(issuesOf(() => load(text, { KAFKA_BROKERS: 'k1:9092' }))[0]?.key).toBe('bus.kafka.saslMechanism');
    expect(issuesOf(() => load('[bus.kafka]\nsaslPassword = "x"\n'))[0]?.key).toBe('bus.kafka');
    // Environment overrides for deployments that keep the file generic.
    const fromEnv = load('', {
      KAFKA_SSL: 'true',
      KAFKA_SASL_MECHANISM: 'plain',
      KAFKA_SASL_USERNAME: 'u',
      KAFKA_SASL_PASSWORD: 'p',
    });
    expect(fromEnv.bus.kafka).toMatchObject({ ssl: true, saslMechanism: 'plain', saslUsername: 'u' });
  });

  it('reads bus.kafka.topicPrefix (default none, KAFKA_TOPIC_PREFIX overrides) and refuses a name Kafka would not take', () => {
    expect(load('').bus.kafka.topicPrefix).toBe('');
    expect(load('[bus.kafka]\ntopicPrefix = "staging."\n').bus.kafka.topicPrefix).toBe('staging.');
    expect(
      load('[bus.kafka]\ntopicPrefix = "staging."\n', { KAFKA_TOPIC_PREFIX: 'prod-1_' }).bus.kafka
        .topicPrefix,
    ).toBe('prod-1_');
    // Empty counts as unset: the file's value stays.
    expect(load('[bus.kafka]\ntopicPrefix = "a."\n', { KAFKA_TOPIC_PREFIX: '' }).bus.kafka.topicPrefix).toBe(
      'a.',
    );
    for (const bad of ['stag ing.', 'prod/', 'ü.', 'a:b']) {
      expect(issuesOf(() => load(`[bus.kafka]\ntopicPrefix = "${bad}"\n`))).toEqual([
        {
          key: 'bus.kafka.topicPrefix',
          problem: "may hold only Kafka's topic characters: A-Z a-z 0-9 . _ -",
        },
      ]);
    }
    expect(issuesOf(() => load(`[bus.kafka]\ntopicPrefix = "${'x'.repeat(101)}"\n`))).toEqual([
      { key: 'bus.kafka.topicPrefix', problem: 'must be at most 100 characters' },
    ]);
    expect(load(`[bus.kafka]\ntopicPrefix = "${'x'.repeat(100)}"\n`).bus.kafka.topicPrefix).toHaveLength(100);
    expect(issuesOf(() => load('', { KAFKA_TOPIC_PREFIX: 'a b' }))[0]?.key).toBe('env.KAFKA_TOPIC_PREFIX');
  });

  it('reports TOML syntax errors with their line', () => {
    expect(issuesOf(() => load('[point]\nport = = 1'))[0]?.key).toBe('line 2');
  });

  it('redacts secrets for printing', () => {
    const config = load(example, { DATABASE_URL: 'postgres://svc:hunter2@db/x' }, ['agent']);
    const printed = JSON.stringify(redactConfig(config));
    expect(printed).not.toContain(config.agent!.priv);
    expect(printed).not.toContain('hunter2');
  });
});
