import { MongoClient, MongoServerError, type Db } from 'mongodb';
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

  async put(collection: string, id: string, document: unknown): Promise<boolean> {
    if (await this.collection(collection).findOne({ _id: id }, { projection: { _id: 1 } })) return false;
    const counter = await this.db
      .collection<{ _id: string; seq: number }>('archive.counters')
      .findOneAndUpdate({ _id: collection }, { $inc: { seq: 1 } }, { upsert: true, returnDocument: 'after' });
    try {
      await this.collection(collection).insertOne({
        _id: id,
        seq: counter!.seq,
        document,
        storedAt: new Date(),
      });
      return true;
    } catch (err) {
      if (err instanceof MongoServerError && err.code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async putMany(
    collection: string,
    documents: ReadonlyArray<{ id: string; document: unknown }>,
  ): Promise<number> {
    let stored = 0;
    for (const { id, document } of documents) if (await this.put(collection, id, document)) stored++;
    return stored;
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

export function mongoUrl(target: MongoTarget): string {
  const url = new URL(`mongodb://${target.host}:${target.port}/`);
  if (target.user) url.username = target.user;
  if (target.pass) url.password = target.pass;
  if (target.user) url.searchParams.set('authSource', 'admin');
  return url.toString();
}
