/**
 * Devnet stand-in of the relay admin service's KYC route (the contract Points reads, services/points/README.md):
 *
 * - `GET /kyc/{address}` → 200 `{"data":{"address":"0x…","verified":true|false}}` for any 0x address;
 * - `PUT /kyc/{address}` with `{"verified":true|false}` sets it (devnet and tests only: no authentication).
 *
 * Verified addresses live in memory, or in a JSON file (an array of addresses) when `file` is given, so a
 * restarted stand-in keeps them. Errors are `{code, message}`.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createLogger, type Logger } from '../../../shared/logging/logger.js';
import { defaultNotFound, routerRefusals, setNotFoundAnswer } from '../../../shared/runtime/http.js';

const addressParam = z.object({
  address: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 20-byte 0x-prefixed hex address')
    .transform((s) => s.toLowerCase()),
});
const putBody = z.strictObject({ verified: z.boolean() });
const fileContent = z.array(z.string().regex(/^0x[0-9a-fA-F]{40}$/));

export interface RelayAdminStandIn {
  url: string;
  port: number;
  app: FastifyInstance;
  setVerified(address: string, verified: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startRelayAdminStandIn(
  options: { port?: number; host?: string; verified?: Iterable<string>; file?: string; log?: Logger } = {},
): Promise<RelayAdminStandIn> {
  const verified = new Set<string>([...(options.verified ?? [])].map((a) => a.toLowerCase()));
  if (options.file) {
    const text = await readFile(options.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return '[]';
      throw err;
    });
    for (const a of fileContent.parse(JSON.parse(text))) verified.add(a.toLowerCase());
  }
  const save = async () => {
    if (!options.file) return;
    const temporary = `${options.file}.tmp`;
    await writeFile(temporary, JSON.stringify([...verified].sort(), null, 2));
    await rename(temporary, options.file);
  };
  const setVerified = async (address: string, value: boolean) => {
    if (value) verified.add(address.toLowerCase());
    else verified.delete(address.toLowerCase());
    await save();
  };

  const log = options.log ?? createLogger({ level: 'silent' });
  const app: FastifyInstance = Fastify({
    loggerInstance: log as FastifyBaseLogger,
    frameworkErrors: routerRefusals(() => app),
  });
  app.setErrorHandler((error: { statusCode?: number; message: string }, _request, reply) => {
    const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
    return reply
      .code(status)
      .send({ code: status, message: status === 500 ? 'internal error' : error.message });
  });
  setNotFoundAnswer(app, defaultNotFound);
  const parseAddress = (params: unknown) => {
    const parsed = addressParam.safeParse(params);
    if (!parsed.success)
      throw Object.assign(new Error('address must be a 20-byte 0x-prefixed hex address'), {
        statusCode: 400,
      });
    return parsed.data.address;
  };
  app.get('/kyc/:address', async (request) => {
    const address = parseAddress(request.params);
    return { data: { address, verified: verified.has(address) } };
  });
  app.put('/kyc/:address', async (request) => {
    const address = parseAddress(request.params);
    const body = putBody.safeParse(request.body);
    if (!body.success)
      throw Object.assign(new Error('body must be {"verified": true|false}'), { statusCode: 400 });
    await setVerified(address, body.data.verified);
    return { data: { address, verified: body.data.verified } };
  });

  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    app,
    setVerified,
    close: () => app.close(),
  };
}
