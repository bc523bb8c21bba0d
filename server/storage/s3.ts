// Any S3-compatible store, through the AWS SDK: the client PUTs to a
// presigned URL (Content-Type and Content-Length signed, so the store itself
// refuses other bytes), the API moves, reads and deletes objects with the
// SDK client, and view/download URLs are presigned GETs. Credentials:
// S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY when both are set, else the
// SDK's default chain (environment, shared config and credentials files,
// web identity, ECS/EC2 instance roles); see README.md, media settings.
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Config } from '../config.ts';
import { assertKey, readBounded, StorageError, type ObjectUrlInput, type StorageDriver, type UploadTarget } from './driver.ts';
import { inspectStream, type Inspection } from './inspect.ts';

const TIMEOUT_MS = 60_000;
/** Presigned URLs live at most 7 days (SigV4's limit). */
const MAX_EXPIRY = 604_800;

/** RFC 3986 percent-encoding: everything but A-Z a-z 0-9 - _ . ~ (for filename* and x-amz-copy-source). */
const uriEncode = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const secondsUntil = (at: Date) => Math.max(1, Math.min(MAX_EXPIRY, Math.floor((at.getTime() - Date.now()) / 1000)));

function statusOf(e: unknown): number {
  return e instanceof S3ServiceException ? (e.$metadata.httpStatusCode ?? 502) : 502;
}

const isNoSuchKey = (e: unknown) => e instanceof S3ServiceException && (e.name === 'NoSuchKey' || e.name === 'NotFound' || e.$metadata.httpStatusCode === 404);

export class S3Driver implements StorageDriver {
  readonly name = 's3' as const;
  readonly client: S3Client;
  private readonly bucket: string;

  constructor(config: Config) {
    if (!config.S3_BUCKET) throw new Error('STORAGE_DRIVER=s3 needs S3_BUCKET');
    if (Boolean(config.S3_ACCESS_KEY_ID) !== Boolean(config.S3_SECRET_ACCESS_KEY)) {
      throw new Error('set both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither (then the AWS default credential chain is used)');
    }
    this.bucket = config.S3_BUCKET;
    this.client = new S3Client({
      region: config.S3_REGION,
      ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT } : {}),
      forcePathStyle: config.S3_FORCE_PATH_STYLE,
      // Unset: the default chain.
      ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
        ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
        : {}),
      // No checksum headers or query parameters unless an operation requires
      // them: a presigned PUT must not carry a checksum of an empty body, and
      // not every S3-compatible store knows the flexible checksums.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { requestTimeout: TIMEOUT_MS, connectionTimeout: 10_000 },
    });
  }

  async uploadTarget(input: { sessionId: string; key: string; contentType: string; size: number; expiresAt: Date }): Promise<UploadTarget> {
    const command = new PutObjectCommand({ Bucket: this.bucket, Key: assertKey(input.key), ContentType: input.contentType, ContentLength: input.size });
    const url = await getSignedUrl(this.client, command, {
      expiresIn: secondsUntil(input.expiresAt),
      signableHeaders: new Set(['content-type', 'content-length']),
    });
    return { url, method: 'PUT', headers: { 'Content-Type': input.contentType } };
  }

  async objectUrl(input: ObjectUrlInput): Promise<string> {
    const ascii = input.filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: assertKey(input.key),
      ResponseContentType: input.contentType,
      ResponseContentDisposition: `${input.disposition}; filename="${ascii}"; filename*=UTF-8''${uriEncode(input.filename)}`,
    });
    return getSignedUrl(this.client, command, { expiresIn: secondsUntil(input.expiresAt) });
  }

  private failure(op: string, key: string, e: unknown): StorageError {
    const err = new StorageError(`S3 ${op} ${key} failed: ${(e as Error)?.message ?? String(e)}`, statusOf(e));
    err.cause = e;
    return err;
  }

  async move(from: string, to: string): Promise<boolean> {
    const source = `${this.bucket}/${assertKey(from).split('/').map(uriEncode).join('/')}`;
    try {
      // The SDK also turns an error sent in the body of a 200 into an exception.
      await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: assertKey(to), CopySource: source }));
    } catch (e) {
      if (isNoSuchKey(e)) return false;
      throw this.failure(`copy ${from} ->`, to, e);
    }
    await this.delete(from);
    return true;
  }

  async inspect(key: string): Promise<Inspection | null> {
    let body: AsyncIterable<Uint8Array>;
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: assertKey(key) }));
      if (!res.Body) throw new Error('no body');
      body = res.Body as unknown as AsyncIterable<Uint8Array>;
    } catch (e) {
      if (isNoSuchKey(e)) return null;
      throw this.failure('GET', key, e);
    }
    return inspectStream(body);
  }

  async read(key: string, maxBytes: number): Promise<Buffer | null> {
    let body: AsyncIterable<Uint8Array> & { destroy?: () => void };
    try {
      // Range: the store sends no more than maxBytes + 1 bytes whatever the object's size.
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: assertKey(key), Range: `bytes=0-${maxBytes}` }));
      if (!res.Body) throw new Error('no body');
      const total = res.ContentRange ? Number(/\/(\d+)$/.exec(res.ContentRange)?.[1]) : res.ContentLength;
      if (typeof total === 'number' && Number.isFinite(total) && total > maxBytes) {
        (res.Body as unknown as { destroy?: () => void }).destroy?.();
        throw new StorageError(`${key} is larger than ${maxBytes} bytes`, 413);
      }
      body = res.Body as unknown as AsyncIterable<Uint8Array> & { destroy?: () => void };
    } catch (e) {
      if (e instanceof StorageError) throw e;
      if (isNoSuchKey(e)) return null;
      throw this.failure('GET', key, e);
    }
    return readBounded(body, key, maxBytes, () => body.destroy?.());
  }

  async put(key: string, bytes: Uint8Array, contentType: string): Promise<void> {
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: assertKey(key), Body: bytes, ContentType: contentType, ContentLength: bytes.byteLength }));
    } catch (e) {
      throw new StorageError(`could not store ${key}: ${(e as Error).message}`, statusOf(e));
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: assertKey(key) }));
    } catch (e) {
      if (isNoSuchKey(e)) return;
      throw this.failure('DELETE', key, e);
    }
  }
}
