/**
 * A stand-in of the DID support service for the devnet, backed by the devnet's own DID registry (the
 * `DomainOwnerSet(string domain, address owner)` events of our Reputation contract):
 * - `GET /find/owner/{address}` → `{code: 0, data: [{name}]}`: the DID names the address owns now (the real
 *   SDK's route and shape);
 * - `GET /find/name/{name}` → `{code: 0, data: [{owner}]}` (ours): the owner of a name, empty when none.
 * Every answer reads the registry's events up to the chain head, so it is never staler than the chain.
 * Errors are `{code, message}` with a matching HTTP status.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { Interface, JsonRpcProvider, ZeroAddress, getAddress } from 'ethers';
import { z } from 'zod';
import { defaultNotFound, routerRefusals, setNotFoundAnswer } from '../../../shared/runtime/http.js';
import { singleFlight } from '../../../shared/runtime/single-flight.js';
import { printedHost } from '../../../shared/runtime/summary.js';

const REGISTRY = new Interface(['event DomainOwnerSet(string domain, address owner)']);
const DOMAIN_OWNER_SET = REGISTRY.getEvent('DomainOwnerSet')!.topicHash;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export interface DidSupportOptions {
  rpcUrl: string;
  /** The Reputation contract whose DomainOwnerSet events are the registry. */
  registry: string;
  port?: number;
  host?: string;
}

export interface DidSupport {
  url: string;
  app: FastifyInstance;
  stop(): Promise<void>;
}

/** The registry's current state, read incrementally from its events. */
class RegistryView {
  private readonly owners = new Map<string, string>();
  private nextBlock = 0;
  /** Catches up with the chain head (one read at a time; concurrent callers share it). */
  readonly refresh = singleFlight(() => this.readNewEvents());

  constructor(
    private readonly provider: JsonRpcProvider,
    private readonly registry: string,
  ) {}

  namesOf(address: string): string[] {
    const wanted = address.toLowerCase();
    return [...this.owners]
      .filter(([, owner]) => owner.toLowerCase() === wanted)
      .map(([name]) => name)
      .sort();
  }

  ownerOf(name: string): string | undefined {
    return this.owners.get(name);
  }

  private async readNewEvents(): Promise<void> {
    const head = await this.provider.getBlockNumber();
    if (head < this.nextBlock) return;
    const logs = await this.provider.getLogs({
      address: this.registry,
      topics: [DOMAIN_OWNER_SET],
      fromBlock: this.nextBlock,
      toBlock: head,
    });
    for (const log of logs) {
      const parsed = REGISTRY.parseLog(log)!;
      const owner = getAddress(parsed.args.owner as string);
      if (owner === ZeroAddress) this.owners.delete(parsed.args.domain as string);
      else this.owners.set(parsed.args.domain as string, owner);
    }
    this.nextBlock = head + 1;
  }
}

export async function startDidSupport(options: DidSupportOptions): Promise<DidSupport> {
  const provider = new JsonRpcProvider(options.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const view = new RegistryView(provider, options.registry);
  const app: FastifyInstance = Fastify({ frameworkErrors: routerRefusals(() => app) });
  const fail = (status: number, message: string) => ({ status, body: { code: status, message } });

  app.setErrorHandler((error: { statusCode?: number; message: string }, _request, reply) => {
    const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 502;
    return reply
      .code(status)
      .send({ code: status, message: status === 502 ? 'registry unreachable' : error.message });
  });
  setNotFoundAnswer(app, defaultNotFound);

  app.get('/find/owner/:address', async (request, reply) => {
    const params = z.object({ address: z.string().regex(ADDRESS) }).safeParse(request.params);
    if (!params.success) {
      const { status, body } = fail(400, 'address must be a 20-byte 0x-prefixed hex address');
      return reply.code(status).send(body);
    }
    await view.refresh();
    return { code: 0, data: view.namesOf(params.data.address).map((name) => ({ name })) };
  });

  app.get('/find/name/:name', async (request, reply) => {
    const params = z.object({ name: z.string().min(1) }).safeParse(request.params);
    if (!params.success) {
      // A malformed request, not the registry being away (a caller would take a 502 for an outage).
      const { status, body } = fail(400, 'name must not be empty');
      return reply.code(status).send(body);
    }
    await view.refresh();
    const owner = view.ownerOf(params.data.name);
    return { code: 0, data: owner ? [{ owner }] : [] };
  });

  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://${printedHost(options.host)}:${port}`,
    app,
    async stop() {
      await app.close();
      provider.destroy();
    },
  };
}
