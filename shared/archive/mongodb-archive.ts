import { BSON, MongoBulkWriteError, MongoClient, MongoServerError, type Db } from 'mongodb';
import { urlHost } from '../config/env.js';
import type { MongoTarget } from '../config/load.js';
import type { Archive, ArchivedDocument } from './port.js';
import { documentText, listLimit, MAX_DOCUMENT_BYTES } from './rules.js';

/**
 * A stored document: `document` as BSON (what operators query), or, for one MongoDB cannot hold as it is
 * (see nativeAsIs), `json`: its JSON text. Exactly one of the two is set.
 */
interface StoredDoc {
  _id: string;
  seq: number;
  document?: unknown;
  json?: string;
  storedAt: Date;
}

type Body = Pick<StoredDoc, 'document' | 'json'>;

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
    // Before anything is written: a document over the size limit fails the whole batch, as on postgres.
    const bodies = documents.map((d) => body(collection, d.id, d.document));
    await this.ensureIndex(collection);
    const first = await this.reserve(collection, documents.length);
    const storedAt = new Date();
    try {
      const result = await this.collection(collection).insertMany(
        documents.map((d, i) => ({ _id: d.id, seq: first + i, ...bodies[i], storedAt })),
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
    return doc ? archived<T>(doc) : undefined;
  }

  async list<T>(
    collection: string,
    options: { after?: string; limit?: number } = {},
  ): Promise<ArchivedDocument<T>[]> {
    // limit(0) is no limit in MongoDB; an id of '' is a cursor like any other (postgres: after a missing id,
    // from the start).
    const limit = listLimit(options.limit);
    if (limit === 0) return [];
    const after =
      options.after === undefined
        ? null
        : await this.collection(collection).findOne({ _id: options.after }, { projection: { seq: 1 } });
    const docs = await this.collection(collection)
      .find(after ? { seq: { $gt: after.seq } } : {})
      .sort({ seq: 1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => archived<T>(d));
  }

  async count(collection: string): Promise<number> {
    return this.collection(collection).countDocuments();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

function archived<T>(doc: StoredDoc): ArchivedDocument<T> {
  const document = doc.json === undefined ? doc.document : JSON.parse(doc.json);
  return { id: doc._id, document: document as T, storedAt: doc.storedAt };
}

/**
 * How a document is stored so that it reads back as postgres (its JSON text) gives it back. A JSON value
 * MongoDB holds as it is goes as BSON: checking that is one walk over it, no copy. Anything else goes
 * through its JSON text first (undefined members drop out, a Date becomes its string, NaN null, ...), and is
 * stored as that text when even the result is not BSON MongoDB stores.
 */
function body(collection: string, id: string, document: unknown): Body {
  const walk = { bound: 0 };
  if (nativeAsIs(document, 0, false, walk)) {
    // The bound is generous (6 bytes a character): only a document of megabytes is counted exactly.
    if (walk.bound <= MAX_DOCUMENT_BYTES) return { document };
    const text = documentText(collection, id, document);
    return BSON.calculateObjectSize({ document }) <= MAX_DOCUMENT_BYTES ? { document } : { json: text };
  }
  const text = documentText(collection, id, document);
  const value: unknown = JSON.parse(text);
  const again = { bound: 0 };
  if (nativeAsIs(value, 0, false, again)) {
    if (
      again.bound <= MAX_DOCUMENT_BYTES ||
      BSON.calculateObjectSize({ document: value }) <= MAX_DOCUMENT_BYTES
    )
      return { document: value };
  }
  return { json: text };
}

/** Objects and arrays nested deeper than this are stored as JSON text (MongoDB allows 100 levels a document). */
const MAX_NATIVE_DEPTH = 64;
/**
 * Keys BSON cannot hold (U+0000 ends a BSON key), or that FerretDB and MongoDB before 5.0 refuse (a leading
 * '$', a '.'). A key with a lone surrogate is left to isWellFormed.
 */
const FOREIGN_KEY = /^\$|[.\u0000]/;

/**
 * Whether `value` is a JSON value that BSON holds and gives back exactly, within MongoDB's and FerretDB's
 * rules: plain objects and arrays (no array directly in an array: FerretDB refuses those), strings that are
 * well-formed UTF-16 (BSON's UTF-8 would turn a lone surrogate into U+FFFD), finite numbers other than -0
 * (JSON has no -0), booleans and null. Adds to `walk.bound` at least the bytes of both its JSON and its BSON.
 */
function nativeAsIs(value: unknown, depth: number, inArray: boolean, walk: { bound: number }): boolean {
  switch (typeof value) {
    case 'string':
      walk.bound += value.length * 6 + 16;
      return value.isWellFormed();
    case 'number':
      walk.bound += 32;
      return Number.isFinite(value) && !(value === 0 && Object.is(value, -0));
    case 'boolean':
      walk.bound += 16;
      return true;
    case 'object': {
      walk.bound += 16;
      if (value === null) return true;
      if (depth >= MAX_NATIVE_DEPTH) return false;
      if (Array.isArray(value)) {
        if (inArray || Object.getPrototypeOf(value) !== Array.prototype) return false;
        for (let i = 0; i < value.length; i++) if (!nativeAsIs(value[i], depth + 1, true, walk)) return false; // a hole is undefined
        return true;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false; // Date, Buffer, Map, class instances
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
      for (const key of Object.keys(value)) {
        walk.bound += key.length * 6 + 16;
        if (FOREIGN_KEY.test(key) || !key.isWellFormed()) return false;
        if (!nativeAsIs((value as Record<string, unknown>)[key], depth + 1, false, walk)) return false;
      }
      return true;
    }
    default:
      return false; // undefined, bigint, function, symbol
  }
}

declare global {
  interface String {
    /** ES2024 (Node 20): whether the string holds no lone surrogate. */
    isWellFormed(): boolean;
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
