// Routes outside /v1 that serve the disk driver's signed URLs:
//
//   PUT  /storage/v1/uploads/{sessionId}?expires&signature          the bytes of an upload
//   GET  /storage/v1/media/{mediaId}?disposition&expires&signature  view (inline) or download (attachment)
//   GET  /storage/v1/reports/{reportId}?disposition&expires&signature  an analytics report's PDF
//
// No bearer credential: the signature is the credential. Bytes stream both
// ways (never held in memory); an upload must be exactly the declared size
// and content type, within the session's life, and only while the session
// is pending, so a used upload URL can never replace a completed item's
// bytes (those live under another key, media/..., that no URL writes to).
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type Request, type Response } from 'express';
import type { DatabasePool } from 'slonik';
import type { Config } from '../config.ts';
import { jsonResult, sql } from '../db/pool.ts';
import { ApiError, errorBody } from '../errors.ts';
import type { Logger } from '../log.ts';
import { STORAGE_PREFIX, type DiskDriver } from './disk.ts';
import type { MediaStorage } from './index.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/**
 * Routes that sign something: the media API, analytics report downloads, reviews (attachment
 * upload and view URLs, the client link's media: server/routes/reviews.ts) and the storage routes.
 */
const MEDIA_ROUTE = /^\/(v1\/workspaces\/[^/]+\/(media|analytics\/reports|reviews)(\/|$)|v1\/review-link(\/|$)|storage\/)/;
/** How much of a refused upload's body is read (so the client sees the answer) before the connection is cut. */
const DRAIN_LIMIT = 1024 * 1024;

function send(res: Response, e: ApiError, extraHeaders: Record<string, string> = {}) {
  for (const [k, v] of Object.entries({ ...extraHeaders, ...e.headers })) res.setHeader(k, v);
  res.status(e.status).json(errorBody(res.locals.requestId, e));
}

/** Answers, then reads and drops up to DRAIN_LIMIT bytes of the body so the client gets to read the answer. */
function refuseUpload(req: Request, res: Response, e: ApiError) {
  if (!req.complete) res.setHeader('Connection', 'close');
  send(res, e);
  let drained = 0;
  req.on('data', (c: Buffer) => {
    drained += c.length;
    if (drained > DRAIN_LIMIT) req.destroy();
  });
  req.on('error', () => {});
  req.resume();
}

const signatureError = (state: 'invalid' | 'expired') =>
  state === 'expired'
    ? new ApiError(403, 'SIGNATURE_EXPIRED', 'This signed URL has expired; ask the API for a new one.')
    : new ApiError(403, 'SIGNATURE_INVALID', 'This URL is not signed by this server, or was altered.');

function contentDisposition(disposition: string, filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${disposition}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** One byte range of `size` bytes: [start, end] inclusive, null for the whole, 'bad' when unsatisfiable. */
function parseRange(header: string | undefined, size: number): [number, number] | null | 'bad' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null; // multiple or odd ranges: serve the whole
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'bad';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'bad';
  return [start, end];
}

async function receiveUpload(disk: DiskDriver, pool: DatabasePool, log: Logger, req: Request, res: Response) {
  const sessionId = req.params.sessionId as string;
  if (!UUID.test(sessionId)) return send(res, new ApiError(404, 'NOT_FOUND', 'No such upload.'));
  const check = await disk.verify('PUT', `${STORAGE_PREFIX}/uploads/${sessionId}`, req.query as Record<string, unknown>, 'upload');
  if (check !== 'ok') return refuseUpload(req, res, signatureError(check));
  const session = await pool.oneFirst(sql.type(jsonResult)`select api.storage_upload_session(${sessionId}) as result`);
  if (!session) return refuseUpload(req, res, new ApiError(404, 'NOT_FOUND', 'No such upload.'));
  if (session.state !== 'pending') {
    return refuseUpload(req, res, new ApiError(409, 'UPLOAD_SESSION_CLOSED',
      `This upload session is ${session.state}; its URL no longer accepts bytes.`, { sessionId, state: session.state }));
  }
  if (session.expired) return refuseUpload(req, res, signatureError('expired'));
  const declared = Number(session.declaredSize);
  const sentType = (req.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
  if (sentType !== session.contentType) {
    return refuseUpload(req, res, new ApiError(400, 'UPLOAD_HEADER_MISMATCH',
      `Send the bytes with Content-Type: ${session.contentType}, as the upload session said.`,
      { header: 'Content-Type', expected: session.contentType, received: sentType || null }));
  }
  const lengthHeader = req.get('content-length');
  if (lengthHeader !== undefined) {
    const length = Number(lengthHeader);
    if (length > declared) {
      return refuseUpload(req, res, new ApiError(413, 'UPLOAD_TOO_LARGE',
        `This upload was declared as ${declared} bytes; ${length} bytes were sent.`, { declaredSize: declared, size: length }));
    }
    if (length !== declared) {
      return refuseUpload(req, res, new ApiError(400, 'UPLOAD_SIZE_MISMATCH',
        `This upload was declared as ${declared} bytes; ${length} bytes were sent.`, { declaredSize: declared, size: length }));
    }
  }

  const target = disk.pathOf(session.storageKey);
  await mkdir(path.dirname(target), { recursive: true });
  const part = `${target}.${randomBytes(6).toString('hex')}.part`;
  let received = 0;
  let tooLarge = false;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      received += chunk.length;
      if (received > declared) {
        tooLarge = true;
        done(new Error('more bytes than declared'));
        return;
      }
      done(null, chunk);
    },
  });
  // req is piped rather than put in the pipeline: a refusal must not destroy
  // the request's socket before the client has read the answer.
  const written = pipeline(counter, createWriteStream(part, { flags: 'wx' }));
  req.on('error', (e) => counter.destroy(e));
  req.on('close', () => {
    if (!req.complete) counter.destroy(new Error('the client went away'));
  });
  req.pipe(counter);
  try {
    await written;
  } catch (e) {
    await rm(part, { force: true });
    if (tooLarge) {
      return refuseUpload(req, res, new ApiError(413, 'UPLOAD_TOO_LARGE',
        `This upload was declared as ${declared} bytes; more were sent.`, { declaredSize: declared }));
    }
    if (!res.headersSent && !req.destroyed) log.warn('upload failed', { sessionId, err: e });
    if (!res.headersSent) res.destroy();
    return;
  }
  if (received !== declared) {
    await rm(part, { force: true });
    return send(res, new ApiError(400, 'UPLOAD_SIZE_MISMATCH',
      `This upload was declared as ${declared} bytes; ${received} bytes were sent.`, { declaredSize: declared, size: received }));
  }
  // Completed (or aborted) meanwhile? Then these bytes go nowhere.
  const again = await pool.oneFirst(sql.type(jsonResult)`select api.storage_upload_session(${sessionId}) as result`);
  if (!again || again.state !== 'pending') {
    await rm(part, { force: true });
    return send(res, new ApiError(409, 'UPLOAD_SESSION_CLOSED',
      `This upload session is ${again?.state ?? 'gone'}; its URL no longer accepts bytes.`, { sessionId, state: again?.state ?? null }));
  }
  await rename(part, target);
  res.status(200).json({ data: { sessionId, receivedBytes: received }, meta: null });
}

