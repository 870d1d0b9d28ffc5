/**
 * A dead letter's reason is its `x-dlq-error` header, kept in jsonb, which refuses a lone UTF-16 surrogate: an
 * error cut at 2,000 characters through a surrogate pair, or quoting a string parsed from a payload's
 * `"\ud800"`, failed the dead-lettering itself. The handler then ran again to the attempts bound, and the message
 * was dead-lettered as "ended without an outcome (the consumer stopped or crashed)": the real reason lost, and a
 * crash reported that never happened. Headers are now stored with U+FFFD in place of such a surrogate.
 */
import { describe, expect, it } from 'vitest';
import { DLQ_HEADERS, PoisonMessageError, deadLetterTopic, type Subscription } from '../index.js';
import { complaintCommands } from '../../../topics/complaint.commands.js';
import { decode } from '../../../topics/envelope.js';
import { usePostgresBus } from '../../../test/support/postgres-bus.js';
import { waitFor } from '../../../test/support/wait.js';

describe('a dead letter keeps its reason', () => {
  const ctx = usePostgresBus([
    { name: 'rv-dlq-cut', partitions: 1, retentionMs: null },
    { name: 'rv-dlq-lone', partitions: 1, retentionMs: null },
    { name: 'rv-dlq-decode', partitions: 1, retentionMs: null },
  ]);

  async function deadLetters(topic: string) {
    const { rows } = await ctx.db.pool.query<{ value: string; headers: Record<string, string> }>(
      'SELECT value, headers FROM bus_messages WHERE topic = $1 ORDER BY "offset"',
      [deadLetterTopic(topic)],
    );
    return rows;
  }

  async function poisonWith(topic: string, reason: string) {
    await ctx.bus.publish(topic, [{ key: 'k', value: 'payload-1' }]);
    const subscription: Subscription = await ctx.bus.subscribe({
      group: `g-${topic}`,
      topics: [topic],
      maxAttempts: 3,
      handler: async () => {
        throw new PoisonMessageError(reason);
      },
    });
    try {
      await waitFor(async () => (await deadLetters(topic)).length === 1, 'dead-lettered', 30_000);
    } finally {
      await subscription.stop();
    }
    return (await deadLetters(topic))[0]!;
  }

  it('when the 2,000-character cut falls inside a surrogate pair', async () => {
    // An error quoting client or chain text with an emoji, cut at 2,000 UTF-16 units between its two halves.
    const reason = `${'x'.repeat(1_999)}\u{1F600} and more`;
    const dead = await poisonWith('rv-dlq-cut', reason);
    expect(dead.value).toBe('payload-1');
    expect(dead.headers[DLQ_HEADERS.error]).toContain('x'.repeat(100));
    expect(dead.headers[DLQ_HEADERS.error]).not.toMatch(/ended without an outcome/);
  });

  it('when the error quotes a lone surrogate (JSON "\\ud800" from a payload)', async () => {
    const quoted = JSON.parse('"lp\\ud800id"') as string;
    const dead = await poisonWith('rv-dlq-lone', `bad lpId ${quoted}`);
    expect(dead.headers[DLQ_HEADERS.error]).toMatch(/bad lpId/);
  });

  it("a foreign message whose envelope type is a lone surrogate escape is dead-lettered with decode's reason", async () => {
    const topic = 'rv-dlq-decode';
    // Valid JSON text (ASCII, storable); its parsed `type` is a lone surrogate, which decode's error quotes.
    const value = '{"id":"x","type":"\\ud800","version":1,"occurredAt":0,"source":"s","payload":{}}';
    await ctx.bus.publish(topic, [{ key: 'k', value }]);
    const subscription = await ctx.bus.subscribe({
      group: `g-${topic}`,
      topics: [topic],
      maxAttempts: 3,
      handler: async (message) => {
        decode(complaintCommands, message);
      },
    });
    try {
      await waitFor(async () => (await deadLetters(topic)).length === 1, 'dead-lettered', 30_000);
    } finally {
      await subscription.stop();
    }
    const dead = (await deadLetters(topic))[0]!;
    expect(dead.value).toBe(value);
    expect(dead.headers[DLQ_HEADERS.error]).toMatch(/unsupported envelope/);
  });
});
