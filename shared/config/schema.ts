import { z } from 'zod';
import { isIpOrCidr } from '../runtime/access.js';
import { isOrigin } from '../runtime/cors.js';
import { KAFKA_NAME_CHARS, MAX_TOPIC_PREFIX } from '../bus/kafka/names.js';

// One zod schema per configuration section. A service validates only the sections it names,
// so a file holding just `[point]` can start Points alone.

const port = z.number().int().min(1).max(65_535);
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
/** n8nUrl: user and password in it are sent as Basic authorization, so they must percent-decode (and the user hold no ':'). */
const webhookUrl = httpUrl.refine((url) => basicCredentialsValid(url), {
  error: "credentials in it must be percent-encoded, the user name without ':'",
});
function basicCredentialsValid(url: string): boolean {
  if (!URL.canParse(url)) return true; // httpUrl names that
  const { username, password } = new URL(url);
  try {
    decodeURIComponent(password);
    return !decodeURIComponent(username).includes(':');
  } catch {
    return false;
  }
}
// Compared as text with the ids in chain-client bodies and topic messages: one spelling per chain.
const chainIdString = z
  .string()
  .regex(/^(0|[1-9]\d*)$/, 'must be a decimal chain id string without leading zeros');
const privateKey = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'must be a 32-byte 0x-prefixed hex private key' });
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x-prefixed hex address');
// Access to gas-spending routes (shared/runtime/access.ts). The messages never repeat a value: keys are secrets.
const apiKeys = z
  .array(
    z
      .string()
      .min(16, 'an API key must have at least 16 characters')
      .max(512, 'an API key must have at most 512 characters'),
  )
  .default([]);
const allowIps = z
  .array(z.string().refine(isIpOrCidr, 'must be an IP address or a CIDR range (e.g. 10.0.0.0/8)'))
  .default([]);

/** Ours: origins of browser apps that may call the service (shared/runtime/cors.ts); `["*"]`: any; empty: none. */
const corsOrigins = z
  .array(
    z
      .string()
      .refine(
        isOrigin,
        'must be an origin as a browser sends it (scheme, host and port, no path or trailing slash, e.g. https://app.example.com) or "*"',
      ),
  )
  .refine(
    (origins) => !origins.includes('*') || origins.length === 1,
    '"*" allows any origin: list nothing beside it',
  )
  .default([]);

export const pointSection = z
  .strictObject({
    port,
    relayAdminUrl: httpUrl,
    didSupportUrl: httpUrl,
    refreshInterval: z.number().int().positive(),
    /** Ours: look-back window of the scores in days (default 90). */
    windowDays: z.number().int().positive().max(3_650).optional(),
    /** The earlier name of windowDays, still accepted. */
    lookBackDays: z.number().int().positive().max(3_650).optional(),
    /** Ours: a KYC / DID request that takes longer than this counts as the service being down. */
    lookupTimeoutMs: z.number().int().min(50).max(60_000).default(1_000),
    /** Ours: requests per client IP and window on every Points route (not /health, /metrics). */
    rateLimit: z
      .strictObject({
        max: z.number().int().min(1).default(600),
        windowMs: z.number().int().min(100).default(60_000),
      })
      .default({ max: 600, windowMs: 60_000 }),
    /** Ours: an HTTP query's SQL statement running longer than this is cancelled (503, 32011). */
    queryTimeoutMs: z.number().int().min(100).max(600_000).default(5_000),
    corsOrigins,
  })
  .refine(
    (p) => p.windowDays === undefined || p.lookBackDays === undefined || p.windowDays === p.lookBackDays,
    {
      error: 'windowDays and its alias lookBackDays disagree; set one of them',
      path: ['windowDays'],
    },
  )
  .transform(({ windowDays, lookBackDays, ...rest }) => {
    const days = windowDays ?? lookBackDays ?? 90;
    return { ...rest, windowDays: days, lookBackDays: days };
  });

