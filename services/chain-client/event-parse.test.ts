import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { swapInterface } from '../../shared/otmoic/abi.js';
import { eventParse } from './event-parse.js';

interface EventVector {
  type?: string;
  event?: string;
  topic0?: string;
  log_data?: string;
  event_parse?: Record<string, unknown>;
  topics?: Record<string, string>;
}
const vectors = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, '../../test/fixtures/otmoic-relay.json'), 'utf8'),
).events as EventVector[];

describe('event_parse in the original chain client shape', () => {
  for (const v of vectors.filter((v) => v.log_data)) {
    it(`decodes ${v.event} exactly as the golden vector`, () => {
      const log = swapInterface.parseLog({ topics: [v.topic0!], data: v.log_data! });
      expect(log?.name).toBe(v.event);
      const parsed = eventParse(log!);
      expect(parsed).toEqual(v.event_parse);
      // Same keys in the same order, as JSON receivers see them.
      expect(Object.keys(parsed)).toEqual(Object.keys(v.event_parse!));
    });
  }

  it('has the golden topic0 for every swap event', () => {
    const topics = vectors.find((v) => v.topics)!.topics!;
    for (const [name, topic0] of Object.entries(topics))
      expect(swapInterface.getEvent(name)!.topicHash).toBe(topic0);
  });
});