async function serveObject(disk: DiskDriver, pool: DatabasePool, req: Request, res: Response, area: 'media' | 'reports' = 'media') {
  const mediaId = (area === 'media' ? req.params.mediaId : req.params.reportId) as string;
  if (!UUID.test(mediaId)) return send(res, new ApiError(404, 'NOT_FOUND', area === 'media' ? 'No such media.' : 'No such report.'));
  const disposition = req.query.disposition === 'attachment' ? 'attachment' : req.query.disposition === 'inline' ? 'inline' : null;
  if (!disposition) return send(res, signatureError('invalid'));
  const check = await disk.verify('GET', `${STORAGE_PREFIX}/${area}/${mediaId}`, req.query as Record<string, unknown>, disposition);
  if (check !== 'ok') return send(res, signatureError(check));
  const object = area === 'media'
    ? await pool.oneFirst(sql.type(jsonResult)`select api.storage_media_object(${mediaId}) as result`)
    : await pool.oneFirst(sql.type(jsonResult)`select api.storage_report_object(${mediaId}) as result`);
  if (!object) return send(res, new ApiError(404, 'NOT_FOUND', area === 'media' ? 'This media item no longer exists.' : 'This report is not available.'));
  const file = disk.pathOf(object.storageKey);
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch {
    return send(res, new ApiError(404, 'NOT_FOUND', 'The bytes of this media item are gone.'));
  }
  const expires = Number(req.query.expires);
  const etag = object.checksumSha256 ? `"${object.checksumSha256}"` : undefined;
  res.setHeader('Content-Type', object.contentType);
  res.setHeader('Content-Disposition', contentDisposition(disposition, object.filename));
  res.setHeader('Accept-Ranges', 'bytes');
  res.setHeader('Cache-Control', `private, max-age=${Math.max(0, expires - Math.floor(Date.now() / 1000))}`);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', "default-src 'none'; img-src 'self'; media-src 'self'; sandbox");
  if (etag) {
    res.setHeader('ETag', etag);
    if (req.get('if-none-match') === etag) return res.status(304).end();
  }
  const range = parseRange(req.get('range'), size);
  if (range === 'bad') {
    res.setHeader('Content-Range', `bytes */${size}`);
    return send(res, new ApiError(416, 'RANGE_NOT_SATISFIABLE', `The object has ${size} bytes.`, { size }));
  }
  const [start, end] = range ?? [0, size - 1];
  if (range) {
    res.status(206);
    res.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
  } else {
    res.status(200);
  }
  res.setHeader('Content-Length', String(size === 0 ? 0 : end - start + 1));
  if (req.method === 'HEAD' || size === 0) return res.end();
  await pipeline(createReadStream(file, { start, end, highWaterMark: 1024 * 1024 }), res);
}

