import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import { compareDecisions } from './replay.js';

/** The replay's comparison of a live table with its rebuilt twin (bid_id → jsonb document), on a real database. */
describe('compareDecisions', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase([]);
    for (const t of ['live', 'rebuilt'])
      await db.pool.query(`CREATE TABLE ${t} (bid_id text PRIMARY KEY, verdict jsonb NOT NULL)`);
  });
  afterAll(() => db?.drop());

  const fill = async (table: string, rows: Array<[string, object]>) => {
    await db.pool.query(`TRUNCATE ${table}`);
    for (const [bid, verdict] of rows)
      await db.pool.query(`INSERT INTO ${table} VALUES ($1, $2)`, [bid, JSON.stringify(verdict)]);
  };

  it('finds two tables with the same rows identical, whatever their key order', async () => {
    await fill('live', [
      ['a', { outcome: 'normal', case: null }],
      ['b', { outcome: 'violation', case: 3 }],
    ]);
    await fill('rebuilt', [
      ['b', { case: 3, outcome: 'violation' }],
      ['a', { case: null, outcome: 'normal' }],
    ]);
    expect(await compareDecisions(db.pool, 'live', 'rebuilt', 'verdict')).toEqual({
      live: 2,
      replay: 2,
      different: [],
      onlyLive: [],
      onlyReplay: [],
      identical: true,
    });
  });

  it('names each kind of difference, and counts each side', async () => {
    await fill('live', [
      ['a', { outcome: 'normal' }],
      ['b', { outcome: 'violation', case: 3 }],
      ['c', { outcome: 'normal' }],
    ]);
    await fill('rebuilt', [
      ['a', { outcome: 'normal' }],
      ['b', { outcome: 'violation', case: 5 }],
      ['d', { outcome: 'unknown' }],
    ]);
    expect(await compareDecisions(db.pool, 'live', 'rebuilt', 'verdict')).toEqual({
      live: 3,
      replay: 3,
      different: ['b'],
      onlyLive: ['c'],
      onlyReplay: ['d'],
      identical: false,
    });
  });

  it('lists at most 20 keys of a kind but counts them all as different', async () => {
    await fill('live', []);
    await fill(
      'rebuilt',
      Array.from({ length: 25 }, (_, i): [string, object] => [`k${String(i).padStart(2, '0')}`, {}]),
    );
    const report = await compareDecisions(db.pool, 'live', 'rebuilt', 'verdict');
    expect(report.onlyReplay).toHaveLength(20);
    expect(report.onlyReplay[0]).toBe('k00');
    expect(report).toMatchObject({ live: 0, replay: 25, identical: false });
  });
});
