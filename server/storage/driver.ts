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
