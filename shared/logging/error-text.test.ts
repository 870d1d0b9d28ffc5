import { describe, expect, it } from 'vitest';
import { errorText } from './error-text.js';

describe('errorText', () => {
  it("gives an AggregateError's attempts when its own message is empty (a host with two addresses)", () => {
    const attempts = [
      Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    ];
    expect(errorText(new AggregateError(attempts, ''))).toBe(
      'connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432',
    );
    expect(errorText(new AggregateError(attempts, 'all failed'))).toBe('all failed');
  });

  it('never gives an empty text: the code, else the class name', () => {
    expect(errorText(Object.assign(new Error(''), { code: 'ETIMEDOUT' }))).toBe('ETIMEDOUT');
    expect(errorText(new TypeError(''))).toBe('TypeError');
    expect(errorText('plain')).toBe('plain');
  });
});
