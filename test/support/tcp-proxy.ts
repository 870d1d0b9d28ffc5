import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to `target` (host and port), for tests that take a server away (a database behind it): close()
 * ends its connections and stops listening, so the clients' next statements fail as with the server gone.
 * freeze() black-holes the connections open now, as a NAT or firewall that dropped them silently does: no
 * byte passes either way and neither side is told; connections made after it pass as before. blackHoleNew()
 * does that to every connection made from then on, from its first byte.
 */
export async function tcpProxy(
  target: URL,
): Promise<{ port: number; close(): void; freeze(): void; blackHoleNew(): void }> {
  const sockets = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  let blackHole = false;
  const server = net.createServer((client) => {
    if (blackHole) {
      // Accepted, then nothing passes: a connection that a firewall drops after its handshake.
      sockets.add(client);
      client.on('error', () => undefined);
      client.on('close', () => sockets.delete(client));
      client.pause();
      return;
    }
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
    blackHoleNew() {
      blackHole = true;
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
