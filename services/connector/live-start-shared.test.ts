/**
 * Two Connector processes share the database (a rolling deploy, or two behind one callback URL). A chain client
 * restarts: the registration of one process is taken as new (its live delivery restarts at the block after its
 * head, mid-chunk), the other's answers 30209 "already registered". The restarted chain client's first live
 * chunk may reach either process; taken whole by the one whose own registration proved nothing, the blocks of
 * its 5 before the chain client's head were skipped for good (their events lost: wrong blame downstream).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresBus } from '../../shared/bus/postgres/postgres-bus.js';
import type { EventBus } from '../../shared/bus/port.js';
import { createLogger } from '../../shared/logging/logger.js';
import { allTopics, topicSpec } from '../../topics/index.js';
import { createTestDatabase, type TestDatabase } from '../../test/support/database.js';
import type { EventBody, HeightUpdate } from './body-schema.js';
import { HeightStore, type Stream } from './heights.js';
import type { Ingestor } from './ingest.js';
import { connectorMigrations } from './migrations.js';
import { clearConnectorTables, goldenEventBody, plainPort, testIngestor } from './test-harness.js';

const chunk = (height: number, data: EventBody[] = []) =>
  ({ type: 'update_height', height, data }) as unknown as HeightUpdate;

describe('connector: a registration one process took as new, the first live chunk at another', () => {
  let db: TestDatabase;
  let bus: PostgresBus;
  const buses: Array<[string, () => EventBus]> = [
    ['postgres log and archive: one statement', () => bus],
    ['any other bus: one transaction', () => plainPort(bus)],
  ];
  const published = async () =>
    (
      await db.pool.query<{ value: string }>(
        `SELECT value FROM bus_messages WHERE topic = 'chain.events' ORDER BY "offset"`,
      )
    ).rows.map((r) => JSON.parse(r.value).payload.blockNumber as number);

  /** Two processes on the database, each recording the history requests it makes. */
  const processes = (busFor: () => EventBus) => {
    const start = () => {
      const backfills: Array<[string, Stream, number, number]> = [];
      const { ingestor } = testIngestor({
        pool: db.pool,
        bus: busFor(),
        heights: new HeightStore(db.pool),
        requestBackfill: (...args) => void backfills.push(args),
      });
      return { ingestor, backfills };
    };
    return [start(), start()] as const;
  };

  /** A registration round: `ingestor` marks, sends it, and the chain client answers `answer`. */
  const register = async (ingestor: Ingestor, answer: 'registered' | 'already registered') => {
    const pending = await ingestor.liveStarting('9006', 'swap');
    if (answer === 'already registered' && !pending) await ingestor.liveContinues('9006', 'swap');
  };

  beforeAll(async () => {
    db = await createTestDatabase([connectorMigrations]);
    bus = new PostgresBus({
      pool: db.pool,
      connectionString: db.url,
      log: createLogger({ level: 'silent' }),
    });
    await bus.ensureTopics(allTopics.map((t) => topicSpec(t, 1)));
  });
  beforeEach(async () => {
    await clearConnectorTables(db.pool);
    await new HeightStore(db.pool).init('9006', 'swap', 10);
  });
  afterAll(async () => db?.drop());

  for (const [name, busFor] of buses) {
    for (const order of ['the new one marked first', 'the "already registered" one marked first'] as const)
      it(`${name}, ${order}: the other process asks the first live chunk's blocks through history`, async () => {
        const [a, b] = processes(busFor);
        if (order === 'the new one marked first') {
          await register(a.ingestor, 'registered');
          await register(b.ingestor, 'already registered');
        } else {
          // B marks, A marks and is answered "registered", then B's answer (30209) comes.
          const pendingB = await b.ingestor.liveStarting('9006', 'swap');
          await register(a.ingestor, 'registered');
          if (!pendingB) await b.ingestor.liveContinues('9006', 'swap');
        }
        // The chain client's head was 12: its first live chunk (height 15) holds blocks 13..15 only.
        const live = chunk(15, [goldenEventBody('ConfirmOut', 14)]);
        expect(await b.ingestor.heightUpdate('9006', 'swap', live)).toBe('gap: backfill requested');
        expect(b.backfills).toEqual([['9006', 'swap', 10, 15]]);
        expect(await published()).toEqual([]);
        expect(await new HeightStore(db.pool).get('9006', 'swap')).toBe(10);
        // History brings the whole chunk (block 12's event with it); the next live chunks are taken, at
        // either process: the mark was consumed once.
        const history = chunk(15, [goldenEventBody('TransferOut', 12), goldenEventBody('ConfirmOut', 14)]);
        expect(await b.ingestor.heightUpdate('9006', 'swap', history, { history: true, from: 11 })).toBe(
          'processed',
        );
        expect(await a.ingestor.heightUpdate('9006', 'swap', chunk(20))).toBe('processed');
        expect(await b.ingestor.heightUpdate('9006', 'swap', chunk(25))).toBe('processed');
        expect(await published()).toEqual([12, 14]);
        expect([...a.backfills, ...b.backfills]).toHaveLength(1);
      });

    it(`${name}: a process that knows the height (its own last write) still honours the other's mark`, async () => {
      const [a, b] = processes(busFor);
      // B took the chain client's chunks so far: it writes its next one without reading the height.
      expect(await b.ingestor.heightUpdate('9006', 'swap', chunk(15))).toBe('processed');
      // The chain client restarts with its head at 17: A's registration is new, B's answers 30209.
      await register(a.ingestor, 'registered');
      await register(b.ingestor, 'already registered');
      const live = chunk(20, [goldenEventBody('ConfirmOut', 19)]);
      expect(await b.ingestor.heightUpdate('9006', 'swap', live)).toBe('gap: backfill requested');
      expect(b.backfills).toEqual([['9006', 'swap', 15, 20]]);
      expect(await published()).toEqual([]);
      expect(await new HeightStore(db.pool).get('9006', 'swap')).toBe(15);
    });
  }

  it('a 30209 still clears only a mark its own process set: the next chunk is taken', async () => {
    const [a, b] = processes(() => bus);
    await register(a.ingestor, 'already registered');
    await register(b.ingestor, 'already registered');
    expect(
      await a.ingestor.heightUpdate('9006', 'swap', chunk(15, [goldenEventBody('ConfirmOut', 14)])),
    ).toBe('processed');
    expect([...a.backfills, ...b.backfills]).toEqual([]);
  });
});
