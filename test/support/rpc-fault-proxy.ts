import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A JSON-RPC endpoint in front of a devnet chain that a test can take down (every request answered 503) or
 * slow down (each request delayed), to see what a service does when its RPC fails.
 */
export async function startFaultyRpc(target: string) {
  let down = false;
  let delayMs = 0;
  let requests = 0;
  const calls: Array<{ method: string; params: any[] }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      requests += 1;
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString());
        for (const call of Array.isArray(parsed) ? parsed : [parsed])
          calls.push({ method: call.method, params: call.params });
      } catch {
        // not JSON: forwarded as it is
      }
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (down) return void res.writeHead(503, { 'content-type': 'text/plain' }).end('down');
      try {
        const answer = await fetch(target, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: Buffer.concat(chunks),
        });
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setDown: (value: boolean) => void (down = value),
    setDelay: (ms: number) => void (delayMs = ms),
    requests: () => requests,
    /** Every JSON-RPC call that reached the proxy (batches unpacked), whether it was up or not. */
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