export const agentSection = z.strictObject({
  port,
  /** JSON-RPC endpoint of the chain holding the reputation contract (secret: may carry an API key). */
  rpc: httpUrl,
  /** Private key of the wallet that pays gas for complaints (secret). */
  priv: privateKey,
  /** The reputation (complaint) contract: the EIP-712 verifyingContract and the submitComplaint target. */
  contractAddr: evmAddress,
  /** Ours: EVM chain id of `rpc` (EIP-712 domain, signing); read from the RPC at start when absent (complaints answer 503 until then). */
  chainId: z.number().int().positive().optional(),
  /** Ours: more JSON-RPC endpoints of the same chain, tried in order when `rpc` fails (and all get broadcasts). */
  rpcFallbacks: z.array(httpUrl).max(8).default([]),
  /** Ours: milliseconds after which one RPC call is abandoned (and the next endpoint tried). */
  rpcTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /**
   * Ours: who says which address owns a DID before gas is spent. `didSupport`: the DID support service's
   * `GET /find/owner/{signer}` (production; `didSupportUrl`, else `point.didSupportUrl`). `contract`: the
   * reputation contract's `ownerOfDomain` (the devnet's DID registry). Default: `didSupport` when a URL is
   * known, else `contract`.
   */
  didSource: z.enum(['didSupport', 'contract']).optional(),
  /** Ours: the DID support service; defaults to `point.didSupportUrl`. */
  didSupportUrl: httpUrl.optional(),
  /** Ours: typical seconds between blocks: how often the submitter looks at the chain. */
  blockTimeSeconds: z.number().positive().max(600).default(2),
  /** Ours: most wei per gas a complaint transaction may offer, speed-ups included (decimal string). */
  maxGasPriceWei: z
    .string()
    .regex(/^[1-9]\d*$/, 'must be a positive decimal wei amount')
    .default('200000000000'),
  /**
   * Ours: most gas one complaint transaction may use. A devnet submitComplaint with 65-byte signature strings
   * uses ~124 000-135 000; with every string member at its bound (complaint-body.ts) under 200 000.
   */
  maxGasLimit: z.number().int().min(21_000).max(30_000_000).default(400_000),
  /** Ours: blocks a receipt must be deep before a complaint is `confirmed` (1 = mined). */
  confirmations: z.number().int().min(1).max(1_000).default(2),
  /** Ours: blocks a transaction may stay unmined before it is replaced at its nonce with a higher fee. */
  bumpAfterBlocks: z.number().int().min(1).max(1_000).default(3),
  /** Ours: outright node refusals of a broadcast after which the nonce is freed (self-transfer). */
  maxRefusals: z.number().int().min(1).max(100).default(3),
  /**
   * Ours: transactions of one DID domain's complaints for a bid that may be mined and fail (a revert, or the
   * self-transfer freeing its nonce), each paid by the Agent wallet, before the Agent refuses to send it again.
   */
  maxPaidFailures: z.number().int().min(1).max(100).default(2),
  /** Ours: requests per client IP and window on every Agent route. */
  rateLimit: z
    .strictObject({
      max: z.number().int().min(1).default(60),
      windowMs: z.number().int().min(100).default(60_000),
    })
    .default({ max: 60, windowMs: 60_000 }),
  /** Ours: complaints per complainant DID domain and window on POST /submit-complaint. */
  domainRateLimit: z
    .strictObject({
      max: z.number().int().min(1).default(10),
      windowMs: z.number().int().min(100).default(60_000),
    })
    .default({ max: 10, windowMs: 60_000 }),
  /** Ours: bodies larger than this many bytes are refused (413) before they are parsed. */
  bodyLimit: z.number().int().min(1_024).max(1_048_576).default(32_768),
  /** Ours: API keys accepted in `x-api-key` on POST /submit-complaint (empty: no key required) (secret). */
  apiKeys,
  /** Ours: client IPs or CIDR ranges allowed on POST /submit-complaint (empty: any). */
  allowIps,
  corsOrigins,
});

/** The classifier (ours): arbitration of every swap, DESIGN §7. */
export const classifierSection = z.strictObject({
  /** Port of its /health and /metrics. */
  port,
  /** DID support service (`GET /find/owner/{address}` → `{data:[{name}]}`), usually point.didSupportUrl. */
  didSupportUrl: httpUrl,
  /** How long a DID answer is used before it is asked again. */
  didCacheMs: z.number().int().min(1_000).default(60_000),
  /**
   * Ours: at most this many recovered signers kept in memory (about 330 bytes each). The live classifier's
   * cache of what it judges now; a replay holds the live classifier's saved memo in it (see consent.ts).
   */
  signerMemoEntries: z.number().int().min(10_000).max(1_000_000_000).default(2_000_000),
});

