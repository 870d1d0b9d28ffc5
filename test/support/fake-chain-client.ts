import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChainReader } from '../../services/chain-client/chain-reader.js';
import {
  CHUNK_BLOCKS,
  chunksOf,
  planChunk,
  type PlannedDelivery,
  type Registration,
  type RegistrationKind,
} from '../../services/chain-client/delivery-plan.js';
import { buildEventBodies, type ContractAddresses } from '../../services/chain-client/event-body.js';

/**
 * How the double treats history requests (live chunks are always delivered, merged, in order):
 * - `broken`: like the original chainclient-evm V2.4 — answers `{code:200,"message":"history task started"}`,
 *   delivers the empty chunks of the range in order, and never the first chunk that holds events nor anything
 *   after it (its history monitor throws before posting and retries forever). `releaseHeld()` delivers them
 *   late.
 * - `doubled`: delivers every history range twice, each time with neighbouring chunks swapped (2, 1, 4, 3, …).
 */
export type HistoryBehaviour = 'broken' | 'doubled';

export interface FakeChainClientOptions {
  rpcUrl: string;
  systemChainId: string;
  contracts: ContractAddresses;
  history: HistoryBehaviour;
  /** First block of live chunks (default: the block after the head at start, as the original). */
  startBlock?: number;
  pollMs?: number;
  /** Attempts of one post before it is given up (the original: 10). */
  attempts?: number;
}

export interface FakeChainClient {
  url: string;
  /** Every support request received, with its body and answer code. */
  requests: Array<{ path: string; body: any; code: number }>;
  /** Posts delivered (answered 2xx) and given up, by kind of lane. */
  delivered: { live: number; history: number; failed: number };
  /** Highest live chunk posted. */
  liveHeight(): number;
  /** Delivers every history chunk held back so far (the late delivery); resolves when all were posted. */
  releaseHeld(): Promise<void>;
  /** Resolves when no history delivery is in flight. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** A chain client test double over a devnet chain, answering the support API like the original. */
export async function startFakeChainClient(options: FakeChainClientOptions): Promise<FakeChainClient> {
  const reader = new ChainReader(options.rpcUrl, [
    options.contracts.swap,
    ...(options.contracts.reputation ? [options.contracts.reputation] : []),
  ]);
  const attempts = options.attempts ?? 4;
  const registrations: Registration[] = [];
  const requests: FakeChainClient['requests'] = [];
  const delivered = { live: 0, history: 0, failed: 0 };
  const held: PlannedDelivery[][] = [];
  const historyTasks = new Set<Promise<void>>();
  let stopped = false;
  let next = options.startBlock ?? (await reader.head()) + 1;
  let liveHeight = next - 1;

  async function send(delivery: PlannedDelivery, kind: 'live' | 'history'): Promise<void> {
    for (let attempt = 1; attempt <= attempts && !stopped; attempt++) {
      try {
        const response = await fetch(delivery.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: delivery.body,
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        if (response.ok) {
          delivered[kind] += 1;
          return;
        }
      } catch {
        // connection refused or timeout: retried
      }
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
    delivered.failed += 1;
  }

  async function plan(from: number, to: number, registration: Registration) {
    const logs = await reader.logs(from, to);
    const bodies = await buildEventBodies(reader, logs, options.contracts, options.systemChainId);
    return chunksOf(from, to, bodies).map((chunk) => ({
      hasEvents: chunk.events.some((e) => (registration.kind === 'reputation') === (e.type === 'Reputation')),
      deliveries: planChunk(registration, chunk),
    }));
  }

  async function history(start: number, end: number, registration: Registration): Promise<void> {
    const chunks = await plan(start, end, registration);
    if (options.history === 'broken') {
      const firstWithEvents = chunks.findIndex((c) => c.hasEvents);
      const sent = firstWithEvents === -1 ? chunks : chunks.slice(0, firstWithEvents);
      for (const chunk of sent) for (const d of chunk.deliveries) await send(d, 'history');
      if (firstWithEvents !== -1) held.push(chunks.slice(firstWithEvents).flatMap((c) => c.deliveries));
      return;
    }
    // doubled: twice, neighbouring chunks swapped
    for (let pass = 0; pass < 2; pass++) {
      for (let i = 0; i < chunks.length; i += 2) {
        const pair = chunks.slice(i, i + 2).reverse();
        for (const chunk of pair) for (const d of chunk.deliveries) await send(d, 'history');
      }
    }
  }

  const follow = (async () => {
    while (!stopped) {
      try {
        const head = await reader.head();
        const lastWhole = Math.floor(head / CHUNK_BLOCKS) * CHUNK_BLOCKS;
        if (lastWhole >= next) {
          const live = registrations.filter((r) => r.lane.startsWith('reg:'));
          for (const registration of live) {
            for (const chunk of await plan(next, lastWhole, registration))
              for (const d of chunk.deliveries) await send(d, 'live');
          }
          next = lastWhole + 1;
          liveHeight = lastWhole;
        }
      } catch {
        // the chain is unreachable for a moment: next poll
      }
      await new Promise((r) => setTimeout(r, options.pollMs ?? 100));
    }
  })();

  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = JSON.parse(data || '{}');
      const answer = (code: number, message: string) => {
        requests.push({ path, body, code });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ code, message }));
      };
      const kind: RegistrationKind = path.endsWith('_reputation') ? 'reputation' : 'swap';
      if (path.startsWith('/support/register')) {
        const lane = `reg:${kind}:${JSON.stringify(body.callback)}`;
        if (registrations.some((r) => r.lane === lane))
          return answer(30209, 'callbackUrl is already registered');
        registrations.push({ lane, kind, callback: body.callback, merge: body.merge === true });
        return answer(200, 'register succeed');
      }
      if (path.startsWith('/support/history')) {
        const registration = {
          lane: `history:${requests.length}`,
          kind,
          callback: body.callback,
          merge: body.merge === true,
        };
        const task: Promise<void> = history(Number(body.start), Number(body.end), registration)
          .catch(() => undefined)
          .finally(() => historyTasks.delete(task));
        historyTasks.add(task);
        return answer(200, 'history task started');
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    delivered,
    liveHeight: () => liveHeight,
    async releaseHeld() {
      for (const deliveries of held.splice(0)) for (const d of deliveries) await send(d, 'history');
    },
    async idle() {
      while (historyTasks.size > 0) await Promise.all(historyTasks);
    },
    async close() {
      stopped = true;
      await follow;
      await Promise.all(historyTasks);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      reader.destroy();
    },
  };
}
