/**
 * A JSON-RPC proxy in front of a devnet node, for sender tests: forwards every request, except that
 * eth_sendRawTransaction of a transaction `refuse` matches is answered with a node-style refusal (as a
 * node with a policy, or one that will not take a fee, would), and answers `rewrite` changes (a faulty or
 * lagging node). Its URL carries a path (like a provider's
 * API key), which the refusal text quotes: a test can check it never leaks.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transaction } from 'ethers';

export interface RpcProxy {
  url: string;
  /** Raw transactions refused so far. */
  refused: number;
  /** Requests forwarded or answered, by JSON-RPC method. */
  calls: Record<string, number>;
  refuse?: (tx: Transaction) => boolean;
  /** The `result` a call answers instead of the node's (undefined: the node's). */
  rewrite?: (method: string, params: unknown[], result: unknown) => unknown;
  /** A JSON-RPC error a call answers instead of going to the node (undefined: it goes), as a flaky endpoint. */
  fail?: (method: string, params: unknown[]) => { code: number; message: string } | undefined;
  /** A wait before a call is answered (undefined: none), as a slow endpoint: the call goes on after it. */
  hold?: (method: string, params: unknown[]) => Promise<void> | undefined;
  close(): Promise<void>;
}

interface RpcRequest {
  id: unknown;
  method: string;
  params: unknown[];
}

async function readBody(request: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of request) text += chunk;
  return text;
}

export async function startRpcProxy(target: string, secretPath: string): Promise<RpcProxy> {
  const proxy: RpcProxy = { url: '', refused: 0, calls: {}, close: async () => undefined };
  const server = createServer((request, response) => {
    void (async () => {
      const text = await readBody(request);
      const parsed = JSON.parse(text) as RpcRequest | RpcRequest[];
      if (Array.isArray(parsed)) return batch(parsed, text, response);
      const body = parsed;
      proxy.calls[body.method] = (proxy.calls[body.method] ?? 0) + 1;
      const answerError = (error: { code: number; message: string }) => {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error }));
      };
      await proxy.hold?.(body.method, body.params);
      const failure = proxy.fail?.(body.method, body.params);
      if (failure) return answerError(failure);
      if (body.method === 'eth_sendRawTransaction' && proxy.refuse !== undefined) {
        const tx = Transaction.from(body.params[0] as string);
        if (proxy.refuse(tx)) {
          proxy.refused++;
          return answerError({ code: -32003, message: `transaction rejected by policy of ${request.url}` });
        }
      }
      const upstream = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: text,
      });
      response.statusCode = upstream.status;
      response.setHeader('content-type', 'application/json');
      let answer = await upstream.text();
      const rewritten = proxy.rewrite?.(
        body.method,
        body.params,
        (JSON.parse(answer) as { result?: unknown }).result,
      );
      if (rewritten !== undefined) answer = JSON.stringify({ ...JSON.parse(answer), result: rewritten });
      response.end(answer);
    })().catch((error: unknown) => {
      response.statusCode = 502;
      response.end(String(error));
    });
  });
  /** A batch (ethers sends them): counted and rewritten call by call, refused never. */
  async function batch(calls: RpcRequest[], text: string, response: ServerResponse): Promise<void> {
    for (const call of calls) proxy.calls[call.method] = (proxy.calls[call.method] ?? 0) + 1;
    const upstream = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: text,
    });
    const answers = (await upstream.json()) as Array<{ id: unknown; result?: unknown }>;
    const byId = new Map(calls.map((call) => [call.id, call]));
    const rewritten = answers.map((answer) => {
      const call = byId.get(answer.id);
      const result = call && proxy.rewrite?.(call.method, call.params, answer.result);
      return result === undefined ? answer : { ...answer, result };
    });
    response.statusCode = upstream.status;
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(rewritten));
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  proxy.url = `http://127.0.0.1:${port}${secretPath}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
