// Media uploads and storage (disk driver) over real HTTP with real bytes:
// init -> PUT to the signed URL -> complete, then view and download the same
// bytes back; types and measures from the bytes; limits; signatures that are
// tampered with or expired; a used upload URL; the purge and expiry jobs.
import { createServer, type Server } from 'node:http';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../server/app.ts';
import { createAppDeps } from '../../server/deps.ts';
import { loadConfig } from '../../server/config.ts';
import { PgBoss } from 'pg-boss';
import { registerMediaJobs, runMediaPurge, runUploadSessionExpiry } from '../../server/jobs/media.ts';
import { PGBOSS_SCHEMA, QUEUES } from '../../server/jobs/queues.ts';
import { createLogger } from '../../server/log.ts';
import { client, createKey, signup } from '../support/http.ts';
import { openapi, startTestServer, type TestServer } from '../support/server.ts';
import { fetchBytes, gif, jpeg, mp4, png, sha256, startUpload, upload, webm, webp } from './media-fixtures.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let dataDir: string;
let ws: string;
const log = createLogger('silent');

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-media-'));
  server = await startTestServer('media', { DATA_DIR: dataDir, MEDIA_BIN_RETENTION_SECONDS: 3600 });
  api = client(server);
  owner = await signup(api);
  ws = owner.workspaceId;
});

afterAll(async () => {
  await server?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const base = () => `/v1/workspaces/${ws}/media`;
const fileOf = (key: string) => path.join(dataDir, 'media', key);
const mediaFiles = () => {
  const out: string[] = [];
  const walk = (d: string) => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(path.join(dataDir, 'media'), p));
    }
  };
  walk(path.join(dataDir, 'media'));
  return out.sort();
};

