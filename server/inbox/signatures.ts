// Signature checks of the inbound hooks, as each platform documents them.
// Every comparison is constant-time (crypto.timingSafeEqual).
//
//   facebook, instagram (Meta Webhooks): X-Hub-Signature-256: sha256=<hex of
//     HMAC-SHA256(app secret, raw body)>; the subscription handshake is
//     GET ?hub.mode=subscribe&hub.verify_token=...&hub.challenge=... answered
//     with the challenge.
//   x (Account Activity API): x-twitter-webhooks-signature: sha256=<base64 of
//     HMAC-SHA256(consumer secret, raw body)>; the challenge-response check is
//     GET ?crc_token=... answered {"response_token": "sha256=<base64 of
//     HMAC-SHA256(consumer secret, crc_token)>"}. Both are the same HMAC with
//     the same key, and X fixes both, so the check would sign any body for
//     whoever asks: a CRC answer is given only for a token shaped like X's
//     (X_CRC_TOKEN: at most 64 characters of base64 / base64url, never a `{`),
//     and a delivery verifies only when its body is a JSON object (its first
//     non-blank byte is `{`). The two sets are disjoint, so no CRC answer is
//     ever a delivery signature.
//   sandbox (Standard Webhooks): webhook-id, webhook-timestamp (within 5
//     minutes) and webhook-signature: v1,<base64 of HMAC-SHA256(key,
//     "<id>.<timestamp>.<body>")> with key the base64 after whsec_.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { verifyWebhookSignature } from '../platforms/webhook.ts';

export const HOOK_SOURCES = ['facebook', 'instagram', 'x', 'sandbox'] as const;
export type HookSource = (typeof HOOK_SOURCES)[number];

/** Standard Webhooks' default tolerance for webhook-timestamp. */
export const SANDBOX_TOLERANCE_SECONDS = 300;

function equalBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function metaSignature(appSecret: string, body: Buffer): string {
  return `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}`;
}

export function verifyMetaSignature(appSecret: string, header: string | undefined, body: Buffer): boolean {
  if (!header) return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac('sha256', appSecret).update(body).digest();
  return equalBytes(Buffer.from(m[1], 'hex'), expected);
}

export function xSignature(consumerSecret: string, data: Buffer | string): string {
  return `sha256=${createHmac('sha256', consumerSecret).update(data).digest('base64')}`;
}

/**
 * X's CRC tokens: short base64 or base64url strings (the Account Activity
 * API's examples are UUIDs and base64), never JSON. Only these are answered.
 */
export const X_CRC_TOKEN_MAX_LENGTH = 64;
export const X_CRC_TOKEN = /^[A-Za-z0-9+/=_-]{1,64}$/;

export function isXCrcToken(token: string): boolean {
  return X_CRC_TOKEN.test(token);
}

/** Whether the body's first byte after JSON whitespace is `{`: what every X delivery is, and no CRC token can be. */
export function startsAsJsonObject(body: Buffer): boolean {
  for (const b of body) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    return b === 0x7b;
  }
  return false;
}

export function verifyXSignature(consumerSecret: string, header: string | undefined, body: Buffer): boolean {
  if (!header) return false;
  // A body that is not a JSON object is never a delivery: its signature could
  // be a CRC answer (see the head of this file).
  if (!startsAsJsonObject(body)) return false;
  const m = /^sha256=([A-Za-z0-9+/]+={0,2})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac('sha256', consumerSecret).update(body).digest();
  return equalBytes(Buffer.from(m[1], 'base64'), expected);
}

/** The Account Activity API's CRC answer, for a token shaped like X's only (a RangeError otherwise). */
export function xCrcResponse(consumerSecret: string, crcToken: string): { response_token: string } {
  if (!isXCrcToken(crcToken)) throw new RangeError('not an X CRC token: at most 64 characters of base64 or base64url');
  return { response_token: xSignature(consumerSecret, crcToken) };
}

export type SignatureCheck = { ok: true } | { ok: false; reason: 'missing' | 'invalid' | 'stale' };

/** Checks the signature a source uses; `reason` tells a missing from a wrong or stale one. */
export function checkSignature(source: HookSource, secret: string, headers: Record<string, string | undefined>, body: Buffer, now = Date.now()): SignatureCheck {
  switch (source) {
    case 'facebook':
    case 'instagram': {
      const h = headers['x-hub-signature-256'];
      if (!h) return { ok: false, reason: 'missing' };
      return verifyMetaSignature(secret, h, body) ? { ok: true } : { ok: false, reason: 'invalid' };
    }
    case 'x': {
      const h = headers['x-twitter-webhooks-signature'];
      if (!h) return { ok: false, reason: 'missing' };
      return verifyXSignature(secret, h, body) ? { ok: true } : { ok: false, reason: 'invalid' };
    }
    case 'sandbox': {
      const id = headers['webhook-id'];
      const timestamp = headers['webhook-timestamp'];
      const signature = headers['webhook-signature'];
      if (!id || !timestamp || !signature) return { ok: false, reason: 'missing' };
      if (/^\d+$/.test(timestamp) && Math.abs(now / 1000 - Number(timestamp)) > SANDBOX_TOLERANCE_SECONDS) {
        // Only a correctly signed but old delivery is "stale"; anything else is invalid.
        return verifyWebhookSignature(secret, { id, timestamp, signature }, body.toString('utf8'), Number.MAX_SAFE_INTEGER, now)
          ? { ok: false, reason: 'stale' }
          : { ok: false, reason: 'invalid' };
      }
      return verifyWebhookSignature(secret, { id, timestamp, signature }, body.toString('utf8'), SANDBOX_TOLERANCE_SECONDS, now)
        ? { ok: true }
        : { ok: false, reason: 'invalid' };
    }
  }
}
