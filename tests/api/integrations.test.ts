// Integrations (connected accounts) over HTTP, and the connectors behind
// them: the webhook URL safety check (unit), the sandbox connector, and the
// webhook connector delivering to a local receiver on 127.0.0.1.
//
// Network rule of this file: nothing outside 127.0.0.0/8 is ever contacted.
// Private and public addresses appear only as literals that are classified,
// never connected to; host names other than `localhost` (resolved from
// /etc/hosts) go through an injected lookup.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectorRegistry } from '../../server/platforms/index.ts';
import { createSandboxConnector, sandboxBoards } from '../../server/platforms/sandbox.ts';
import type { IntegrationRef, PublishableEdition } from '../../server/platforms/types.ts';
import {
  checkWebhookUrl,
  classifyAddress,
  createWebhookConnector,
  deliverWebhook,
  issueWebhookSecret,
  parseIPv6,
  verifyWebhookSignature,
  type HostLookup,
} from '../../server/platforms/webhook.ts';
import { vaultOf } from '../../server/platforms/credentials.ts';
import { openWebhookSecret } from '../../server/platforms/webhook-secret.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

// A Standard Webhooks secret of the form new integrations take (32 bytes of key material).
const WHSEC = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

const PLATFORMS = ['x', 'linkedin', 'instagram', 'facebook', 'pinterest', 'youtube', 'tiktok', 'threads', 'bluesky', 'mastodon'];

