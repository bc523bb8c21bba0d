// The server-side request forgery guard (server/net/ssrf.ts) on its own:
// address classification, the URL check before a URL is stored, and the
// guarded DNS lookup that outgoing connections use, against a real local
// HTTP server on 127.0.0.1.
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, classifyAddress, embeddedIPv4, guardedLookup, parseIPv6, WebhookUrlError, type HostLookup } from '../../server/net/ssrf.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['224.0.0.1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['255.255.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd00::1', 'private'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['2002:c0a8:0101::1', 'private'],
    ['2001:db8::1', 'reserved'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(classifyAddress(address)).toBeNull();
    },
  );

  it('refuses what is not an address, and parses the IPv6 forms it judges', () => {
    expect(() => classifyAddress('localhost')).toThrow(TypeError);
    expect(parseIPv6('::ffff:1.2.3.4')?.slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect(parseIPv6('1:2:3:4:5:6:7:8:9')).toBeNull();
  });
});

describe('IPv6 forms that embed an IPv4 address', () => {
  // Each form around loopback, a private and a link-local address, and (where the form is judged by its
  // IPv4 address) a public one.
  it.each([
    // IPv4-mapped ::ffff:0:0/96
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:a00:1', 'private'],
    // IPv4-translated ::ffff:0:0:0/96 (RFC 2765)
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['0:0:0:0:ffff:0:10.1.2.3', 'private'],
    ['::ffff:0:169.254.169.254', 'link-local'],
    ['::ffff:0:0.0.0.0', 'unspecified'],
    // IPv4-compatible ::/96 (deprecated): refused even around a public address
    ['::127.0.0.1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::8.8.8.8', 'reserved'],
    // NAT64 64:ff9b::/96, and the local-use 64:ff9b:1::/48 refused whole
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b:1::7f00:1', 'private'],
    ['64:ff9b:1:abcd::8.8.8.8', 'private'],
    // 6to4 2002::/16: the IPv4 address in bits 16-47
    ['2002:7f00:1::1', 'loopback'],
    ['2002:a9fe:a9fe::', 'link-local'],
    // Teredo 2001::/32: refused whole
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
    ['2001::7f00:1', 'reserved'],
    // Outside global unicast 2000::/3
    ['64:ff9b:2::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::1:0:0:1', 'reserved'],
    ['3fff::1', 'reserved'],
  ])('%s is %s', (address, category) => {
    expect(classifyAddress(address)).toBe(category);
  });

  it.each(['::ffff:0:8.8.8.8', '::ffff:0:808:808', '64:ff9b::93.184.215.14', '2002:808:808::1', '2a00:1450:4001:80b::200e'])('%s is public', (address) => {
    expect(classifyAddress(address)).toBeNull();
  });

  it('names the form and the embedded address', () => {
    expect(embeddedIPv4(parseIPv6('::ffff:0:127.0.0.1')!)).toEqual({ form: 'ipv4-translated', v4: [127, 0, 0, 1] });
    expect(embeddedIPv4(parseIPv6('::ffff:127.0.0.1')!)).toEqual({ form: 'ipv4-mapped', v4: [127, 0, 0, 1] });
    expect(embeddedIPv4(parseIPv6('2002:c0a8:101::')!)).toEqual({ form: '6to4', v4: [192, 168, 1, 1] });
    expect(embeddedIPv4(parseIPv6('2001:0:4136:e378::1')!)).toEqual({ form: 'teredo', v4: null });
    expect(embeddedIPv4(parseIPv6('2606:4700:4700::1111')!)).toBeNull();
  });

  it('a URL with such a literal is refused by the URL check, in every notation the URL parser takes', async () => {
    const noLookup: HostLookup = async () => {
      throw new Error('no lookup expected');
    };
    for (const url of ['http://[::ffff:0:127.0.0.1]/', 'http://[::ffff:0:7f00:1]:8080/x', 'http://[0:0:0:0:ffff:0:a00:1]/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/', 'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/']) {
      const e = await checkWebhookUrl(url, { allowPrivateNetworks: false, lookup: noLookup }).catch((x) => x);
      expect(e.code, url).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    }
  });
});

