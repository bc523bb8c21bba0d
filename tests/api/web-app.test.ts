// The web pages' server side (server/web-app.ts): every page address of the
// app and the review page answer the same HTML shell with a per-request nonce
// CSP; the bundles come from this origin with ETags; the CSP names the media
// storage's origins; client review links carry the review page's URL under
// PUBLIC_BASE_URL. The pages themselves are tested in Chromium by
// tests/api/calendar.test.ts and tests/api/web-*.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { APP_PAGES, storageOrigins, webCsp } from '../../server/web-app.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let publicServer: TestServer;
beforeAll(async () => {
  server = await startTestServer('web-app');
  publicServer = await startTestServer('web-app-public', { PUBLIC_BASE_URL: 'https://press.example.com' });
});
afterAll(async () => {
  await server?.close();
  await publicServer?.close();
});

const ID = '3f1c2a64-1b2c-4d5e-8f90-1a2b3c4d5e6f';

function expectPageHeaders(res: Response) {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  const csp = res.headers.get('content-security-policy')!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(csp).toContain("frame-ancestors 'none'");
  return csp;
}

describe('page addresses', () => {
  it('every page of the app serves the app shell; an unknown path or a non-uuid edition is the JSON 404', async () => {
    const paths = APP_PAGES.map((p) => p.replace(':id', ID));
    expect(paths).toEqual(['/app', '/app/compose', `/app/compose/${ID}`, '/app/channels', '/app/approvals', '/app/settings']);
    const nonces = new Set<string>();
    for (const p of [...paths, '/app/', '/app/settings?tab=keys']) {
      const res = await fetch(`${server.baseUrl}${p}`);
      const csp = expectPageHeaders(res);
      const html = await res.text();
      expect(html).toContain('<script type="module" src="/app/app.js"></script>');
      const nonce = /'nonce-([^']+)'/.exec(csp)![1];
      expect(html).toContain(`<meta name="csp-nonce" content="${nonce}">`);
      nonces.add(nonce);
    }
    expect(nonces.size).toBe(paths.length + 2); // a new nonce per answer
    for (const p of ['/app/compose/not-an-id', '/app/nope', '/app/settings/keys', '/review/nope']) {
      const res = await fetch(`${server.baseUrl}${p}`);
      expect(res.status, p).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
    }
  });

  it('the review page is its own shell and bundle, holding no token', async () => {
    const res = await fetch(`${server.baseUrl}/review`);
    expectPageHeaders(res);
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/review/review.js"></script>');
    expect(html).toContain('<meta name="referrer" content="no-referrer">');
    expect(html).not.toContain('/app/app.js');
    for (const [file, type] of [['/review/review.js', 'text/javascript'], ['/review/review.css', 'text/css'], ['/app/app.js', 'text/javascript'], ['/app/app.css', 'text/css']]) {
      const a = await fetch(`${server.baseUrl}${file}`);
      expect(a.status, file).toBe(200);
      expect(a.headers.get('content-type')).toMatch(new RegExp(`^${type}`));
      expect(a.headers.get('x-content-type-options')).toBe('nosniff');
      const body = await a.text();
      expect(body.length).toBeGreaterThan(100);
      expect(body).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr|fonts\.googleapis)/);
      const etag = a.headers.get('etag')!;
      expect(etag).toMatch(/^".+"$/);
      expect((await fetch(`${server.baseUrl}${file}`, { headers: { 'If-None-Match': etag } })).status).toBe(304);
    }
    // Two bundles: the review page does not carry the app (FullCalendar), and the reverse.
    const app = await (await fetch(`${server.baseUrl}/app/app.js`)).text();
    const review = await (await fetch(`${server.baseUrl}/review/review.js`)).text();
    expect(app).toContain('fc-daygrid');
    expect(review).not.toContain('fc-daygrid');
  });
});

describe('the CSP names the media storage', () => {
  it('storageOrigins: PUBLIC_BASE_URL, an S3 endpoint (path style or bucket host), AWS by region', () => {
    const cfg = (env: Record<string, string>) => loadConfig({ ALLOW_SIGNUP: 'true', ...env } as NodeJS.ProcessEnv);
    expect(storageOrigins(cfg({}))).toEqual([]);
    expect(storageOrigins(cfg({ PUBLIC_BASE_URL: 'https://press.example.com/base/' }))).toEqual(['https://press.example.com']);
    expect(storageOrigins(cfg({ STORAGE_DRIVER: 's3', S3_BUCKET: 'media', S3_ENDPOINT: 'http://127.0.0.1:9000' }))).toEqual(['http://127.0.0.1:9000']);
    expect(storageOrigins(cfg({ STORAGE_DRIVER: 's3', S3_BUCKET: 'media', S3_ENDPOINT: 'https://r2.example.net', S3_FORCE_PATH_STYLE: 'false' })))
      .toEqual(['https://r2.example.net', 'https://media.r2.example.net']);
    expect(storageOrigins(cfg({ STORAGE_DRIVER: 's3', S3_BUCKET: 'media', S3_REGION: 'eu-west-1' })))
      .toEqual(['https://media.s3.eu-west-1.amazonaws.com', 'https://s3.eu-west-1.amazonaws.com']);
    const csp = webCsp('n0nce', ['https://media.example.net']);
    for (const d of ['connect-src', 'img-src', 'media-src']) expect(csp).toMatch(new RegExp(`${d} 'self'[^;]* https://media\\.example\\.net`));
    expect(csp).not.toMatch(/script-src[^;]*example/);
  });

  it('a server with PUBLIC_BASE_URL allows it for media, and gives review links under it', async () => {
    const res = await fetch(`${publicServer.baseUrl}/app`);
    const csp = expectPageHeaders(res);
    expect(csp).toMatch(/img-src 'self' data: blob: https:\/\/press\.example\.com/);

    const api = client(publicServer);
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };
    const ch = await api.post(`${ws}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, t);
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    const draft = await api.post(`${ws}/content`, { intent: 'draft', caption: 'For the client', channels: [{ integrationId: ch.body.data.id }] }, t);
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const review = await api.post(`${ws}/reviews`, {
      title: 'Client look', stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'client@example.com', name: 'Cleo' }] }],
      contentIds: [draft.body.data.editions[0].id],
    }, t);
    expect(review.status, JSON.stringify(review.body)).toBe(201);
    const sent = await api.post(`${ws}/reviews/${review.body.data.id}/send`, undefined, t);
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const [link] = sent.body.data.links;
    expect(link.url).toBe(`https://press.example.com/review#token=${link.token}`);
    // The token works on the review-link routes (the page's only credential).
    const got = await api.get('/v1/review-link', { token: link.token });
    expect(got.status, JSON.stringify(got.body)).toBe(200);
  });
});
