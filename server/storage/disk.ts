// The default driver: files under DATA_DIR/media, served by the API itself
// (server/storage/router.ts) through expiring HMAC-signed URLs.
import { createReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../config.ts';
import { assertKey, readBounded, StorageError, type ObjectUrlInput, type StorageDriver, type UploadTarget } from './driver.ts';
import { inspectStream, type Inspection } from './inspect.ts';
import { hmacB64, safeEqual, type Secrets } from './signing.ts';

export const STORAGE_PREFIX = '/storage/v1';

export type SignedOp = 'upload' | 'inline' | 'attachment';

/** The string an URL's signature covers: method, path, expiry and what it serves. */
function signedString(method: string, pathname: string, expires: number, op: SignedOp): string {
  return `${method}\n${pathname}\n${expires}\n${op}`;
}

export class DiskDriver implements StorageDriver {
  readonly name = 'disk' as const;
  readonly root: string;
  private readonly secrets: Secrets;
  private readonly baseUrl: () => string;

  constructor(config: Config, secrets: Secrets, baseUrl: () => string) {
    this.root = path.resolve(config.DATA_DIR, 'media');
    this.secrets = secrets;
    this.baseUrl = baseUrl;
  }

  pathOf(key: string): string {
    return path.join(this.root, assertKey(key));
  }

  async sign(method: string, pathname: string, expires: number, op: SignedOp): Promise<string> {
    return hmacB64(await this.secrets.key('storage-url'), signedString(method, pathname, expires, op));
  }

  /** 'ok', 'invalid' (missing or wrong signature) or 'expired'. */
  async verify(method: string, pathname: string, query: Record<string, unknown>, op: SignedOp, now = Date.now()): Promise<'ok' | 'invalid' | 'expired'> {
    const expires = typeof query.expires === 'string' && /^\d{1,12}$/.test(query.expires) ? Number(query.expires) : NaN;
    const signature = typeof query.signature === 'string' ? query.signature : '';
    if (!Number.isFinite(expires) || !signature) return 'invalid';
    if (!safeEqual(signature, await this.sign(method, pathname, expires, op))) return 'invalid';
    return now > expires * 1000 ? 'expired' : 'ok';
  }

  private async signedUrl(method: string, pathname: string, expiresAt: Date, op: SignedOp, extra: Record<string, string> = {}): Promise<string> {
    const expires = Math.floor(expiresAt.getTime() / 1000);
    const q = new URLSearchParams({ ...extra, expires: String(expires), signature: await this.sign(method, pathname, expires, op) });
    return `${this.baseUrl()}${pathname}?${q}`;
  }

  async uploadTarget(input: { sessionId: string; key: string; contentType: string; size: number; expiresAt: Date }): Promise<UploadTarget> {
    assertKey(input.key);
    const url = await this.signedUrl('PUT', `${STORAGE_PREFIX}/uploads/${input.sessionId}`, input.expiresAt, 'upload');
    return { url, method: 'PUT', headers: { 'Content-Type': input.contentType } };
  }

  async objectUrl(input: ObjectUrlInput): Promise<string> {
    assertKey(input.key);
    // Media items are served at media/<id>, analytics reports at reports/<id> (server/storage/router.ts).
    const area = input.key.startsWith('reports/') ? 'reports' : 'media';
    return this.signedUrl('GET', `${STORAGE_PREFIX}/${area}/${input.mediaId}`, input.expiresAt, input.disposition,
      { disposition: input.disposition });
  }

  async move(from: string, to: string): Promise<boolean> {
    const target = this.pathOf(to);
    await mkdir(path.dirname(target), { recursive: true });
    try {
      await rename(this.pathOf(from), target);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  }

  async inspect(key: string): Promise<Inspection | null> {
    const file = this.pathOf(key);
    try {
      const s = await stat(file);
      if (!s.isFile()) return null;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    return inspectStream(createReadStream(file, { highWaterMark: 1024 * 1024 }));
  }

  async read(key: string, maxBytes: number): Promise<Buffer | null> {
    const file = this.pathOf(key);
    let size: number;
    try {
      const s = await stat(file);
      if (!s.isFile()) return null;
      size = s.size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    if (size > maxBytes) throw new StorageError(`${key} is larger than ${maxBytes} bytes`, 413);
    // Bounded while reading too (the file could grow in between; it never should).
    const stream = createReadStream(file, { highWaterMark: 1024 * 1024, end: maxBytes });
    return readBounded(stream, key, maxBytes, () => stream.destroy());
  }

  async put(key: string, bytes: Uint8Array, _contentType: string): Promise<void> {
    const target = this.pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    const part = `${target}.${process.pid}.${Date.now()}.part`;
    await writeFile(part, bytes);
    await rename(part, target);
  }

  async delete(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }
}
