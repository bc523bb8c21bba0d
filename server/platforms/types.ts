import type { SerializableValue } from 'slonik';
// One interface for every connector (docs/architecture.md, "Connectors"). A connector is
// stateless and serves every integration of its kind: each call names the
// integration it acts for. Connectors that need no outside network ship
// now (sandbox, webhook); connectors for real platforms (OAuth) come later
// and take their API base URL from ConnectorOptions.baseUrl, so tests can
// point them at a local fake.

export type ConnectorName = 'sandbox' | 'webhook';

export type MediaKind = 'image' | 'video' | 'gif';

/** What the platform allows, as app.platforms stores it (see the integration detail route). */
export interface PlatformCapabilities {
  canPublishArticles: boolean;
  boards: boolean;
  videoCategories: boolean;
  threads: boolean;
  editPublishedCaption: boolean;
}

/** The integration a call acts for. The secret is filled in only by the worker, never by a request. */
export interface IntegrationRef {
  id: string;
  connector: ConnectorName;
  platform: string;
  name: string;
  username: string | null;
  settings: Record<string, unknown>;
  capabilities?: PlatformCapabilities;
  webhookUrl?: string | null;
  webhookSecret?: string | null;
}

/** The integration a connector works on, from a row the SQL functions return (settings may be null there). */
export function integrationRef(row: Omit<IntegrationRef, 'settings'> & { settings: Record<string, unknown> | null }): IntegrationRef {
  return {
    id: row.id,
    connector: row.connector,
    platform: row.platform,
    name: row.name,
    username: row.username,
    settings: row.settings ?? {},
    ...(row.capabilities ? { capabilities: row.capabilities } : {}),
    webhookUrl: row.webhookUrl,
    webhookSecret: row.webhookSecret,
  };
}

export interface MediaRef {
  id: string;
  type: MediaKind;
  /** A URL the platform (or webhook receiver) can fetch the bytes from; signed and expiring. */
  url: string;
  contentType?: string;
  altText: string | null;
}

/** One edition (content item) ready to publish, with its effective caption and media. */
export interface PublishableEdition {
  id: string;
  rootId: string;
  /** 1 for the first try; the publishing engine increments it per retry. Same id + attempt = same call. */
  attempt: number;
  caption: string;
  title?: string | null;
  /** Platform settings (boardId, title, categoryId, privacy, ...). */
  settings: Record<string, unknown>;
  media: MediaRef[];
  /** Further thread messages, for platforms with threads. */
  thread: { caption: string; media: MediaRef[] }[];
  scheduledAt: string | null;
  /**
   * The same for every attempt to publish this edition (version): a platform
   * that accepts it returns the post it already made instead of a second one.
   */
  idempotencyToken?: string;
}

export type PublishResult =
  | { state: 'published'; platformPostId: string; permalink: string | null }
  /** permanent: retrying cannot help (rejected content, revoked access); otherwise retry later. */
  | { state: 'failed'; permanent: boolean; error: string }
  /** The request may or may not have reached the platform (timeout after sending): verify before retrying. */
  | { state: 'unknown'; error: string };

export type CaptionEditResult = { state: 'updated' } | { state: 'failed'; permanent: boolean; error: string } | { state: 'unknown'; error: string };

export interface ArticleDraftInput {
  contentId: string;
  title: string;
  bodyHtml: string;
  cover: MediaRef | null;
  images: MediaRef[];
}

export interface ArticleDraftResult {
  articleId: string;
  draftUrl: string | null;
}

export interface PostMetrics {
  impressions: number;
  likes: number;
  comments: number;
  shares: number;
  clicks: number;
  fetchedAt: string;
  // Analytics (server/jobs/analytics.ts): the further lifetime counters a platform may report.
  reach?: number;
  saves?: number;
  videoViews?: number;
}

// --- Analytics: integration (account) metrics --------------------------------
/** Follower counts by bucket: age band ('18-24'), gender, ISO 3166-1 alpha-2 country. */
export type DemographicCounts = Record<string, number>;

/** An account's figures at one instant: followers (a level), profile views that day, follower demographics. */
export interface AccountMetrics {
  followers: number;
  profileViews: number | null;
  demographics: { age: DemographicCounts; gender: DemographicCounts; country: DemographicCounts } | null;
  fetchedAt: string;
}

/** What a metrics call names: the post, when it was published, and the instant asked about (default now). */
export interface MetricsQuery {
  platformPostId: string;
  publishedAt?: string | null;
  at?: Date;
}
// --- end analytics ------------------------------------------------------------

/** A board (Pinterest) or a video category (YouTube): what a setting may name. */
export interface PlatformOption {
  id: string;
  name: string;
}

