// AWS Signature Version 4 for S3 (and S3-compatible stores), without
// dependencies: presigned URLs (query-string authentication) and, for
// completeness and for checking against AWS's published examples, the
// Authorization header form.
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html
import { createHash, createHmac } from 'node:crypto';

export interface SigV4Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Default "s3". */
  service?: string;
  sessionToken?: string;
}

const ALGORITHM = 'AWS4-HMAC-SHA256';
export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
export const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** RFC 3986 percent-encoding: everything but A-Z a-z 0-9 - _ . ~ */
export function uriEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** An object key as a URL path: each segment encoded, slashes kept (S3 encodes once). */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(uriEncode).join('/');
}

export function amzDate(now: Date): string {
  return now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

export function signingKey(secretAccessKey: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), 'aws4_request');
}

function canonicalQuery(params: [string, string][]): string {
  return params
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function canonicalHeaders(headers: Record<string, string>): { text: string; signed: string } {
  const entries = Object.entries(headers)
    .map(([k, v]) => [k.toLowerCase(), String(v).trim().replace(/\s+/g, ' ')] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { text: entries.map(([k, v]) => `${k}:${v}\n`).join(''), signed: entries.map(([k]) => k).join(';') };
}

/** The query of a URL as decoded pairs ("?lifecycle" is ["lifecycle", ""]). */
function queryPairs(url: URL): [string, string][] {
  if (!url.search || url.search === '?') return [];
  return url.search
    .slice(1)
    .split('&')
    .filter(Boolean)
    .map((part) => {
      const i = part.indexOf('=');
      const k = i < 0 ? part : part.slice(0, i);
      const v = i < 0 ? '' : part.slice(i + 1);
      return [decodeURIComponent(k.replace(/\+/g, '%20')), decodeURIComponent(v.replace(/\+/g, '%20'))];
    });
}

interface Signed {
  canonicalRequest: string;
  stringToSign: string;
  signature: string;
  signedHeaders: string;
  scope: string;
}

function sign(creds: SigV4Credentials, method: string, url: URL, query: [string, string][], headers: Record<string, string>,
  payloadHash: string, now: Date): Signed {
  const service = creds.service ?? 's3';
  const stamp = amzDate(now);
  const date = stamp.slice(0, 8);
  const scope = `${date}/${creds.region}/${service}/aws4_request`;
  const h = canonicalHeaders(headers);
  // The path as sent: already encoded once by whoever built the URL.
  const canonicalRequest = [method.toUpperCase(), url.pathname || '/', canonicalQuery(query), h.text, h.signed, payloadHash].join('\n');
  const stringToSign = [ALGORITHM, stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  const signature = createHmac('sha256', signingKey(creds.secretAccessKey, date, creds.region, service)).update(stringToSign, 'utf8').digest('hex');
  return { canonicalRequest, stringToSign, signature, signedHeaders: h.signed, scope };
}

export interface PresignInput {
  method: string;
  /** The object URL (path already encoded with encodeKeyPath); its query, if any, is signed too. */
  url: URL;
  expiresInSeconds: number;
  /** Headers the client must send exactly (host is always signed). */
  headers?: Record<string, string>;
  /** Extra query parameters (e.g. response-content-disposition). */
  query?: Record<string, string>;
  now?: Date;
}

/** A presigned URL (query-string authentication, UNSIGNED-PAYLOAD). */
export function presignUrl(creds: SigV4Credentials, input: PresignInput): { url: string; signature: string; canonicalRequest: string } {
  const now = input.now ?? new Date();
  const service = creds.service ?? 's3';
  const expires = Math.max(1, Math.min(604800, Math.floor(input.expiresInSeconds)));
  const headers: Record<string, string> = { host: input.url.host };
  for (const [k, v] of Object.entries(input.headers ?? {})) headers[k.toLowerCase()] = v;
  const signedHeaders = Object.keys(headers).map((k) => k.toLowerCase()).sort().join(';');
  const stamp = amzDate(now);
  const query: [string, string][] = [
    ...queryPairs(input.url),
    ...Object.entries(input.query ?? {}),
    ['X-Amz-Algorithm', ALGORITHM],
    ['X-Amz-Credential', `${creds.accessKeyId}/${stamp.slice(0, 8)}/${creds.region}/${service}/aws4_request`],
    ['X-Amz-Date', stamp],
    ['X-Amz-Expires', String(expires)],
    ['X-Amz-SignedHeaders', signedHeaders],
  ];
  if (creds.sessionToken) query.push(['X-Amz-Security-Token', creds.sessionToken]);
  const s = sign(creds, input.method, input.url, query, headers, UNSIGNED_PAYLOAD, now);
  const out = new URL(input.url.toString());
  out.search = `?${canonicalQuery(query)}&X-Amz-Signature=${s.signature}`;
  return { url: out.toString(), signature: s.signature, canonicalRequest: s.canonicalRequest };
}

export interface SignHeadersInput {
  method: string;
  url: URL;
  /** Headers to sign besides host, x-amz-date and x-amz-content-sha256. */
  headers?: Record<string, string>;
  /** Hex SHA-256 of the body, or UNSIGNED-PAYLOAD. Default: the empty body's. */
  payloadHash?: string;
  now?: Date;
}

/** The Authorization header form: returns every header to send (host aside). */
export function signHeaders(creds: SigV4Credentials, input: SignHeadersInput): Record<string, string> {
  const now = input.now ?? new Date();
  const payloadHash = input.payloadHash ?? EMPTY_SHA256;
  const headers: Record<string, string> = {
    host: input.url.host,
    'x-amz-date': amzDate(now),
    'x-amz-content-sha256': payloadHash,
  };
  for (const [k, v] of Object.entries(input.headers ?? {})) headers[k.toLowerCase()] = v;
  if (creds.sessionToken) headers['x-amz-security-token'] = creds.sessionToken;
  const s = sign(creds, input.method, input.url, queryPairs(input.url), headers, payloadHash, now);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (k !== 'host') out[k] = v;
  out.authorization = `${ALGORITHM} Credential=${creds.accessKeyId}/${s.scope},SignedHeaders=${s.signedHeaders},Signature=${s.signature}`;
  return out;
}

/**
 * Checks a presigned request as S3 would (used by tests' fake S3 server):
 * the signature over the method, path, query and the signed headers as
 * received, and the expiry.
 */
export function verifyPresigned(
  creds: SigV4Credentials,
  req: { method: string; url: URL; headers: Record<string, string | string[] | undefined> },
  now = new Date(),
): { ok: true } | { ok: false; code: 'SignatureDoesNotMatch' | 'AccessDenied' | 'ExpiredToken'; message: string } {
  const pairs = queryPairs(req.url);
  const get = (k: string) => pairs.find(([n]) => n === k)?.[1];
  const signature = get('X-Amz-Signature');
  const date = get('X-Amz-Date');
  const expires = Number(get('X-Amz-Expires'));
  const signedHeaders = get('X-Amz-SignedHeaders');
  const credential = get('X-Amz-Credential');
  if (!signature || !date || !signedHeaders || !credential || !Number.isFinite(expires)) {
    return { ok: false, code: 'AccessDenied', message: 'missing presigned query parameters' };
  }
  if (credential.split('/')[0] !== creds.accessKeyId) return { ok: false, code: 'AccessDenied', message: 'unknown access key' };
  const at = Date.UTC(+date.slice(0, 4), +date.slice(4, 6) - 1, +date.slice(6, 8), +date.slice(9, 11), +date.slice(11, 13), +date.slice(13, 15));
  if (now.getTime() > at + expires * 1000) return { ok: false, code: 'AccessDenied', message: 'Request has expired' };
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) {
    const v = req.headers[name];
    headers[name] = Array.isArray(v) ? v.join(',') : (v ?? '');
  }
  const query = pairs.filter(([k]) => k !== 'X-Amz-Signature');
  const s = sign(creds, req.method, req.url, query, headers, UNSIGNED_PAYLOAD, new Date(at));
  if (s.signature !== signature) return { ok: false, code: 'SignatureDoesNotMatch', message: 'signature does not match' };
  return { ok: true };
}
