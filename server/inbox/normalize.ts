// Inbound deliveries, each platform's documented format, into the one event
// shape app.inbox_events keeps (db/migrations/committed/000013-inbox.sql):
//
//   facebook   Meta Webhooks, object "page": entry[].changes[] of field "feed"
//              (item comment: verb add, edited, remove, hide, unhide; item
//              reaction on a comment: verb add, remove) and entry[].messaging[]
//              (message, message_edit, reaction, is_deleted)
//   instagram  Meta Webhooks, object "instagram": entry[].changes[] of field
//              "comments" and entry[].messaging[] as above
//   x          Account Activity API: tweet_create_events (replies and
//              mentions), favorite_events, direct_message_events,
//              tweet_delete_events; the account's own posts are skipped
//   sandbox    one event per delivery, Standard Webhooks style: webhook-id is
//              the event id, the body {type, data} already in our shape
//
// Every event gets a stable id from the platform's own ids, so a redelivery
// of the same change has the same id (the unique constraint drops it). What
// the inbox does not show (reactions to a post itself, echoes of the
// account's own messages, other fields) is skipped and counted.
//
// Text a platform sends that PostgreSQL cannot hold does not fail the
// delivery (a platform retries a failed delivery, and this one would fail
// again every time): NUL is removed, and a lone UTF-16 surrogate (a JSON
// escape such as "\ud800" not in a pair) becomes U+FFFD in every string of
// the events. The signed body itself is kept byte for byte
// (app.inbox_deliveries.body), so nothing the platform sent is lost. Text is
// cut at a character boundary (server/text.ts), never inside a surrogate pair.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { cutText } from '../text.ts';
import type { HookSource } from './signatures.ts';

export const EVENT_TYPES = [
  'message.created',
  'message.edited',
  'message.deleted',
  'message.hidden',
  'message.unhidden',
  'reaction.added',
  'reaction.removed',
] as const;
export type InboxEventType = (typeof EVENT_TYPES)[number];

export interface InboxEvent {
  eventId: string;
  type: InboxEventType;
  threadKind: 'comment' | 'message';
  /** Null only for a deletion that does not say where the message was. */
  threadKey: string | null;
  messageKey: string;
  parentKey?: string | null;
  author?: { id: string; name: string | null } | null;
  text?: string | null;
  attachments?: { type: string; url: string | null }[];
  reaction?: string | null;
  reactorId?: string | null;
  occurredAt: string;
}

export class DeliveryError extends Error {}

export interface Normalized {
  events: InboxEvent[];
  skipped: number;
}

const MAX_KEY = 300;
const MAX_TEXT = 65536;

/** A string as PostgreSQL can keep it: no NUL, a lone surrogate as U+FFFD (same length). */
const storable = (v: string) => v.replace(/\u0000/g, '').toWellFormed();

/** Text as PostgreSQL can keep it, bounded (cut at a character boundary). */
function text(v: unknown, max = MAX_TEXT): string | null {
  if (typeof v !== 'string') return null;
  return cutText(storable(v), max);
}

/** A platform id: string or number, 1 to 300 characters, else null. */
function key(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v)) v = String(v);
  if (typeof v !== 'string') return null;
  const s = storable(v);
  return s.length >= 1 && s.length <= MAX_KEY ? s : null;
}

/**
 * Every string of the events as PostgreSQL can keep it. The fields above are
 * storable already; an event id also quotes values as the platform sent them
 * (a reaction's action, a timestamp), so the whole event is made storable,
 * and an event id longer than app.inbox_events keeps (300) is cut and ends
 * in a digest of the whole, so it stays the same for a redelivery.
 */