export interface Connector {
  readonly name: ConnectorName;
  /**
   * Whether the platform honours PublishableEdition.idempotencyToken, so an
   * attempt interrupted mid-call may be re-sent safely (sandbox yes; webhook
   * receivers are not known to).
   */
  readonly acceptsIdempotencyToken: boolean;
  /**
   * How hard the platform may be pushed (real platforms limit posts per
   * account and per app window). The publish worker records it in
   * app.connector_publish_limits at start; the batch claim enforces it.
   */
  readonly publishLimits?: PublishLimits;
  /** Publishes one edition. Never throws for a platform's answer: the outcome is in the result. */
  publish(integration: IntegrationRef, edition: PublishableEdition, call?: ConnectorCall): Promise<PublishResult>;
  /** Changes the caption of a published post (platforms with capabilities.editPublishedCaption). */
  editPublishedCaption(
    integration: IntegrationRef,
    post: { platformPostId: string; caption: string; attempt: number },
    call?: ConnectorCall,
  ): Promise<CaptionEditResult>;
  /** Puts an article into the account's platform drafts without publishing it (canPublishArticles). */
  createDraft(integration: IntegrationRef, article: ArticleDraftInput): Promise<ArticleDraftResult>;
  /** Engagement figures of a published post; null when the connector cannot know them. */
  fetchMetrics(integration: IntegrationRef, post: MetricsQuery): Promise<PostMetrics | null>;
  /** The account's followers, profile views and demographics; null when the connector cannot know them. Throws ConnectorError RATE_LIMITED when the platform refuses for its rate limit. */
  fetchAccountMetrics(integration: IntegrationRef, query?: { at?: Date }): Promise<AccountMetrics | null>;
  /** Boards of a board-based platform (capabilities.boards). */
  listBoards(integration: IntegrationRef): Promise<PlatformOption[]>;
  /** Video categories of a video platform (capabilities.videoCategories). */
  listVideoCategories(integration: IntegrationRef): Promise<PlatformOption[]>;
  // Inbox (server/jobs/inbox.ts): never throw for a platform's answer.
  /** Sends a reply in an inbox thread (a comment under the post or comment, or a direct message). */
  reply(integration: IntegrationRef, reply: InboxReply): Promise<InboxActionResult>;
  /** Hides, unhides or deletes an inbound message on the platform. */
  moderate(integration: IntegrationRef, action: InboxModeration): Promise<InboxActionResult>;
}

/** A connector's publish limits; every field optional (absent: no limit). */
export interface PublishLimits {
  /** Per integration (one account): posts in flight at once, and posts per fixed window. */
  perIntegration?: { maxInFlight?: number; maxPerWindow?: number; windowSeconds?: number };
  /** Per app (all integrations of the connector): posts per fixed window. */
  perApp?: { maxPerWindow: number; windowSeconds: number };
}

// Inbox replies and moderation ------------------------------------------------

export interface InboxReply {
  messageId: string;
  threadKind: 'comment' | 'message';
  /** The post (comment threads) or the other party (direct messages). */
  platformThreadId: string;
  /** The platform id of the message answered, if any. */
  inReplyTo: string | null;
  text: string;
  /** 1 for the first try; a retry of a failed reply counts on. */
  attempt: number;
  /** Same for every try of this reply's attempt: a platform that honours it answers the first result. */
  idempotencyToken: string;
}

export interface InboxModeration {
  messageId: string;
  threadKind: 'comment' | 'message';
  platformThreadId: string;
  platformMessageId: string;
  action: 'hide' | 'unhide' | 'delete';
  idempotencyToken: string;
}

export type InboxActionResult = { state: 'done'; platformMessageId: string | null } | { state: 'failed'; permanent: boolean; error: string };

export interface ConnectorOptions {
  /**
   * Base URL of the platform's API (OAuth connectors) or of generated links
   * (sandbox permalinks). Configurable so tests point real connectors at a
   * local fake.
   */
  baseUrl?: string;
  /** Time limit of one outgoing call. */
  timeoutMs: number;
  /** Whether webhook URLs may resolve to loopback or private networks (WEBHOOK_ALLOW_PRIVATE_NETWORKS). */
  allowPrivateNetworks: boolean;
}

/**
 * What one call brings besides the integration: where the sandbox platform
 * keeps its memory for this caller. Connectors are shared by the worker and
 * every request, so the caller passes its own store (server/platforms/stores.ts:
 * the worker's acts as pressroom_worker, a request's runs api functions in a
 * short transaction of its own); without one the sandbox keeps nothing.
 */
export interface ConnectorCall {
  sandboxStore?: SandboxStore;
}

/** The sandbox platform's memory (app.sandbox_posts), written through the database. */
export interface SandboxStore {
  /** Records a post once per (integration, token); a repeat returns the first post. */
  receive(post: {
    integrationId: string;
    token: string;
    contentId: string;
    platformPostId: string;
    permalink: string | null;
    caption: string;
    /** What the platform received, as JSON. */
    payload: SerializableValue;
  }): Promise<{ platformPostId: string; permalink: string | null }>;
  editCaption(post: { integrationId: string; platformPostId: string; caption: string }): Promise<boolean>;
}

export type ConnectorErrorCode = 'NOT_SUPPORTED' | 'UNKNOWN_CONNECTOR' | 'MISSING_SECRET' | 'UPSTREAM_ERROR' | 'UNSAFE_URL' | 'RATE_LIMITED';

/** A connector cannot do what was asked (as opposed to a platform's answer, which is a result). */
export class ConnectorError extends Error {
  readonly code: ConnectorErrorCode;
  readonly details: Record<string, unknown> | null;
  constructor(code: ConnectorErrorCode, message: string, details: Record<string, unknown> | null = null) {
    super(message);
    this.name = 'ConnectorError';
    this.code = code;
    this.details = details;
  }
}