export const connectorSection = z.strictObject({
  port,
  callbackUrl: httpUrl,
  /** Ours: how often registrations are renewed (chain clients forget them when they restart). */
  reregisterIntervalMs: z.number().int().min(1_000).default(60_000),
  /** Ours: a backfill that made no progress for this long is requested again. */
  backfillRetryMs: z.number().int().min(500).default(30_000),
  /** Ours: a gap whose history made no progress for this long is read from `rpc-urls` instead. */
  historyTimeoutMs: z.number().int().min(100).default(30_000),
  /** Ours: blocks per eth_getLogs call when the Connector reads a gap itself. */
  rpcRangeBlocks: z.number().int().min(1).max(10_000).default(100),
  /** Ours: how often a stuck stream is logged again while it stays stuck (state changes are logged at once). */
  stuckReportIntervalMs: z.number().int().min(1_000).default(60_000),
  /**
   * Ours, a secret: a path segment of every callback URL registered at chain clients, required by the
   * callback route (anything else is an unknown route). The message never repeats the value.
   */
  callbackToken: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,512}$/, 'must be 16 to 512 URL-safe characters (A-Z, a-z, 0-9, - and _)')
    .optional(),
  /** Ours: client IPs (or CIDR ranges) allowed on the callback route; empty: any. */
  allowIps,
  /**
   * Ours: a chunk or event more blocks than this above the stored height is refused (a forged height must
   * not open an unbounded gap); only this many blocks of a chunk's gap are requested at a time.
   */
  maxBlocksAhead: z.number().int().min(100).max(100_000_000).default(1_000_000),
  /**
   * Ours: 'async' commits a chunk's write without waiting for the WAL flush (the answer comes about a third
   * of a millisecond sooner). A database crash may then lose the last chunks whole, their stored height with
   * them, and the chain client's next chunk has them fetched again. 'sync' waits for the flush.
   */
  chunkCommit: z.enum(['async', 'sync']).default('async'),
});

export const chainClientEntry = z.strictObject({
  url: httpUrl,
  historyUrl: httpUrl,
  initBlockHeight: z.number().int().nonnegative(),
  chainId: chainIdString,
  nativeChainId: chainIdString,
  registerPath: z.string().startsWith('/'),
  historyPath: z.string().startsWith('/'),
  /** Ours: the Otmoic swap contract on this chain. Events from any other address are rejected. */
  contractAddr: evmAddress,
  /** Ours: the reputation contract, if this chain has one (complaint events). */
  reputationContractAddr: evmAddress.optional(),
  /** Ours: false asks history without `merge` (events to the per-event callbacks), for clients whose merged history is broken. */
  historyMerge: z.boolean().default(true),
});

export const rpcUrlsSection = z.record(chainIdString, httpUrl);

/** One instance of our EVM chain client per chain (services/chain-client). */
export const chainClientInstance = z.strictObject({
  port,
  /** JSON-RPC endpoint of the chain. */
  rpc: httpUrl,
  /** Otmoic system chain id reported as `chain_id` in every event body. */
  systemChainId: chainIdString,
  /**
   * EVM chain id the `rpc` must serve (`eth_chainId`, checked on every step; as the Connector's
   * `chainClients[].nativeChainId`). Our contracts often have the same address on every chain: an `rpc` of
   * another chain gave its events labelled `systemChainId`. Unset: not checked.
   */
  nativeChainId: chainIdString.optional(),
  /** The Otmoic swap contract: only its logs are delivered (address filter). */
  contractAddr: evmAddress,
  /** The reputation contract, when this chain has one (complaint events, `register_reputation`). */
  reputationContractAddr: evmAddress.optional(),
  /** Blocks behind the head that are followed: deeper reorgs are not handled. */
  confirmations: z.number().int().min(0).max(1_000).default(6),
  /** First block to follow when no progress is stored. */
  startBlock: z.number().int().nonnegative().default(0),
  pollIntervalMs: z.number().int().min(50).default(1_000),
  /** A JSON-RPC request unanswered this long fails (and is retried), so a hung node holds nothing up. */
  rpcTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /** Who may call the support routes (register, history): addresses or CIDR ranges; empty: anyone. */
  allowIps,
  /**
   * Attempts of one callback delivery before it is given up (logged and counted), 1 s apart and doubling: the
   * default 11 is the original's first try and 10 retries, about 17 minutes, so a subscriber restarting or
   * redeploying in that time loses nothing.
   */
  deliveryAttempts: z.number().int().min(1).max(20).default(11),
  /**
   * Failed reads of one range of a history task in a row (1 s apart, doubling up to 60 s) before the task is
   * given up: the default 10 is about 4 minutes. A range no node can read (a pruned node) held a task slot for
   * ever. A rate-limited read (429, Retry-After) is not an attempt.
   */
  historyAttempts: z.number().int().min(1).max(100).default(10),
  /** Days delivered and given-up posts are kept (for inspection) before they are removed. */
  keepSettledDays: z.number().int().min(1).max(3_650).default(7),
});

