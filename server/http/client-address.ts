// The client address of a request, as the failed-credential limit and the
// anonymous routes' limits count it (api.gate_guarded, app.auth_failures;
// db/README.md): Express's req.ip, that is the peer of the socket or, with
// TRUST_PROXY, the address X-Forwarded-For names (server/app.ts sets
// `trust proxy`).
//
// The tools of /mcp call the REST API of this same process over loopback
// (server/mcp/http.ts), so for those calls the peer is the process itself.
// The MCP router therefore vouches for its caller's address in the header
// VOUCHED_CLIENT_HEADER, authenticated with HMAC-SHA-256 under a key of 32
// random bytes drawn when the process starts and never sent anywhere; the
// pipeline (server/http/pipeline.ts) takes the address from the header only
// when the MAC verifies (compared in constant time), and removes the header
// from the request either way. An outside caller cannot name an address this
// way: without the key its header is ignored and its own address counts.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';

/** The header of a loopback call from /mcp: `<address, URI-encoded>;<MAC, base64url>`. */
export const VOUCHED_CLIENT_HEADER = 'x-pressroom-mcp-client';

const KEY = randomBytes(32);
const mac = (address: string) => createHmac('sha256', KEY).update(`pressroom-mcp-client\0${address}`).digest();

/** The header value for a loopback call made on behalf of a caller at `address`. */
export function vouchFor(address: string): string {
  return `${encodeURIComponent(address)};${mac(address).toString('base64url')}`;
}

/** The address a header value vouches for, or null when it is absent, malformed or its MAC does not verify. */
function vouched(value: string | string[] | undefined): string | null {
  if (typeof value !== 'string') return null;
  const at = value.indexOf(';');
  if (at <= 0) return null;
  let address: string;
  try {
    address = decodeURIComponent(value.slice(0, at));
  } catch {
    return null;
  }
  const sent = Buffer.from(value.slice(at + 1), 'base64url');
  const expected = mac(address);
  return sent.length === expected.length && timingSafeEqual(sent, expected) ? address : null;
}

const known = new WeakMap<Request, string>();

/**
 * The address this request counts against: the one vouched for by the MCP
 * router when its header verifies, else req.ip. The header is removed from
 * the request on the first call; later calls answer the same address.
 */
export function clientAddress(req: Request): string {
  const seen = known.get(req);
  if (seen !== undefined) return seen;
  const address = vouched(req.headers[VOUCHED_CLIENT_HEADER]) ?? req.ip ?? req.socket.remoteAddress ?? 'unknown';
  delete req.headers[VOUCHED_CLIENT_HEADER];
  known.set(req, address);
  return address;
}

/** The key app.auth_failures and the anonymous routes' limits count this request under: `ip:<client address>`. */
export function clientKey(req: Request): string {
  return `ip:${clientAddress(req)}`;
}
