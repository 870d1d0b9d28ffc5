import net from 'node:net';

/** Kafka's Produce request (api key 0). */
const PRODUCE = 0;

export interface KafkaProxy {
  port: number;
  /**
   * The next `n` Produce requests reach the broker (which writes them), but their answers never reach the
   * client: a request whose outcome the client cannot know (it times out).
   */
  dropProduceAnswers(n?: number): void;
  /** Answers dropped so far. */
  dropped(): number;
  /** Client connections open now. */
  connections(): number;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of a Kafka broker that reads the protocol's frames (a 4-byte size, then the request
 * header: api key, version, correlation id; an answer starts with the correlation id) so it can lose the
 * answer of chosen requests. The broker must advertise the proxy's port (startKafka's advertisedPort), or the
 * clients connect to it directly after their first metadata.
 */
export async function startKafkaProxy(options: { port: number; target: number }): Promise<KafkaProxy> {
  let armed = 0;
  let dropped = 0;
  const sockets = new Set<net.Socket>();
  const clients = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const broker = net.connect({ host: '127.0.0.1', port: options.target });
    sockets.add(client).add(broker);
    clients.add(client);
    client.on('close', () => clients.delete(client));
    const lose = new Set<number>();
    const close = () => {
      client.destroy();
      broker.destroy();
    };
    client.on('error', close).on('close', close);
    broker.on('error', close).on('close', close);
    client.on(
      'data',
      frames((frame) => {
        if (armed > 0 && frame.readInt16BE(4) === PRODUCE) {
          armed--;
          lose.add(frame.readInt32BE(8));
        }
        broker.write(frame);
      }),
    );
    broker.on(
      'data',
      frames((frame) => {
        if (lose.delete(frame.readInt32BE(4))) dropped++;
        else client.write(frame);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(options.port, '127.0.0.1', resolve));
  return {
    port: options.port,
    dropProduceAnswers: (n = 1) => void (armed += n),
    dropped: () => dropped,
    connections: () => clients.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A stream's chunks cut into whole frames (size prefix included). */
function frames(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const end = 4 + pending.readInt32BE(0);
      if (pending.length < end) break;
      onFrame(pending.subarray(0, end));
      pending = pending.subarray(end);
    }
  };
}
