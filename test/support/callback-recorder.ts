import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedPost {
  path: string;
  body: any;
}

/** An HTTP server that records every JSON POST it receives (a stand-in for the Connector, or any receiver). */
export async function startCallbackRecorder(options: { failFirst?: (path: string) => boolean } = {}) {
  const posts: RecordedPost[] = [];
  const failed = new Set<string>();
  const server = http.createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      if (options.failFirst?.(path) && !failed.has(data)) {
        failed.add(data);
        res.writeHead(503).end();
        return;
      }
      posts.push({ path, body: JSON.parse(data) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":200}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    posts,
    at: (path: string) => posts.filter((p) => p.path === path).map((p) => p.body),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