/** The relay interface of one EVM chain deployment (services/relay). */
export const relaySection = z.strictObject({
  port,
  /** Otmoic system chain id: the `{id}` of the `/evm-client-{id}/relay/…` routes. */
  systemChainId: chainIdString,
  /** EVM chain id of the OtmoicSwap EIP-712 domain and of the transactions the relay signs. */
  chainId: z.number().int().positive(),
  /** JSON-RPC endpoint of the chain. */
  rpc: httpUrl,
  /** The Otmoic swap contract the behalf commands call. */
  contractAddr: evmAddress,
  /** Private key of the relay wallet that pays gas for behalf commands (secret). */
  priv: privateKey,
  /** `sender_wallet_name` of confirm_in / refund_in bodies → the address it stands for (the LP's wallet). */
  senderWallets: z.record(z.string().min(1), evmAddress).default({}),
  /** Typical seconds between blocks: how often the submitter looks at the chain's time. */
  blockTimeSeconds: z.number().positive().max(600).default(3),
  /**
   * Upper bound of the fee per gas the relay pays (maxFeePerGas, or gasPrice on a legacy chain), in wei
   * (decimal string); a command asking more is refused, speed-ups stop there.
   */
  maxGasPriceWei: z
    .string()
    .regex(/^[1-9]\d*$/, 'must be a positive decimal wei amount')
    .default('200000000000'),
  /** Most gas one transaction may use: an Otmoic confirm / refund estimates ~40 000–50 000. */
  maxGasLimit: z.number().int().min(21_000).max(30_000_000).default(300_000),
  /** More JSON-RPC endpoints of the same chain, tried in order when `rpc` fails (and all get broadcasts). */
  rpcFallbacks: z.array(httpUrl).max(8).default([]),
  /** Milliseconds after which one RPC call is abandoned (and the next endpoint tried). */
  rpcTimeoutMs: z.number().int().min(100).max(120_000).default(10_000),
  /** Blocks a receipt must be deep before a command is `confirmed` (1 = mined). */
  confirmations: z.number().int().min(1).max(1_000).default(2),
  /** Seconds before a window's end from which nothing is sent and a pending call's nonce is freed. */
  windowMarginSeconds: z.number().int().min(0).max(3_600).default(15),
  /** Blocks a transaction may stay unmined before it is replaced at its nonce with a higher fee. */
  bumpAfterBlocks: z.number().int().min(1).max(1_000).default(3),
  /** Outright refusals of a broadcast by the node after which the nonce is freed (self-transfer). */
  maxRefusals: z.number().int().min(1).max(100).default(3),
  /**
   * Transactions of one command that may be mined and fail (a revert, or the self-transfer freeing its
   * nonce), each paid by the relay wallet, before a re-post of the command is refused instead of re-opened.
   */
  maxPaidFailures: z.number().int().min(1).max(100).default(2),
  /** A command whose window opens more than this many seconds after the chain's time is refused. */
  maxWindowAheadSeconds: z
    .number()
    .int()
    .min(60)
    .default(7 * 24 * 3_600),
  /** Blocks searched back for the LogNewTransferIn of a confirm_in / refund_in given by wallet name. */
  senderLookbackBlocks: z.number().int().min(1).default(200_000),
  /** API keys accepted in the `x-api-key` header of the behalf routes (empty: no key required) (secret). */
  apiKeys,
  /** Client IPs or CIDR ranges allowed on the behalf routes (empty: any). */
  allowIps,
  /** Also require the key and the allow-list on /status, /metrics and the command lookups. */
  restrictReads: z.boolean().default(false),
  /** Requests per client (API key, else IP) and window on the relay routes that cost something (not the pure ones). */
  rateLimit: z
    .strictObject({
      max: z.number().int().min(1).default(120),
      windowMs: z.number().int().min(100).default(60_000),
    })
    .default({ max: 120, windowMs: 60_000 }),
  /**
   * Check a new command on chain before accepting it (window not closed nor too far ahead, transfer pending,
   * sender of a wallet name from LogNewTransferIn). Only conformance tests without a chain turn it off.
   */
  acceptChecks: z.boolean().default(true),
  /** Compatibility: refusals answer HTTP 200 with `{code, message}` (for clients that throw on non-2xx). */
  errorsAsHttp200: z.boolean().default(false),
  /**
   * The chain client's `POST /support/register` URL: register_relay hands the relay server's callback URLs to
   * it, so the chain client delivers the swap events there (the original chain client did both). Unset: the
   * URLs are only stored, and nothing delivers to them (a warning says so).
   */
  chainClientRegisterUrl: httpUrl.optional(),
  /** How often the stored registration is handed to the chain client again (it may forget it on restart). */
  reregisterSeconds: z.number().int().min(1).max(86_400).default(60),
});