describe('upload round trip', () => {
  it('uploads a PNG through the signed URL, completes, and serves the same bytes back (view and download)', async () => {
    const bytes = png(64, 48, 1);
    const init = await api.post(`${base()}/upload`, { filename: 'Hero image.png', contentType: 'image/png', size: bytes.length, altText: 'A gradient' }, { token: owner.token });
    expect(init.status).toBe(201);
    const s = init.body.data;
    expect(s).toMatchObject({ state: 'pending', filename: 'Hero image.png', contentType: 'image/png', size: bytes.length, method: 'PUT', mediaId: null, headers: { 'Content-Type': 'image/png' } });
    expect(s.uploadUrl).toMatch(new RegExp(`^${server.baseUrl}/storage/v1/uploads/${s.sessionId}\\?expires=\\d+&signature=`));
    expect(new Date(s.expiresAt).getTime() - Date.now()).toBeGreaterThan(3500 * 1000);

    const put = await fetch(s.uploadUrl, { method: 'PUT', headers: s.headers, body: bytes });
    expect(put.status).toBe(200);
    expect((await put.json()) as any).toEqual({ data: { sessionId: s.sessionId, receivedBytes: bytes.length }, meta: null });

    const done = await api.post(`${base()}/upload/${s.sessionId}/complete`, { checksumSha256: sha256(bytes).toUpperCase() }, { token: owner.token });
    expect(done.status).toBe(200);
    const m = done.body.data;
    expect(m).toMatchObject({
      id: s.sessionId, type: 'image', filename: 'Hero image.png', contentType: 'image/png', fileSize: bytes.length,
      width: 64, height: 48, durationMs: null, checksumSha256: sha256(bytes), altText: 'A gradient', isFavorite: false,
      source: 'client_upload', state: 'active', folderId: null, labels: [], usageCount: 0, isUsed: false,
      deletedAt: null, deleteAfter: null, createdBy: owner.userId,
    });
    // The bytes left the upload key for the item's own key.
    expect(mediaFiles()).toEqual([`media/${ws}/${m.id}`]);

    const view = await api.get(`${base()}/${m.id}/view-url`, { token: owner.token });
    expect(view.status).toBe(200);
    expect(view.body.data).toMatchObject({ method: 'GET', disposition: 'inline', contentType: 'image/png', fileSize: bytes.length });
    const expiresIn = new Date(view.body.data.expiresAt).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(880_000);
    expect(expiresIn).toBeLessThanOrEqual(900_000);
    const shown = await fetchBytes(view.body.data.url);
    expect(shown.status).toBe(200);
    expect(shown.body.equals(bytes)).toBe(true);
    expect(shown.headers.get('content-type')).toBe('image/png');
    expect(shown.headers.get('content-disposition')).toBe(`inline; filename="Hero image.png"; filename*=UTF-8''Hero%20image.png`);
    expect(shown.headers.get('etag')).toBe(`"${sha256(bytes)}"`);
    expect(shown.headers.get('x-content-type-options')).toBe('nosniff');

    const download = await api.get(`${base()}/${m.id}/download-url`, { token: owner.token });
    expect(download.body.data.disposition).toBe('attachment');
    const got = await fetchBytes(download.body.data.url);
    expect(got.status).toBe(200);
    expect(got.body.equals(bytes)).toBe(true);
    expect(got.headers.get('content-disposition')).toMatch(/^attachment; filename="Hero image.png"/);

    // Ranges (video players need them), HEAD, and conditional GET.
    const part = await fetchBytes(download.body.data.url, { headers: { range: 'bytes=8-15' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 8-15/${bytes.length}`);
    expect(part.body.equals(bytes.subarray(8, 16))).toBe(true);
    const tail = await fetchBytes(download.body.data.url, { headers: { range: 'bytes=-4' } });
    expect(tail.body.equals(bytes.subarray(bytes.length - 4))).toBe(true);
    const bad = await fetchBytes(download.body.data.url, { headers: { range: `bytes=${bytes.length}-` } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe(`bytes */${bytes.length}`);
    const head = await fetchBytes(download.body.data.url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    expect(head.body.length).toBe(0);
    const cached = await fetchBytes(view.body.data.url, { headers: { 'if-none-match': `"${sha256(bytes)}"` } });
    expect(cached.status).toBe(304);

    // The session now reads completed, without an upload URL.
    const again = await api.get(`${base()}/upload/${s.sessionId}`, { token: owner.token });
    expect(again.body.data).toMatchObject({ state: 'completed', mediaId: m.id, uploadUrl: null });
  });

  it.each([
    ['JPEG', () => jpeg(40, 24), 'photo.jpg', 'image/jpeg', { type: 'image', contentType: 'image/jpeg', width: 40, height: 24, durationMs: null }],
    ['GIF declared as PNG', () => gif(5, 3), 'anim.png', 'image/png', { type: 'gif', contentType: 'image/gif', width: 5, height: 3, durationMs: null }],
    ['WebP', () => webp(9, 4), 'still.webp', 'image/webp', { type: 'image', contentType: 'image/webp', width: 9, height: 4, durationMs: null }],
    ['MP4 (moov after mdat)', () => mp4({ width: 640, height: 360, durationMs: 2500, moovAtEnd: true, mdatBytes: 200_000 }), 'clip.mp4', 'video/mp4',
      { type: 'video', contentType: 'video/mp4', width: 640, height: 360, durationMs: 2500 }],
    ['MOV', () => mp4({ width: 1920, height: 1080, durationMs: 1500, quicktime: true }), 'clip.mov', 'video/quicktime',
      { type: 'video', contentType: 'video/quicktime', width: 1920, height: 1080, durationMs: 1500 }],
    ['WebM declared as MP4', () => webm({ width: 320, height: 240, durationMs: 4321 }), 'clip.mp4', 'video/mp4',
      { type: 'video', contentType: 'video/webm', width: 320, height: 240, durationMs: 4321 }],
  ] as const)('%s: the type and measures come from the bytes', async (_name, make, filename, contentType, expected) => {
    const bytes = make();
    const { media } = await upload(api, owner.token, ws, bytes, { filename, contentType });
    expect(media).toMatchObject({ ...expected, filename, fileSize: bytes.length, checksumSha256: sha256(bytes) });
    const view = await api.get(`${base()}/${media.id}/view-url`, { token: owner.token });
    const shown = await fetchBytes(view.body.data.url);
    expect(shown.body.equals(bytes)).toBe(true);
    expect(shown.headers.get('content-type')).toBe(expected.contentType);
  });

  it('completing twice is safe: the same item, nothing duplicated', async () => {
    const bytes = png(8, 8, 2);
    const { session, media } = await upload(api, owner.token, ws, bytes);
    const again = await api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(media);
    const both = await Promise.all([1, 2].map(() => api.post(`${base()}/upload/${session.sessionId}/complete`, {}, { token: owner.token })));
    expect(both.map((r) => r.status)).toEqual([200, 200]);
    const rows = await server.owner.query('select count(*)::int as n from app.media_items where id = $1', [media.id]);
    expect(rows.rows[0].n).toBe(1);
  });

  it('two concurrent completions of a fresh upload make one item', async () => {
    const bytes = png(12, 12, 3);
    const { session, put } = await startUpload(api, owner.token, ws, bytes);
    expect(put.status).toBe(200);
    const [a, b] = await Promise.all([1, 2].map(() => api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token })));
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.data.id).toBe(b.body.data.id);
    expect(a.body.data.checksumSha256).toBe(sha256(bytes));
  });

  it('a used upload URL cannot replace the bytes of the completed item', async () => {
    const bytes = png(10, 10, 4);
    const { session, media } = await upload(api, owner.token, ws, bytes);
    const other = Buffer.from(bytes);
    other[other.length - 20] ^= 0xff;
    const put = await fetch(session.uploadUrl, { method: 'PUT', headers: session.headers, body: other });
    expect(put.status).toBe(409);
    expect(((await put.json()) as any).error.code).toBe('UPLOAD_SESSION_CLOSED');
    const view = await api.get(`${base()}/${media.id}/download-url`, { token: owner.token });
    expect((await fetchBytes(view.body.data.url)).body.equals(bytes)).toBe(true);
  });
});

describe('what the store refuses', () => {
  it('completing before the bytes arrived answers 409 UPLOAD_NOT_RECEIVED', async () => {
    const init = await api.post(`${base()}/upload`, { filename: 'x.png', contentType: 'image/png', size: 100 }, { token: owner.token });
    const r = await api.post(`${base()}/upload/${init.body.data.sessionId}/complete`, undefined, { token: owner.token });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('UPLOAD_NOT_RECEIVED');
  });

  it('bytes of another size at the upload key (put there behind the API): 409 UPLOAD_INCOMPLETE, nothing stored', async () => {
    const init = await api.post(`${base()}/upload`, { filename: 'x.png', contentType: 'image/png', size: 1000 }, { token: owner.token });
    const sessionId = init.body.data.sessionId;
    const file = fileOf(`uploads/${ws}/${sessionId}`);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, png(3, 3, 77));
    const r = await api.post(`${base()}/upload/${sessionId}/complete`, undefined, { token: owner.token });
    expect([r.status, r.body.error.code]).toEqual([409, 'UPLOAD_INCOMPLETE']);
    expect(r.body.error.details).toMatchObject({ declaredSize: 1000 });
    expect(mediaFiles().filter((f) => f.includes(sessionId))).toEqual([]);
  });

  it('refuses a wrong size, a wrong content type and a tampered or missing signature', async () => {
    const bytes = png(6, 6, 5);
    const init = await api.post(`${base()}/upload`, { filename: 'x.png', contentType: 'image/png', size: bytes.length }, { token: owner.token });
    const s = init.body.data;
    const send = async (url: string, body: Buffer, headers: Record<string, string> = s.headers, method = 'PUT') => {
      const res = await fetch(url, { method, headers, body });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
    };
    const short = await send(s.uploadUrl, bytes.subarray(0, bytes.length - 1));
    expect([short.status, short.body.error.code]).toEqual([400, 'UPLOAD_SIZE_MISMATCH']);
    const long = await send(s.uploadUrl, Buffer.concat([bytes, Buffer.from([0])]));
    expect([long.status, long.body.error.code]).toEqual([413, 'UPLOAD_TOO_LARGE']);
    const type = await send(s.uploadUrl, bytes, { 'Content-Type': 'image/jpeg' });
    expect([type.status, type.body.error.code]).toEqual([400, 'UPLOAD_HEADER_MISMATCH']);

    const u = new URL(s.uploadUrl);
    const sig = u.searchParams.get('signature')!;
    const flipped = new URL(u);
    flipped.searchParams.set('signature', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    const tampered = await send(flipped.toString(), bytes);
    expect([tampered.status, tampered.body.error.code]).toEqual([403, 'SIGNATURE_INVALID']);
    const later = new URL(u);
    later.searchParams.set('expires', String(Number(u.searchParams.get('expires')) + 3600));
    expect((await send(later.toString(), bytes)).body.error.code).toBe('SIGNATURE_INVALID');
    const unsigned = new URL(u);
    unsigned.search = '';
    expect((await send(unsigned.toString(), bytes)).status).toBe(403);
    // A signature of one session does not open another.
    const init2 = await api.post(`${base()}/upload`, { filename: 'y.png', contentType: 'image/png', size: bytes.length }, { token: owner.token });
    const swapped = new URL(u);
    swapped.pathname = `/storage/v1/uploads/${init2.body.data.sessionId}`;
    expect((await send(swapped.toString(), bytes)).body.error.code).toBe('SIGNATURE_INVALID');
    // Wrong methods and unknown paths.
    const get = await send(s.uploadUrl, undefined as never, {}, 'GET');
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'PUT']);
    expect((await send(`${server.baseUrl}/storage/v1/nothing`, bytes)).status).toBe(404);
    // Nothing was stored by any of it; the right bytes are still accepted.
    expect(mediaFiles().filter((f) => f.includes(s.sessionId))).toEqual([]);
    expect((await send(s.uploadUrl, bytes)).status).toBe(200);
  });

  it('bytes that are no supported format: 415, nothing stored, and the session takes the right bytes', async () => {
    const text = Buffer.from('%PDF-1.7 this is not an image at all, whatever its name says\n'.repeat(20));
    const { session, put } = await startUpload(api, owner.token, ws, text, 'image/png', 'fake.png');
    expect(put.status).toBe(200);
    const r = await api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token });
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('UNSUPPORTED_MEDIA_FORMAT');
    expect(r.body.error.details.supported).toContain('image/png');
    expect(mediaFiles().filter((f) => f.includes(session.sessionId))).toEqual([]);
    expect((await server.owner.query('select 1 from app.media_items where id = $1', [session.sessionId])).rowCount).toBe(0);
    // HEIF is an ISO box file too, but not a video.
    const heic = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic', 'latin1'), Buffer.alloc(12 + text.length - 24, 0)]);
    const again = await fetch(session.uploadUrl, { method: 'PUT', headers: session.headers, body: heic });
    expect(again.status).toBe(200);
    const r2 = await api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token });
    expect([r2.status, r2.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_FORMAT']);
    expect(r2.body.error.message).toMatch(/HEIF/);
  });

  it('a checksum that differs: 400 CHECKSUM_MISMATCH and nothing stored', async () => {
    const bytes = png(7, 7, 6);
    const { session } = await startUpload(api, owner.token, ws, bytes);
    const r = await api.post(`${base()}/upload/${session.sessionId}/complete`, { checksumSha256: '0'.repeat(64) }, { token: owner.token });
    expect([r.status, r.body.error.code]).toEqual([400, 'CHECKSUM_MISMATCH']);
    expect(r.body.error.details.actual).toBe(sha256(bytes));
    expect(mediaFiles().filter((f) => f.includes(session.sessionId))).toEqual([]);
    const bad = await api.post(`${base()}/upload/${session.sessionId}/complete`, { checksumSha256: 'xyz' }, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0].field).toBe('body.checksumSha256');
  });

  it('limits: declared sizes over 50 MB (image) or 512 MB (video) are refused at the start', async () => {
    const image = await api.post(`${base()}/upload`, { filename: 'big.png', contentType: 'image/png', size: 52_428_801 }, { token: owner.token });
    expect([image.status, image.body.error.code]).toEqual([413, 'MEDIA_TOO_LARGE']);
    expect(image.body.error.details).toMatchObject({ type: 'image', maxBytes: 52_428_800 });
    const gifBig = await api.post(`${base()}/upload`, { filename: 'big.gif', contentType: 'image/gif', size: 52_428_801 }, { token: owner.token });
    expect(gifBig.status).toBe(413);
    const okImage = await api.post(`${base()}/upload`, { filename: 'edge.png', contentType: 'image/png', size: 52_428_800 }, { token: owner.token });
    expect(okImage.status).toBe(201);
    const video = await api.post(`${base()}/upload`, { filename: 'big.mp4', contentType: 'video/mp4', size: 536_870_913 }, { token: owner.token });
    expect([video.status, video.body.error.code]).toEqual([413, 'MEDIA_TOO_LARGE']);
    const okVideo = await api.post(`${base()}/upload`, { filename: 'edge.mp4', contentType: 'video/mp4', size: 536_870_912 }, { token: owner.token });
    expect(okVideo.status).toBe(201);
  });

  it('an image of more than 50 MB declared as video is refused once its bytes are seen: 413, nothing stored', async () => {
    const head = png(4, 4, 7);
    const big = Buffer.alloc(52_428_801, 0);
    head.copy(big);
    const { session, put } = await startUpload(api, owner.token, ws, big, 'video/mp4', 'not-a-video.mp4');
    expect(put.status).toBe(200);
    const r = await api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token });
    expect([r.status, r.body.error.code]).toEqual([413, 'MEDIA_TOO_LARGE']);
    expect(r.body.error.details).toMatchObject({ type: 'image', size: 52_428_801, maxBytes: 52_428_800 });
    expect(mediaFiles().filter((f) => f.includes(session.sessionId))).toEqual([]);
    expect((await server.owner.query('select 1 from app.media_items where id = $1', [session.sessionId])).rowCount).toBe(0);
  });

  it('validates the start of an upload: 400, 415, 404 and 403 with codes', async () => {
    const post = (body: unknown, token = owner.token) => api.post(`${base()}/upload`, body, { token });
    const cases: [unknown, number, string, string?][] = [
      [{ filename: 'a.png', contentType: 'image/png' }, 400, 'VALIDATION_FAILED', 'body.size'],
      [{ filename: 'a.png', contentType: 'image/png', size: 0 }, 400, 'VALIDATION_FAILED', 'body.size'],
      [{ filename: 'a.png', contentType: 'image/png', size: 1.5 }, 400, 'VALIDATION_FAILED', 'body.size'],
      [{ filename: '', contentType: 'image/png', size: 10 }, 400, 'VALIDATION_FAILED', 'body.filename'],
      [{ filename: 'dir/a.png', contentType: 'image/png', size: 10 }, 400, 'VALIDATION_FAILED', 'body.filename'],
      [{ filename: 'a\u0001.png', contentType: 'image/png', size: 10 }, 400, 'VALIDATION_FAILED', 'body.filename'],
      [{ filename: 'x'.repeat(256), contentType: 'image/png', size: 10 }, 400, 'VALIDATION_FAILED', 'body.filename'],
      [{ filename: 'a.png', contentType: 'image/png', size: 10, extra: 1 }, 400, 'VALIDATION_FAILED', 'body.extra'],
      [{ filename: 'a.pdf', contentType: 'application/pdf', size: 10 }, 415, 'UNSUPPORTED_MEDIA_FORMAT'],
      [{ filename: 'a.png', contentType: 'image/png', size: 10, folderId: '00000000-0000-4000-8000-000000000000' }, 404, 'NOT_FOUND'],
    ];
    for (const [body, status, code, field] of cases) {
      const r = await post(body);
      expect([r.status, r.body.error.code], JSON.stringify(body)).toEqual([status, code]);
      if (field) expect(r.body.error.details.fields.map((f: any) => f.field)).toContain(field);
    }
    const viewer = await createKey(api, owner.token, ws, { role: 'viewer' });
    const refused = await post({ filename: 'a.png', contentType: 'image/png', size: 10 }, viewer.key);
    expect([refused.status, refused.body.error.code]).toEqual([403, 'ROLE_REQUIRED']);
    // A viewer may look at a pending session, but gets no URL to write with.
    const pending = await post({ filename: 'a.png', contentType: 'image/png', size: 10 });
    const seen = await api.get(`${base()}/upload/${pending.body.data.sessionId}`, { token: viewer.key });
    expect(seen.body.data).toMatchObject({ state: 'pending', uploadUrl: null });
    expect((await api.get(`${base()}/upload/${pending.body.data.sessionId}`, { token: owner.token })).body.data.uploadUrl).toMatch(/^http/);
    const complete = await api.post(`${base()}/upload/${pending.body.data.sessionId}/complete`, undefined, { token: viewer.key });
    expect([complete.status, complete.body.error.code]).toEqual([403, 'ROLE_REQUIRED']);
    const raw = await api.request('POST', `${base()}/upload`, { token: owner.token, rawBody: 'filename=a', headers: { 'content-type': 'text/plain' } });
    expect([raw.status, raw.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });
});

describe('sessions: abort and expiry', () => {
  it('an aborted session takes no bytes and cannot be completed', async () => {
    const bytes = png(5, 5, 8);
    const { session, put } = await startUpload(api, owner.token, ws, bytes);
    expect(put.status).toBe(200);
    const abort = await api.post(`${base()}/upload/${session.sessionId}/abort`, undefined, { token: owner.token });
    expect(abort.status).toBe(200);
    expect(abort.body.data).toMatchObject({ state: 'aborted', uploadUrl: null });
    expect(mediaFiles().filter((f) => f.includes(session.sessionId))).toEqual([]);
    const again = await fetch(session.uploadUrl, { method: 'PUT', headers: session.headers, body: bytes });
    expect(again.status).toBe(409);
    const complete = await api.post(`${base()}/upload/${session.sessionId}/complete`, undefined, { token: owner.token });
    expect([complete.status, complete.body.error.code]).toEqual([409, 'UPLOAD_SESSION_ABORTED']);
    expect((await api.post(`${base()}/upload/${session.sessionId}/abort`, undefined, { token: owner.token })).body.data.state).toBe('aborted');
    const { session: done } = await upload(api, owner.token, ws, png(5, 5, 9));
    const late = await api.post(`${base()}/upload/${done.sessionId}/abort`, undefined, { token: owner.token });
    expect([late.status, late.body.error.code]).toEqual([409, 'UPLOAD_SESSION_COMPLETED']);
    const unknown = await api.get(`${base()}/upload/00000000-0000-4000-8000-000000000000`, { token: owner.token });
    expect(unknown.status).toBe(404);
  });

  it('expired sessions and signatures: PUT 403 SIGNATURE_EXPIRED, complete 410, view URLs expire; the job sweeps the bytes', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-media-ttl-'));
    const short = await startTestServer('media_ttl', { DATA_DIR: dir, UPLOAD_SESSION_TTL_SECONDS: 2, SIGNED_URL_TTL_SECONDS: 3, MEDIA_BIN_RETENTION_SECONDS: 0 });
    try {
      const sapi = client(short);
      const o = await signup(sapi);
      const sbase = `/v1/workspaces/${o.workspaceId}/media`;
      const bytes = png(9, 9, 10);
      const { media } = await upload(sapi, o.token, o.workspaceId, bytes);
      const pending = await startUpload(sapi, o.token, o.workspaceId, bytes);
      expect(pending.put.status).toBe(200);
      const never = await sapi.post(`${sbase}/upload`, { filename: 'n.png', contentType: 'image/png', size: bytes.length }, { token: o.token });
      const view = await sapi.get(`${sbase}/${media.id}/view-url`, { token: o.token });
      expect((await fetchBytes(view.body.data.url)).status).toBe(200);
      // Expiries are whole seconds (a URL signed for 3 s lives 2 to 3 s): wait until every one of them has passed.
      const last = Math.max(...[view.body.data.expiresAt, never.body.data.expiresAt, pending.session.expiresAt].map((t: string) => new Date(t).getTime()));
      await new Promise((r) => setTimeout(r, Math.max(0, last - Date.now()) + 300));

      const expiredView = await fetch(view.body.data.url);
      expect([expiredView.status, ((await expiredView.json()) as any).error.code]).toEqual([403, 'SIGNATURE_EXPIRED']);
      const put = await fetch(never.body.data.uploadUrl, { method: 'PUT', headers: never.body.data.headers, body: bytes });
      expect([put.status, ((await put.json()) as any).error.code]).toEqual([403, 'SIGNATURE_EXPIRED']);
      const complete = await sapi.post(`${sbase}/upload/${pending.session.sessionId}/complete`, undefined, { token: o.token });
      expect([complete.status, complete.body.error.code]).toEqual([410, 'UPLOAD_SESSION_EXPIRED']);
      expect((await sapi.get(`${sbase}/upload/${pending.session.sessionId}`, { token: o.token })).body.data.state).toBe('expired');

      const uploadFile = path.join(dir, 'media', 'uploads', o.workspaceId, pending.session.sessionId);
      expect(existsSync(uploadFile)).toBe(true);
      const r = await runUploadSessionExpiry(short.deps);
      expect(r.expired).toBe(2);
      expect(existsSync(uploadFile)).toBe(false);
      expect(existsSync(path.join(dir, 'media', 'media', o.workspaceId, media.id))).toBe(true);
      const again = await runUploadSessionExpiry(short.deps);
      expect(again).toMatchObject({ expired: 0, keysQueued: 0 });
    } finally {
      await short.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the bin purge job', () => {
  it('deletes binned items after deleteAfter, rows and bytes; not before, and never active ones', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'pressroom-media-purge-'));
    const s = await startTestServer('media_purge', { DATA_DIR: dir, MEDIA_BIN_RETENTION_SECONDS: 0 });
    try {
      const sapi = client(s);
      const o = await signup(sapi);
      const sbase = `/v1/workspaces/${o.workspaceId}/media`;
      const a = (await upload(sapi, o.token, o.workspaceId, png(4, 4, 11))).media;
      const b = (await upload(sapi, o.token, o.workspaceId, png(4, 4, 12))).media;
      const c = (await upload(sapi, o.token, o.workspaceId, png(4, 4, 13))).media;
      const view = await sapi.get(`${sbase}/${a.id}/view-url`, { token: o.token });
      const binned = await sapi.delete(`${sbase}/${a.id}`, { token: o.token });
      expect(binned.body.data.state).toBe('deleted');
      await sapi.delete(`${sbase}/${b.id}`, { token: o.token });
      await s.owner.query(`update app.media_items set delete_after = now() + interval '1 hour' where id = $1`, [b.id]);
      const fileA = path.join(dir, 'media', 'media', o.workspaceId, a.id);
      expect(existsSync(fileA)).toBe(true);
      const r = await runMediaPurge(s.deps);
      expect(r).toMatchObject({ purged: 1, skipped: 0, bytes: { deleted: 1, failed: 0 } });
      expect(existsSync(fileA)).toBe(false);
      expect((await sapi.get(`${sbase}/${a.id}`, { token: o.token })).status).toBe(404);
      expect((await fetch(view.body.data.url)).status).toBe(404);
      expect((await sapi.get(`${sbase}/${b.id}`, { token: o.token })).body.data.state).toBe('deleted');
      expect((await sapi.get(`${sbase}/${c.id}`, { token: o.token })).body.data.state).toBe('active');
      expect(await runMediaPurge(s.deps)).toMatchObject({ purged: 0, bytes: { deleted: 0 } });
      // Permanent deletes queue their bytes for the same job.
      await sapi.delete(`${sbase}/${c.id}`, { token: o.token });
      await s.owner.query(`update app.media_items set delete_after = now() + interval '1 hour' where id = $1`, [c.id]);
      expect((await sapi.delete(`${sbase}/${c.id}/permanent`, { token: o.token })).status).toBe(200);
      expect(await runMediaPurge(s.deps)).toMatchObject({ purged: 0, bytes: { deleted: 1 } });
      expect(existsSync(path.join(dir, 'media', 'media', o.workspaceId, c.id))).toBe(false);
    } finally {
      await s.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('job registration', () => {
  it('registerMediaJobs schedules both queues and works them with pg-boss', async () => {
    const boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 2 });
    boss.on('error', () => {});
    await boss.start();
    try {
      await registerMediaJobs(boss, server.deps);
      const schedules = await server.owner.query(`select name, cron from pgboss.schedule where name like 'media.%' order by name`);
      expect(schedules.rows).toEqual([
        { name: QUEUES.uploadSessionExpiry, cron: '*/5 * * * *' },
        { name: QUEUES.mediaPurge, cron: '* * * * *' },
      ]);
      const ids = [await boss.send(QUEUES.mediaPurge, {}), await boss.send(QUEUES.uploadSessionExpiry, {})];
      const deadline = Date.now() + 20_000;
      let states: string[] = [];
      while (Date.now() < deadline) {
        states = (await server.owner.query(`select state::text from pgboss.job where id = any($1::uuid[])`, [ids])).rows.map((r) => r.state);
        if (states.length === 2 && states.every((x) => x === 'completed')) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(states).toEqual(['completed', 'completed']);
    } finally {
      await boss.stop({ graceful: false, close: true });
    }
  });
});

describe('the signing secret', () => {
  it('without SIGNED_URL_SECRET, every API process over the same database signs alike', async () => {
    const { media } = await upload(api, owner.token, ws, png(3, 3, 14));
    const view = await api.get(`${base()}/${media.id}/view-url`, { token: owner.token });
    // A second app (another process, as far as signing goes) on the same database.
    const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir } as NodeJS.ProcessEnv);
    const app = createApp(createAppDeps({ pool: server.pool, config, log }), { openapi });
    const other: Server = createServer(app);
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const port = (other.address() as AddressInfo).port;
      const u = new URL(view.body.data.url);
      u.port = String(port);
      const got = await fetchBytes(u.toString());
      expect(got.status).toBe(200);
      const row = await server.owner.query(`select length(value) as n from app.server_secrets where name = 'storage.signing'`);
      expect(row.rows[0].n).toBe(32);
      // The request role cannot read it.
      const denied = await server.owner.query(`select has_table_privilege('pressroom_request', 'app.server_secrets', 'select') as can`);
      expect(denied.rows[0].can).toBe(false);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('with SIGNED_URL_SECRET, another secret does not verify', async () => {
    const { media } = await upload(api, owner.token, ws, png(3, 3, 15));
    const view = await api.get(`${base()}/${media.id}/view-url`, { token: owner.token });
    const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, SIGNED_URL_SECRET: 'another-secret-of-enough-length' } as NodeJS.ProcessEnv);
    const other: Server = createServer(createApp(createAppDeps({ pool: server.pool, config, log }), { openapi }));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    try {
      const u = new URL(view.body.data.url);
      u.port = String((other.address() as AddressInfo).port);
      const res = await fetch(u);
      expect([res.status, ((await res.json()) as any).error.code]).toEqual([403, 'SIGNATURE_INVALID']);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });

  it('URLs use PUBLIC_BASE_URL when it is set', async () => {
    const previous = server.config.PUBLIC_BASE_URL;
    server.config.PUBLIC_BASE_URL = 'https://media.example.com/';
    try {
      const init = await api.post(`${base()}/upload`, { filename: 'p.png', contentType: 'image/png', size: 10 }, { token: owner.token });
      expect(init.body.data.uploadUrl).toMatch(/^https:\/\/media\.example\.com\/storage\/v1\/uploads\//);
    } finally {
      server.config.PUBLIC_BASE_URL = previous;
    }
  });
});
