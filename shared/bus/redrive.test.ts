import { describe, expect, it } from 'vitest';
import { PoisonMessageError } from './errors.js';
import { DLQ_HEADERS, type BusMessage } from './port.js';
import { REDRIVEN_FROM_HEADER, redrivenMessage } from './redrive.js';

const dead = (headers: Record<string, string>, value = '{"seq":1}'): BusMessage => ({
  topic: 'chain.events.dlq',
  partition: 0,
  offset: 4n,
  key: 'k',
  value,
  headers,
  timestamp: new Date(0),
});

/** What a redrive publishes for a dead letter: a pure function of the dead letter. */
describe('redrivenMessage', () => {
  it("gives the message its own headers back, without the bus's, with where it came from", () => {
    const message = redrivenMessage(
      'chain.events',
      dead({ kind: 'x', [DLQ_HEADERS.topic]: 'chain.events', [DLQ_HEADERS.error]: 'boom' }),
    );
    expect(message).toEqual({
      key: 'k',
      value: '{"seq":1}',
      headers: { kind: 'x', [REDRIVEN_FROM_HEADER]: 'chain.events.dlq/0/4' },
    });
  });

  it('a dead letter dead-lettered again gets the x-dlq-* headers it had back, the rest of its stack kept', () => {
    const first = { [DLQ_HEADERS.topic]: 'a', [DLQ_HEADERS.error]: 'first cause' };
    const second = { [DLQ_HEADERS.topic]: 'a.dlq', [DLQ_HEADERS.error]: 'second cause' };
    const message = redrivenMessage(
      'a.dlq.dlq',
      dead({
        kind: 'x',
        [DLQ_HEADERS.topic]: 'a.dlq.dlq',
        [DLQ_HEADERS.prior]: JSON.stringify([first, second]),
      }),
    );
    expect(message.headers).toEqual({
      kind: 'x',
      ...second,
      [DLQ_HEADERS.prior]: JSON.stringify([first]),
      [REDRIVEN_FROM_HEADER]: 'chain.events.dlq/0/4',
    });
  });

  it('refuses a dead letter whose value held U+0000 (kept escaped): it cannot be re-sent as it was', () => {
    expect(() =>
      redrivenMessage(
        'chain.events',
        dead({ [DLQ_HEADERS.topic]: 'chain.events', [DLQ_HEADERS.valueEscaped]: 'nul' }, 'a\\u0000b'),
      ),
    ).toThrow(PoisonMessageError);
  });

  it('refuses a dead letter of another topic, or of none', () => {
    expect(() => redrivenMessage('chain.events', dead({ [DLQ_HEADERS.topic]: 'other' }))).toThrow(
      /names topic other/,
    );
    expect(() => redrivenMessage('chain.events', dead({}))).toThrow(/names no topic/);
  });
});
