// The inbox's replies and moderation through the platforms' own APIs, for a
// sandbox or webhook integration with a platform access token set by hand (PUT
// .../inbox-platform-token; app.inbox_platform_tokens). A connected account
// (a platform connector) never comes here: it answers through its connector
// with its connected credentials (server/jobs/inbox.ts). Base URLs come from META_GRAPH_BASE_URL and
// X_API_BASE_URL, so tests point them at local fakes (tests/support/fake-platforms.ts).
//
// Meta Graph API (facebook, instagram; access_token parameter):
//   reply to a comment   facebook   POST /{comment-or-post-id}/comments   message
//                        instagram  POST /{ig-comment-id}/replies          message
//                                   (POST /{ig-media-id}/comments when no comment is answered)
//   reply to a message   both       POST /me/messages  {recipient: {id}, messaging_type: RESPONSE, message: {text}}
//   hide / unhide        facebook   POST /{comment-id}  is_hidden=true|false
//                        instagram  POST /{ig-comment-id}  hide=true|false
//   delete               both       DELETE /{comment-id}
// X API v2 (Authorization: Bearer <OAuth 2.0 user token>):
//   reply to a post      POST /2/tweets  {text, reply: {in_reply_to_tweet_id}}
//   reply to a DM        POST /2/dm_conversations/with/{participant_id}/messages  {text}
//   hide / unhide        PUT /2/tweets/{id}/hidden  {hidden}
//   (X deletes only the account's own posts: no delete of others' replies.)
//
// Never throws for a platform's answer: 400, 401, 403, 404 and 422 are
// permanent failures with the platform's message; 429, 5xx, timeouts and
// network errors are transient (the reply is left failed with the reason and
// the user retries it).
import { cutText } from '../text.ts';
import type { InboxActionResult, InboxModeration, InboxReply } from './types.ts';

export type InboxPlatform = 'facebook' | 'instagram' | 'x';
export const INBOX_PLATFORMS: readonly InboxPlatform[] = ['facebook', 'instagram', 'x'];

export interface PlatformInboxOptions {
  metaBaseUrl: string;
  xBaseUrl: string;
  timeoutMs: number;
}

interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  body?: string;
}

const trim = (u: string) => u.replace(/\/+$/, '');
const seg = (s: string) => encodeURIComponent(s);

function platformMessage(status: number, body: unknown, text: string): string {
  const b = body as Record<string, any> | null;
  const m =
    (typeof b?.error?.message === 'string' && b.error.message) || // Graph API
    (typeof b?.detail === 'string' && b.detail) || // X API v2 problem
    (Array.isArray(b?.errors) && typeof b.errors[0]?.message === 'string' && b.errors[0].message) ||
    (typeof b?.title === 'string' && b.title) ||
    cutText(text, 200);
  return cutText(`The platform answered ${status}: ${m || 'no reason given'}`, 1000);
}

async function send(opts: PlatformInboxOptions, call: Call): Promise<{ ok: true; body: any } | { ok: false; result: InboxActionResult }> {
  let res: Response;
  try {
    res = await fetch(call.url, { method: call.method, headers: call.headers, body: call.body, signal: AbortSignal.timeout(opts.timeoutMs), redirect: 'manual' });
  } catch (e) {
    const timeout = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
    return { ok: false, result: { state: 'failed', permanent: false, error: timeout ? `The platform did not answer within ${opts.timeoutMs} ms.` : `The platform could not be reached: ${e instanceof Error ? e.message : String(e)}` } };
  }
  const text = await res.text().catch(() => '');
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (res.status >= 200 && res.status < 300) return { ok: true, body };
  const permanent = [400, 401, 403, 404, 409, 410, 422].includes(res.status);
  return { ok: false, result: { state: 'failed', permanent, error: platformMessage(res.status, body, text) } };
}

const form = (fields: Record<string, string>) => ({
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
});

export function createPlatformInboxClient(opts: PlatformInboxOptions) {
  const meta = trim(opts.metaBaseUrl);
  const x = trim(opts.xBaseUrl);
  const xHeaders = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  async function reply(platform: InboxPlatform, token: string, r: InboxReply): Promise<InboxActionResult> {
    if (platform === 'x') {
      const call: Call =
        r.threadKind === 'message'
          ? { method: 'POST', url: `${x}/2/dm_conversations/with/${seg(r.platformThreadId)}/messages`, headers: xHeaders(token), body: JSON.stringify({ text: r.text }) }
          : { method: 'POST', url: `${x}/2/tweets`, headers: xHeaders(token), body: JSON.stringify({ text: r.text, reply: { in_reply_to_tweet_id: r.inReplyTo ?? r.platformThreadId } }) };
      const out = await send(opts, call);
      if (!out.ok) return out.result;
      const id = r.threadKind === 'message' ? out.body?.data?.dm_event_id : out.body?.data?.id;
      return { state: 'done', platformMessageId: typeof id === 'string' ? id : null };
    }
    if (r.threadKind === 'message') {
      const out = await send(opts, {
        method: 'POST',
        url: `${meta}/me/messages?access_token=${seg(token)}`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ recipient: { id: r.platformThreadId }, messaging_type: 'RESPONSE', message: { text: r.text } }),
      });
      if (!out.ok) return out.result;
      return { state: 'done', platformMessageId: typeof out.body?.message_id === 'string' ? out.body.message_id : null };
    }
    const url =
      platform === 'instagram'
        ? r.inReplyTo
          ? `${meta}/${seg(r.inReplyTo)}/replies`
          : `${meta}/${seg(r.platformThreadId)}/comments`
        : `${meta}/${seg(r.inReplyTo ?? r.platformThreadId)}/comments`;
    const out = await send(opts, { method: 'POST', url, ...form({ message: r.text, access_token: token }) });
    if (!out.ok) return out.result;
    return { state: 'done', platformMessageId: typeof out.body?.id === 'string' ? out.body.id : null };
  }

  async function moderate(platform: InboxPlatform, token: string, m: InboxModeration): Promise<InboxActionResult> {
    if (m.threadKind === 'message') return { state: 'failed', permanent: true, error: `${platform} has no moderation of direct messages.` };
    if (platform === 'x') {
      if (m.action === 'delete') return { state: 'failed', permanent: true, error: 'X deletes only the account\'s own posts; hide the reply instead.' };
      const out = await send(opts, { method: 'PUT', url: `${x}/2/tweets/${seg(m.platformMessageId)}/hidden`, headers: xHeaders(token), body: JSON.stringify({ hidden: m.action === 'hide' }) });
      if (!out.ok) return out.result;
      if (out.body?.data?.hidden !== (m.action === 'hide')) return { state: 'failed', permanent: false, error: 'X did not confirm the change of the reply\'s visibility.' };
      return { state: 'done', platformMessageId: null };
    }
    const out =
      m.action === 'delete'
        ? await send(opts, { method: 'DELETE', url: `${meta}/${seg(m.platformMessageId)}?access_token=${seg(token)}` })
        : await send(opts, {
            method: 'POST',
            url: `${meta}/${seg(m.platformMessageId)}`,
            ...form({ [platform === 'instagram' ? 'hide' : 'is_hidden']: String(m.action === 'hide'), access_token: token }),
          });
    if (!out.ok) return out.result;
    if (out.body?.success !== true) return { state: 'failed', permanent: false, error: 'The platform did not confirm the moderation.' };
    return { state: 'done', platformMessageId: null };
  }

  return { reply, moderate };
}
