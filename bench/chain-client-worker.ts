import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { postJson } from './post-json.js';

/**
 * The connector bench's chain client, on a thread of its own as a real chain client is a process of its own:
 * its cost (writing 14 KB bodies, reading answers) is not the Connector's. Given {index}, it posts that body
 * over one keep-alive connection and answers with the status, the text when it is not 200, and the time from
 * the request to the end of the answer (messaging between the threads is not counted).
 */
const { port, path, bodies } = workerData as { port: number; path: string; bodies: string[] };
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

parentPort!.on('message', async (message: { index: number } | 'close') => {
  if (message === 'close') {
    agent.destroy();
    parentPort!.close();
    return;
  }
  const body = bodies[message.index]!;
  const start = performance.now();
  try {
    const { status, text } = await postJson(agent, port, path, body);
    parentPort!.postMessage({ status, text: status === 200 ? '' : text, ms: performance.now() - start });
  } catch (err) {
    parentPort!.postMessage({ status: 0, text: (err as Error).message, ms: 0 });
  }
});
