// The composer's model (web/pages/compose.tsx): the draft a person edits, the
// body of POST {ws}/content (and of its check route) built from it, where a
// problem's field belongs on the page, and how each platform counts and folds
// a caption. Pure functions, no DOM, no calls.
import type { Schema } from './api.ts';

export type IntegrationDetail = Schema<'IntegrationDetail'>;
export type CreateBody = Schema<'CreatePublicPostDto'>;
export type CheckResult = Schema<'ContentCheckResult'>;
export type ContentDetail = Schema<'ContentDetail'>;

/** A media item as the composer shows it (from the library, an upload or an edition). */
export interface MediaRef {
  id: string;
  type: 'image' | 'video' | 'gif';
  filename: string;
  altText: string | null;
  state: 'active' | 'deleted';
}

export interface ChannelDraft {
  /** The channel's own caption; null while it follows the shared caption. */
  caption: string | null;
  /** Further thread messages (only sent for platforms whose capabilities say threads). */
  thread: string[];
}

export interface Draft {
  /** Internal (organizational) title, never published. */
  title: string;
  caption: string;
  /** Selected channels (integration ids), in the order of the channel list. */
  channelIds: string[];
  channels: Record<string, ChannelDraft>;
  media: MediaRef[];
  campaignId: string;
  tagIds: string[];
  /** Wall-clock date and time in the workspace's time zone ('' when not chosen). */
  date: string;
  time: string;
}

export const emptyDraft = (): Draft => ({ title: '', caption: '', channelIds: [], channels: {}, media: [], campaignId: '', tagIds: [], date: '', time: '' });

export const channelDraft = (d: Draft, id: string): ChannelDraft => d.channels[id] ?? { caption: null, thread: [] };

/** What a channel publishes: its own caption, else the shared one. */
export const effectiveCaption = (d: Draft, id: string) => channelDraft(d, id).caption ?? d.caption;

/**
 * Characters as the API counts them: the database's length() of the text, i.e.
 * Unicode code points (app.content_item_problems); the platforms' rules carry no
 * URL weighting, so none is applied here either.
 */
export const countChars = (s: string) => [...s].length;

/** The first n code points of s. */
export const firstChars = (s: string, n: number) => [...s].slice(0, n).join('');

/**
 * Where a platform's feed folds a long caption behind "more" (approximate, as
 * the apps show it); platforms without an entry show the whole caption.
 */
export const FOLD: Record<string, { at: number; more: string }> = {
  linkedin: { at: 210, more: '…see more' },
  instagram: { at: 125, more: '… more' },
  facebook: { at: 480, more: '… See more' },
  tiktok: { at: 150, more: '… more' },
  pinterest: { at: 100, more: '… more' },
  youtube: { at: 160, more: '…more' },
};

/** The body of POST {ws}/content (and POST {ws}/content/check) for the draft and an intent. */
export function buildBody(
  d: Draft,
  intent: CreateBody['intent'],
  opts: { at: string | null; channelIds?: string[]; threads: (id: string) => boolean },
): CreateBody {
  const ids = opts.channelIds ?? d.channelIds;
  const body: CreateBody = {
    intent,
    caption: d.caption,
    mediaIds: d.media.map((m) => m.id),
    channels: ids.map((id) => {
      const c = channelDraft(d, id);
      return {
        integrationId: id,
        ...(c.caption !== null ? { caption: c.caption } : {}),
        ...(opts.threads(id) && c.thread.length ? { thread: c.thread.map((caption) => ({ caption })) } : {}),
      };
    }),
    organizationalTitle: d.title.trim() || null,
    campaignId: d.campaignId || null,
    tagIds: d.tagIds,
  };
  if (intent === 'schedule' && opts.at) body.scheduledAt = opts.at;
  if (intent === 'draft' && opts.at) body.intendedPublishAt = opts.at;
  return body;
}

/** One problem on the page: what the API said, and under which field of the page it is shown. */
export interface PageProblem { key: string; code: string; message: string }

/** Context to place the fields of an answer: the channels of the body by index, editions by id. */
export interface FieldContext {
  /** `channels.N` of the body sent. */
  channelIds?: string[];
  /** Content id -> integration id (for `editions.<contentId>.*` of the root's PATCH). */
  editions?: Record<string, string>;
  /** The call concerned one edition: its unprefixed fields are that channel's. */
  channel?: string;
}

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

