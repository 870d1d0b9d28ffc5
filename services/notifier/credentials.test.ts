import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/support/wait.js';
import { enqueue } from './outbox.js';
import { notifierWithReceiver } from './test-harness.js';

/**
 * n8nUrl with credentials (which fetch refuses in a URL): they go as Basic authorization, and neither they
 * nor the URL holding them reach a log line or the outbox's last_error.
 */
describe('n8nUrl with credentials', () => {
  let env: Awaited<ReturnType<typeof notifierWithReceiver>>;
  const user = 'ops%40team';
  const password = 't%3Ak%2Fn%20secret-token';
  const expected = `Basic ${Buffer.from('ops@team:t:k/n secret-token').toString('base64')}`;
  const logs: string[] = [];
  const received: Array<{ authorization?: string; body: { id: string } }> = [];
  const answers = [503]; // then 200 when authorized, 401 when not
  let url: string;

  beforeAll(async () => {
    env = await notifierWithReceiver({
      handle: (request, response) => {
        let body = '';
        request.on('data', (chunk) => (body += chunk));
        request.on('end', () => {
          const answer = answers.shift();
          if (answer !== undefined) return void response.writeHead(answer).end();
          if (request.headers.authorization !== expected || request.url !== '/webhook/otmoic')
            return void response.writeHead(401).end();
          received.push({ authorization: request.headers.authorization, body: JSON.parse(body) });
          response.writeHead(200).end('{}');
        });
      },
      url: (port) => (url = `http://${user}:${password}@127.0.0.1:${port}/webhook/otmoic`),
      context: { log: pino({ level: 'trace' }, { write: (line: string) => void logs.push(line) }) },
    });
  });

  afterAll(async () => env?.close());

  it('sends them as Basic authorization, and never logs or stores them', async () => {
    expect(env.ctx.config.n8nUrl).toBe(url);
    await enqueue(env.db.pool, { id: 'violation:0x01', kind: 'violation', payload: { party: 'user' } });
    // The row, not the receiver: the receiver has it before the sender records the delivery.
    const delivered = async () =>
      (await env.db.pool.query('SELECT 1 FROM notifier_outbox WHERE delivered_at IS NOT NULL')).rowCount ===
      1;
    await waitFor(delivered, 'the notification delivered', 10_000);
    // Logged after the delivery's commit (and the other rows' back-off cut short).
    await waitFor(() => logs.some((l) => l.includes('reachable again')), 'the recovery logged', 10_000);
    expect(received[0]).toEqual({
      authorization: expected,
      body: expect.objectContaining({ id: 'violation:0x01' }),
    });

    const { rows } = await env.db.pool.query<{ attempts: number; last_error: string | null }>(
      'SELECT attempts, last_error FROM notifier_outbox',
    );
    expect(rows).toEqual([{ attempts: 2, last_error: 'HTTP 503' }]);
    // The failure and the recovery were logged; neither line holds the credentials.
    expect(logs.join('\n')).toMatch(/n8n receiver failing[\s\S]*reachable again/);
    for (const text of [logs.join('\n'), JSON.stringify(rows)])
      for (const secret of [url, user, password, 'secret-token', 'ops@team', expected.slice(6)])
        expect(text).not.toContain(secret);
  });
});
