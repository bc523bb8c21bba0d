// Bluesky through AT Protocol OAuth (server/platforms/bluesky-oauth.ts, the Bluesky branch of
// server/routes/connections.ts) against the real reference PDS (@atproto/pds and its OAuth
// authorization server, tests/support/pds.ts) on this machine. The test server is on a loopback
// address, so Pressroom is the AT Protocol loopback client (public, DPoP-bound tokens); the only
// simulated part is the user's browser on the PDS's consent page: the test calls the page's own
// API as its script would (sign-in, consent, with its CSRF and device cookies) and follows the
// redirect to Pressroom's callback. Then a post is published with the stored OAuth session
// (DPoP-signed XRPC calls) and read back from the PDS, the session is refreshed under the
// credential's lock, and the documents of a web client (https PUBLIC_BASE_URL) are checked.
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../server/log.ts';
import { sql } from '../../server/db/pool.ts';
import { JoseKey } from '@atproto/oauth-client-node';
import { clientModeOf, oauthExtra, publicJwks, refreshOAuthSession, signingKey } from '../../server/platforms/bluesky-oauth.ts';
import { createCredentialService } from '../../server/platforms/credentials.ts';
import type { IntegrationCredentials, IntegrationRef } from '../../server/platforms/types.ts';
import { CredentialVault } from '../../server/platforms/vault.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startPds, type PdsAccount, type TestPds } from '../support/pds.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** The web client's public base: a domain name (the AT Protocol refuses .test, .example, .local and .invalid ones) reached only through the rewrite of the last test. */
const WEB_BASE = 'https://pressroom.internal';
const WEB_DATA_DIR = `/tmp/pressroom-bsky-oauth-${randomBytes(4).toString('hex')}`;
const KEYS = `1:${randomBytes(32).toString('base64')}`;
const vault = new CredentialVault(new Map([[1, Buffer.from(KEYS.slice(2), 'base64')]]), 'env');
let pds: TestPds;
let server: TestServer;
let web: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let alice: PdsAccount;

beforeAll(async () => {
  pds = await startPds({ appViewUrl: null });
  server = await startTestServer('bluesky_oauth', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true, CREDENTIALS_KEYS: KEYS, PUBLISH_TIMEOUT_MS: 10_000, BLUESKY_PLC_URL: pds.plcUrl });
  web = await startTestServer('bluesky_oauth_web', {
    PUBLIC_BASE_URL: WEB_BASE,
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    CREDENTIALS_KEYS: KEYS,
    PUBLISH_TIMEOUT_MS: 10_000,
    BLUESKY_PLC_URL: pds.plcUrl,
    DATA_DIR: WEB_DATA_DIR,
  });
  api = client(server);
  owner = await signup(api);
  alice = await pds.createAccount(`oa${randomBytes(3).toString('hex')}`);
}, 180_000);
afterAll(async () => {
  await server?.close();
  await web?.close();
  await pds?.stop();
  await rm(WEB_DATA_DIR, { recursive: true, force: true });
});

const ws = () => `/v1/workspaces/${owner.workspaceId}`;

/** A browser's request (node:http: fetch() would add its own Sec-Fetch-Mode: cors to every request). */
function browser(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; setCookies: string[]; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, setCookies: res.headers['set-cookie'] ?? [], text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Cookies as a browser keeps them, per name. */
class Jar {
  cookies = new Map<string, string>();
  take(res: { setCookies: string[] }) {
    for (const c of res.setCookies) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, i).trim(), pair!.slice(i + 1).trim());
    }
  }
  header() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

/**
 * The user's browser on the PDS's consent page: opens the authorize URL, signs in and consents
 * through the page's API (/@atproto/oauth-provider/~api, as its script calls it), and answers the
 * URL the browser is then sent to: Pressroom's callback with code, state and iss (or error).
 */