export function createStorageRouter(deps: { pool: DatabasePool; config: Config; log: Logger; storage: MediaStorage }): express.Router {
  const { pool, config, log, storage } = deps;
  const router = express.Router();
  // Media routes sign (URLs, cursors) inside their request's transaction,
  // where the pool cannot be used (slonik refuses): the signing secret is
  // loaded here, before the transaction opens (once; then it is cached).
  router.use((req, res, next) => {
    if (config.SIGNED_URL_SECRET || !MEDIA_ROUTE.test(req.path)) return next();
    storage.secrets.secret().then(
      () => next(),
      (e) => {
        log.error('could not load the signing secret', { requestId: (res as Response).locals.requestId, err: e });
        next();
      },
    );
  });

  const disk = storage.disk;
  const wrap = (fn: (req: Request, res: Response) => Promise<unknown>) => (req: Request, res: Response) => {
    fn(req, res).catch((e) => {
      log.error('storage request failed', { requestId: res.locals.requestId, err: e });
      if (!res.headersSent) send(res, new ApiError(500, 'INTERNAL', 'Something went wrong on our side; quote the request id to support.'));
      else res.destroy();
    });
  };
  if (disk) {
    router.put(`${STORAGE_PREFIX}/uploads/:sessionId`, wrap((req, res) => receiveUpload(disk, pool, log, req, res)));
    router.get(`${STORAGE_PREFIX}/media/:mediaId`, wrap((req, res) => serveObject(disk, pool, req, res)));
    router.get(`${STORAGE_PREFIX}/reports/:reportId`, wrap((req, res) => serveObject(disk, pool, req, res, 'reports')));
  }
  if (disk) {
    router.all(`${STORAGE_PREFIX}/uploads/:sessionId`, (req, res) =>
      send(res, new ApiError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use PUT.`, { allow: ['PUT'] }), { Allow: 'PUT' }));
    router.all(`${STORAGE_PREFIX}/media/:mediaId`, (req, res) =>
      send(res, new ApiError(405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here; use GET.`, { allow: ['GET', 'HEAD'] }), { Allow: 'GET, HEAD' }));
  }
  router.all(`${STORAGE_PREFIX}/{*rest}`, (req, res) => {
    send(res, new ApiError(404, 'NOT_FOUND', disk ? `No route ${req.method} ${req.path}.` : 'This server keeps media in S3; its URLs point there.'));
  });
  return router;
}
