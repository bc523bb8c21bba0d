// The S3 driver (AWS SDK client and presigner): the fake S3's signature
// check against AWS's published examples, the SDK's presigned URLs and the
// default credential chain, then the whole upload flow against a small fake
// S3 server on 127.0.0.1 that checks every request (signature, expiry,
// signed Content-Type and Content-Length, payload hash) the way S3 does.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { runMediaPurge, runUploadSessionExpiry } from '../../server/jobs/media.ts';
import { createLogger } from '../../server/log.ts';
import { S3Driver } from '../../server/storage/s3.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { verifyRequest, type Credentials } from '../support/sigv4-check.ts';
import { fetchBytes, mp4, png, sha256, startUpload, upload } from './media-fixtures.ts';

// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html and
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
const AWS: Credentials = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', region: 'us-east-1' };
const MAY_24_2013 = new Date(Date.UTC(2013, 4, 24));
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

describe("the fake S3's signature check against the examples AWS publishes", () => {
  it('presigned GET of examplebucket/test.txt, 86400 s: accepted; altered, refused; a day later, expired', () => {
    const url = 'https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256' +
      '&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z' +
      '&X-Amz-Expires=86400&X-Amz-SignedHeaders=host' +
      '&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404';
    const req = (u: string) => ({ method: 'GET', url: new URL(u), headers: { host: 'examplebucket.s3.amazonaws.com' } });
    expect(verifyRequest(AWS, req(url), MAY_24_2013)).toEqual({ ok: true, form: 'query' });
    expect(verifyRequest(AWS, req(url.replace('test.txt', 'test.txu')), MAY_24_2013)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifyRequest(AWS, { ...req(url), method: 'PUT' }, MAY_24_2013)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifyRequest(AWS, req(url), new Date(MAY_24_2013.getTime() + 86_401_000))).toMatchObject({ ok: false, message: 'Request has expired' });
  });

  it.each([
    ['GET Object with a Range', 'GET', 'https://examplebucket.s3.amazonaws.com/test.txt', { range: 'bytes=0-9' }, EMPTY_SHA256,
      'host;range;x-amz-content-sha256;x-amz-date', 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41'],
    ['PUT Object', 'PUT', 'https://examplebucket.s3.amazonaws.com/test%24file.text',
      { date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
      '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      'date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class', '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd'],
    ['GET Bucket Lifecycle', 'GET', 'https://examplebucket.s3.amazonaws.com/?lifecycle', {}, EMPTY_SHA256,
      'host;x-amz-content-sha256;x-amz-date', 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543'],
    ['GET Bucket (List Objects)', 'GET', 'https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J', {}, EMPTY_SHA256,
      'host;x-amz-content-sha256;x-amz-date', '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7'],
  ] as const)('Authorization header: %s', (_name, method, url, extra, payloadHash, signed, signature) => {
    const headers: Record<string, string> = {
      host: 'examplebucket.s3.amazonaws.com', 'x-amz-date': '20130524T000000Z', 'x-amz-content-sha256': payloadHash, ...extra,
      authorization: `AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=${signed},Signature=${signature}`,
    };
    const body = method === 'PUT' ? Buffer.from('Welcome to Amazon S3.') : Buffer.alloc(0);
    expect(verifyRequest(AWS, { method, url: new URL(url), headers, body }, MAY_24_2013)).toEqual({ ok: true, form: 'header' });
    expect(verifyRequest(AWS, { method, url: new URL(url), headers: { ...headers, 'x-amz-date': '20130524T000001Z' }, body }, MAY_24_2013))
      .toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    if (method === 'PUT') {
      expect(verifyRequest(AWS, { method, url: new URL(url), headers, body: Buffer.from('Welcome to Amazon S4.') }, MAY_24_2013))
        .toMatchObject({ ok: false, code: 'XAmzContentSHA256Mismatch' });
    }
  });

  it('the payload hash of "Welcome to Amazon S3." is the one AWS shows', () => {
    expect(sha256(Buffer.from('Welcome to Amazon S3.'))).toBe('44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072');
  });
});

describe("the SDK's presigned URLs and credentials", () => {
  const KEY = 'uploads/0a1b2c3d-0000-4000-8000-000000000001/0a1b2c3d-0000-4000-8000-000000000002';
  const config = (env: Record<string, string>) => loadConfig({ STORAGE_DRIVER: 's3', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_BUCKET: 'bucket',
    S3_REGION: 'eu-central-1', S3_FORCE_PATH_STYLE: 'true', ...env });
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it('a presigned PUT signs host, Content-Type and Content-Length; it verifies, and fails once altered or expired', async () => {
    const creds = { accessKeyId: 'PRESSROOMTESTKEY', secretAccessKey: 'pressroom-test-secret-key-0123456789', region: 'eu-central-1' };
    const driver = new S3Driver(config({ S3_ACCESS_KEY_ID: creds.accessKeyId, S3_SECRET_ACCESS_KEY: creds.secretAccessKey }));
    const now = new Date();
    const target = await driver.uploadTarget({ sessionId: 's', key: KEY, contentType: 'image/png', size: 10, expiresAt: new Date(now.getTime() + 60_000) });
    const u = new URL(target.url);
    expect(u.pathname).toBe(`/bucket/${KEY}`);
    expect(u.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    expect(u.searchParams.get('X-Amz-Expires')).toMatch(/^(59|60)$/);
    expect([...u.searchParams.keys()].filter((k) => /checksum/i.test(k))).toEqual([]);
    const req = (url: string, headers: Record<string, string>) => ({ method: 'PUT', url: new URL(url), headers });
    const good = { host: '127.0.0.1:9000', 'content-type': 'image/png', 'content-length': '10' };
    expect(verifyRequest(creds, req(target.url, good), now)).toEqual({ ok: true, form: 'query' });
    expect(verifyRequest(creds, req(target.url, { ...good, 'content-length': '11' }), now)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifyRequest(creds, req(target.url, { ...good, 'content-type': 'image/gif' }), now)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifyRequest(creds, req(target.url.replace('uploads', 'upload5'), good), now)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
    expect(verifyRequest(creds, req(target.url, good), new Date(now.getTime() + 61_000))).toMatchObject({ ok: false, message: 'Request has expired' });
    expect(verifyRequest({ ...creds, secretAccessKey: 'another-secret' }, req(target.url, good), now)).toMatchObject({ ok: false, code: 'SignatureDoesNotMatch' });
  });

  it('without S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, the default chain provides the credentials (here: the environment)', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'ASIAFROMTHEENVIRONMENT';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret-from-the-environment';
    process.env.AWS_SESSION_TOKEN = 'session-token-from-the-environment';
    const driver = new S3Driver(config({}));
    const url = new URL(await driver.objectUrl({ mediaId: 'm', key: KEY.replace('uploads', 'media'), contentType: 'image/png', filename: 'a.png',
      disposition: 'inline', expiresAt: new Date(Date.now() + 60_000) }));
    expect(url.searchParams.get('X-Amz-Credential')).toMatch(/^ASIAFROMTHEENVIRONMENT\/\d{8}\/eu-central-1\/s3\/aws4_request$/);
    expect(url.searchParams.get('X-Amz-Security-Token')).toBe('session-token-from-the-environment');
    const check = verifyRequest({ accessKeyId: 'ASIAFROMTHEENVIRONMENT', secretAccessKey: 'secret-from-the-environment', region: 'eu-central-1' },
      { method: 'GET', url, headers: { host: '127.0.0.1:9000' } });
    expect(check).toEqual({ ok: true, form: 'query' });
  });

  it('one key variable without the other is a configuration error', () => {
    expect(() => new S3Driver(config({ S3_ACCESS_KEY_ID: 'only-the-id' }))).toThrow(/both S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY, or neither/);
  });
});

// ---------------------------------------------------------------------------
// A fake S3 (path-style, one bucket): PUT, PUT with x-amz-copy-source, GET
// (with response-content-* overrides), HEAD, DELETE; every request presigned.
// ---------------------------------------------------------------------------
const CREDS: Credentials = { accessKeyId: 'PRESSROOMTESTKEY', secretAccessKey: 'pressroom-test-secret-key-0123456789', region: 'eu-central-1' };
const BUCKET = 'pressroom-media';

interface FakeS3 {
  url: string;
  objects: Map<string, { body: Buffer; contentType: string }>;
  log: string[];
  close(): Promise<void>;
}

function xmlError(res: ServerResponse, status: number, code: string, message: string) {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

async function startFakeS3(): Promise<FakeS3> {
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const log: string[] = [];
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url!, `http://${req.headers.host}`);
    const check = verifyRequest(CREDS, { method: req.method!, url, headers: req.headers, body });
    const [, bucket, ...rest] = url.pathname.split('/');
    const key = rest.map(decodeURIComponent).join('/');
    log.push(`${req.method} ${key} ${check.ok ? `${check.form} ok` : check.code}`);
    if (!check.ok) return xmlError(res, 403, check.code, check.message);
    if (bucket !== BUCKET) return xmlError(res, 404, 'NoSuchBucket', 'no such bucket');
    if (req.method === 'PUT') {
      const source = req.headers['x-amz-copy-source'];
      if (typeof source === 'string') {
        // "bucket/key" or "/bucket/key", URL-encoded (AWS accepts both).
        const from = decodeURIComponent(source).replace(/^\//, '').replace(`${BUCKET}/`, '');
        const o = objects.get(from);
        if (!o) return xmlError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
        objects.set(key, { body: Buffer.from(o.body), contentType: o.contentType });
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end('<CopyObjectResult><ETag>"x"</ETag></CopyObjectResult>');
      }
      if (Number(req.headers['content-length']) !== body.length) return xmlError(res, 400, 'IncompleteBody', 'length mismatch');
      objects.set(key, { body, contentType: String(req.headers['content-type'] ?? 'binary/octet-stream') });
      res.writeHead(200, { etag: `"${sha256(body).slice(0, 32)}"` });
      return res.end();
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const o = objects.get(key);
      if (!o) return xmlError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
      const headers: Record<string, string> = {
        'content-type': url.searchParams.get('response-content-type') ?? o.contentType,
        'content-length': String(o.body.length),
      };
      const disposition = url.searchParams.get('response-content-disposition');
      if (disposition) headers['content-disposition'] = disposition;
      res.writeHead(200, headers);
      return res.end(req.method === 'HEAD' ? undefined : o.body);
    }
    if (req.method === 'DELETE') {
      objects.delete(key);
      res.writeHead(204);
      return res.end();
    }
    return xmlError(res, 405, 'MethodNotAllowed', 'method not allowed');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    objects,
    log,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the S3 driver against a fake S3', () => {
  let s3: FakeS3;
  let server: TestServer;
  let api: ReturnType<typeof client>;
  let o: Awaited<ReturnType<typeof signup>>;
  const log = createLogger('silent');

  beforeAll(async () => {
    s3 = await startFakeS3();
    server = await startTestServer('media_s3', {
      STORAGE_DRIVER: 's3', S3_ENDPOINT: s3.url, S3_BUCKET: BUCKET, S3_REGION: CREDS.region,
      S3_ACCESS_KEY_ID: CREDS.accessKeyId, S3_SECRET_ACCESS_KEY: CREDS.secretAccessKey, S3_FORCE_PATH_STYLE: true,
      MEDIA_BIN_RETENTION_SECONDS: 0,
    });
    api = client(server);
    o = await signup(api);
  });

  afterAll(async () => {
    await server?.close();
    await s3?.close();
  });

  it('uploads straight to S3 with a presigned PUT, verifies from S3, and serves presigned GETs', async () => {
    const bytes = mp4({ width: 1280, height: 720, durationMs: 3210, moovAtEnd: true, mdatBytes: 150_000 });
    const init = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload`, { filename: 'Clip één.mp4', contentType: 'video/mp4', size: bytes.length }, { token: o.token });
    expect(init.status).toBe(201);
    const s = init.body.data;
    const u = new URL(s.uploadUrl);
    expect(u.origin).toBe(s3.url);
    expect(u.pathname).toBe(`/${BUCKET}/uploads/${o.workspaceId}/${s.sessionId}`);
    expect(u.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    expect(u.searchParams.get('X-Amz-Credential')).toMatch(new RegExp(`^${CREDS.accessKeyId}/\\d{8}/${CREDS.region}/s3/aws4_request$`));

    // S3 refuses other bytes: another type or size breaks the signature.
    const wrongType = await fetch(s.uploadUrl, { method: 'PUT', headers: { 'Content-Type': 'video/webm' }, body: bytes });
    expect(wrongType.status).toBe(403);
    expect(await wrongType.text()).toMatch(/SignatureDoesNotMatch/);
    const wrongSize = await fetch(s.uploadUrl, { method: 'PUT', headers: s.headers, body: bytes.subarray(1) });
    expect(wrongSize.status).toBe(403);

    const put = await fetch(s.uploadUrl, { method: 'PUT', headers: s.headers, body: bytes });
    expect(put.status).toBe(200);
    const done = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload/${s.sessionId}/complete`, undefined, { token: o.token });
    expect(done.status).toBe(200);
    expect(done.body.data).toMatchObject({ type: 'video', contentType: 'video/mp4', width: 1280, height: 720, durationMs: 3210,
      fileSize: bytes.length, checksumSha256: sha256(bytes), filename: 'Clip één.mp4' });
    // Moved to the item's own key; nothing left at the upload key.
    expect([...s3.objects.keys()]).toEqual([`media/${o.workspaceId}/${s.sessionId}`]);
    // The client's PUT was presigned; the API's copy, read and delete were signed in the Authorization header.
    expect(s3.log).toEqual(expect.arrayContaining([`PUT uploads/${o.workspaceId}/${s.sessionId} query ok`, `PUT media/${o.workspaceId}/${s.sessionId} header ok`,
      `DELETE uploads/${o.workspaceId}/${s.sessionId} header ok`, `GET media/${o.workspaceId}/${s.sessionId} header ok`]));

    const view = await api.get(`/v1/workspaces/${o.workspaceId}/media/${s.sessionId}/view-url`, { token: o.token });
    expect(view.body.data.url.startsWith(`${s3.url}/${BUCKET}/media/`)).toBe(true);
    const shown = await fetchBytes(view.body.data.url);
    expect(shown.status).toBe(200);
    expect(shown.body.equals(bytes)).toBe(true);
    expect(shown.headers.get('content-type')).toBe('video/mp4');
    expect(shown.headers.get('content-disposition')).toBe(`inline; filename="Clip __n.mp4"; filename*=UTF-8''Clip%20%C3%A9%C3%A9n.mp4`);
    const download = await api.get(`/v1/workspaces/${o.workspaceId}/media/${s.sessionId}/download-url`, { token: o.token });
    const got = await fetchBytes(download.body.data.url);
    expect(got.headers.get('content-disposition')).toMatch(/^attachment; /);
    expect(got.body.equals(bytes)).toBe(true);
    const tampered = new URL(download.body.data.url);
    tampered.searchParams.set('response-content-disposition', 'inline');
    expect((await fetch(tampered)).status).toBe(403);

    // The URL used again lands on the upload key, never on the item.
    const again = await fetch(s.uploadUrl, { method: 'PUT', headers: s.headers, body: Buffer.from(bytes).fill(7, 100, 200) });
    expect(again.status).toBe(200);
    expect(s3.objects.get(`media/${o.workspaceId}/${s.sessionId}`)!.body.equals(bytes)).toBe(true);
    const twice = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload/${s.sessionId}/complete`, undefined, { token: o.token });
    expect(twice.body.data.checksumSha256).toBe(sha256(bytes));
    // Once the session expires, the sweep removes that stray object.
    await server.owner.query(`update app.media_upload_sessions set expires_at = now() - interval '1 second' where id = $1`, [s.sessionId]);
    expect(s3.objects.has(`uploads/${o.workspaceId}/${s.sessionId}`)).toBe(true);
    await runUploadSessionExpiry(server.deps);
    expect(s3.objects.has(`uploads/${o.workspaceId}/${s.sessionId}`)).toBe(false);
    expect(s3.objects.has(`media/${o.workspaceId}/${s.sessionId}`)).toBe(true);

    // Bin, purge: row and object gone.
    expect((await api.delete(`/v1/workspaces/${o.workspaceId}/media/${s.sessionId}`, { token: o.token })).status).toBe(200);
    const purged = await runMediaPurge(server.deps);
    expect(purged).toMatchObject({ purged: 1, bytes: { deleted: 1, failed: 0 } });
    expect(s3.objects.size).toBe(0);
  });

  it('refused bytes are deleted from S3 too, and the session takes the right bytes', async () => {
    const junk = Buffer.from('not an image, not a video, just text '.repeat(10));
    const { session, put } = await startUpload(api, o.token, o.workspaceId, junk, 'image/png', 'junk.png');
    expect(put.status).toBe(200);
    const r = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload/${session.sessionId}/complete`, undefined, { token: o.token });
    expect([r.status, r.body.error.code]).toEqual([415, 'UNSUPPORTED_MEDIA_FORMAT']);
    expect([...s3.objects.keys()].filter((k) => k.includes(session.sessionId))).toEqual([]);
    const nothing = await api.post(`/v1/workspaces/${o.workspaceId}/media/upload/${session.sessionId}/complete`, undefined, { token: o.token });
    expect([nothing.status, nothing.body.error.code]).toEqual([409, 'UPLOAD_NOT_RECEIVED']);
  });

  it('the disk routes are not served with S3 storage', async () => {
    const { media } = await upload(api, o.token, o.workspaceId, png(5, 5, 1));
    expect(media.type).toBe('image');
    const res = await fetch(`${server.baseUrl}/storage/v1/media/${media.id}?disposition=inline&expires=9999999999&signature=x`);
    expect(res.status).toBe(404);
    expect(s3.log.every((l) => l.endsWith(' ok') || l.includes('SignatureDoesNotMatch'))).toBe(true);
  });
});
