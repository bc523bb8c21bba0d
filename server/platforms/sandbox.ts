// The sandbox connector: a simulated platform that never leaves the
// process. Its outcomes are chosen per integration with
// settings.behavior, so a test (or a demo) can see every path of the
// publishing engine:
//   succeed                 every call succeeds
//   fail                    every publish is refused for good (permanent)
//   transient-then-succeed  attempt 1 fails temporarily, later attempts succeed
//   unknown                 the outcome is never confirmed (as after a timeout)
// Everything it returns is deterministic: the same integration and edition
// give the same post id, so a retried publish is recognisably the same post.
// Metrics (analytics): plausible numbers, the same for the same post (or
// account) on the same UTC day, growing with the post's age
// (sandboxPostMetrics, sandboxAccountMetrics below). With behavior `fail` the
// platform refuses metrics too; with `transient-then-succeed` it refuses
// account metrics for its rate limit (ConnectorError RATE_LIMITED), so
// integration health has rate-limit hits to show.
import { createHash } from 'node:crypto';
import { YOUTUBE_VIDEO_CATEGORIES } from './reference.ts';
import {
  ConnectorError,
  type ArticleDraftInput,
  type ArticleDraftResult,
  type CaptionEditResult,
  type Connector,
  type ConnectorCall,
  type ConnectorOptions,
  type InboxActionResult,
  type InboxModeration,
  type InboxReply,
  type IntegrationRef,
  type PlatformOption,
  type AccountMetrics,
  type DemographicCounts,
  type MetricsQuery,
  type PostMetrics,
  type PublishableEdition,
  type PublishResult,
} from './types.ts';

export const SANDBOX_BEHAVIORS = ['succeed', 'fail', 'transient-then-succeed', 'unknown'] as const;
export type SandboxBehavior = (typeof SANDBOX_BEHAVIORS)[number];

/** Permalinks point here; `.invalid` never resolves, so nothing can follow them by mistake. */
export const SANDBOX_DEFAULT_BASE_URL = 'https://sandbox.pressroom.invalid';

const BOARD_NAMES = [
  'Inspiration',
  'Product launches',
  'Behind the scenes',
  'Recipes',
  'Travel ideas',
  'Team favourites',
  'Seasonal',
  'Customer stories',
];

function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex');
}

export function sandboxBehavior(integration: IntegrationRef): SandboxBehavior {
  const b = integration.settings?.behavior;
  return (SANDBOX_BEHAVIORS as readonly unknown[]).includes(b) ? (b as SandboxBehavior) : 'succeed';
}

/** The boards of a sandbox account: three to five, fixed for the integration. */
export function sandboxBoards(integrationId: string): PlatformOption[] {
  const h = digest('boards', integrationId);
  const count = 3 + (parseInt(h.slice(0, 2), 16) % 3);
  const start = parseInt(h.slice(2, 4), 16) % BOARD_NAMES.length;
  return Array.from({ length: count }, (_, i) => ({
    id: `sb-board-${h.slice(8, 16)}-${i + 1}`,
    name: BOARD_NAMES[(start + i) % BOARD_NAMES.length],
  }));
}