/**
 * Ours: a local devnet started by `npm start` before the services (shared/devnet): one in-process Hardhat chain
 * per `rpc-urls` entry on that URL's port, our contracts at their fixed addresses, the DID support stand-in on
 * `point.didSupportUrl`'s port and the relay-admin (KYC) stand-in on `point.relayAdminUrl`'s. Never in production.
 */
export const devnetSection = z.strictObject({
  /** Where each chain's journal (every block-producing call, replayed at the next start) and the KYC list live. */
  stateDir: z.string().min(1).default('data/devnet'),
  /** EVM chain id whose Reputation contract is the DID registry the DID stand-in reads. */
  didChainId: z.number().int().positive(),
  /**
   * A new chain's genesis is this many days before now: Points scores the window ending at the wall clock, and
   * the demo moves chain time forward, so the chain starts in the past to keep its blocks inside the window.
   */
  genesisDaysAgo: z.number().int().min(0).max(80).default(30),
  /** Addresses the KYC stand-in reports verified at first start. */
  kycVerified: z.array(evmAddress).default([]),
});

export const databaseSection = z.strictObject({
  /** Where the embedded profile keeps PostgreSQL's files (ignored when DATABASE_URL or DBHOST is set). */
  dataDir: z.string().min(1).default('data/postgres'),
  /** Port of the embedded PostgreSQL server. */
  embeddedPort: port.default(54_329),
  /** Database name used on an external server (DBHOST…) and inside the embedded one. */
  name: z.string().min(1).default('otmoic'),
  poolSize: z.number().int().min(2).max(200).default(10),
});

/** bus.kafka.topicPrefix / KAFKA_TOPIC_PREFIX: Kafka's legal topic characters, leaving room for the names. */
export const kafkaTopicPrefix = z
  .string()
  .max(MAX_TOPIC_PREFIX, `must be at most ${MAX_TOPIC_PREFIX} characters`)
  .regex(KAFKA_NAME_CHARS, "may hold only Kafka's topic characters: A-Z a-z 0-9 . _ -");

export const busSection = z.strictObject({
  adapter: z.enum(['postgres', 'kafka']).default('postgres'),
  /** Partitions per topic unless a topic file says otherwise. */
  partitions: z.number().int().min(1).max(256).default(8),
  /** Attempts of a failing handler before its message goes to the dead-letter topic. */
  maxAttempts: z.number().int().min(1).max(100).default(5),
  clientId: z.string().min(1).default('otmoic'),
  /** Kafka only (production profile); ignored by the postgres log. */
  kafka: z
    .strictObject({
      /** Replicas of each topic the services create; unset: the broker's default.replication.factor. */
      replicationFactor: z.number().int().min(1).max(32).optional(),
      /** min.insync.replicas of each topic (with acks=all, writes fail below it); unset: the broker's default. */
      minInsyncReplicas: z.number().int().min(1).max(32).optional(),
      /** A publish that Kafka has not acknowledged by then fails (bounded retries inside it). */
      publishTimeoutMs: z.number().int().min(1_000).max(600_000).default(30_000),
      /** TLS to the brokers; CA / client certificate files are optional (system CAs otherwise). */
      ssl: z.boolean().default(false),
      caFile: z.string().min(1).optional(),
      certFile: z.string().min(1).optional(),
      keyFile: z.string().min(1).optional(),
      /** SASL; the password comes from KAFKA_SASL_PASSWORD only, never the file. */
      saslMechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
      saslUsername: z.string().min(1).optional(),
      /**
       * Put before every topic name and consumer group id on the broker, so deployments sharing a cluster
       * (staging and production, two relays) stay apart; logical names everywhere else. Empty: none.
       */
      topicPrefix: kafkaTopicPrefix.default(''),
    })
    .default({ publishTimeoutMs: 30_000, ssl: false, topicPrefix: '' }),
});