describe('webhook URLs over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('ssrf');
  });
  afterAll(async () => server?.close());

  it('webhook integrations and lifecycle webhook subscriptions refuse http://[::ffff:0:127.0.0.1]/ and the other embedding forms', async () => {
    const api = client(server);
    const owner = await signup(api);
    const ws = `/v1/workspaces/${owner.workspaceId}`;
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    for (const url of ['http://[::ffff:0:127.0.0.1]/', 'http://[::ffff:0:a9fe:a9fe]/latest/meta-data/', 'http://[64:ff9b::a00:1]/', 'http://[2002:c0a8:1::1]/', 'http://[::127.0.0.1]/']) {
      const integration = await api.post(`${ws}/integrations`, { connector: 'webhook', platform: 'linkedin', name: 'Hook', url, secret }, { token: owner.token });
      expect(integration.status, url).toBe(400);
      expect(integration.body.error.code, url).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
      const subscription = await api.post(`${ws}/webhooks`, { url, events: ['content.created'] }, { token: owner.token });
      expect(subscription.status, url).toBe(400);
      expect(subscription.body.error.code, url).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    }
    expect((await api.get(`${ws}/integrations`, { token: owner.token })).body.data).toEqual([]);
    expect((await api.get(`${ws}/webhooks`, { token: owner.token })).body.data).toEqual([]);
  });
});

describe('checkWebhookUrl', () => {
  const lookup = (answers: Record<string, string[]>): HostLookup => async (host) =>
    (answers[host] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('accepts a host whose every address is public; refuses one private address among public ones', async () => {
    const ok = await checkWebhookUrl('https://hooks.example.com/in', { allowPrivateNetworks: false, lookup: lookup({ 'hooks.example.com': ['93.184.215.14'] }) });
    expect(ok.addresses).toEqual([{ address: '93.184.215.14', family: 4, category: null }]);
    const mixed = await checkWebhookUrl('https://mixed.example.com/', {
      allowPrivateNetworks: false,
      lookup: lookup({ 'mixed.example.com': ['93.184.215.14', '10.0.0.8'] }),
    }).catch((e) => e);
    expect(mixed).toBeInstanceOf(WebhookUrlError);
    expect(mixed.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    expect(mixed.details.addresses).toEqual([{ address: '10.0.0.8', category: 'private' }]);
  });

  it('judges IP literals without a lookup, and refuses shapes that are not webhook URLs', async () => {
    const noLookup: HostLookup = async () => {
      throw new Error('no lookup expected');
    };
    expect((await checkWebhookUrl('http://[::ffff:10.0.0.1]/', { allowPrivateNetworks: false, lookup: noLookup }).catch((e) => e)).code).toBe(
      'WEBHOOK_URL_PRIVATE_NETWORK',
    );
    for (const url of ['ftp://example.com/', 'https://user:pw@example.com/', 'not a url', `https://example.com/${'a'.repeat(2100)}`]) {
      expect((await checkWebhookUrl(url, { allowPrivateNetworks: false, lookup: noLookup }).catch((e) => e)).code).toBe('INVALID_WEBHOOK_URL');
    }
    expect((await checkWebhookUrl('https://nowhere.example.com/', { allowPrivateNetworks: false, lookup: lookup({}) }).catch((e) => e)).code).toBe(
      'WEBHOOK_HOST_UNRESOLVABLE',
    );
  });

  it('WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts the address check but not the shape check', async () => {
    expect((await checkWebhookUrl('http://127.0.0.1:9/hook', { allowPrivateNetworks: true })).url.port).toBe('9');
    expect((await checkWebhookUrl('gopher://127.0.0.1/', { allowPrivateNetworks: true }).catch((e) => e)).code).toBe('INVALID_WEBHOOK_URL');
  });
});

describe('guardedLookup on a real connection', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((_req, res) => res.end('reached'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  const fetchVia = (allowPrivateNetworks: boolean) =>
    new Promise<{ body?: string; error?: NodeJS.ErrnoException }>((resolve) => {
      const req = get({ host: 'localhost', port, path: '/', family: 4, lookup: guardedLookup(allowPrivateNetworks) }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve({ body }));
      });
      req.on('error', (error: NodeJS.ErrnoException) => resolve({ error }));
    });

  it('refuses to connect to a host that resolves to loopback', async () => {
    const r = await fetchVia(false);
    expect(r.body).toBeUndefined();
    expect(r.error?.code).toBe('EUNSAFEADDRESS');
    expect(r.error?.message).toMatch(/localhost resolves to a loopback address \(127\.0\.0\.1\)/);
  });

  it('connects when private networks are allowed', async () => {
    expect(await fetchVia(true)).toEqual({ body: 'reached' });
  });
});