// ---------------------------------------------------------------------------
// Unit: address classification and the URL check
// ---------------------------------------------------------------------------
describe('webhook URL safety (unit)', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'private'],
    ['fd12:3456:789a::1', 'private'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '93.184.215.14', '2606:4700:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8', '64:ff9b::808:808'])(
    '%s is public',
    (address) => {
      expect(classifyAddress(address)).toBeNull();
    },
  );

  it('parses IPv6 forms to 16 bytes and refuses non-addresses', () => {
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0, 7, 0, 8]);
    expect(parseIPv6('::ffff:1.2.3.4')?.slice(10)).toEqual([255, 255, 1, 2, 3, 4]);
    expect(parseIPv6('[::1]')?.[15]).toBe(1);
    expect(parseIPv6('1.2.3.4')).toBeNull();
    expect(parseIPv6('example.com')).toBeNull();
    expect(() => classifyAddress('example.com')).toThrow(TypeError);
  });

  const fakeLookup =
    (table: Record<string, string[]>): HostLookup =>
    async (host) => {
      const found = table[host];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
      return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };

  it('accepts a host whose every address is public', async () => {
    const r = await checkWebhookUrl('https://hooks.example.com/in?x=1', {
      allowPrivateNetworks: false,
      lookup: fakeLookup({ 'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'] }),
    });
    expect(r.url.hostname).toBe('hooks.example.com');
    expect(r.addresses.map((a) => a.category)).toEqual([null, null]);
  });

  it('refuses a host when any of its addresses is not public (all addresses are checked)', async () => {
    const err = await checkWebhookUrl('https://mixed.example.com/', {
      allowPrivateNetworks: false,
      lookup: fakeLookup({ 'mixed.example.com': ['93.184.215.14', '10.0.0.7'] }),
    }).catch((e) => e);
    expect(err.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    expect(err.details.addresses).toEqual([{ address: '10.0.0.7', category: 'private' }]);
    const v6 = await checkWebhookUrl('https://v6.example.com/', {
      allowPrivateNetworks: false,
      lookup: fakeLookup({ 'v6.example.com': ['::ffff:192.168.0.1'] }),
    }).catch((e) => e);
    expect(v6.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
  });

  it('refuses unresolvable hosts, slow lookups, bad schemes and credentials', async () => {
    const none = await checkWebhookUrl('https://nowhere.example.com/', { allowPrivateNetworks: false, lookup: fakeLookup({}) }).catch((e) => e);
    expect(none.code).toBe('WEBHOOK_HOST_UNRESOLVABLE');
    const empty = await checkWebhookUrl('https://empty.example.com/', { allowPrivateNetworks: false, lookup: async () => [] }).catch((e) => e);
    expect(empty.code).toBe('WEBHOOK_HOST_UNRESOLVABLE');
    const slow = await checkWebhookUrl('https://slow.example.com/', {
      allowPrivateNetworks: false,
      timeoutMs: 50,
      lookup: () => new Promise(() => {}),
    }).catch((e) => e);
    expect(slow.code).toBe('WEBHOOK_HOST_UNRESOLVABLE');
    for (const url of ['ftp://files.example.com/', 'javascript:alert(1)', 'not a url', 'https://user:pw@hooks.example.com/', `https://a.example.com/${'x'.repeat(2048)}`]) {
      const e = await checkWebhookUrl(url, { allowPrivateNetworks: false, lookup: fakeLookup({}) }).catch((x) => x);
      expect(e.code, url).toBe('INVALID_WEBHOOK_URL');
    }
  });

  it('judges IP literals (in any notation the URL parser accepts) without a lookup', async () => {
    const noLookup: HostLookup = async () => {
      throw new Error('must not look up an IP literal');
    };
    for (const url of ['http://127.0.0.1/', 'http://0x7f.1/', 'http://2130706433/', 'http://[::1]:8080/', 'http://[::ffff:127.0.0.1]/', 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[fd00::1]/', 'http://0.0.0.0/']) {
      const e = await checkWebhookUrl(url, { allowPrivateNetworks: false, lookup: noLookup }).catch((x) => x);
      expect(e.code, url).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    }
    expect((await checkWebhookUrl('https://93.184.215.14/hook', { allowPrivateNetworks: false, lookup: noLookup })).addresses[0].category).toBeNull();
  });

  it('resolves localhost for real (from /etc/hosts) and refuses it; allowPrivateNetworks lifts the check', async () => {
    const e = await checkWebhookUrl('http://localhost:9/hook', { allowPrivateNetworks: false }).catch((x) => x);
    expect(e.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    expect(e.details.addresses[0].category).toBe('loopback');
    const dotted = await checkWebhookUrl('http://localhost.:9/hook', { allowPrivateNetworks: false }).catch((x) => x);
    expect(dotted.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    const ok = await checkWebhookUrl('http://localhost:9/hook', { allowPrivateNetworks: true });
    expect(ok.url.port).toBe('9');
  });
});

// ---------------------------------------------------------------------------
// Unit: connectors
// ---------------------------------------------------------------------------
const edition = (over: Partial<PublishableEdition> = {}): PublishableEdition => ({
  id: '4a6f1d7e-5a0b-4a4f-9f65-4c7c2f6b9a01',
  rootId: '5b7f2e8f-6b1c-4b5f-8f76-5d8d3f7c0b12',
  attempt: 1,
  caption: 'Hello',
  settings: {},
  media: [],
  thread: [],
  scheduledAt: null,
  ...over,
});
const sandboxIntegration = (behavior: string, over: Partial<IntegrationRef> = {}): IntegrationRef => ({
  id: '9c1e4a57-2f0e-4b9a-8d1f-0b2a3c4d5e6f',
  connector: 'sandbox',
  platform: 'x',
  name: 'X',
  username: 'acme',
  settings: { behavior },
  ...over,
});

describe('sandbox connector (unit)', () => {
  const sandbox = createSandboxConnector();

  it('publishes per behavior, deterministically', async () => {
    const ok1 = await sandbox.publish(sandboxIntegration('succeed'), edition());
    const ok2 = await sandbox.publish(sandboxIntegration('succeed'), edition({ attempt: 2 }));
    expect(ok1.state).toBe('published');
    expect(ok2).toEqual(ok1);
    if (ok1.state === 'published') expect(ok1.permalink).toMatch(/^https:\/\/sandbox\.pressroom\.invalid\/x\/acme\/posts\/sb-x-/);
    expect(await sandbox.publish(sandboxIntegration('fail'), edition())).toMatchObject({ state: 'failed', permanent: true });
    expect(await sandbox.publish(sandboxIntegration('unknown'), edition())).toMatchObject({ state: 'unknown' });
    expect(await sandbox.publish(sandboxIntegration('transient-then-succeed'), edition())).toMatchObject({ state: 'failed', permanent: false });
    expect(await sandbox.publish(sandboxIntegration('transient-then-succeed'), edition({ attempt: 2 }))).toMatchObject({ state: 'published' });
    // No behavior set: succeed.
    expect((await sandbox.publish(sandboxIntegration('succeed', { settings: {} }), edition())).state).toBe('published');
  });

  it('base URL is configurable (as real platform connectors will be)', async () => {
    const local = createSandboxConnector({ baseUrl: 'http://127.0.0.1:9999/' });
    const r = await local.publish(sandboxIntegration('succeed'), edition());
    expect(r.state === 'published' && r.permalink).toMatch(/^http:\/\/127\.0\.0\.1:9999\/x\/acme\/posts\//);
  });

  it('lists boards (fixed per integration) and YouTube categories; refuses what the platform lacks', async () => {
    const caps = { canPublishArticles: false, boards: true, videoCategories: false, threads: false, editPublishedCaption: false };
    const pin = sandboxIntegration('succeed', { platform: 'pinterest', capabilities: caps });
    const boards = await sandbox.listBoards(pin);
    expect(boards.length).toBeGreaterThanOrEqual(3);
    expect(boards).toEqual(sandboxBoards(pin.id));
    expect(await sandbox.listBoards(pin)).toEqual(boards);
    expect(await sandbox.listBoards({ ...pin, id: '00000000-0000-4000-8000-000000000001' })).not.toEqual(boards);
    await expect(sandbox.listVideoCategories(pin)).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
    const yt = await sandbox.listVideoCategories(sandboxIntegration('succeed', { platform: 'youtube' }));
    expect(yt).toContainEqual({ id: '22', name: 'People & Blogs' });
    expect(yt).toContainEqual({ id: '28', name: 'Science & Technology' });
  });

  it('drafts, caption edits and metrics', async () => {
    const x = sandboxIntegration('succeed', { capabilities: { canPublishArticles: true, boards: false, videoCategories: false, threads: true, editPublishedCaption: false } });
    const d1 = await sandbox.createDraft(x, { contentId: 'c1', title: 'T', bodyHtml: '<p>b</p>', cover: null, images: [] });
    const d2 = await sandbox.createDraft(x, { contentId: 'c1', title: 'T', bodyHtml: '<p>b</p>', cover: null, images: [] });
    expect(d2).toEqual(d1);
    await expect(sandbox.editPublishedCaption(x, { platformPostId: 'p', caption: 'c', attempt: 1 })).rejects.toMatchObject({ code: 'NOT_SUPPORTED' });
    const m = await sandbox.fetchMetrics(x, { platformPostId: 'p' });
    expect(m?.impressions).toBeGreaterThanOrEqual(100);
    expect((await sandbox.fetchMetrics(x, { platformPostId: 'p' }))?.likes).toBe(m?.likes);
  });
});

// A webhook receiver on 127.0.0.1 that records what it got and answers as told.
interface Receiver {
  url: string;
  got: { headers: IncomingMessage['headers']; body: string }[];
  answer: { status: number; body?: unknown; delayMs?: number };
  close(): Promise<void>;
}
async function startReceiver(): Promise<Receiver> {
  const r: Receiver = { url: '', got: [], answer: { status: 200, body: {} }, close: async () => {} };
  const srv: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      r.got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const { status, body, delayMs } = r.answer;
      setTimeout(() => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body === undefined ? '' : JSON.stringify(body));
      }, delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
  r.close = async () => {
    srv.closeAllConnections();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  };
  return r;
}

describe('webhook connector (unit, receiver on 127.0.0.1)', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => receiver?.close());
  const secret = 'a-long-random-signing-secret';
  const hook = (over: Partial<IntegrationRef> = {}): IntegrationRef => ({
    id: '1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b',
    connector: 'webhook',
    platform: 'linkedin',
    name: 'Acme on LinkedIn',
    username: null,
    settings: {},
    webhookUrl: receiver.url,
    webhookSecret: secret,
    ...over,
  });

  it('signs each POST; published with the receiver ids; same Idempotency-Key for the same attempt', async () => {
    const connector = createWebhookConnector({ timeoutMs: 2000, allowPrivateNetworks: true });
    receiver.answer = { status: 200, body: { platformPostId: 'li-123', permalink: 'https://www.linkedin.com/feed/update/li-123' } };
    receiver.got = [];
    const r = await connector.publish(hook(), edition());
    expect(r).toEqual({ state: 'published', platformPostId: 'li-123', permalink: 'https://www.linkedin.com/feed/update/li-123' });
    const got = receiver.got[0];
    expect(got.headers['x-pressroom-event']).toBe('content.publish');
    expect(got.headers['idempotency-key']).toBe(`publish:${edition().id}`);
    expect(got.headers['webhook-id']).toBe(`publish:${edition().id}`);
    const sig = { id: got.headers['webhook-id'] as string, timestamp: got.headers['webhook-timestamp'] as string, signature: got.headers['webhook-signature'] as string };
    expect(verifyWebhookSignature(secret, sig, got.body)).toBe(true);
    expect(verifyWebhookSignature('another-secret-of-16', sig, got.body)).toBe(false);
    expect(verifyWebhookSignature(secret, sig, got.body + ' ')).toBe(false);
    expect(JSON.parse(got.body)).toMatchObject({ event: 'content.publish', contentId: edition().id, integration: { id: hook().id, platform: 'linkedin' }, caption: 'Hello' });
  });

  it('standardwebhooks verifies an issued whsec_ secret as is, and a raw secret of an earlier integration with {format: raw}', async () => {
    const connector = createWebhookConnector({ timeoutMs: 2000, allowPrivateNetworks: true });
    receiver.answer = { status: 200, body: { platformPostId: 'li-9' } };
    const issued = issueWebhookSecret();
    receiver.got = [];
    await connector.publish(hook({ webhookSecret: issued }), edition());
    const got = receiver.got[0];
    expect(new Webhook(issued).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ event: 'content.publish', contentId: edition().id });
    expect(() => new Webhook(issueWebhookSecret()).verify(got.body, got.headers as Record<string, string>)).toThrow(/signature/i);
    // The raw secret (the const above) is still signed with its UTF-8 bytes.
    receiver.got = [];
    await connector.publish(hook(), edition());
    const legacy = receiver.got[0];
    expect(new Webhook(secret, { format: 'raw' }).verify(legacy.body, legacy.headers as Record<string, string>)).toMatchObject({ contentId: edition().id });
    // Without {format: 'raw'} the library cannot use it: the reason new secrets are whsec_.
    expect(() => new Webhook(secret).verify(legacy.body, legacy.headers as Record<string, string>)).toThrow();
  });

  it('maps answers: 4xx (429 too) permanent, 5xx transient, silence unknown, no listener not-sent', async () => {
    const connector = createWebhookConnector({ timeoutMs: 300, allowPrivateNetworks: true });
    receiver.answer = { status: 422, body: { error: 'caption too long' } };
    expect(await connector.publish(hook(), edition())).toEqual({ state: 'failed', permanent: true, error: 'The webhook answered HTTP 422: caption too long.' });
    receiver.answer = { status: 503 };
    expect(await connector.publish(hook(), edition())).toMatchObject({ state: 'failed', permanent: false });
    receiver.answer = { status: 429 };
    expect(await connector.publish(hook(), edition())).toMatchObject({ state: 'failed', permanent: true });
    receiver.answer = { status: 200, delayMs: 1000 };
    expect(await connector.publish(hook(), edition())).toMatchObject({ state: 'unknown' });
    receiver.answer = { status: 204 };
    expect(await connector.publish(hook(), edition())).toEqual({ state: 'published', platformPostId: `webhook-${edition().id}`, permalink: null });
    // A closed port on 127.0.0.1: refused before anything was sent.
    const closed = await startReceiver();
    const deadUrl = closed.url;
    await closed.close();
    expect(await connector.publish(hook({ webhookUrl: deadUrl }), edition())).toMatchObject({ state: 'failed', permanent: false });
  });

  it('re-checks the address at delivery: private targets are refused unless allowed, without a connection', async () => {
    receiver.got = [];
    const strict = await deliverWebhook({ url: receiver.url, secret }, 'content.publish', {}, { timeoutMs: 1000, allowPrivateNetworks: false });
    expect(strict).toMatchObject({ kind: 'not-sent', permanent: true });
    const byName = await deliverWebhook({ url: receiver.url.replace('127.0.0.1', 'localhost'), secret }, 'content.publish', {}, { timeoutMs: 1000, allowPrivateNetworks: false });
    expect(byName).toMatchObject({ kind: 'not-sent', permanent: true });
    expect(receiver.got).toHaveLength(0);
    const connector = createWebhookConnector({ timeoutMs: 1000, allowPrivateNetworks: false });
    expect(await connector.publish(hook(), edition())).toMatchObject({ state: 'failed', permanent: true });
    expect(receiver.got).toHaveLength(0);
  });

  it('drafts, caption edits, lists; refuses without the secret', async () => {
    const connector = createWebhookConnector({ timeoutMs: 2000, allowPrivateNetworks: true });
    receiver.answer = { status: 201, body: { articleId: 'art-1', draftUrl: 'https://x.com/compose/articles/edit/art-1' } };
    expect(await connector.createDraft(hook({ platform: 'x' }), { contentId: 'c', title: 't', bodyHtml: '<p>x</p>', cover: null, images: [] })).toEqual({
      articleId: 'art-1',
      draftUrl: 'https://x.com/compose/articles/edit/art-1',
    });
    receiver.answer = { status: 200, body: {} };
    await expect(connector.createDraft(hook({ platform: 'x' }), { contentId: 'c', title: 't', bodyHtml: '', cover: null, images: [] })).rejects.toMatchObject({ code: 'UPSTREAM_ERROR' });
    expect(await connector.editPublishedCaption(hook(), { platformPostId: 'li-1', caption: 'new', attempt: 1 })).toEqual({ state: 'updated' });
    expect(await connector.fetchMetrics(hook(), { platformPostId: 'li-1' })).toBeNull();
    expect(await connector.listBoards(hook({ platform: 'pinterest', settings: { boards: [{ id: 'b1', name: 'Recipes' }] } }))).toEqual([{ id: 'b1', name: 'Recipes' }]);
    expect(await connector.listVideoCategories(hook({ platform: 'youtube' }))).toContainEqual({ id: '10', name: 'Music' });
    await expect(connector.publish(hook({ webhookSecret: null }), edition())).rejects.toMatchObject({ code: 'MISSING_SECRET' });
  });

  it('the registry serves its connectors by name and refuses others', () => {
    const reg = createConnectorRegistry({ timeoutMs: 1000, allowPrivateNetworks: false });
    expect(reg.names()).toEqual(['sandbox', 'webhook', 'mastodon', 'x', 'bluesky', 'linkedin']);
    expect(reg.get('sandbox').name).toBe('sandbox');
    expect(() => reg.get('oauth-x')).toThrow(/No connector named oauth-x/);
  });
});

