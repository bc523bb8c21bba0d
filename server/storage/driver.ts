// Media bytes behind one interface. Keys look like uploads/<workspace>/<session>
// (where a client's PUT lands) and media/<workspace>/<media id> (a completed item).
import type { Inspection } from './inspect.ts';

export interface UploadTarget {
  url: string;
  method: 'PUT';
  /** Headers the client must send with the bytes. */
  headers: Record<string, string>;
}

export interface ObjectUrlInput {
  mediaId: string;
  key: string;
  contentType: string;
  filename: string;
  disposition: 'inline' | 'attachment';
  expiresAt: Date;
}

export interface StorageDriver {
  readonly name: 'disk' | 's3';
  /** Where and how the client sends the bytes of an upload session. */
  uploadTarget(input: { sessionId: string; key: string; contentType: string; size: number; expiresAt: Date }): Promise<UploadTarget>;
  /** A signed, expiring URL that serves the object (inline: view; attachment: download). */
  objectUrl(input: ObjectUrlInput): Promise<string>;
  /** Moves an object to another key; false when there is nothing at `from`. */
  move(from: string, to: string): Promise<boolean>;
  /** Streams the object through the inspector; null when there is no object. */
  inspect(key: string): Promise<Inspection | null>;
  /** Deletes the object; a missing object is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Reads the object's bytes, at most `maxBytes` of them (the publish worker hands them to
   * connectors that upload the file themselves): null when there is no object; throws
   * StorageError 413 when the object is larger than `maxBytes`.
   */
  read(key: string, maxBytes: number): Promise<Buffer | null>;
  /** Stores bytes the server made itself (analytics reports: reports/<workspace>/<report id>), replacing any. */
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>;
}

const KEY = /^(uploads|media|reports)\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Keys are only ever ours: three fixed prefixes and two UUIDs (no traversal, no surprises). */
export function assertKey(key: string): string {
  if (!KEY.test(key)) throw new Error(`not a media storage key: ${JSON.stringify(key)}`);
  return key;
}

export class StorageError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** Collects a stream of chunks, refusing (StorageError 413) one longer than `maxBytes`. */
export async function readBounded(chunks: AsyncIterable<Uint8Array>, key: string, maxBytes: number, destroy?: () => void): Promise<Buffer> {
  const parts: Buffer[] = [];
  let total = 0;
  for await (const c of chunks) {
    total += c.byteLength;
    if (total > maxBytes) {
      destroy?.();
      throw new StorageError(`${key} is larger than ${maxBytes} bytes`, 413);
    }
    parts.push(Buffer.from(c.buffer, c.byteOffset, c.byteLength));
  }
  return Buffer.concat(parts, total);
}
