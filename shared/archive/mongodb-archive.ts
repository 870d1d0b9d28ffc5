import { MongoBulkWriteError, MongoClient, MongoServerError, type Db } from 'mongodb';
import { urlHost } from '../config/env.js';
import type { MongoTarget } from '../config/load.js';
import type { Archive, ArchivedDocument } from './port.js';

interface StoredDoc {
  _id: string;
  seq: number;
  document: unknown;
  storedAt: Date;
}

const DUPLICATE_KEY = 11_000;

/**
 * The production profile's archive: one MongoDB collection per archive collection, keyed by id.
 * Insertion order comes from a per-collection counter (MongoDB has no serial column).
 */
export class MongoArchive implements Archive {
  readonly kind = 'mongodb' as const;
  /** Collections whose `seq` index this process has ensured (list() pages by it). */
  private readonly indexed = new Map<string, Promise<unknown>>();

  private constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
  ) {}

  static async connect(target: MongoTarget): Promise<MongoArchive> {
    const client = new MongoClient(mongoUrl(target), { serverSelectionTimeoutMS: 10_000 });
    await client.connect();
    return new MongoArchive(client, client.db(target.db));
  }

  private collection(name: string) {
    return this.db.collection<StoredDoc>(`archive.${name}`);
  }

  private async ensureIndex(name: string): Promise<void> {
    let done = this.indexed.get(name);
    if (!done) {
      done = this.collection(name).createIndex({ seq: 1 }, { name: 'seq' });
      done.catch(() => this.indexed.delete(name));
      this.indexed.set(name, done);
    }
    await done;
  }

  /** Reserves `count` consecutive insertion numbers of a collection; returns the first. */
  private async reserve(collection: string, count: number): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      try {
        const counter = await this.db
          .collection<{ _id: string; seq: number }>('archive.counters')
          .findOneAndUpdate(
            { _id: collection },
            { $inc: { seq: count } },
            { upsert: true, returnDocument: 'after' },
          );
        return counter!.seq - count + 1;
      } catch (err) {
        // Two first writers upserting the counter together: one insert wins; the other retries as an update.
        if (!(err instanceof MongoServerError && err.code === DUPLICATE_KEY) || attempt >= 5) throw err;
      }
    }
  }

  async put(collection: string, id: string, document: unknown): Promise<boolean> {
    return (await this.putMany(collection, [{ id, document }])) === 1;
  }

  /**
   * One counter reservation and one unordered insert for the batch. The unique _id decides who was first:
   * ids already stored (or repeated in the batch, or written concurrently) fail alone with a duplicate-key
   * error and are not counted. A reserved number left unused is a harmless gap in `seq`.
   */
  async putMany(
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
  ): Promise<number> {
    if (documents.length === 0) return 0;
    await this.ensureIndex(collection);
    const first = await this.reserve(collection, documents.length);
    const storedAt = new Date();
    try {
      const result = await this.collection(collection).insertMany(
        documents.map((d, i) => ({ _id: d.id, seq: first + i, document: d.document, storedAt })),
        { ordered: false },
      );
      return result.insertedCount;
    } catch (err) {
      if (err instanceof MongoBulkWriteError && onlyDuplicates(err)) return err.result.insertedCount;
      if (err instanceof MongoServerError && err.code === DUPLICATE_KEY) return 0;
      throw err;
    }
  }

  async get<T>(collection: string, id: string): Promise<ArchivedDocument<T> | undefined> {
    const doc = await this.collection(collection).findOne({ _id: id });
    return doc ? { id: doc._id, document: doc.document as T, storedAt: doc.storedAt } : undefined;
  }

  async list<T>(
    collection: string,
    options: { after?: string; limit?: number } = {},
  ): Promise<ArchivedDocument<T>[]> {
    const after = options.after ? await this.collection(collection).findOne({ _id: options.after }) : null;
    const docs = await this.collection(collection)
      .find(after ? { seq: { $gt: after.seq } } : {})
      .sort({ seq: 1 })
      .limit(options.limit ?? 100)
      .toArray();
    return docs.map((d) => ({ id: d._id, document: d.document as T, storedAt: d.storedAt }));
  }

  async count(collection: string): Promise<number> {
    return this.collection(collection).countDocuments();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

function onlyDuplicates(err: MongoBulkWriteError): boolean {
  const errors = Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors];
  return errors.every((e) => e.code === DUPLICATE_KEY);
}

export function mongoUrl(target: MongoTarget): string {
  const url = new URL(`mongodb://${urlHost(target.host) ?? target.host}:${target.port}/`);
  // One named server, never replica-set discovery: a single-node replica set (or FerretDB) otherwise
  // advertises member names the client may not reach, and server selection times out.
  url.searchParams.set('directConnection', 'true');
  // Encoded whole: the setters leave '%' as it is, and the driver decodes it ('ab%41' would be 'abA').
  if (target.user) url.username = encodeURIComponent(target.user);
  if (target.pass) url.password = encodeURIComponent(target.pass);
  if (target.user) url.searchParams.set('authSource', 'admin');
  return url.toString();
}
