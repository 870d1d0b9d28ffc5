/**
 * What both archive adapters check the same way, so they answer alike: a document is stored as its JSON text
 * would give it back, up to MAX_DOCUMENT_BYTES of that text; list() takes a limit that is an integer ≥ 0.
 */

/** list()'s page size when none is given. */
export const DEFAULT_LIST_LIMIT = 100;

/**
 * The largest document either adapter stores: this many bytes of its JSON text (UTF-8). MongoDB holds at most
 * 16 MiB (16,777,216 bytes) a document, envelope included, whether the body is BSON or JSON text; the rest
 * is room for the envelope (id, seq, storedAt). The Connector refuses bodies over 1 MiB before parsing them.
 */
export const MAX_DOCUMENT_BYTES = 16_000_000;

export class ArchiveDocumentTooLarge extends Error {
  constructor(
    readonly collection: string,
    readonly id: string,
    readonly bytes: number,
  ) {
    super(
      `archive document ${collection}/${id} is ${bytes} bytes of JSON, over the archive's limit of ${MAX_DOCUMENT_BYTES}`,
    );
    this.name = 'ArchiveDocumentTooLarge';
  }
}

/** The JSON text a document is stored as; throws when it has none or it is over MAX_DOCUMENT_BYTES. */
export function documentText(collection: string, id: string, document: unknown): string {
  const text = JSON.stringify(document) as string | undefined;
  if (text === undefined)
    throw new TypeError(`archive document ${collection}/${id} is not JSON (${typeof document})`);
  // A UTF-16 code unit is at most 3 bytes of UTF-8: short texts need no count.
  if (text.length > MAX_DOCUMENT_BYTES / 3) {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_DOCUMENT_BYTES) throw new ArchiveDocumentTooLarge(collection, id, bytes);
  }
  return text;
}

/** list()'s limit: DEFAULT_LIST_LIMIT when absent; 0 answers no documents; anything but an integer ≥ 0 throws. */
export function listLimit(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT;
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new RangeError(`archive list limit must be an integer ≥ 0, not ${limit}`);
  return limit;
}
