/**
 * `npm run bench -- relay`: requests/s of the relay's get_signer_from_eip712 and get_hashlock over real HTTP
 * (keep-alive, 16 in flight) beside a bare fastify route in the same server, the behalf accept path with a
 * store that answers at once (the sender is never on that path), then signer recoveries/s of
 * our recovery path beside ethers' verifyTypedData (bench/crypto.ts, reused).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { relayVectors } from '../test/fixtures/otmoic-relay-vectors.js';
import { registerRelayRoutes } from '../services/relay/routes.js';
import type { CommandStore } from '../services/relay/store.js';
import { createLogger } from '../shared/logging/logger.js';
import type { BenchSection } from './report.js';
import { postJson } from './post-json.js';
import { fmt, printTable } from './support.js';

const CONCURRENCY = 16;
const WARM_UP_MS = 500;
const BUDGET_MS = Number(process.env.BENCH_RELAY_MS ?? 3_000);

/** Requests/s of POST `path` with `body`, `CONCURRENCY` keep-alive connections, checking every answer. */
async function measure(
  port: number,
  path: string,
  body: string,
  ms: number,
  expect: string,
): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const one = async () => {
    const { text } = await postJson(agent, port, path, body);
    if (!text.includes(expect)) throw new Error(`${path}: unexpected answer ${text}`);
  };
  let done = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await one();
        done++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  agent.destroy();
  return (done * 1000) / elapsed;
}

export async function run(): Promise<BenchSection[]> {
  const app = Fastify({ loggerInstance: createLogger({ level: 'silent' }) as FastifyBaseLogger });
  // The accept path never waits for the sender (it runs in its own loop): with the store answering at once
  // the behalf route costs parsing, transferId and command id, nothing more.
  const store = {
    find: async () => undefined,
    get: async () => undefined,
    accept: async (parsed: { command: { commandId: string } }) => ({
      id: parsed.command.commandId,
      created: false,
      status: 'scheduled',
      reopened: false,
    }),
  } as unknown as CommandStore;
  await registerRelayRoutes(app, {
    systemChainId: '9006',
    chainId: 97,
    commandContext: {
      systemChainId: '9006',
      chainId: 97,
      contractAddr: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      senderWallets: {},
    },
    store,
    readFee: async () => 30n,
    status: () => ({}),
    windowMarginSeconds: 15,
    maxWindowAheadSeconds: 604_800,
    maxPaidFailures: 2,
    access: { apiKeys: [], allowIps: [], restrictReads: false },
    rateLimit: { max: 1_000_000_000, windowMs: 60_000 },
    errorsAsHttp200: false,
    scrub: (text) => text,
    log: createLogger({ level: 'silent' }),
  });
  app.post('/bare', async () => ({ code: 200, bare: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;

  const signer = relayVectors.eip712.cases[0]!;
  const cases: Array<[string, string, string, string]> = [
    ['bare fastify route', '/bare', '{}', '"bare":true'],
    [
      'get_hashlock',
      '/evm-client-9006/relay/get_hashlock',
      JSON.stringify(relayVectors.hashlock[0]!.request),
      relayVectors.hashlock[0]!.response.hashlock!,
    ],
    [
      'get_signer_from_eip712',
      '/evm-client-9006/relay/get_signer_from_eip712',
      JSON.stringify(signer.request),
      signer.response_when_server_CHAIN_ID_is_this.address,
    ],
    [
      'behalf/confirm_out (accept, store stub)',
      '/evm-client-9006/relay/behalf/confirm_out',
      JSON.stringify(relayVectors.calldata[0]!.request),
      '"Command received"',
    ],
  ];
  console.log(
    `relay routes over HTTP: ${CONCURRENCY} keep-alive requests in flight, ${BUDGET_MS} ms per route (node ${process.version})`,
  );
  for (const [, path, body, expect] of cases) await measure(port, path, body, WARM_UP_MS, expect);
  // Two rounds, interleaved, so a load change on the shared machine hits every route alike.
  const totals = cases.map(() => 0);
  for (let round = 0; round < 2; round++) {
    for (const [index, [, path, body, expect]] of cases.entries())
      totals[index]! += await measure(port, path, body, BUDGET_MS / 2, expect);
  }
  const rates = totals.map((t) => t / 2);
  printTable(
    'requests/s (same server, same client)',
    cases.map(([label], i) => [
      label,
      `${fmt(rates[i]!).padStart(7)} req/s${i === 0 ? '' : ` = ${((rates[i]! / rates[0]!) * 100).toFixed(0)} % of the bare route`}`,
    ]),
  );
  await app.close();

  console.log('\nsigner recovery (bench/crypto.ts):');
  const crypto = await (await import('./crypto.js')).run();
  return [
    {
      title: `requests/s over HTTP, ${CONCURRENCY} keep-alive requests in flight, same server and client`,
      rows: cases.map(([label], i) =>
        i === 0
          ? { measure: label, value: `${fmt(rates[i]!)} req/s`, note: 'baseline' }
          : {
              measure: label,
              value: `${fmt(rates[i]!)} req/s`,
              baseline: `${fmt(rates[0]!)} req/s`,
              ratio: rates[i]! / rates[0]!,
            },
      ),
    },
    ...crypto,
  ];
}
