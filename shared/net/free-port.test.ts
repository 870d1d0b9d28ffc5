import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './free-port.js';

describe('freePort', () => {
  it('gives distinct ports below the ephemeral range, each free to listen on', async () => {
    // A port from the ephemeral range may be given to an outgoing connection before a test listens on it
    // again (a service restarted on its port): EADDRINUSE, now and then, in CI.
    const ports = await Promise.all(Array.from({ length: 20 }, () => freePort()));
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(32_768);
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.on('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