// ---------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------
let server: TestServer;
let open: TestServer; // WEBHOOK_ALLOW_PRIVATE_NETWORKS=true
let api: ReturnType<typeof client>;
let openApi: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('integrations');
  open = await startTestServer('integrations_open', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
  openApi = client(open);
});
afterAll(async () => {
  await server?.close();
  await open?.close();
});

/** Inserts a content root and one edition as the superuser (content routes are another area). */
async function insertEdition(s: TestServer, ws: { organizationId: string; workspaceId: string }, integrationId: string, status: string, scheduledAt: string | null) {
  const c = s.owner;
  await c.query('begin');
  try {
    // Fixture rows skip the content area's own triggers (state machine, jobs, versions).
    await c.query('set local session_replication_role = replica');
    const root = await c.query(`insert into app.content_roots (organization_id, workspace_id, caption) values ($1, $2, 'fixture') returning id`, [
      ws.organizationId,
      ws.workspaceId,
    ]);
    const item = await c.query(
      `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at) values ($1, $2, $3, $4, $5, $6) returning id`,
      [ws.organizationId, ws.workspaceId, root.rows[0].id, integrationId, status, scheduledAt],
    );
    await c.query('commit');
    return { rootId: root.rows[0].id as string, id: item.rows[0].id as string };
  } catch (e) {
    await c.query('rollback');
    throw e;
  }
}

