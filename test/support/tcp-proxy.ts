import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to `target` (host and port), for tests that take a server away (a database behind it): close()
 * ends its connections and stops listening, so the clients' next statements fail as with the server gone.
 * freeze() black-holes the connections open now, as a NAT or firewall that dropped them silently does: no
 * byte passes either way and neither side is told; connections made after it pass as before.
 */
export async function tcpProxy(target: URL): Promise<{ port: number; close(): void; freeze(): void }> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    for (const socket of pair) {
      sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        sockets.delete(socket);
        pairs.delete(pair);
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
    freeze() {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
      pairs.clear();
    },
  };
}

/** `url` (a database URL) pointed at the proxy's port on 127.0.0.1. */
export function throughProxy(url: string, proxy: { port: number }): string {
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(proxy.port);
  return through.toString();
}