export function createSandboxConnector(options: Partial<ConnectorOptions> = {}): Connector {
  const base = (options.baseUrl ?? SANDBOX_DEFAULT_BASE_URL).replace(/\/+$/, '');
  const account = (i: IntegrationRef) => encodeURIComponent(i.username ?? i.id.slice(0, 8));

  const refuseUnless = (i: IntegrationRef, capability: keyof NonNullable<IntegrationRef['capabilities']>, what: string) => {
    if (i.capabilities && !i.capabilities[capability]) {
      throw new ConnectorError('NOT_SUPPORTED', `${i.platform} does not support ${what}.`, { platform: i.platform });
    }
  };

  return {
    name: 'sandbox',
    // The same token returns the same post (app.sandbox_posts is unique per integration and token).
    acceptsIdempotencyToken: true,

    async publish(integration: IntegrationRef, edition: PublishableEdition, call?: ConnectorCall): Promise<PublishResult> {
      const store = call?.sandboxStore;
      const behavior = sandboxBehavior(integration);
      if (behavior === 'fail') {
        return { state: 'failed', permanent: true, error: 'The sandbox platform refused the post (behavior: fail).' };
      }
      if (behavior === 'unknown') {
        return { state: 'unknown', error: 'The sandbox platform did not confirm the post (behavior: unknown).' };
      }
      if (behavior === 'transient-then-succeed' && edition.attempt <= 1) {
        return { state: 'failed', permanent: false, error: 'The sandbox platform is temporarily unavailable (behavior: transient-then-succeed, attempt 1).' };
      }
      const platformPostId = `sb-${integration.platform}-${digest('post', integration.id, edition.id).slice(0, 20)}`;
      const permalink = `${base}/${integration.platform}/${account(integration)}/posts/${platformPostId}`;
      if (store) {
        const kept = await store.receive({
          integrationId: integration.id,
          token: edition.idempotencyToken ?? `publish:${edition.id}`,
          contentId: edition.id,
          platformPostId,
          permalink,
          caption: edition.caption,
          payload: { ...edition, media: edition.media.map((m) => ({ id: m.id, type: m.type, url: m.url })) },
        });
        return { state: 'published', platformPostId: kept.platformPostId, permalink: kept.permalink };
      }
      return { state: 'published', platformPostId, permalink };
    },

    async editPublishedCaption(
      integration: IntegrationRef,
      post: { platformPostId: string; caption: string; attempt: number },
      call?: ConnectorCall,
    ): Promise<CaptionEditResult> {
      const store = call?.sandboxStore;
      refuseUnless(integration, 'editPublishedCaption', 'editing a published caption');
      const behavior = sandboxBehavior(integration);
      if (behavior === 'fail') return { state: 'failed', permanent: true, error: 'The sandbox platform refused the caption (behavior: fail).' };
      if (behavior === 'unknown') return { state: 'unknown', error: 'The sandbox platform did not confirm the caption (behavior: unknown).' };
      if (behavior === 'transient-then-succeed' && post.attempt <= 1) {
        return { state: 'failed', permanent: false, error: 'The sandbox platform is temporarily unavailable (behavior: transient-then-succeed, attempt 1).' };
      }
      if (store && !(await store.editCaption({ integrationId: integration.id, platformPostId: post.platformPostId, caption: post.caption }))) {
        return { state: 'failed', permanent: true, error: 'The sandbox platform has no post with this id.' };
      }
      return { state: 'updated' };
    },

    async createDraft(integration: IntegrationRef, article: ArticleDraftInput): Promise<ArticleDraftResult> {
      refuseUnless(integration, 'canPublishArticles', 'articles');
      if (sandboxBehavior(integration) === 'fail') {
        throw new ConnectorError('UPSTREAM_ERROR', 'The sandbox platform refused the draft (behavior: fail).');
      }
      // One draft per article and content: an unchanged article maps to the same draft.
      const articleId = `sb-article-${digest('article', integration.id, article.contentId, article.title, article.bodyHtml).slice(0, 20)}`;
      return { articleId, draftUrl: `${base}/${integration.platform}/${account(integration)}/drafts/${articleId}` };
    },

    async fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics> {
      if (sandboxBehavior(integration) === 'fail') {
        throw new ConnectorError('UPSTREAM_ERROR', 'The sandbox platform refused the metrics (behavior: fail).');
      }
      return sandboxPostMetrics(integration, post);
    },

    async fetchAccountMetrics(integration: IntegrationRef, query: { at?: Date } = {}): Promise<AccountMetrics> {
      const behavior = sandboxBehavior(integration);
      if (behavior === 'fail') throw new ConnectorError('UPSTREAM_ERROR', 'The sandbox platform refused the account metrics (behavior: fail).');
      if (behavior === 'transient-then-succeed') {
        throw new ConnectorError('RATE_LIMITED', 'The sandbox platform is rate-limiting account metrics (behavior: transient-then-succeed).');
      }
      return sandboxAccountMetrics(integration, query.at ?? new Date());
    },

    async listBoards(integration: IntegrationRef): Promise<PlatformOption[]> {
      refuseUnless(integration, 'boards', 'boards');
      return sandboxBoards(integration.id);
    },

    async listVideoCategories(integration: IntegrationRef): Promise<PlatformOption[]> {
      refuseUnless(integration, 'videoCategories', 'video categories');
      return YOUTUBE_VIDEO_CATEGORIES.map((c) => ({ ...c }));
    },

    // Inbox: the outcome follows settings.behavior as for publishing (unknown
    // counts as a temporary failure: a reply is never left unconfirmed); the
    // reply's id is derived from its token, so a re-sent try is the same reply.
    async reply(integration: IntegrationRef, reply: InboxReply): Promise<InboxActionResult> {
      const behavior = sandboxBehavior(integration);
      if (behavior === 'fail') return { state: 'failed', permanent: true, error: 'The sandbox platform refused the reply (behavior: fail).' };
      if (behavior === 'unknown' || (behavior === 'transient-then-succeed' && reply.attempt <= 1)) {
        return { state: 'failed', permanent: false, error: `The sandbox platform is temporarily unavailable (behavior: ${behavior}).` };
      }
      return { state: 'done', platformMessageId: `sb-reply-${digest('reply', integration.id, reply.idempotencyToken).slice(0, 20)}` };
    },

    async moderate(integration: IntegrationRef, m: InboxModeration): Promise<InboxActionResult> {
      if (sandboxBehavior(integration) === 'fail') {
        return { state: 'failed', permanent: true, error: `The sandbox platform refused to ${m.action} the message (behavior: fail).` };
      }
      return { state: 'done', platformMessageId: m.platformMessageId };
    },
  };
}

