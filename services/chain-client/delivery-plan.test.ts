import { describe, expect, it } from 'vitest';
import { planChunk } from './delivery-plan.js';

describe('planChunk', () => {
  it('sends the update_height of a registration without merge with data: [], as the original chain client', () => {
    const [height] = planChunk(
      { lane: 'reg:1', kind: 'swap', callback: { on_height_update: 'http://x/h' }, merge: false },
      { from: 101, to: 105, events: [] },
    );
    expect(JSON.parse(height!.body)).toEqual({ type: 'update_height', height: 105, data: [] });
  });
});
