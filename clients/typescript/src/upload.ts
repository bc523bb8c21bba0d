// The signed upload of a media file, the three steps of the media routes:
// 1. POST .../media/upload (declare filename, type and size) answers an upload
//    session with a signed URL, a method (PUT) and the exact headers to send;
// 2. PUT the bytes to that URL (this server's /storage/v1/uploads/... or an
//    S3 presigned URL: no bearer credential, Content-Length exact);
// 3. POST .../media/upload/{sessionId}/complete with the SHA-256 of the bytes.
// Step 2 streams with node:http(s) so a large file is never held in memory
// and `onProgress` sees every chunk leave; a failure after step 1 aborts the
// session (best effort) before the error is thrown.
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { PressroomError, unwrap, type PressroomClient, type Schema } from './client.ts';

export interface UploadProgress {
  sentBytes: number;
  totalBytes: number;
}

export interface UploadMediaOptions {
  workspaceId: string;
  filename: string;
  /** The declared type (image/png, video/mp4, ...); the stored type is decided from the bytes. */
  contentType: string;
  /** Exactly the number of bytes `body` yields. */
  size: number;
  /** The bytes, or a function opening a stream of them (e.g. () => createReadStream(path)). */
  body: Uint8Array | (() => Readable);
  folderId?: string | null;
  altText?: string;
  onProgress?: (progress: UploadProgress) => void;
}

export type MediaItem = Schema<'MediaItem'>;

async function* chunks(body: Uint8Array | (() => Readable)): AsyncGenerator<Uint8Array> {
  if (body instanceof Uint8Array) {
    for (let i = 0; i < body.length; i += 64 * 1024) yield body.subarray(i, i + 64 * 1024);
    return;
  }
  for await (const chunk of body()) yield chunk as Uint8Array;
}

function put(url: string, method: string, headers: Record<string, string>, size: number, body: UploadMediaOptions['body'], onProgress?: UploadMediaOptions['onProgress']): Promise<{ status: number; text: string; sha256: string; requestId: string | null }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const hash = createHash('sha256');
    const req = send(target, { method, headers: { ...headers, 'Content-Length': String(size) } }, (res: IncomingMessage) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text.length < 4096 ? (text += c) : undefined));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, sha256: hash.digest('hex'), requestId: (res.headers['x-request-id'] as string | undefined) ?? null }));
      res.on('error', reject);
    });
    req.on('error', reject);
    (async () => {
      let sent = 0;
      onProgress?.({ sentBytes: 0, totalBytes: size });
      for await (const chunk of chunks(body)) {
        if (sent + chunk.length > size) throw new Error(`The file has more than the ${size} bytes declared; did it change while uploading?`);
        hash.update(chunk);
        sent += chunk.length;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
        onProgress?.({ sentBytes: sent, totalBytes: size });
      }
      if (sent !== size) throw new Error(`The file ended after ${sent} of the ${size} bytes declared; did it change while uploading?`);
      req.end();
    })().catch((e: Error) => {
      req.destroy();
      reject(new PressroomError(0, { code: 'UPLOAD_SIZE_MISMATCH', message: e.message }, null));
    });
  });
}

/** Uploads one file through the signed upload flow and answers the media item. */
export async function uploadMedia(client: PressroomClient, options: UploadMediaOptions): Promise<MediaItem> {
  const path = { workspaceId: options.workspaceId };
  const init = await unwrap(
    client.POST('/v1/workspaces/{workspaceId}/media/upload', {
      params: { path },
      body: {
        filename: options.filename,
        contentType: options.contentType,
        size: options.size,
        ...(options.folderId !== undefined ? { folderId: options.folderId } : {}),
        ...(options.altText !== undefined ? { altText: options.altText } : {}),
      },
    }),
  );
  const session = init.data;
  const abort = () =>
    client.POST('/v1/workspaces/{workspaceId}/media/upload/{sessionId}/abort', { params: { path: { ...path, sessionId: session.sessionId } } }).catch(() => undefined);
  try {
    if (!session.uploadUrl) throw new PressroomError(0, { code: 'UPLOAD_URL_MISSING', message: `Upload session ${session.sessionId} has no upload URL (state ${session.state}).` }, null);
    const sent = await put(session.uploadUrl, session.method, session.headers, options.size, options.body, options.onProgress);
    if (sent.status < 200 || sent.status >= 300) {
      let error: { code: string; message: string; requestId?: string } = { code: `UPLOAD_HTTP_${sent.status}`, message: `The upload URL answered ${sent.status}: ${sent.text.slice(0, 300)}` };
      try {
        const parsed = JSON.parse(sent.text) as { error?: { code?: string; message?: string; requestId?: string } };
        if (parsed.error?.code && parsed.error.message) error = { code: parsed.error.code, message: parsed.error.message, requestId: parsed.error.requestId };
      } catch {
        // not JSON (S3 answers XML): keep the text
      }
      throw new PressroomError(sent.status, error, sent.requestId);
    }
    const done = await unwrap(
      client.POST('/v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete', {
        params: { path: { ...path, sessionId: session.sessionId } },
        body: { checksumSha256: sent.sha256 },
      }),
    );
    return done.data as MediaItem;
  } catch (e) {
    await abort();
    throw e;
  }
}
