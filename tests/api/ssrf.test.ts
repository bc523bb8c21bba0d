// The server-side request forgery guard (server/net/ssrf.ts) on its own:
// address classification, the URL check before a URL is stored, and the
// guarded DNS lookup that outgoing connections use, against a real local
// HTTP server on 127.0.0.1.
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, classifyAddress, guardedLookup, parseIPv6, WebhookUrlError, type HostLookup } from '../../server/net/ssrf.ts';

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
