// The server-side request forgery guard: which addresses an outgoing call
// (webhook deliveries today, platform APIs later) must never reach, the
// check of a URL before it is stored, and a DNS lookup for outgoing
// connections that refuses such addresses at connect time, so the address
// connected to is the address checked (server/platforms/webhook.ts explains
// why both checks exist). Loopback, private, link-local, CGNAT, multicast,
// unspecified and otherwise reserved addresses are refused, IPv4 and IPv6
// alike; every IPv6 form that embeds an IPv4 address (IPv4-mapped,
// IPv4-translated, IPv4-compatible, NAT64, 6to4, Teredo: embeddedIPv4) is
// judged by that IPv4 address or refused whole, and IPv6 outside global
// unicast 2000::/3 is refused. WEBHOOK_ALLOW_PRIVATE_NETWORKS=true (README.md)
// lifts the checks for local development.
import { lookup as dnsLookupCb, type LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

// ---------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------

export type AddressCategory = 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'unspecified' | 'reserved';

export function parseIPv4(text: string): number[] | null {
  if (isIP(text) !== 4) return null;
  return text.split('.').map(Number);
}

/** The 16 bytes of an IPv6 address (zone id ignored), or null. */
export function parseIPv6(text: string): number[] | null {
  const addr = text.replace(/^\[|\]$/g, '').split('%')[0];
  if (isIP(addr) !== 6) return null;
  let head = addr;
  let tailV4: number[] = [];
  const lastColon = addr.lastIndexOf(':');
  if (addr.slice(lastColon + 1).includes('.')) {
    const v4 = parseIPv4(addr.slice(lastColon + 1));
    if (!v4) return null;
    tailV4 = v4;
    head = addr.slice(0, lastColon + 1);
    // "::1.2.3.4" leaves "::", "a::b:1.2.3.4" leaves "a::b:" (drop the lone trailing colon)
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsWanted = 8 - tailV4.length / 2;
  const [left, right] = head.includes('::') ? head.split('::') : [head, null];
  const l = left ? left.split(':').filter((g) => g !== '') : [];
  const r = right ? right.split(':').filter((g) => g !== '') : [];
  const fill = right === null ? 0 : groupsWanted - l.length - r.length;
  if (fill < 0) return null;
  const groups = [...l, ...Array(fill).fill('0'), ...r];
  if (groups.length !== groupsWanted) return null;
  const bytes: number[] = [];
  for (const g of groups) {
    const v = parseInt(g, 16);
    if (!/^[0-9a-f]{1,4}$/i.test(g) || Number.isNaN(v)) return null;
    bytes.push(v >> 8, v & 0xff);
  }
  return [...bytes, ...tailV4];
}

function classifyV4([a, b, c]: number[]): AddressCategory | null {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8 ("this network"; 0.0.0.0 reaches the local host)
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved'; // 240.0.0.0/4 and the broadcast address
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF assignments, TEST-NET-1
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if (a === 198 && b === 51 && c === 100) return 'reserved'; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return 'reserved'; // TEST-NET-3
  return null;
}

/** An IPv6 form that carries an IPv4 address: its name and the IPv4 bytes, or why it is refused whole. */
export interface EmbeddedIPv4 {
  form: 'ipv4-mapped' | 'ipv4-translated' | 'ipv4-compatible' | 'nat64' | 'nat64-local' | '6to4' | 'teredo';
  /** The IPv4 address it leads to, when the form says where it is. */
  v4: number[] | null;
}

/**
 * The IPv4 address an IPv6 address embeds, if it is one of the forms that do
 * (a host or a translator on the way reaches that IPv4 address):
 * - ::ffff:0:0/96, IPv4-mapped (RFC 4291 2.5.5.2): ::ffff:a.b.c.d
 * - ::ffff:0:0:0/96, IPv4-translated (RFC 2765 2.1): ::ffff:0:a.b.c.d
 * - ::/96, IPv4-compatible (RFC 4291 2.5.5.1, deprecated): ::a.b.c.d
 * - 64:ff9b::/96, NAT64 well-known prefix (RFC 6052 2.1)
 * - 64:ff9b:1::/48, NAT64 local-use prefix (RFC 8215): the IPv4 address sits
 *   where the network's own prefix length puts it (RFC 6052 2.2), which the
 *   address does not tell, so it is not read (v4 null: refused whole)
 * - 2002::/16, 6to4 (RFC 3056): the IPv4 address in bits 16-47
 * - 2001::/32, Teredo (RFC 4380): a server and an obfuscated client IPv4
 *   address, reached through relays (v4 null: refused whole)
 */
export function embeddedIPv4(x: number[]): EmbeddedIPv4 | null {
  const zero = (from: number, to: number) => x.slice(from, to).every((v) => v === 0);
  if (zero(0, 10) && x[10] === 0xff && x[11] === 0xff) return { form: 'ipv4-mapped', v4: x.slice(12) };
  if (zero(0, 8) && x[8] === 0xff && x[9] === 0xff && zero(10, 12)) return { form: 'ipv4-translated', v4: x.slice(12) };
  if (zero(0, 12)) return { form: 'ipv4-compatible', v4: x.slice(12) };
  if (x[0] === 0x00 && x[1] === 0x64 && x[2] === 0xff && x[3] === 0x9b) {
    if (zero(4, 12)) return { form: 'nat64', v4: x.slice(12) };
    if (x[4] === 0x00 && x[5] === 0x01) return { form: 'nat64-local', v4: null };
  }
  if (x[0] === 0x20 && x[1] === 0x02) return { form: '6to4', v4: x.slice(2, 6) };
  if (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0x00 && x[3] === 0x00) return { form: 'teredo', v4: null };
  return null;
}

function classifyV6(x: number[]): AddressCategory | null {
  const zeroUpTo = (n: number) => x.slice(0, n).every((v) => v === 0);
  if (zeroUpTo(16)) return 'unspecified';
  if (zeroUpTo(15) && x[15] === 1) return 'loopback';
  // Every form that embeds an IPv4 address is judged by that address, or refused whole.
  const embedded = embeddedIPv4(x);
  if (embedded) {
    if (!embedded.v4) return embedded.form === 'nat64-local' ? 'private' : 'reserved';
    const category = classifyV4(embedded.v4);
    // IPv4-compatible addresses are deprecated and routed nowhere: refused even when public.
    return category ?? (embedded.form === 'ipv4-compatible' ? 'reserved' : null);
  }
  if ((x[0] & 0xfe) === 0xfc) return 'private'; // fc00::/7 unique local
  if (x[0] === 0xfe && (x[1] & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (x[0] === 0xfe && (x[1] & 0xc0) === 0xc0) return 'private'; // fec0::/10 site-local (deprecated)
  if (x[0] === 0xff) return 'multicast';
  // Global unicast is 2000::/3 (RFC 4291 2.4); the rest of the space is
  // reserved by the IETF or unassigned (::/8 beyond the forms above, 100::/64
  // discard, 64:ff9b::/32 outside its two NAT64 prefixes, ...).
  if ((x[0] & 0xe0) !== 0x20) return 'reserved';
  if (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0x0d && x[3] === 0xb8) return 'reserved'; // 2001:db8::/32 documentation
  if (x[0] === 0x3f && x[1] === 0xff && (x[2] & 0xf0) === 0x00) return 'reserved'; // 3fff::/20 documentation (RFC 9637)
  // 2001::/23, IETF protocol assignments (Teredo above, ORCHID, benchmarking 2001:2::/48, ...): no webhook lives there.
  if (x[0] === 0x20 && x[1] === 0x01 && (x[2] & 0xfe) === 0x00) return 'reserved';
  return null;
}

/** Why an address must not be reached from the server, or null for a public unicast address. */
export function classifyAddress(address: string): AddressCategory | null {
  const v4 = parseIPv4(address);
  if (v4) return classifyV4(v4);
  const v6 = parseIPv6(address);
  if (v6) return classifyV6(v6);
  throw new TypeError(`not an IP address: ${address}`);
}

// ---------------------------------------------------------------------------
// URL check
// ---------------------------------------------------------------------------

export type WebhookUrlErrorCode = 'INVALID_WEBHOOK_URL' | 'WEBHOOK_URL_PRIVATE_NETWORK' | 'WEBHOOK_HOST_UNRESOLVABLE';

export class WebhookUrlError extends Error {
  readonly code: WebhookUrlErrorCode;
  readonly details: Record<string, unknown>;
  constructor(code: WebhookUrlErrorCode, message: string, details: Record<string, unknown>) {
    super(message);
    this.name = 'WebhookUrlError';
    this.code = code;
    this.details = details;
  }
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
  category: AddressCategory | null;
}

export type HostLookup = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** Parses a webhook URL: http(s), a host, no credentials, at most 2048 characters. */
export function parseWebhookUrl(raw: string): URL {
  const invalid = (why: string) =>
    new WebhookUrlError('INVALID_WEBHOOK_URL', `The webhook url is not usable: ${why}.`, { field: 'url' });
  if (typeof raw !== 'string' || raw.length === 0) throw invalid('it is empty');
  if (raw.length > WEBHOOK_URL_MAX_LENGTH) throw invalid(`it is longer than ${WEBHOOK_URL_MAX_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('it is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid('only http and https URLs are allowed');
  if (url.username || url.password) throw invalid('credentials in the URL are not allowed; the secret signs each request');
  if (!url.hostname) throw invalid('it has no host');
  return url;
}

/** The host of a parsed URL without IPv6 brackets. */
export function urlHost(url: URL): string {
  // Brackets of IPv6 literals off; the root label's dot ("example.com.") off.
  return url.hostname.replace(/^\[|\]$/g, '').replace(/(?<=[^.])\.$/, '');
}

function family(address: string): 4 | 6 {
  return isIP(address) === 6 ? 6 : 4;
}

/**
 * Checks a webhook URL before it is stored: the shape, then every address
 * its host resolves to (an IP literal is its own address). Throws
 * WebhookUrlError; returns the parsed URL and the addresses seen.
 */
export async function checkWebhookUrl(
  raw: string,
  options: { allowPrivateNetworks: boolean; lookup?: HostLookup; timeoutMs?: number },
): Promise<{ url: URL; addresses: ResolvedAddress[] }> {
  const url = parseWebhookUrl(raw);
  const host = urlHost(url);
  if (options.allowPrivateNetworks) return { url, addresses: [] };
  let found: { address: string; family: number }[];
  if (isIP(host)) {
    found = [{ address: host, family: family(host) }];
  } else {
    const lookup = options.lookup ?? systemLookup;
    const timeoutMs = options.timeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    try {
      found = await Promise.race([
        lookup(host),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`lookup timed out after ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (e) {
      throw new WebhookUrlError('WEBHOOK_HOST_UNRESOLVABLE', `The webhook host ${host} could not be resolved.`, {
        field: 'url',
        host,
        reason: e instanceof Error ? e.message : String(e),
      });
    } finally {
      clearTimeout(timer);
    }
    if (found.length === 0) {
      throw new WebhookUrlError('WEBHOOK_HOST_UNRESOLVABLE', `The webhook host ${host} has no address.`, { field: 'url', host });
    }
  }
  const addresses: ResolvedAddress[] = found.map((a) => ({ address: a.address, family: family(a.address), category: classifyAddress(a.address) }));
  const refused = addresses.filter((a) => a.category !== null);
  if (refused.length > 0) {
    throw new WebhookUrlError(
      'WEBHOOK_URL_PRIVATE_NETWORK',
      `The webhook host ${host} resolves to a ${refused[0].category} address (${refused[0].address}); webhooks may only reach public addresses.`,
      { field: 'url', host, addresses: refused.map((a) => ({ address: a.address, category: a.category })) },
    );
  }
  return { url, addresses };
}

/**
 * A DNS lookup for outgoing webhook connections that refuses hosts resolving
 * to a non-public address, so the address connected to is the address checked.
 */
export function guardedLookup(allowPrivateNetworks: boolean): LookupFunction {
  return ((hostname: string, options: any, callback: any) => {
    const cb = typeof options === 'function' ? options : callback;
    const opts = typeof options === 'function' ? {} : (options ?? {});
    dnsLookupCb(hostname, { ...opts, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return cb(err);
      if (!allowPrivateNetworks) {
        const bad = addresses.find((a) => classifyAddress(a.address) !== null);
        if (bad) {
          const e = Object.assign(new Error(`${hostname} resolves to a ${classifyAddress(bad.address)} address (${bad.address})`), { code: 'EUNSAFEADDRESS' });
          return cb(e);
        }
      }
      if (opts.all) return cb(null, addresses);
      const first = addresses[0];
      return first ? cb(null, first.address, first.family) : cb(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
    });
  }) as LookupFunction;
}
