import net from 'node:net';

/** Writes `request` on a fresh socket; the answer's status and JSON body once the server closes it. */
export async function rawAnswer(port: number, request: string): Promise<{ status: number; body: unknown }> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const text = await new Promise<string>((resolve) => {
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.write(request);
  });
  const [head, body] = text.split('\r\n\r\n');
  return { status: Number(head!.split(' ')[1]), body: JSON.parse(body!) };
}
