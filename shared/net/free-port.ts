import net from 'node:net';
import { randomInt } from 'node:crypto';

/**
 * Ports handed out are taken below Linux's ephemeral range (32768–60999 by default): a port from that range
 * (what `listen(0)` gives) is also what the kernel gives the next outgoing connection, so one held free a moment
 * ago, and listened on again later (a service restarted on its port in a test), was now and then taken by a
 * client socket: EADDRINUSE. Below it nothing is assigned on its own.
 */
const LOWEST = 20_000;
const HIGHEST = 32_767;
/** Handed out by this process already: never twice. */
const handedOut = new Set<number>();

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago (for tests and the devnet). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = randomInt(LOWEST, HIGHEST + 1);
    if (handedOut.has(port)) continue;
    if ((await tryListen(port)) === port) {
      handedOut.add(port);
      return port;
    }
  }
  // The range is busy: any port the kernel gives.
  const port = await tryListen(0);
  if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