// --- Analytics: plausible, deterministic numbers -------------------------------
// The same post (or account) on the same UTC day always gives the same
// numbers, so tests and demos have data that a re-run reproduces.

const DAY_MS = 86_400_000;
/** 2024-01-01, the day sandbox accounts start growing from. */
const ACCOUNT_EPOCH_DAY = 19_723;
const AGE_BANDS = ['13-17', '18-24', '25-34', '35-44', '45-54', '55-64', '65+'];
const GENDERS = ['female', 'male', 'other'];
const COUNTRIES = ['US', 'DE', 'GB', 'FR', 'BR', 'IN', 'JP', 'CA', 'ES', 'IT', 'NL', 'MX'];
const VIDEO_PLATFORMS = new Set(['youtube', 'tiktok', 'instagram', 'facebook']);

const utcDay = (d: Date) => Math.floor(d.getTime() / DAY_MS);

/**
 * A post's lifetime counters on the day of `at`: its final figures (fixed by
 * integration and post id) times the share reached that many days after
 * publication (half on the first day, then half of the rest each day), so
 * counters only grow and level off within a couple of weeks.
 */
export function sandboxPostMetrics(integration: IntegrationRef, post: MetricsQuery): PostMetrics {
  const at = post.at ?? new Date();
  const h = digest('metrics', integration.id, post.platformPostId);
  const n = (i: number, mod: number) => parseInt(h.slice(i * 4, i * 4 + 4), 16) % mod;
  const day = utcDay(at);
  const published = post.publishedAt ? utcDay(new Date(post.publishedAt)) : day;
  const share = 1 - 0.5 ** (Math.max(0, day - published) + 1);
  const impressions = 200 + n(0, 19_800);
  const reach = Math.floor(impressions * (0.55 + n(1, 40) / 100));
  const of = (rate: number) => Math.floor(impressions * rate * share);
  return {
    impressions: Math.floor(impressions * share),
    reach: Math.floor(reach * share),
    likes: of((2 + n(2, 80) / 10) / 100),
    comments: of((0.1 + n(3, 10) / 10) / 100),
    shares: of((0.1 + n(4, 15) / 10) / 100),
    saves: of((0.1 + n(5, 20) / 10) / 100),
    clicks: of((0.5 + n(6, 30) / 10) / 100),
    videoViews: VIDEO_PLATFORMS.has(integration.platform) ? of((10 + n(7, 50)) / 100) : 0,
    fetchedAt: at.toISOString(),
  };
}

/** Splits `total` over the buckets in proportion to their weights (the remainder to the first). */
function spread(total: number, buckets: string[], weights: number[]): DemographicCounts {
  const sum = weights.reduce((a, b) => a + b, 0) || 1;
  const counts = weights.map((w) => Math.floor((total * w) / sum));
  counts[0] += total - counts.reduce((a, b) => a + b, 0);
  return Object.fromEntries(buckets.map((b, i) => [b, counts[i]]));
}

/** An account's followers (growing every day), that day's profile views, and follower demographics. */
export function sandboxAccountMetrics(integration: IntegrationRef, at: Date): AccountMetrics {
  const h = digest('account', integration.id);
  const n = (i: number, mod: number) => parseInt(h.slice(i * 4, i * 4 + 4), 16) % mod;
  const day = utcDay(at);
  const followers = 1_000 + n(0, 49_000) + (1 + n(1, 40)) * Math.max(0, day - ACCOUNT_EPOCH_DAY);
  const daily = digest('account-day', integration.id, String(day));
  const countries = Array.from({ length: 5 }, (_, i) => COUNTRIES[(n(2, COUNTRIES.length) + i * (1 + n(3, 3))) % COUNTRIES.length]);
  const uniqueCountries = [...new Set(countries)];
  return {
    followers,
    profileViews: 20 + (parseInt(daily.slice(0, 4), 16) % 400),
    demographics: {
      age: spread(followers, AGE_BANDS, AGE_BANDS.map((_, i) => [2, 22, 30, 20, 12, 8, 6][i] * (1 + n(4 + i, 5)))),
      gender: spread(followers, GENDERS, [40 + n(11, 20), 40 + n(12, 20), 2]),
      country: spread(followers, uniqueCountries, uniqueCountries.map((_, i) => 50 / (i + 1) + n((13 + i) % 16, 10))),
    },
    fetchedAt: at.toISOString(),
  };
}
