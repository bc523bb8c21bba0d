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
//     HMAC-SHA256(consumer secret, crc_token)>"}.
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

export function verifyXSignature(consumerSecret: string, header: string | undefined, body: Buffer): boolean {
  if (!header) return false;
  const m = /^sha256=([A-Za-z0-9+/]+={0,2})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac('sha256', consumerSecret).update(body).digest();
  return equalBytes(Buffer.from(m[1], 'base64'), expected);
}

/** The Account Activity API's CRC answer. */
export function xCrcResponse(consumerSecret: string, crcToken: string): { response_token: string } {
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