async function consent(authorizeUrl: string, account: PdsAccount, decision: 'accept' | 'reject' = 'accept'): Promise<string> {
  const jar = new Jar();
  const page = await browser(authorizeUrl, { headers: { 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'cross-site', accept: 'text/html' } });
  expect(page.status, page.text.replace(/\s+/g, ' ').slice(-600)).toBe(200);
  jar.take(page);
  const issuer = new URL(authorizeUrl).origin;
  const call = async (endpoint: string, body: unknown) => {
    const res = await browser(`${issuer}/@atproto/oauth-provider/~api${endpoint}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        origin: issuer,
        referer: authorizeUrl,
        'sec-fetch-mode': 'same-origin',
        'sec-fetch-site': 'same-origin',
        'sec-fetch-dest': 'empty',
        'x-csrf-token': jar.cookies.get('csrf-token') ?? '',
        cookie: jar.header(),
      },
      body: JSON.stringify(body),
    });
    jar.take(res);
    const json = JSON.parse(res.text) as { url: string; account?: { sub?: string; did?: string } };
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json;
  };
  let url: string;
  if (decision === 'reject') url = (await call('/reject', {})).url;
  else {
    const signedIn = await call('/sign-in', { locale: 'en', username: account.handle, password: account.password, remember: true });
    expect(signedIn.account?.sub ?? signedIn.account?.did).toBe(account.did);
    url = (await call('/consent', { did: account.did })).url;
  }
  // The page then sends the browser to /oauth/authorize/redirect, which forwards these to the client's redirect_uri.
  const r = new URL(url);
  expect(r.pathname).toBe('/oauth/authorize/redirect');
  const back = new URL(r.searchParams.get('redirect_uri')!);
  for (const k of ['state', 'iss', 'code', 'error', 'error_description']) {
    const v = r.searchParams.get(k);
    if (v !== null) back.searchParams.set(k, v);
  }
  return back.toString();
}

async function callback(url: string): Promise<URL> {
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status).toBe(303);
  expect(res.headers.get('cache-control')).toBe('no-store');
  return new URL(res.headers.get('location')!);
}

async function storedCredentials(id: string): Promise<IntegrationCredentials> {
  const { rows } = await server.owner.query('select ciphertext from app.integration_credentials where integration_id = $1', [id]);
  return vault.decryptJson<IntegrationCredentials>(`integration:${id}`, rows[0].ciphertext);
}

let integrationId: string;

describe('Bluesky through AT Protocol OAuth, against the reference PDS', () => {
  it('is listed as connectable through OAuth on a loopback base, and not on a plain-http network base', async () => {
    const listed = (await api.get(`${ws()}/platforms`, { token: owner.token })).body.data;
    expect(listed.find((p: any) => p.connector === 'bluesky')).toMatchObject({ connect: 'password', oauth: true, connectable: true });
    expect(listed.find((p: any) => p.connector === 'sandbox').oauth).toBe(false);
    // The same server reached as http://pressroom.lan:8080 (no PUBLIC_BASE_URL: the request's origin is the base).
    const lan = { host: 'pressroom.lan:8080', authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' };
    const there = JSON.parse((await browser(`${server.baseUrl}${ws()}/platforms`, { headers: lan })).text);
    expect(there.data.find((p: any) => p.connector === 'bluesky')).toMatchObject({ oauth: false, connectable: true });
    const refused = await browser(`${server.baseUrl}${ws()}/integrations/connect`, { method: 'POST', headers: lan, body: JSON.stringify({ platform: 'bluesky', instanceUrl: pds.url }) });
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.text).error).toMatchObject({ code: 'BLUESKY_OAUTH_UNAVAILABLE', message: expect.stringContaining('PUBLIC_BASE_URL') });
  });

  it('starts with a pushed authorization request, and the PDS holds it', async () => {
    const r = await api.post(`${ws()}/integrations/connect`, { platform: 'bluesky', instanceUrl: pds.url }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const u = new URL(r.body.data.authorizeUrl);
    expect(u.origin).toBe(new URL(pds.url).origin);
    expect(u.pathname).toBe('/oauth/authorize');
    // PAR: the URL names the pushed request, never the PKCE challenge, state or scope.
    expect(u.searchParams.get('request_uri')).toMatch(/^urn:ietf:params:oauth:request_uri:/);
    expect(u.searchParams.get('client_id')).toMatch(/^http:\/\/localhost\?/);
    expect(u.searchParams.has('code_challenge')).toBe(false);
    expect(r.body.data.redirectUri).toBe(`${server.baseUrl}/v1/oauth/callback/bluesky`);
    // The library's state is stored encrypted, engine-only, for 10 minutes.
    const { rows } = await server.owner.query(`select key_hash, ciphertext, extract(epoch from expires_at - created_at)::int as ttl from app.atproto_oauth_states`);
    expect(rows).toHaveLength(1);
    expect(rows[0].ttl).toBe(600);
    const saved = vault.decryptJson<Record<string, any>>(`atproto-oauth-state:${rows[0].key_hash.toString('hex')}`, rows[0].ciphertext);
    // The connection's own state rides along; the DPoP private key and the PKCE verifier stay in the ciphertext.
    expect(saved.appState).toBe(r.body.data.state);
    expect(saved.dpopJwk.d).toEqual(expect.any(String));
    expect(saved.verifier).toEqual(expect.any(String));
    expect(saved.iss).toBe(new URL(pds.url).origin);
    expect(rows[0].ciphertext.toString('latin1')).not.toContain(saved.verifier);
    // Engine-only: neither the server's login nor the request role reads it.
    await expect(server.pool.query(sql.unsafe`select * from app.atproto_oauth_states`)).rejects.toThrow(/permission denied/);
    await expect(
      server.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`select set_config('role', 'pressroom_request', true)`);
        return tx.query(sql.unsafe`select * from app.atproto_oauth_states`);
      }),
    ).rejects.toThrow(/permission denied/);
  });

  it('connects the account after the consent: the DPoP-bound session is the integration\'s credentials', async () => {
    const r = await api.post(`${ws()}/integrations/connect`, { platform: 'bluesky', instanceUrl: pds.url, handle: alice.handle }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const back = await consent(r.body.data.authorizeUrl, alice);
    expect(back.startsWith(`${server.baseUrl}/v1/oauth/callback/bluesky?`)).toBe(true);
    const to = await callback(back);
    expect(to.searchParams.get('error'), to.searchParams.get('error_description') ?? '').toBeNull();
    integrationId = to.searchParams.get('integration')!;
    expect(integrationId).toMatch(/^[0-9a-f-]{36}$/);
    const detail = await api.get(`${ws()}/integrations/${integrationId}`, { token: owner.token });
    expect(detail.body.data).toMatchObject({ connector: 'bluesky', platform: 'bluesky', accountId: alice.did, username: alice.handle, connectionState: 'ok' });
    const creds = await storedCredentials(integrationId);
    const o = oauthExtra(creds)!;
    expect(o).toMatchObject({ kind: 'atproto-oauth', sub: alice.did, authMethod: { method: 'none' } });
    expect(o.issuer).toBe(new URL(pds.url).origin);
    expect(creds.refreshToken).toBeTruthy();
    expect(creds.scopes).toEqual(expect.arrayContaining(['atproto', 'transition:generic']));
    // DPoP-bound: the access token alone (as a Bearer) is refused by the PDS.
    const bearer = await pds.xrpc('GET', 'com.atproto.server.getSession', { token: creds.accessToken });
    expect(bearer.status).not.toBe(200);
    // No token in the answers or the audit.
    expect(JSON.stringify(detail.body)).not.toContain(creds.accessToken);
    const audit = await server.owner.query(`select row_to_json(a)::text as t from audit.api_calls a where route = '/v1/oauth/callback/{platform}'`);
    expect(audit.rows.length).toBeGreaterThanOrEqual(1);
    for (const row of audit.rows) expect(row.t).not.toContain(creds.accessToken);
    // The library's state was used once and is gone.
    const left = await server.owner.query(`select count(*)::int as n from app.atproto_oauth_states`);
    expect(left.rows[0].n).toBe(1); // the first test's, never completed
    // The same redirect again: its state is used up.
    const again = await callback(back);
    expect(again.searchParams.get('error')).toBe('state_unknown');
  });

  it('publishes a post with the OAuth session (DPoP) and reads it back from the PDS', async () => {
    const service = createCredentialService({ pool: server.pool, config: server.config, log: createLogger('silent') });
    const account = (await service.forIntegrations([integrationId])).get(integrationId)!;
    expect(account.state).toBe('ok');
    if (account.state !== 'ok') return;
    const ref: IntegrationRef = { id: integrationId, connector: 'bluesky', platform: 'bluesky', name: 'Alice', username: alice.handle, settings: {}, credentials: account.credentials, endpoint: account.endpoint };
    const connector = server.deps.connectors.get('bluesky');
    const caption = `Posted through OAuth ${randomBytes(3).toString('hex')} https://example.com/oauth`;
    // A 1x1 PNG, uploaded as a blob with the same DPoP-signed calls.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
    const image = { id: 'm1', type: 'image' as const, url: 'urn:pressroom:media:m1', contentType: 'image/png', altText: 'one pixel', size: png.length, width: 1, height: 1, read: async () => png };
    const r = await connector.publish(ref, { id: 'ed-oauth-1', rootId: 'root-oauth-1', attempt: 1, caption, settings: {}, media: [], thread: [{ caption: 'and a reply', media: [image] }], scheduledAt: null, idempotencyToken: `oauth-${randomBytes(6).toString('hex')}` });
    expect(r.state, 'error' in r ? r.error : '').toBe('published');
    if (r.state !== 'published') return;
    const [, , repo, collection, rkey] = r.platformPostId.split('/');
    expect(repo).toBe(alice.did);
    const read = await pds.xrpc('GET', 'com.atproto.repo.getRecord', { params: { repo: repo!, collection: collection!, rkey: rkey! } });
    expect(read.status).toBe(200);
    expect(read.json.value.text).toBe(caption);
    expect(read.json.value.embed.external.uri).toBe('https://example.com/oauth');
    const feed = await pds.xrpc('GET', 'com.atproto.repo.listRecords', { params: { repo: alice.did, collection: 'app.bsky.feed.post' } });
    expect(feed.json.records.map((x: any) => x.value.text)).toEqual(expect.arrayContaining([caption, 'and a reply']));
    const reply = feed.json.records.find((x: any) => x.value.text === 'and a reply');
    expect(reply.value.reply.parent.uri).toBe(r.platformPostId);
    expect(reply.value.embed.images[0]).toMatchObject({ alt: 'one pixel', image: { mimeType: 'image/png', size: png.length } });
  });

  it('refreshes the session at the PDS under the credential lock, and publishes with the new tokens', async () => {
    const before = await storedCredentials(integrationId);
    const service = createCredentialService({ pool: server.pool, config: server.config, log: createLogger('silent') });
    const r = await service.refresh(integrationId, { force: true });
    expect(r.state, JSON.stringify(r)).toBe('ok');
    const after = await storedCredentials(integrationId);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(after.refreshToken).not.toBe(before.refreshToken);
    // The DPoP key stays with the session.
    expect(oauthExtra(after)!.dpopJwk).toEqual(oauthExtra(before)!.dpopJwk);
    if (r.state !== 'ok') return;
    const connector = server.deps.connectors.get('bluesky');
    const ref: IntegrationRef = { id: integrationId, connector: 'bluesky', platform: 'bluesky', name: 'Alice', username: alice.handle, settings: {}, credentials: r.credentials, endpoint: r.endpoint };
    const p = await connector.publish(ref, { id: 'ed-oauth-2', rootId: 'root-oauth-2', attempt: 1, caption: 'After the refresh', settings: {}, media: [], thread: [], scheduledAt: null, idempotencyToken: `oauth-${randomBytes(6).toString('hex')}` });
    expect(p.state, 'error' in p ? p.error : '').toBe('published');
    // The refresh token was rotated: the spent one is refused for good by the PDS.
    const spent = await refreshOAuthSession({ credentials: before, config: server.config, handleResolver: pds.url });
    expect(spent.state, JSON.stringify(spent)).toBe('revoked');
  });

  it('reconnects the same account through the consent again, and refuses another one', async () => {
    const before = await storedCredentials(integrationId);
    const r = await api.post(`${ws()}/integrations/${integrationId}/reconnect`, {}, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const to = await callback(await consent(r.body.data.authorizeUrl, alice));
    expect(to.searchParams.get('integration'), to.searchParams.get('error_description') ?? '').toBe(integrationId);
    const after = await storedCredentials(integrationId);
    expect(after.accessToken).not.toBe(before.accessToken);
    expect(oauthExtra(after)!.dpopJwk).not.toEqual(oauthExtra(before)!.dpopJwk);
    const carol = await pds.createAccount(`oc${randomBytes(3).toString('hex')}`);
    const other = await api.post(`${ws()}/integrations/${integrationId}/reconnect`, {}, { token: owner.token });
    const refused = await callback(await consent(other.body.data.authorizeUrl, carol));
    expect(refused.searchParams.get('error')).toBe('reconnect_account_mismatch');
    expect((await storedCredentials(integrationId)).accessToken).toBe(after.accessToken);
  });

  it('redirects with access_denied when the user refuses, and needs the manager role', async () => {
    const r = await api.post(`${ws()}/integrations/connect`, { platform: 'bluesky', instanceUrl: pds.url }, { token: owner.token });
    const back = await consent(r.body.data.authorizeUrl, alice, 'reject');
    const to = await callback(back);
    expect(to.searchParams.get('error')).toBe('access_denied');
    const editor = await createKey(api, owner.token, owner.workspaceId, { role: 'editor' });
    const denied = await api.post(`${ws()}/integrations/connect`, { platform: 'bluesky', instanceUrl: pds.url }, { token: editor.key });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('ROLE_REQUIRED');
    const x = await api.post(`${ws()}/integrations/connect`, { platform: 'mastodon', instanceUrl: pds.url, handle: 'a.test' }, { token: owner.token });
    expect(x.status).toBe(400);
  });

  it('serves no client documents on a loopback base; a web client (https PUBLIC_BASE_URL) has its metadata and public keys', async () => {
    const local = await fetch(`${server.baseUrl}/oauth/bluesky/client-metadata.json`);
    expect(local.status).toBe(404);
    expect(((await local.json()) as { error: { code: string } }).error.code).toBe('BLUESKY_OAUTH_UNAVAILABLE');
    const meta = await fetch(`${web.baseUrl}/oauth/bluesky/client-metadata.json`);
    expect(meta.status).toBe(200);
    const m = (await meta.json()) as Record<string, unknown>;
    expect(m).toMatchObject({
      client_id: `${WEB_BASE}/oauth/bluesky/client-metadata.json`,
      redirect_uris: [`${WEB_BASE}/v1/oauth/callback/bluesky`],
      jwks_uri: `${WEB_BASE}/oauth/bluesky/jwks.json`,
      token_endpoint_auth_method: 'private_key_jwt',
      token_endpoint_auth_signing_alg: 'ES256',
      dpop_bound_access_tokens: true,
      scope: 'atproto transition:generic',
      application_type: 'web',
    });
    type Jwks = { keys: Record<string, unknown>[] };
    const jwks = (await (await fetch(`${web.baseUrl}/oauth/bluesky/jwks.json`)).json()) as Jwks;
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
    expect(jwks.keys[0].d).toBeUndefined();
    // The key was made once into DATA_DIR, readable by its owner only, and is the same on every read.
    expect(statSync(path.join(WEB_DATA_DIR, 'bluesky-oauth-key.json')).mode & 0o777).toBe(0o600);
    const again = (await (await fetch(`${web.baseUrl}/oauth/bluesky/jwks.json`)).json()) as Jwks;
    expect(again.keys[0].kid).toBe(jwks.keys[0].kid);
    // A key from the environment must be an ES256 private JWK; the refusal names the variable, not the key.
    await expect(signingKey({ DATA_DIR: WEB_DATA_DIR, BLUESKY_OAUTH_PRIVATE_KEY: '{"kty":"oct","k":"c2VjcmV0LXZhbHVl"}' })).rejects.toThrow(/BLUESKY_OAUTH_PRIVATE_KEY: .*ES256/);
    await expect(signingKey({ DATA_DIR: WEB_DATA_DIR, BLUESKY_OAUTH_PRIVATE_KEY: 'not json' })).rejects.toThrow(/^BLUESKY_OAUTH_PRIVATE_KEY: /);
    const given = await JoseKey.generate(['ES256'], 'given-1');
    expect((await publicJwks({ DATA_DIR: WEB_DATA_DIR, BLUESKY_OAUTH_PRIVATE_KEY: JSON.stringify(given.privateJwk) })).keys[0]).toMatchObject({ kid: 'given-1', x: (given.publicJwk as Record<string, unknown>).x });
    // Which client a base makes: https on a domain name (web), loopback (development), nothing else.
    expect(clientModeOf('https://pressroom.example.com').kind).toBe('web');
    expect(clientModeOf('http://127.0.0.1:8080').kind).toBe('loopback');
    expect(clientModeOf('http://localhost:8080').kind).toBe('loopback');
    expect(clientModeOf('http://pressroom.lan:8080').kind).toBe('unavailable');
    expect(clientModeOf('https://203.0.113.7').kind).toBe('unavailable');
  });
});

