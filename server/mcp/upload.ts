// The `upload_media` tool's legwork: fetch a URL through the SSRF guard of
// server/net/ssrf.ts into a temporary file, then the media routes' signed
// upload flow (POST .../media/upload, PUT the bytes to the signed URL, POST
// .../complete). No network or file IO here runs inside a request's
// transaction: each step is its own API call.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileTypeFromFile } from 'file-type';
import { checkWebhookUrl, guardedLookup, WebhookUrlError } from '../net/ssrf.ts';

/** The largest file the media routes take (video, 512 MB). */
export const MAX_MEDIA_BYTES = 536_870_912;
const FETCH_TIMEOUT_MS = 60_000;

/** A failure of the tool itself (not of an API call): code and message, like the house envelope. */
export class ToolFailure extends Error {
  readonly code: string;
  readonly details: Record<string, unknown> | null;
  constructor(code: string, message: string, details: Record<string, unknown> | null = null) {
    super(message);
    this.code = code;
    this.details = details;
  }
}

/** Downloads `raw` into a new temporary directory; refuses non-public addresses unless allowed. */
export async function fetchToTemp(raw: string, allowPrivateNetworks: boolean): Promise<{ file: string; dir: string; contentType: string | null; name: string }> {
  let url: URL;
  try {
    ({ url } = await checkWebhookUrl(raw, { allowPrivateNetworks }));
  } catch (e) {
    if (e instanceof WebhookUrlError) {
      const code = e.code === 'WEBHOOK_URL_PRIVATE_NETWORK' ? 'MEDIA_URL_PRIVATE_NETWORK' : e.code === 'INVALID_WEBHOOK_URL' ? 'INVALID_MEDIA_URL' : 'MEDIA_HOST_UNRESOLVABLE';
      throw new ToolFailure(code, e.message.replace(/webhook/gi, 'media'), e.details);
    }
    throw e;
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'pressroom-mcp-'));
  const file = path.join(dir, 'download');
  try {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const get = url.protocol === 'https:' ? https.get : http.get;
      const req = get(url, { lookup: guardedLookup(allowPrivateNetworks), timeout: FETCH_TIMEOUT_MS, headers: { 'user-agent': 'pressroom-mcp' } }, resolve);
      req.on('timeout', () => req.destroy(new Error(`no answer within ${FETCH_TIMEOUT_MS} ms`)));
      req.on('error', reject);
    }).catch((e: any) => {
      if (e?.code === 'EUNSAFEADDRESS') throw new ToolFailure('MEDIA_URL_PRIVATE_NETWORK', `The media URL's host ${e.message}; only public addresses are fetched.`);
      throw new ToolFailure('MEDIA_FETCH_FAILED', `Fetching ${url.href} failed: ${e?.message ?? e}`);
    });
    if (res.statusCode !== 200) {
      res.resume();
      throw new ToolFailure('MEDIA_FETCH_FAILED', `Fetching ${url.href} answered HTTP ${res.statusCode}; redirects are not followed.`, { status: res.statusCode ?? null });
    }
    const declared = Number(res.headers['content-length']);
    if (declared > MAX_MEDIA_BYTES) {
      res.destroy();
      throw new ToolFailure('MEDIA_TOO_LARGE', `The file is ${declared} bytes; media may be at most ${MAX_MEDIA_BYTES} bytes.`);
    }
    let seen = 0;
    const limit = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        seen += chunk.length;
        if (seen > MAX_MEDIA_BYTES) cb(new ToolFailure('MEDIA_TOO_LARGE', `The file is larger than ${MAX_MEDIA_BYTES} bytes.`));
        else cb(null, chunk);
      },
    });
    await pipeline(res, limit, createWriteStream(file));
    const name = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '') || 'download';
    return { file, dir, contentType: res.headers['content-type']?.split(';')[0].trim() || null, name };
  } catch (e) {
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
}

/** The type to declare: what the caller said, else the bytes', else the server's answer. */
export async function detectType(file: string, fallback: string | null): Promise<string> {
  const sniffed = await fileTypeFromFile(file).catch(() => undefined);
  return sniffed?.mime ?? fallback ?? 'application/octet-stream';
}

export async function fileSize(file: string): Promise<number> {
  const s = await stat(file).catch((e) => {
    throw new ToolFailure('FILE_NOT_READABLE', `Cannot read ${file}: ${e.code ?? e.message}.`);
  });
  if (!s.isFile()) throw new ToolFailure('FILE_NOT_READABLE', `${file} is not a regular file.`);
  return s.size;
}

/** PUTs the file's bytes to the signed upload URL with exactly the headers the session gave. */
export async function putBytes(uploadUrl: string, headers: Record<string, string>, file: string, size: number): Promise<void> {
  const url = new URL(uploadUrl);
  const request = url.protocol === 'https:' ? https.request : http.request;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { ...headers, 'content-length': String(size) } }, resolve);
    req.on('error', reject);
    createReadStream(file).on('error', reject).pipe(req);
  });
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  if ((res.statusCode ?? 500) >= 300) {
    let body: any = null;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {}
    throw new ToolFailure(body?.error?.code ?? 'UPLOAD_FAILED', body?.error?.message ?? `The upload URL answered HTTP ${res.statusCode}.`, {
      status: res.statusCode ?? null,
      requestId: body?.error?.requestId ?? res.headers['x-request-id'] ?? null,
    });
  }
}