function channelKey(iid: string, rest: string): string {
  if (rest === 'caption') return `ch:${iid}:caption`;
  if (/^mediaIds(\.|$)/.test(rest)) return `ch:${iid}:media`;
  const t = /^thread\.(\d+)/.exec(rest);
  if (t) return `ch:${iid}:thread.${t[1]}`;
  if (/^thread$/.test(rest)) return `ch:${iid}:thread`;
  return `ch:${iid}:channel`;
}

/**
 * The page field a problem's `field` belongs to: `caption` (shared), `media`,
 * `schedule`, `campaign`, `tags`, `title`, `channels`, `ch:<integrationId>:caption|media|thread.N|thread|channel`,
 * else `general` (shown with the actions).
 */
export function fieldKey(field: string, ctx: FieldContext = {}): string {
  const f = field.replace(/^body\./, '');
  const ch = /^channels\.(\d+)(?:\.(.*))?$/.exec(f);
  if (ch) {
    const iid = ctx.channelIds?.[Number(ch[1])];
    return iid ? channelKey(iid, ch[2] ?? 'channel') : 'channels';
  }
  const ed = new RegExp(`^editions\\.(${UUID})\\.(.*)$`, 'i').exec(f);
  if (ed) {
    const iid = ctx.editions?.[ed[1]];
    return iid ? channelKey(iid, ed[2]) : 'general';
  }
  if (f === 'scheduledAt' || f === 'intendedPublishAt') return 'schedule';
  if (ctx.channel && (f === 'caption' || /^(mediaIds|thread|settings)(\.|$)/.test(f))) return channelKey(ctx.channel, f);
  if (f === 'caption') return 'caption';
  if (/^mediaIds(\.|$)/.test(f)) return 'media';
  if (f === 'campaignId' || f === 'phaseId') return 'campaign';
  if (/^tagIds(\.|$)/.test(f)) return 'tags';
  if (f === 'title' || f === 'organizationalTitle') return 'title';
  if (f === 'channels') return 'channels';
  return 'general';
}

/** The check route's answer as page problems. */
export function checkProblems(r: CheckResult, channelIds: string[]): PageProblem[] {
  const out: PageProblem[] = [];
  const ctx = { channelIds };
  for (const p of r.problems) out.push({ key: fieldKey(p.field, ctx), code: p.code, message: p.message });
  for (const c of r.channels) for (const p of c.problems) out.push({ key: fieldKey(p.field, ctx), code: p.code, message: p.message });
  return out;
}

/** Whether two drafts would publish the same root caption and media. */
export const sameRoot = (a: Draft, b: Draft) => a.caption === b.caption && a.media.map((m) => m.id).join() === b.media.map((m) => m.id).join();
export const sameMetadata = (a: Draft, b: Draft) => a.title.trim() === b.title.trim() && a.campaignId === b.campaignId && [...a.tagIds].sort().join() === [...b.tagIds].sort().join();
export const sameChannel = (a: Draft, b: Draft, id: string) => {
  const x = channelDraft(a, id);
  const y = channelDraft(b, id);
  return x.caption === y.caption && x.thread.join('\u0000') === y.thread.join('\u0000');
};

/** Why an edition cannot be edited here, or null when the API allows edits (draft or scheduled, time still ahead). */
export function lockedReason(e: { status: ContentDetail['status']; workflowStatus: ContentDetail['workflowStatus'] }): string | null {
  switch (e.workflowStatus) {
    case 'draft':
    case 'scheduled':
      return null;
    case 'publishing': return 'It is being published now.';
    case 'published': return 'It is published; published posts are not edited here.';
    case 'failed': return 'Publishing failed; retry it, or fix the channel first.';
    case 'in_review': return 'It is in review; edits wait for the decision.';
    case 'changes_requested': return 'Changes were requested in review.';
    case 'cancelled': return 'It was cancelled.';
    default: return `Its status is ${e.status}.`;
  }
}

export const PLATFORM_NAMES: Record<string, string> = {
  x: 'X', linkedin: 'LinkedIn', instagram: 'Instagram', facebook: 'Facebook', pinterest: 'Pinterest',
  youtube: 'YouTube', tiktok: 'TikTok', threads: 'Threads', bluesky: 'Bluesky', mastodon: 'Mastodon',
};