describe('as a web client (https PUBLIC_BASE_URL): the PDS authenticates Pressroom with the keys Pressroom serves', () => {
  it('connects (private_key_jwt, the PDS fetching the client metadata and JWKS from Pressroom), publishes and refreshes', async () => {
    // The PDS (in this process) reaches https://pressroom.internal through this rewrite to the web
    // server's loopback port: name resolution and TLS are the only parts not real.
    const realFetch = globalThis.fetch;
    const fetched: string[] = [];
    globalThis.fetch = (async (input: Request | string | URL, init?: RequestInit) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.origin === WEB_BASE) {
        fetched.push(url.pathname);
        const { dispatcher: _d, ...rest } = (init ?? {}) as RequestInit & { dispatcher?: unknown };
        return realFetch(`${web.baseUrl}${url.pathname}${url.search}`, { ...rest, method: 'GET', redirect: 'manual' });
      }
      return realFetch(input, init);
    }) as typeof fetch;
    try {
      const webApi = client(web);
      const o = await signup(webApi);
      const bob = await pds.createAccount(`ow${randomBytes(3).toString('hex')}`);
      const r = await webApi.post(`/v1/workspaces/${o.workspaceId}/integrations/connect`, { platform: 'bluesky', instanceUrl: pds.url, handle: bob.handle }, { token: o.token });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(new URL(r.body.data.authorizeUrl).searchParams.get('client_id')).toBe(`${WEB_BASE}/oauth/bluesky/client-metadata.json`);
      expect(fetched).toEqual(expect.arrayContaining(['/oauth/bluesky/client-metadata.json', '/oauth/bluesky/jwks.json']));
      const back = new URL(await consent(r.body.data.authorizeUrl, bob));
      expect(back.origin).toBe(WEB_BASE);
      const to = await callback(`${web.baseUrl}${back.pathname}${back.search}`);
      expect(to.searchParams.get('error'), to.searchParams.get('error_description') ?? '').toBeNull();
      const id = to.searchParams.get('integration')!;
      const { rows } = await web.owner.query('select ciphertext from app.integration_credentials where integration_id = $1', [id]);
      const creds = vault.decryptJson<IntegrationCredentials>(`integration:${id}`, rows[0].ciphertext);
      const x = oauthExtra(creds)!;
      expect(x.clientId).toBe(`${WEB_BASE}/oauth/bluesky/client-metadata.json`);
      expect(x.authMethod).toMatchObject({ method: 'private_key_jwt' });
      const service = createCredentialService({ pool: web.pool, config: web.config, log: createLogger('silent') });
      const refreshed = await service.refresh(id, { force: true });
      expect(refreshed.state, JSON.stringify(refreshed)).toBe('ok');
      if (refreshed.state !== 'ok') return;
      expect(refreshed.credentials.accessToken).not.toBe(creds.accessToken);
      const ref: IntegrationRef = { id, connector: 'bluesky', platform: 'bluesky', name: 'Bob', username: bob.handle, settings: {}, credentials: refreshed.credentials, endpoint: refreshed.endpoint };
      const p = await web.deps.connectors.get('bluesky').publish(ref, { id: 'ed-web-1', rootId: 'root-web-1', attempt: 1, caption: 'From the web client', settings: {}, media: [], thread: [], scheduledAt: null, idempotencyToken: `web-${randomBytes(6).toString('hex')}` });
      expect(p.state, 'error' in p ? p.error : '').toBe('published');
      if (p.state !== 'published') return;
      const [, , repo, collection, rkey] = p.platformPostId.split('/');
      expect((await pds.xrpc('GET', 'com.atproto.repo.getRecord', { params: { repo: repo!, collection: collection!, rkey: rkey! } })).json.value.text).toBe('From the web client');
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
