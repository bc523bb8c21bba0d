// How S3 checks a request's AWS Signature Version 4, for the tests' fake S3:
// query-string (presigned URL) and Authorization-header forms. Written from
// AWS's published description, independently of the SDK that signs, and
// checked in tests/api/media-s3.test.ts against AWS's published examples.
// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-authenticating-requests.html
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
}

export interface ReceivedRequest {
  method: string;
  /** Path and query exactly as they arrived (still percent-encoded). */
  url: URL;
  headers: Record<string, string | string[] | undefined>;
  /** For the header form: the body, to check x-amz-content-sha256 against. */
  body?: Buffer;
}

export type Verdict = { ok: true; form: 'query' | 'header' } | { ok: false; code: 'SignatureDoesNotMatch' | 'AccessDenied' | 'XAmzContentSHA256Mismatch'; message: string };

const ALGORITHM = 'AWS4-HMAC-SHA256';
const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();

/** RFC 3986 percent-encoding: everything but A-Z a-z 0-9 - _ . ~ */
const uriEncode = (value: string) => encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The query as decoded pairs, in arrival order ("?lifecycle" is ["lifecycle", ""]). */
function queryPairs(url: URL): [string, string][] {
  return url.search.replace(/^\?/, '').split('&').filter(Boolean).map((part) => {
    const i = part.indexOf('=');
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, '%20'));
    return i < 0 ? [dec(part), ''] : [dec(part.slice(0, i)), dec(part.slice(i + 1))];
  });
}

function canonicalQuery(pairs: [string, string][]): string {
  return pairs
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

function headerValue(headers: ReceivedRequest['headers'], name: string): string {
  const v = headers[name];
  return (Array.isArray(v) ? v.join(',') : (v ?? '')).trim().replace(/\s+/g, ' ');
}

/** The signature S3 expects for this request, given what it claims was signed. */
export function expectedSignature(creds: Credentials, req: ReceivedRequest, p: { amzDate: string; scope: string; signedHeaders: string;
  payloadHash: string; query: [string, string][] }): string {
  const names = p.signedHeaders.split(';');
  const canonicalRequest = [
    req.method.toUpperCase(),
    req.url.pathname || '/', // S3 signs the path as sent, encoded once
    canonicalQuery(p.query),
    names.map((n) => `${n}:${headerValue(req.headers, n)}\n`).join(''),
    p.signedHeaders,
    p.payloadHash,
  ].join('\n');
  const stringToSign = [ALGORITHM, p.amzDate, p.scope, sha256Hex(canonicalRequest)].join('\n');
  const [date, region, service] = p.scope.split('/');
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secretAccessKey}`, date), region), service), 'aws4_request');
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function parseAmzDate(s: string): number {
  return Date.UTC(+s.slice(0, 4), +s.slice(4, 6) - 1, +s.slice(6, 8), +s.slice(9, 11), +s.slice(11, 13), +s.slice(13, 15));
}

/** Checks a request as S3 would: credential, scope, signed headers (host always), signature, expiry or clock skew. */
export function verifyRequest(creds: Credentials, req: ReceivedRequest, now = new Date()): Verdict {
  const pairs = queryPairs(req.url);
  const q = (k: string) => pairs.find(([n]) => n === k)?.[1];
  let form: 'query' | 'header';
  let credential: string | undefined;
  let signedHeaders: string | undefined;
  let signature: string | undefined;
  let amzDate: string | undefined;
  let payloadHash: string;
  let query = pairs;
  const auth = headerValue(req.headers, 'authorization');
  if (q('X-Amz-Signature') !== undefined) {
    form = 'query';
    if (q('X-Amz-Algorithm') !== ALGORITHM) return { ok: false, code: 'AccessDenied', message: 'unsupported algorithm' };
    credential = q('X-Amz-Credential');
    signedHeaders = q('X-Amz-SignedHeaders');
    signature = q('X-Amz-Signature');
    amzDate = q('X-Amz-Date');
    payloadHash = 'UNSIGNED-PAYLOAD';
    query = pairs.filter(([k]) => k !== 'X-Amz-Signature');
    const expires = Number(q('X-Amz-Expires'));
    if (!Number.isInteger(expires) || expires < 1 || expires > 604800) return { ok: false, code: 'AccessDenied', message: 'X-Amz-Expires must be 1..604800' };
    if (amzDate && now.getTime() > parseAmzDate(amzDate) + expires * 1000) return { ok: false, code: 'AccessDenied', message: 'Request has expired' };
  } else if (auth.startsWith(`${ALGORITHM} `)) {
    form = 'header';
    const fields = Object.fromEntries(auth.slice(ALGORITHM.length + 1).split(',').map((f) => f.trim().split('=') as [string, string]));
    credential = fields.Credential;
    signedHeaders = fields.SignedHeaders;
    signature = fields.Signature;
    amzDate = headerValue(req.headers, 'x-amz-date');
    payloadHash = headerValue(req.headers, 'x-amz-content-sha256');
    if (!payloadHash) return { ok: false, code: 'AccessDenied', message: 'missing x-amz-content-sha256' };
    if (req.body && /^[0-9a-f]{64}$/.test(payloadHash) && sha256Hex(req.body) !== payloadHash) {
      return { ok: false, code: 'XAmzContentSHA256Mismatch', message: 'the body does not match x-amz-content-sha256' };
    }
    if (amzDate && Math.abs(now.getTime() - parseAmzDate(amzDate)) > 15 * 60_000) return { ok: false, code: 'AccessDenied', message: 'RequestTimeTooSkewed' };
  } else {
    return { ok: false, code: 'AccessDenied', message: 'the request is not signed' };
  }
  if (!credential || !signedHeaders || !signature || !amzDate) return { ok: false, code: 'AccessDenied', message: 'incomplete signature fields' };
  const [keyId, ...scopeParts] = credential.split('/');
  const scope = scopeParts.join('/');
  if (keyId !== creds.accessKeyId) return { ok: false, code: 'AccessDenied', message: 'unknown access key' };
  if (!/^\d{8}\/[^/]+\/s3\/aws4_request$/.test(scope) || scope.slice(0, 8) !== amzDate.slice(0, 8) || scopeParts[1] !== creds.region) {
    return { ok: false, code: 'AccessDenied', message: `bad credential scope ${scope}` };
  }
  if (!signedHeaders.split(';').includes('host')) return { ok: false, code: 'AccessDenied', message: 'host must be signed' };
  const expected = expectedSignature(creds, req, { amzDate, scope, signedHeaders, payloadHash, query });
  if (!same(expected, signature)) return { ok: false, code: 'SignatureDoesNotMatch', message: 'signature does not match' };
  return { ok: true, form };
}