export const archiveSection = z.strictObject({
  adapter: z.enum(['postgres', 'mongodb']).default('postgres'),
});

export const httpSection = z.strictObject({
  /**
   * Reverse proxies in front of the services (addresses or CIDR ranges): a request from one of them is taken
   * to come from the client its X-Forwarded-For names, for rate limits, allow-lists and logs. Empty: the
   * socket's address (a client can never name itself through X-Forwarded-For).
   */
  trustProxy: allowIps,
});

/**
 * `[notifier]`, optional: with `port` the notifier serves GET /health and GET /metrics there (needed when it
 * runs in a process of its own, whose outbox gauges no other service's /metrics shows).
 */
export const notifierSection = z.strictObject({
  port: port.optional(),
  /**
   * Delivered notifications are kept this many days, then deleted (hourly). While kept, a row is the record
   * that its id was told: the same id (a violation re-read by a rewound notifier group) is not sent again.
   */
  keepDeliveredDays: z.number().int().min(1).max(36_500).default(90),
  /**
   * How long a post to n8nUrl may take before it counts as failed and is sent again. n8n answering "when the
   * last node finishes" often takes longer than a few seconds: a receiver that took the post after the bound
   * was sent it again for ever.
   */
  timeoutSeconds: z.number().int().min(1).max(600).default(30),
});

export const logSection = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** The whole file. Sections are optional here; services demand the ones they use. */
export const configFileSchema = z.looseObject({
  n8nUrl: webhookUrl.optional(),
  point: z.unknown().optional(),
  agent: z.unknown().optional(),
  connector: z.unknown().optional(),
  classifier: z.unknown().optional(),
  'rpc-urls': z.unknown().optional(),
  chainClients: z.unknown().optional(),
  chainClient: z.unknown().optional(),
  relay: z.unknown().optional(),
  devnet: z.unknown().optional(),
  database: z.unknown().optional(),
  bus: z.unknown().optional(),
  archive: z.unknown().optional(),
  http: z.unknown().optional(),
  log: z.unknown().optional(),
  notifier: z.unknown().optional(),
});

/** The Connector looks its chain clients up by chainId: a second entry for one chain would silently win. */
function uniqueChainIds(entries: ReadonlyArray<{ chainId: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  entries.forEach(({ chainId }, i) => {
    if (seen.has(chainId))
      ctx.addIssue({ code: 'custom', path: [i, 'chainId'], message: `chain ${chainId} has two entries` });
    seen.add(chainId);
  });
}

export const sectionSchemas = {
  n8nUrl: webhookUrl,
  point: pointSection,
  agent: agentSection,
  connector: connectorSection,
  classifier: classifierSection,
  'rpc-urls': rpcUrlsSection,
  chainClients: z.array(chainClientEntry).min(1).superRefine(uniqueChainIds),
  chainClient: z.array(chainClientInstance).min(1),
  relay: relaySection,
  devnet: devnetSection,
} as const;

export type SectionName = keyof typeof sectionSchemas;

export type PointConfig = z.infer<typeof pointSection>;
export type AgentConfig = z.infer<typeof agentSection>;
export type ConnectorConfig = z.infer<typeof connectorSection>;
export type ClassifierConfig = z.infer<typeof classifierSection>;
export type ChainClientConfig = z.infer<typeof chainClientEntry>;
export type ChainClientInstanceConfig = z.infer<typeof chainClientInstance>;
export type RelayConfig = z.infer<typeof relaySection>;
export type DevnetConfig = z.infer<typeof devnetSection>;
export type DatabaseConfig = z.infer<typeof databaseSection>;
export type BusConfig = z.infer<typeof busSection>;
export type ArchiveConfig = z.infer<typeof archiveSection>;
