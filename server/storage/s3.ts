// Any S3-compatible store: the client PUTs to a presigned URL (Content-Type
// and Content-Length signed, so the store itself refuses other bytes), the
// API verifies and moves the object with presigned server-side requests, and
// view/download URLs are presigned GETs. No SDK: SigV4 in sigv4.ts.
import type { Config } from '../config.ts';
import { assertKey, StorageError, type ObjectUrlInput, type StorageDriver, type UploadTarget } from './driver.ts';
import { inspectStream, type Inspection } from './inspect.ts';
import { encodeKeyPath, presignUrl, uriEncode, type SigV4Credentials } from './sigv4.ts';

const SERVER_REQUEST_TTL = 300;
const TIMEOUT_MS = 60_000;

export class S3Driver implements StorageDriver {
  readonly name = 's3' as const;
  private readonly creds: SigV4Credentials;
  private readonly bucket: string;
  private readonly endpoint: URL;
  private readonly pathStyle: boolean;

  constructor(config: Config) {
    if (!config.S3_BUCKET || !config.S3_ACCESS_KEY_ID || !config.S3_SECRET_ACCESS_KEY) {
      throw new Error('STORAGE_DRIVER=s3 needs S3_BUCKET, S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY');
    }
    this.creds = { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY, region: config.S3_REGION };
    this.bucket = config.S3_BUCKET;
    this.endpoint = new URL(config.S3_ENDPOINT ?? `https://s3.${config.S3_REGION}.amazonaws.com`);
    this.pathStyle = config.S3_FORCE_PATH_STYLE;
  }

  /** The object's URL (path-style: endpoint/bucket/key; else bucket.endpoint/key). */
  objectLocation(key: string): URL {
    const base = this.endpoint.pathname.replace(/\/+$/, '');
    if (this.pathStyle) return new URL(`${this.endpoint.origin}${base}/${uriEncode(this.bucket)}/${encodeKeyPath(assertKey(key))}`);
    const u = new URL(this.endpoint.origin);
    u.hostname = `${this.bucket}.${u.hostname}`;
    u.pathname = `${base}/${encodeKeyPath(assertKey(key))}`;
    return u;
  }

  presign(method: string, key: string, expiresInSeconds: number, headers: Record<string, string> = {}, query: Record<string, string> = {}): string {
    return presignUrl(this.creds, { method, url: this.objectLocation(key), expiresInSeconds, headers, query }).url;
  }

  async uploadTarget(input: { sessionId: string; key: string; contentType: string; size: number; expiresAt: Date }): Promise<UploadTarget> {
    const ttl = Math.max(1, Math.floor((input.expiresAt.getTime() - Date.now()) / 1000));
    const url = this.presign('PUT', input.key, ttl, { 'content-type': input.contentType, 'content-length': String(input.size) });
    return { url, method: 'PUT', headers: { 'Content-Type': input.contentType } };
  }

  async objectUrl(input: ObjectUrlInput): Promise<string> {
    const ttl = Math.max(1, Math.floor((input.expiresAt.getTime() - Date.now()) / 1000));
    const ascii = input.filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
    return this.presign('GET', input.key, ttl, {}, {
      'response-content-type': input.contentType,
      'response-content-disposition': `${input.disposition}; filename="${ascii}"; filename*=UTF-8''${uriEncode(input.filename)}`,
    });
  }

  private async request(method: string, key: string, headers: Record<string, string> = {}): Promise<Response> {
    const signed: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) signed[k.toLowerCase()] = v;
    const url = this.presign(method, key, SERVER_REQUEST_TTL, signed);
    return fetch(url, { method, headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  }

  private async fail(op: string, key: string, res: Response): Promise<never> {
    const text = await res.text().catch(() => '');
    throw new StorageError(`S3 ${op} ${key} answered ${res.status}: ${text.slice(0, 300)}`, res.status);
  }

  async move(from: string, to: string): Promise<boolean> {
    const source = `/${uriEncode(this.bucket)}/${encodeKeyPath(assertKey(from))}`;
    const copy = await this.request('PUT', to, { 'x-amz-copy-source': source });
    if (copy.status === 404) {
      await copy.arrayBuffer();
      return false;
    }
    // A copy can fail after its 200 has been sent: the error is in the body.
    const body = await copy.text();
    if (!copy.ok || /<Error>/.test(body)) {
      if (/<Code>NoSuchKey<\/Code>/.test(body)) return false;
      throw new StorageError(`S3 copy ${from} -> ${to} failed (${copy.status}): ${body.slice(0, 300)}`, copy.status);
    }
    await this.delete(from);
    return true;
  }

  async inspect(key: string): Promise<Inspection | null> {
    const res = await this.request('GET', key);
    if (res.status === 404) {
      await res.arrayBuffer();
      return null;
    }
    if (!res.ok || !res.body) return this.fail('GET', key, res);
    return inspectStream(res.body as unknown as AsyncIterable<Uint8Array>);
  }

  async delete(key: string): Promise<void> {
    const res = await this.request('DELETE', key);
    if (res.status !== 404 && !res.ok) return this.fail('DELETE', key, res);
    await res.arrayBuffer();
  }
}
