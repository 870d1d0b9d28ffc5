import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { PoolClient } from '../db/pool.js';
import { applyOnceBatch, ProcessedInMemory } from './apply-once.js';
import type { HandlerContext } from './port.js';

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.pool.query('CREATE TABLE effects (id text NOT NULL)');
});
afterAll(() => db?.drop());

/** A position commit that writes nothing: what is checked here is the effects and the record of ids. */
const context = { commitIn: async (_tx: PoolClient) => undefined } as unknown as HandlerContext;

async function apply(consumer: string, ids: string[], ledger?: ProcessedInMemory, fail = false) {
  return applyOnceBatch(
    db.pool,
    consumer,
    ids,
    context,
    async (tx, fresh) => {
      await tx.query('INSERT INTO effects (id) SELECT unnest($1::text[])', [
        [...fresh].map((id) => `${consumer}:${id}`),
      ]);
      if (fail) throw new Error('the batch fails after its effects');
    },
    ledger,
  );
}

const effectsOf = async (consumer: string) =>
  (
    await db.pool.query<{ id: string }>(`SELECT id FROM effects WHERE id LIKE $1 || ':%' ORDER BY id`, [
      consumer,
    ])
  ).rows.map((r) => r.id.slice(consumer.length + 1));

const recorded = async (consumer: string) =>
  Number(
    (
      await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM processed_events WHERE consumer = $1', [
        consumer,
      ])
    ).rows[0]!.n,
  );

describe.each([
  { ledger: 'processed_events', make: () => undefined },
  { ledger: 'in memory', make: () => new ProcessedInMemory() },
])('applyOnceBatch, ids recorded in $ledger', ({ ledger, make }) => {
  it('applies each id once across and within batches, and again after a batch that failed', async () => {
    const consumer = `c-${ledger.replace(/\W/g, '')}`;
    const memory = make();
    expect([...(await apply(consumer, ['a', 'b', 'a'], memory))].sort()).toEqual(['a', 'b']);
    expect([...(await apply(consumer, ['b', 'c'], memory))]).toEqual(['c']);
    // A failed batch leaves no effect and no record: its redelivery applies d.
    await expect(apply(consumer, ['d', 'a'], memory, true)).rejects.toThrow('the batch fails');
    expect([...(await apply(consumer, ['d', 'a'], memory))]).toEqual(['d']);
    expect(await effectsOf(consumer)).toEqual(['a', 'b', 'c', 'd']);
    // The in-memory record writes nothing to the table; the table's does.
    expect(await recorded(consumer)).toBe(memory ? 0 : 4);
    if (memory) expect(memory.size).toBe(4);
  });
});

it('an id taken by a batch still in flight is not fresh for a concurrent one (as the row lock would have it)', async () => {
  const memory = new ProcessedInMemory();
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const first = applyOnceBatch(db.pool, 'conc', ['x'], context, () => held, memory);
  const second = await apply('conc', ['x', 'y'], memory);
  expect([...second]).toEqual(['y']);
  release();
  expect([...(await first)]).toEqual(['x']);
});