function storableEvents(events: InboxEvent[]): InboxEvent[] {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return storable(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return events.map((e) => {
    const out = walk(e) as InboxEvent;
    if (out.eventId.length > MAX_KEY) out.eventId = `${cutText(out.eventId, MAX_KEY - 23)}:${digest(out.eventId)}`;
    return out;
  });
}

function digest(v: unknown): string {
  return createHash('sha256').update(JSON.stringify(v)).digest('base64url').slice(0, 22);
}

const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** Unix seconds or milliseconds, numeric strings, or ISO 8601, into ISO; else the fallback. */
function when(v: unknown, fallback: string): string {
  if (typeof v === 'string' && /^\d+$/.test(v)) v = Number(v);
  if (typeof v === 'number' && Number.isFinite(v) && v > 0) {
    const ms = v < 1e11 ? v * 1000 : v;
    const d = new Date(ms);
    if (!Number.isNaN(d.getTime()) && d.getUTCFullYear() < 10000) return d.toISOString();
  }
  if (typeof v === 'string') {
    const d = new Date(v);
    if (!Number.isNaN(d.getTime()) && d.getUTCFullYear() > 1970 && d.getUTCFullYear() < 10000) return d.toISOString();
  }
  return fallback;
}

function author(from: unknown): InboxEvent['author'] {
  if (!isObj(from)) return null;
  const id = key(from.id ?? from.id_str);
  if (!id) return null;
  return { id, name: text(from.name ?? from.username ?? from.screen_name, 200) };
}

function attachmentsOf(list: unknown): { type: string; url: string | null }[] {
  return arr(list)
    .slice(0, 20)
    .filter(isObj)
    .map((a) => ({
      type: text(a.type, 40) ?? 'file',
      url: text(isObj(a.payload) ? a.payload.url : (a.url ?? a.media_url_https ?? null), 2048),
    }));
}

const COMMENT_VERBS: Record<string, InboxEventType> = {
  add: 'message.created',
  edited: 'message.edited',
  edit: 'message.edited',
  remove: 'message.deleted',
  hide: 'message.hidden',
  unhide: 'message.unhidden',
};

function metaMessaging(m: Record<string, any>, now: string, out: InboxEvent[]): number {
  const sender = key(m.sender?.id);
  const recipient = key(m.recipient?.id);
  const at = when(m.timestamp, now);
  if (isObj(m.message)) {
    if (m.message.is_echo) return 1;
    const mid = key(m.message.mid);
    if (!mid || !sender) return 1;
    if (m.message.is_deleted) {
      out.push({ eventId: `msg:${mid}:deleted`, type: 'message.deleted', threadKind: 'message', threadKey: sender, messageKey: mid, occurredAt: at });
      return 0;
    }
    out.push({
      eventId: `msg:${mid}`,
      type: 'message.created',
      threadKind: 'message',
      threadKey: sender,
      messageKey: mid,
      author: { id: sender, name: null },
      text: text(m.message.text),
      attachments: attachmentsOf(m.message.attachments),
      occurredAt: at,
    });
    return 0;
  }
  if (isObj(m.message_edit)) {
    const mid = key(m.message_edit.mid);
    if (!mid || !sender) return 1;
    out.push({
      eventId: `msg:${mid}:edit:${key(m.message_edit.num_edit) ?? digest(m.message_edit)}`,
      type: 'message.edited',
      threadKind: 'message',
      threadKey: sender,
      messageKey: mid,
      author: { id: sender, name: null },
      text: text(m.message_edit.text),
      occurredAt: at,
    });
    return 0;
  }
  if (isObj(m.reaction)) {
    const mid = key(m.reaction.mid);
    if (!mid || !sender || !recipient) return 1;
    const reaction = text(m.reaction.reaction ?? m.reaction.emoji, 64) || 'like';
    const removed = m.reaction.action === 'unreact';
    out.push({
      eventId: `react:${mid}:${sender}:${m.reaction.action ?? 'react'}:${reaction}:${m.timestamp ?? digest(m)}`,
      type: removed ? 'reaction.removed' : 'reaction.added',
      threadKind: 'message',
      // A reaction of the person to the page's message, or of the page to theirs: the thread is the person's.
      threadKey: sender,
      messageKey: mid,
      reaction,
      reactorId: sender,
      occurredAt: at,
    });
    return 0;
  }
  return 1;
}

function facebookChange(c: Record<string, any>, entryTime: string, out: InboxEvent[]): number {
  if (c.field !== 'feed' || !isObj(c.value)) return 1;
  const v = c.value;
  const at = when(v.created_time, entryTime);
  if (v.item === 'comment') {
    const type = typeof v.verb === 'string' && Object.hasOwn(COMMENT_VERBS, v.verb) ? COMMENT_VERBS[v.verb] : undefined;
    const comment = key(v.comment_id);
    const post = key(v.post_id);
    if (!type || !comment || !post) return 1;
    const parent = key(v.parent_id);
    out.push({
      eventId: `fb:comment:${comment}:${v.verb}:${digest(v)}`,
      type,
      threadKind: 'comment',
      threadKey: post,
      messageKey: comment,
      parentKey: parent && parent !== post ? parent : null,
      author: author(v.from),
      text: type === 'message.created' || type === 'message.edited' ? text(v.message) : null,
      attachments: v.photo ? [{ type: 'image', url: text(v.photo, 2048) }] : [],
      occurredAt: at,
    });
    return 0;
  }
  if (v.item === 'reaction') {
    const comment = key(v.comment_id);
    const post = key(v.post_id);
    const from = author(v.from);
    // A reaction to the post itself is no message of a thread.
    if (!comment || !post || !from || (v.verb !== 'add' && v.verb !== 'remove')) return 1;
    const reaction = text(v.reaction_type, 64) || 'like';
    out.push({
      eventId: `fb:reaction:${comment}:${from.id}:${v.verb}:${reaction}:${digest(v)}`,
      type: v.verb === 'remove' ? 'reaction.removed' : 'reaction.added',
      threadKind: 'comment',
      threadKey: post,
      messageKey: comment,
      reaction,
      reactorId: from.id,
      occurredAt: at,
    });
    return 0;
  }
  return 1;
}

function instagramChange(c: Record<string, any>, entryTime: string, out: InboxEvent[]): number {
  if ((c.field !== 'comments' && c.field !== 'live_comments') || !isObj(c.value)) return 1;
  const v = c.value;
  const id = key(v.id);
  const media = key(v.media?.id);
  if (!id || !media) return 1;
  out.push({
    eventId: `ig:comment:${id}`,
    type: 'message.created',
    threadKind: 'comment',
    threadKey: media,
    messageKey: id,
    parentKey: key(v.parent_id),
    author: author(v.from),
    text: text(v.text),
    occurredAt: when(v.timestamp, entryTime),
  });
  return 0;
}

function meta(source: 'facebook' | 'instagram', body: Record<string, any>, now: string): Normalized {
  const expected = source === 'facebook' ? 'page' : 'instagram';
  if (body.object !== expected) throw new DeliveryError(`A ${source} delivery has object "${expected}".`);
  if (!Array.isArray(body.entry)) throw new DeliveryError('A Meta delivery has an entry list.');
  const events: InboxEvent[] = [];
  let skipped = 0;
  for (const entry of body.entry) {
    if (!isObj(entry)) {
      skipped++;
      continue;
    }
    const entryTime = when(entry.time, now);
    for (const c of arr(entry.changes)) {
      skipped += isObj(c) ? (source === 'facebook' ? facebookChange(c, entryTime, events) : instagramChange(c, entryTime, events)) : 1;
    }
    for (const m of arr(entry.messaging)) skipped += isObj(m) ? metaMessaging(m, now, events) : 1;
  }
  return { events, skipped };
}

function tweetText(t: Record<string, any>): string | null {
  return text(t.extended_tweet?.full_text ?? t.full_text ?? t.text);
}

function x(body: Record<string, any>, now: string): Normalized {
  const self = key(body.for_user_id);
  if (!self) throw new DeliveryError('An Account Activity delivery names for_user_id.');
  const events: InboxEvent[] = [];
  let skipped = 0;
  for (const t of arr(body.tweet_create_events)) {
    if (!isObj(t)) {
      skipped++;
      continue;
    }
    const id = key(t.id_str ?? t.id);
    const user = author(t.user);
    if (!id || !user || user.id === self || t.retweeted_status) {
      skipped++;
      continue;
    }
    const parent = key(t.in_reply_to_status_id_str);
    events.push({
      eventId: `tweet:${id}`,
      type: 'message.created',
      threadKind: 'comment',
      threadKey: parent ?? id,
      messageKey: id,
      parentKey: parent,
      author: user,
      text: tweetText(t),
      attachments: attachmentsOf(t.extended_entities?.media ?? t.entities?.media).map((a) => ({ type: a.type === 'photo' ? 'image' : a.type, url: a.url })),
      occurredAt: when(t.timestamp_ms ?? t.created_at, now),
    });
  }
  for (const f of arr(body.favorite_events)) {
    if (!isObj(f) || !isObj(f.favorited_status)) {
      skipped++;
      continue;
    }
    const s = f.favorited_status;
    const target = key(s.id_str ?? s.id);
    const user = author(f.user);
    const owner = key(s.user?.id_str ?? s.user?.id);
    // A like of the account's own post is no message of a thread.
    if (!target || !user || owner === self) {
      skipped++;
      continue;
    }
    events.push({
      eventId: `fav:${key(f.id) ?? digest(f)}`,
      type: 'reaction.added',
      threadKind: 'comment',
      threadKey: key(s.in_reply_to_status_id_str) ?? target,
      messageKey: target,
      reaction: 'like',
      reactorId: user.id,
      occurredAt: when(f.timestamp_ms ?? f.created_at, now),
    });
  }
  for (const d of arr(body.direct_message_events)) {
    if (!isObj(d) || d.type !== 'message_create' || !isObj(d.message_create)) {
      skipped++;
      continue;
    }
    const id = key(d.id);
    const sender = key(d.message_create.sender_id);
    if (!id || !sender || sender === self) {
      skipped++;
      continue;
    }
    const users = isObj(body.users) ? body.users : {};
    const u = users[sender];
    const data = isObj(d.message_create.message_data) ? d.message_create.message_data : {};
    const att = isObj(data.attachment) && isObj(data.attachment.media) ? [{ type: text(data.attachment.media.type, 40) ?? 'media', url: text(data.attachment.media.media_url_https, 2048) }] : [];
    events.push({
      eventId: `dm:${id}`,
      type: 'message.created',
      threadKind: 'message',
      threadKey: sender,
      messageKey: id,
      author: { id: sender, name: isObj(u) ? text(u.name ?? u.screen_name, 200) : null },
      text: text(data.text),
      attachments: att,
      occurredAt: when(d.created_timestamp, now),
    });
  }
  for (const del of arr(body.tweet_delete_events)) {
    const id = isObj(del) && isObj(del.status) ? key(del.status.id_str ?? del.status.id) : null;
    if (!id) {
      skipped++;
      continue;
    }
    events.push({
      eventId: `tweet:${id}:deleted`,
      type: 'message.deleted',
      threadKind: 'comment',
      threadKey: null,
      messageKey: id,
      occurredAt: when((del as Record<string, any>).timestamp_ms, now),
    });
  }
  return { events, skipped };
}

const sandboxData = z
  .object({
    threadKind: z.enum(['comment', 'message']),
    threadKey: z.string().min(1).max(MAX_KEY),
    messageId: z.string().min(1).max(MAX_KEY),
    parentId: z.string().min(1).max(MAX_KEY).nullish(),
    author: z.object({ id: z.string().min(1).max(MAX_KEY), name: z.string().max(200).nullish() }).nullish(),
    text: z.string().max(MAX_TEXT).nullish(),
    attachments: z.array(z.object({ type: z.string().max(40), url: z.string().max(2048).nullish() })).max(20).optional(),
    reaction: z.string().min(1).max(64).nullish(),
    reactorId: z.string().min(1).max(MAX_KEY).nullish(),
    occurredAt: z.string().datetime({ offset: true }),
  })
  .strict();
const sandboxBody = z.object({ type: z.enum(EVENT_TYPES), timestamp: z.string().optional(), data: sandboxData }).strict();

/** The sandbox's own payload: one event, named by the webhook-id of its delivery. */
function sandbox(body: unknown, webhookId: string): Normalized {
  const parsed = sandboxBody.safeParse(body);
  if (!parsed.success) {
    throw new DeliveryError(
      `The sandbox event is not valid: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'body'} ${i.message}`).join('; ')}.`,
    );
  }
  const { type, data } = parsed.data;
  const isReaction = type.startsWith('reaction.');
  if (isReaction && (!data.reaction || !data.reactorId)) throw new DeliveryError('A reaction event names reaction and reactorId.');
  const nul = (s: string | null | undefined) => (s == null ? null : storable(s));
  return {
    events: [
      {
        eventId: `sbx:${webhookId}`.slice(0, MAX_KEY),
        type,
        threadKind: data.threadKind,
        threadKey: nul(data.threadKey),
        messageKey: nul(data.messageId)!,
        parentKey: nul(data.parentId),
        author: data.author ? { id: nul(data.author.id)!, name: nul(data.author.name) } : null,
        text: nul(data.text),
        attachments: (data.attachments ?? []).map((a) => ({ type: nul(a.type)!, url: nul(a.url) })),
        reaction: isReaction ? nul(data.reaction) : null,
        reactorId: isReaction ? nul(data.reactorId) : null,
        occurredAt: new Date(data.occurredAt).toISOString(),
      },
    ],
    skipped: 0,
  };
}

/** The events of one delivery; throws DeliveryError for a body that is not the source's format. */
export function normalizeDelivery(source: HookSource, raw: Buffer, headers: Record<string, string | undefined>, now = new Date()): Normalized {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new DeliveryError('The body is not JSON.');
  }
  if (!isObj(body)) throw new DeliveryError('The body is not a JSON object.');
  const iso = now.toISOString();
  const normalized = (() => {
    switch (source) {
      case 'facebook':
      case 'instagram':
        return meta(source, body, iso);
      case 'x':
        return x(body, iso);
      case 'sandbox':
        return sandbox(body, headers['webhook-id'] ?? '');
    }
  })();
  return { events: storableEvents(normalized.events), skipped: normalized.skipped };
}