describe('integrations over HTTP', () => {
  it('connects a sandbox account on every platform, with the platform rules on detail', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const made: Record<string, any> = {};
    for (const platform of PLATFORMS) {
      const r = await api.post(base, { connector: 'sandbox', platform, name: `Acme on ${platform}` }, { token: owner.token });
      expect(r.status, platform).toBe(201);
      made[platform] = r.body.data;
      expect(r.body.data).toMatchObject({ connector: 'sandbox', platform, name: `Acme on ${platform}`, username: null, status: 'active', settings: { behavior: 'succeed' }, webhookUrl: null });
      expect(r.body.data.content.canPublishArticles).toBe(platform === 'x');
    }
    const list = await api.get(base, { token: owner.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((i: any) => i.platform)).toEqual(PLATFORMS);
    expect(Object.keys(list.body.data[0]).sort()).toEqual([
      'accountId', 'connectionReason', 'connectionState', 'connector', 'content', 'createdAt', 'credentialsExpireAt', 'id', 'instanceUrl', 'name',
      'platform', 'status', 'updatedAt', 'username',
    ]);
    // A sandbox account has no platform account: connected, with nothing to expire.
    expect(list.body.data[0]).toMatchObject({ accountId: null, instanceUrl: null, connectionState: 'ok', connectionReason: null, credentialsExpireAt: null });

    const x = await api.get(`${base}/${made.x.id}`, { token: owner.token });
    expect(x.body.data.rules.caption.maxLength).toBe(280);
    expect(x.body.data.rules.media).toMatchObject({ maxItems: 4, kinds: ['image', 'video', 'gif'], requiresMedia: false });
    expect(x.body.data.capabilities).toEqual({ canPublishArticles: true, boards: false, videoCategories: false, threads: true, editPublishedCaption: false });
    const pin = await api.get(`${base}/${made.pinterest.id}`, { token: owner.token });
    expect(pin.body.data.rules.requiredSettings.map((s: any) => [s.name, s.optional])).toEqual([
      ['boardId', false],
      ['title', true],
    ]);
    expect(pin.body.data.rules.requiredSettings[1].maxLength).toBe(100);
    const yt = await api.get(`${base}/${made.youtube.id}`, { token: owner.token });
    expect(yt.body.data.rules.requiredSettings.find((s: any) => s.name === 'privacy').enum).toEqual(['public', 'unlisted', 'private']);
    expect(yt.body.data.rules.media.kinds).toEqual(['video']);
    const ig = await api.get(`${base}/${made.instagram.id}`, { token: owner.token });
    expect(ig.body.data.rules).toMatchObject({ caption: { maxLength: 2200 }, media: { minItems: 1, requiresMedia: true } });
  });

  it('lists boards for board platforms and video categories for video platforms; others 404 NOT_SUPPORTED', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const pin = (await api.post(base, { connector: 'sandbox', platform: 'pinterest', name: 'Pins' }, { token: owner.token })).body.data;
    const yt = (await api.post(base, { connector: 'sandbox', platform: 'youtube', name: 'Tube' }, { token: owner.token })).body.data;
    const x = (await api.post(base, { connector: 'sandbox', platform: 'x', name: 'X' }, { token: owner.token })).body.data;
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });

    const boards = await api.get(`${base}/${pin.id}/boards`, { token: viewer.key });
    expect(boards.status).toBe(200);
    expect(boards.body.meta).toBeNull();
    expect(boards.body.data).toEqual(sandboxBoards(pin.id));
    expect((await api.get(`${base}/${pin.id}/boards`, { token: owner.token })).body.data).toEqual(boards.body.data);
    const cats = await api.get(`${base}/${yt.id}/video-categories`, { token: viewer.key });
    expect(cats.status).toBe(200);
    expect(cats.body.data).toContainEqual({ id: '22', name: 'People & Blogs' });

    for (const [path, code] of [
      [`${base}/${x.id}/boards`, 'NOT_SUPPORTED'],
      [`${base}/${yt.id}/boards`, 'NOT_SUPPORTED'],
      [`${base}/${pin.id}/video-categories`, 'NOT_SUPPORTED'],
      [`${base}/${x.id}/video-categories`, 'NOT_SUPPORTED'],
      [`${base}/00000000-0000-4000-8000-000000000000/boards`, 'NOT_FOUND'],
    ]) {
      const r = await api.get(path, { token: owner.token });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe(code);
    }
    const ns = await api.get(`${base}/${x.id}/boards`, { token: owner.token });
    expect(ns.body.error.details.supportedPlatforms).toEqual(['pinterest']);
    expect((await api.get(`${base}/nope/boards`, { token: owner.token })).status).toBe(400);
  });

  it('only managers connect and disconnect; viewers and editors read', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const made = (await api.post(base, { connector: 'sandbox', platform: 'x', name: 'X' }, { token: owner.token })).body.data;
    for (const role of ['viewer', 'editor']) {
      const key = await createKey(api, owner.token, owner.workspaceId, { role });
      expect((await api.get(base, { token: key.key })).body.data).toHaveLength(1);
      expect((await api.get(`${base}/${made.id}`, { token: key.key })).status).toBe(200);
      const post = await api.post(base, { connector: 'sandbox', platform: 'x', name: 'Mine' }, { token: key.key });
      expect(post.status, role).toBe(403);
      expect(post.body.error.code).toBe('ROLE_REQUIRED');
      const del = await api.delete(`${base}/${made.id}`, { token: key.key });
      expect(del.status).toBe(403);
      expect(del.body.error.code).toBe('ROLE_REQUIRED');
    }
    const manager = await createKey(api, owner.token, owner.workspaceId, { role: 'manager' });
    expect((await api.post(base, { connector: 'sandbox', platform: 'bluesky', name: 'By key' }, { token: manager.key })).status).toBe(201);
  });

  it('validates the body (4xx with a code, never 500)', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const cases: [unknown, number, string, string?][] = [
      [{ connector: 'sandbox', platform: 'myspace', name: 'M' }, 400, 'VALIDATION_FAILED', 'body.platform'],
      [{ connector: 'oauth', platform: 'x', name: 'M' }, 400, 'VALIDATION_FAILED', 'body.connector'],
      [{ connector: 'sandbox', platform: 'x' }, 400, 'VALIDATION_FAILED', 'body.name'],
      [{ connector: 'sandbox', platform: 'x', name: ' ' }, 400, 'VALIDATION_FAILED', 'body.name'],
      [{ connector: 'sandbox', platform: 'x', name: 'x'.repeat(201) }, 400, 'VALIDATION_FAILED', 'body.name'],
      [{ connector: 'sandbox', platform: 'x', name: 'M', extra: true }, 400, 'VALIDATION_FAILED', 'body.extra'],
      [{ connector: 'sandbox', platform: 'x', name: 'nul\u0000' }, 400, 'VALIDATION_FAILED', 'body.name'],
      [{ connector: 'sandbox', platform: 'x', name: 'M', username: 'nul\u0000' }, 400, 'VALIDATION_FAILED', 'body.username'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/\u0000', secret: WHSEC }, 400, 'VALIDATION_FAILED', 'body.url'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: `${WHSEC}\u0000` }, 400, 'VALIDATION_FAILED', 'body.secret'],
      [{ connector: 'sandbox', platform: 'x', name: 'M', settings: { behavior: 'explode' } }, 400, 'VALIDATION_FAILED', 'body.settings.behavior'],
      [{ connector: 'sandbox', platform: 'x', name: 'M', settings: { other: 1 } }, 400, 'VALIDATION_FAILED', 'body.settings.other'],
      [{ connector: 'sandbox', platform: 'pinterest', name: 'M', settings: { boards: [{ id: 'b', name: 'B' }] } }, 400, 'INVALID_SETTINGS'],
      [{ connector: 'sandbox', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: WHSEC }, 400, 'VALIDATION_FAILED', 'body.url'],
      [{ connector: 'webhook', platform: 'x', name: 'M', secret: WHSEC }, 400, 'VALIDATION_FAILED', 'body.url'],
      // A new secret must be a Standard Webhooks one: whsec_ + base64 of 24 to 64 bytes.
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: 'a-long-random-signing-secret' }, 400, 'VALIDATION_FAILED', 'body.secret'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: `whsec_${Buffer.alloc(23, 1).toString('base64')}` }, 400, 'VALIDATION_FAILED', 'body.secret'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: `whsec_${Buffer.alloc(65, 1).toString('base64')}` }, 400, 'VALIDATION_FAILED', 'body.secret'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: 'short' }, 400, 'VALIDATION_FAILED', 'body.secret'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'ftp://93.184.215.14/', secret: WHSEC }, 400, 'VALIDATION_FAILED', 'body.url'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://u:p@93.184.215.14/', secret: WHSEC }, 400, 'INVALID_WEBHOOK_URL'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: `https://93.184.215.14/${'a'.repeat(2040)}`, secret: WHSEC }, 400, 'VALIDATION_FAILED', 'body.url'],
      [{ connector: 'webhook', platform: 'x', name: 'M', url: 'https://93.184.215.14/', secret: WHSEC, settings: { behavior: 'fail' } }, 400, 'INVALID_SETTINGS'],
    ];
    for (const [body, status, code, field] of cases) {
      const r = await api.post(base, body, { token: owner.token });
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body.error.code, JSON.stringify(body)).toBe(code);
      if (field) expect(r.body.error.details.fields.map((f: any) => f.field), JSON.stringify(body)).toContain(field);
    }
    // Nothing was stored by any of them.
    expect((await api.get(base, { token: owner.token })).body.data).toEqual([]);
  });

  it('refuses webhook URLs that resolve to loopback, private and other non-public ranges', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const urls = [
      'http://localhost:8080/hook',
      'http://127.0.0.1/hook',
      'http://127.1/hook',
      'http://0x7f000001/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:a00:1]/hook',
      'http://10.0.0.1/hook',
      'http://172.16.5.4/hook',
      'http://192.168.0.10/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://224.0.0.1/hook',
      'http://0.0.0.0/hook',
      'http://[fe80::1]/hook',
      'http://[fd00::1]/hook',
      'http://[ff02::1]/hook',
    ];
    for (const url of urls) {
      const r = await api.post(base, { connector: 'webhook', platform: 'linkedin', name: 'Hook', url, secret: WHSEC }, { token: owner.token });
      expect(r.status, url).toBe(400);
      expect(r.body.error.code, url).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
      expect(r.body.error.details.addresses.length, url).toBeGreaterThan(0);
    }
    expect((await api.get(base, { token: owner.token })).body.data).toEqual([]);
  });

  it('with WEBHOOK_ALLOW_PRIVATE_NETWORKS a local webhook connects; the secret is stored and never shown', async () => {
    const owner = await signup(openApi);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const secret = `whsec_${Buffer.alloc(48, 9).toString('base64')}`;
    const r = await openApi.post(
      base,
      { connector: 'webhook', platform: 'pinterest', name: 'Local pins', username: 'acme', url: 'http://127.0.0.1:9/hook', secret, settings: { boards: [{ id: 'b-1', name: 'Recipes' }] } },
      { token: owner.token },
    );
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ connector: 'webhook', platform: 'pinterest', username: 'acme', webhookUrl: 'http://127.0.0.1:9/hook', settings: { boards: [{ id: 'b-1', name: 'Recipes' }] } });
    const id = r.body.data.id;
    const responses = [r, await openApi.get(base, { token: owner.token }), await openApi.get(`${base}/${id}`, { token: owner.token })];
    for (const res of responses) expect(JSON.stringify(res.body)).not.toContain(secret);
    expect((await openApi.get(`${base}/${id}/boards`, { token: owner.token })).body.data).toEqual([{ id: 'b-1', name: 'Recipes' }]);
    // Stored sealed with the credential vault (server/platforms/webhook-secret.ts), never in the clear.
    const row = await open.owner.query('select webhook_secret from app.integrations where id = $1', [id]);
    expect(row.rows[0].webhook_secret).toMatch(/^prv1:/);
    expect(row.rows[0].webhook_secret).not.toContain(secret.slice(6, 30));
    expect(openWebhookSecret(vaultOf(open.config), row.rows[0].webhook_secret)).toBe(secret);
    // The request role cannot read the secret column at all.
    const priv = await open.owner.query(`select has_column_privilege('pressroom_request', 'app.integrations', 'webhook_secret', 'SELECT') as p`);
    expect(priv.rows[0].p).toBe(false);
    // localhost by name is allowed there too.
    expect((await openApi.post(base, { connector: 'webhook', platform: 'x', name: 'By name', url: 'http://localhost:9/h', secret }, { token: owner.token })).status).toBe(201);
  });

  it('issues a Standard Webhooks secret when none is given: whsec_ + base64 of 32 bytes, shown once, stored', async () => {
    const owner = await signup(openApi);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const r = await openApi.post(base, { connector: 'webhook', platform: 'linkedin', name: 'Issued', url: 'http://127.0.0.1:9/hook' }, { token: owner.token });
    expect(r.status).toBe(201);
    const issued: string = r.body.data.secret;
    expect(issued).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(Buffer.from(issued.slice(6), 'base64')).toHaveLength(32);
    const row = await open.owner.query('select webhook_secret from app.integrations where id = $1', [r.body.data.id]);
    expect(row.rows[0].webhook_secret).toMatch(/^prv1:/);
    expect(openWebhookSecret(vaultOf(open.config), row.rows[0].webhook_secret)).toBe(issued);
    // Shown once: neither the detail nor the list carries it.
    const detail = await openApi.get(`${base}/${r.body.data.id}`, { token: owner.token });
    expect(detail.body.data).not.toHaveProperty('secret');
    expect(JSON.stringify(detail.body)).not.toContain(issued);
    expect(JSON.stringify((await openApi.get(base, { token: owner.token })).body)).not.toContain(issued);
    // Each integration gets its own; a given secret is not echoed; a sandbox gets none.
    const second = await openApi.post(base, { connector: 'webhook', platform: 'x', name: 'Issued 2', url: 'http://127.0.0.1:9/hook' }, { token: owner.token });
    expect(second.body.data.secret).toMatch(/^whsec_/);
    expect(second.body.data.secret).not.toBe(issued);
    const given = await openApi.post(base, { connector: 'webhook', platform: 'x', name: 'Given', url: 'http://127.0.0.1:9/hook', secret: WHSEC }, { token: owner.token });
    expect(given.status).toBe(201);
    expect(given.body.data).not.toHaveProperty('secret');
    const sandbox = await openApi.post(base, { connector: 'sandbox', platform: 'x', name: 'S' }, { token: owner.token });
    expect(sandbox.body.data).not.toHaveProperty('secret');
  });

  it('disconnect: refused while editions are scheduled (listing them), then a soft delete answering 404 everywhere', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const pin = (await api.post(base, { connector: 'sandbox', platform: 'pinterest', name: 'Pins' }, { token: owner.token })).body.data;
    const other = (await api.post(base, { connector: 'sandbox', platform: 'x', name: 'X' }, { token: owner.token })).body.data;
    const soon = new Date(Date.now() + 86_400_000).toISOString();
    const s1 = await insertEdition(server, owner, pin.id, 'scheduled', soon);
    const s2 = await insertEdition(server, owner, pin.id, 'scheduled', new Date(Date.now() + 3_600_000).toISOString());
    await insertEdition(server, owner, pin.id, 'draft', null);
    await insertEdition(server, owner, pin.id, 'sent', null);
    await insertEdition(server, owner, other.id, 'scheduled', soon);

    const refused = await api.delete(`${base}/${pin.id}`, { token: owner.token });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('INTEGRATION_HAS_SCHEDULED_CONTENT');
    expect(refused.body.error.details).toMatchObject({ id: pin.id, count: 2, contentIds: [s2.id, s1.id] });

    await server.owner.query(`update app.content_items set deleted_at = now() where id = $1`, [s1.id]);
    await server.owner.query(`update app.content_items set status = 'draft', scheduled_at = null where id = $1`, [s2.id]);
    const del = await api.delete(`${base}/${pin.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: pin.id, deleted: true });

    for (const path of [`${base}/${pin.id}`, `${base}/${pin.id}/boards`]) {
      const r = await api.get(path, { token: owner.token });
      expect(r.status, path).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
    const again = await api.delete(`${base}/${pin.id}`, { token: owner.token });
    expect(again.status).toBe(404);
    expect((await api.get(base, { token: owner.token })).body.data.map((i: any) => i.id)).toEqual([other.id]);
    const row = await server.owner.query('select deleted_at, status from app.integrations where id = $1', [pin.id]);
    expect(row.rows[0].deleted_at).not.toBeNull();
    expect(row.rows[0].status).toBe('disconnected');

    // The database keeps content off a deleted integration, whoever writes.
    const root = await server.owner.query(`insert into app.content_roots (organization_id, workspace_id) values ($1, $2) returning id`, [owner.organizationId, owner.workspaceId]);
    const add = await server.owner
      .query(`insert into app.content_items (organization_id, workspace_id, root_id, integration_id) values ($1, $2, $3, $4)`, [owner.organizationId, owner.workspaceId, root.rows[0].id, pin.id])
      .catch((e) => e);
    expect(add.code).toBe('PT409');
    expect(add.detail).toBe('INTEGRATION_DELETED');
    const resched = await server.owner.query(`update app.content_items set status = 'scheduled', scheduled_at = now() + interval '1 day' where id = $1`, [s2.id]).catch((e) => e);
    expect(resched.code).toBe('PT409');
    expect(resched.detail).toBe('INTEGRATION_DELETED');
  });

  it('another workspace sees nothing: 404 by id, 403 for another organization', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const made = (await api.post(base, { connector: 'sandbox', platform: 'pinterest', name: 'Pins' }, { token: owner.token })).body.data;
    const second = await api.post('/v1/workspaces', { name: 'Second' }, { token: owner.token });
    const there = `/v1/workspaces/${second.body.data.id}/integrations`;
    expect((await api.get(there, { token: owner.token })).body.data).toEqual([]);
    expect((await api.get(`${there}/${made.id}`, { token: owner.token })).status).toBe(404);
    expect((await api.get(`${there}/${made.id}/boards`, { token: owner.token })).status).toBe(404);
    expect((await api.delete(`${there}/${made.id}`, { token: owner.token })).status).toBe(404);
    const stranger = await signup(api);
    const r = await api.get(`${base}/${made.id}`, { token: stranger.token });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('WORKSPACE_FORBIDDEN');
    // An edition of the second workspace cannot point at the first workspace's integration.
    const root = await server.owner.query(`insert into app.content_roots (organization_id, workspace_id) values ($1, $2) returning id`, [owner.organizationId, second.body.data.id]);
    const cross = await server.owner
      .query(`insert into app.content_items (organization_id, workspace_id, root_id, integration_id) values ($1, $2, $3, $4)`, [owner.organizationId, second.body.data.id, root.rows[0].id, made.id])
      .catch((e) => e);
    expect(cross.code).toBe('PT404');
    expect(cross.detail).toBe('INTEGRATION_NOT_FOUND');
  });

  it('replays a connect with the same Idempotency-Key', async () => {
    const owner = await signup(api);
    const base = `/v1/workspaces/${owner.workspaceId}/integrations`;
    const body = { connector: 'sandbox', platform: 'mastodon', name: 'Toots', settings: { behavior: 'transient-then-succeed' } };
    const first = await api.post(base, body, { token: owner.token, headers: { 'idempotency-key': 'connect-1' } });
    const replay = await api.post(base, body, { token: owner.token, headers: { 'idempotency-key': 'connect-1' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.id).toBe(first.body.data.id);
    expect((await api.get(base, { token: owner.token })).body.data).toHaveLength(1);
  });

  it('the app is built with one connector registry for its configuration', () => {
    const reg = server.deps.connectors;
    expect(reg.names()).toEqual(['sandbox', 'webhook', 'mastodon', 'x', 'bluesky', 'linkedin']);
    expect(reg.get('webhook').name).toBe('webhook');
  });
});
