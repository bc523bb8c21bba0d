import type { CredentialVault } from './vault.ts';
import { openWebhookSecret } from './webhook-secret.ts';
import type { SerializableValue } from 'slonik';
// One interface for every connector (docs/architecture.md, "Connectors"). A connector is
// stateless and serves every integration of its kind: each call names the
// integration it acts for. Each lives in one file with one PlatformModule
// (section "Connected accounts" below) listed in server/platforms/index.ts;
// platforms' API bases are configurable, so tests point them at local fakes
// (docs/connectors.md).

export type ConnectorName = 'sandbox' | 'webhook' | 'mastodon' | 'bluesky' | 'x' | 'linkedin';

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
  /** A connected account's credentials (decrypted by the worker; never present in a request). */
  credentials?: IntegrationCredentials | null;
  /** Where the account's platform API is (instance or PDS for Mastodon and Bluesky; the operator's base otherwise). */
  endpoint?: PlatformEndpoint;
}

/**
 * The integration a connector works on, from a row the SQL functions return (settings may be
 * null there); a webhook channel's secret is opened with the credential vault.
 */
export function integrationRef(row: Omit<IntegrationRef, 'settings'> & { settings: Record<string, unknown> | null }, vault: CredentialVault): IntegrationRef {
  return {
    id: row.id,
    connector: row.connector,
    platform: row.platform,
    name: row.name,
    username: row.username,
    settings: row.settings ?? {},
    ...(row.capabilities ? { capabilities: row.capabilities } : {}),
    webhookUrl: row.webhookUrl,
    webhookSecret: openWebhookSecret(vault, row.webhookSecret),
  };
}

export interface MediaRef {
  id: string;
  type: MediaKind;
  /** A URL the platform (or webhook receiver) can fetch the bytes from; signed and expiring. */
  url: string;
  contentType?: string;
  altText: string | null;
  /** Bytes and pixel size, for connectors that upload the file themselves (every platform but sandbox and webhook); the worker fills these in. */
  size?: number;
  width?: number | null;
  height?: number | null;
  /** Reads the file from media storage (at most `size` bytes). */
  read?: () => Promise<Buffer>;
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
  /** threadPostIds: the ids of a thread's further posts, in order (platformPostId is the first's), where the connector knows them. */
  | { state: 'published'; platformPostId: string; permalink: string | null; threadPostIds?: string[] }
  /**
   * permanent: retrying cannot help (rejected content, revoked access); otherwise retry later.
   * retryAt: the platform's rate limit resets then (429 with reset headers): put the edition back until it.
   * reauth: the platform refused the access token (401): refresh the credentials once and try again.
   */
  | { state: 'failed'; permanent: boolean; error: string; retryAt?: string; reauth?: boolean }
  /** The request may or may not have reached the platform (timeout after sending): verify before retrying. */
  | { state: 'unknown'; error: string };

export type CaptionEditResult = { state: 'updated' } | { state: 'failed'; permanent: boolean; error: string; reauth?: boolean } | { state: 'unknown'; error: string };

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
  /**
   * For platforms with no idempotency (X, LinkedIn): after an unknown outcome,
   * looks for the post this edition's earlier attempt may have made (by its
   * caption and time, or a marker), so the engine records it instead of
   * posting twice. Null when none is found; throws ConnectorError when the
   * platform cannot be asked now.
   */
  findPublished?(integration: IntegrationRef, edition: PublishableEdition, since: Date): Promise<{ platformPostId: string; permalink: string | null } | null>;
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

/** reauth: the platform refused the access token (401): the inbox job refreshes the credentials once and tries again. */
export type InboxActionResult = { state: 'done'; platformMessageId: string | null } | { state: 'failed'; permanent: boolean; error: string; reauth?: boolean };

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

// ---------------------------------------------------------------------------
// Connected accounts: the platforms' own connectors (docs/connectors.md)
// ---------------------------------------------------------------------------
//
// A platform connector lives in one file, server/platforms/<name>.ts, and
// exports one PlatformModule; the registry (server/platforms/index.ts) lists
// the modules. The framework around it (stored credentials, the OAuth flow,
// refresh under a lock, the reconnect-required state) calls the module's
// `auth` part; the publish worker, the inbox and analytics jobs call the
// Connector it creates, with the account's decrypted credentials in
// IntegrationRef.credentials (filled in by the worker only, never by a request).

/** A connected account's credentials, decrypted. Never answered, logged or audited. */
export interface IntegrationCredentials {
  accessToken: string;
  /** Null when the platform gives none (Mastodon tokens do not expire) or it was not granted. */
  refreshToken: string | null;
  /** When the access token expires (ISO 8601), when the platform says. */
  expiresAt: string | null;
  /** When the refresh token itself expires (LinkedIn: 1 year), when known. */
  refreshExpiresAt?: string | null;
  /** The scopes granted. */
  scopes: string[];
  /** What else the connector keeps with the account, e.g. Bluesky's DID and PDS, Mastodon's instance, LinkedIn's author URN. */
  extra: Record<string, unknown>;
}

/** The operator's app registered at a platform (client id and secret), decrypted. */
export interface PlatformApp {
  clientId: string;
  clientSecret: string | null;
}

/** The account a credential acts as, as the platform names it. */
export interface PlatformAccount {
  /** The platform's stable id of the account (X user id, LinkedIn person or organization URN, Mastodon account id, Bluesky DID). */
  id: string;
  /** The handle (@name), when the platform has one. */
  username: string | null;
  /** The display name. */
  name: string;
  avatarUrl?: string | null;
  profileUrl?: string | null;
  /** For a platform whose one consent covers several accounts (LinkedIn organization pages): what the choice step shows. */
  kind?: 'person' | 'organization' | 'page';
  /** Credentials specific to this account (a page token), merged over the consent's. */
  extra?: Record<string, unknown>;
}

/** The result of a token exchange or refresh that the platform accepted. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string | null;
  /** Seconds the access token lives, when the platform says. */
  expiresIn: number | null;
  refreshExpiresIn?: number | null;
  scopes: string[];
  extra?: Record<string, unknown>;
}

/**
 * A refresh's outcome. `revoked`: the platform refused the grant for good
 * (invalid_grant, revoked, expired): the integration becomes
 * reconnect_required with the reason. `retry`: the platform is down, rate
 * limited or did not answer: try again later, never disconnect.
 */
export type RefreshOutcome =
  | { state: 'refreshed'; tokens: TokenSet }
  | { state: 'revoked'; reason: string }
  | { state: 'retry'; error: string; retryAt?: Date | null };

/** Where the platform lives for this account: fixed (X, LinkedIn) or the user's own server (Mastodon instance, Bluesky PDS). */
export interface PlatformEndpoint {
  /** The API base: the operator's override (tests point it at a local fake) or the user's instance/PDS URL. */
  baseUrl: string;
  /** Whether this base may be loopback or private: true for an operator-set base, WEBHOOK_ALLOW_PRIVATE_NETWORKS for a user-given one. */
  allowPrivateNetworks: boolean;
}

/** The OAuth 2.0 authorization-code flow of a platform (PKCE S256 wherever the platform supports it). */
export interface OAuthFlow {
  /** Scopes asked for; the callback refuses a grant missing one of `requiredScopes`. */
  scopes: string[];
  requiredScopes: string[];
  pkce: boolean;
  /** Whether the platform needs an operator app (false for Mastodon: an app is registered on each instance). */
  needsOperatorApp: boolean;
  /** The URL the user's browser is sent to. */
  authorizeUrl(input: { endpoint: PlatformEndpoint; app: PlatformApp; redirectUri: string; state: string; codeChallenge: string | null; scopes: string[] }): string;
  /** Exchanges the authorization code; throws ConnectorError UPSTREAM_ERROR with the platform's reason when refused. */
  exchangeCode(input: { endpoint: PlatformEndpoint; app: PlatformApp; redirectUri: string; code: string; codeVerifier: string | null; timeoutMs: number }): Promise<TokenSet>;
  /** Exchanges a refresh token; never throws. */
  refresh(input: { endpoint: PlatformEndpoint; app: PlatformApp; credentials: IntegrationCredentials; timeoutMs: number }): Promise<RefreshOutcome>;
  /** Registers an app on a user-given instance (Mastodon: POST /api/v1/apps); absent where the operator registers apps. */
  registerApp?(input: { endpoint: PlatformEndpoint; redirectUri: string; scopes: string[]; timeoutMs: number }): Promise<PlatformApp>;
}

/** Sign-in with a password the user made for the app (Bluesky app passwords). */
export interface PasswordFlow {
  /** Creates a session; throws ConnectorError UPSTREAM_ERROR (refused) or UNSAFE_URL. */
  signIn(input: { endpoint: PlatformEndpoint; identifier: string; password: string; timeoutMs: number }): Promise<TokenSet>;
  /** `oauthClient`: what an OAuth session's refresh needs of the server (Bluesky's AT Protocol OAuth credentials); the worker passes its configuration. */
  refresh(input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number; oauthClient?: OAuthClientConfig }): Promise<RefreshOutcome>;
}

/** The server's configuration as an AT Protocol OAuth client needs it (server/platforms/bluesky-oauth.ts). */
export interface OAuthClientConfig {
  DATA_DIR: string;
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: boolean;
  PUBLISH_TIMEOUT_MS: number;
  BLUESKY_OAUTH_PRIVATE_KEY?: string | undefined;
  BLUESKY_PLC_URL?: string | undefined;
}

/** What a connector says about the account's own limits, for the content checks (Mastodon: the instance's). */
export interface AccountLimits {
  captionMaxLength?: number;
  maxMedia?: number;
  imageMaxBytes?: number;
  videoMaxBytes?: number;
}

/** One platform connector: one file, one entry in the registry. */
export interface PlatformModule {
  /** The connector name stored in app.integrations.connector. */
  readonly name: string;
  /** The app.platforms codes it publishes to. */
  readonly platforms: readonly string[];
  /** How an account is connected: an operator's OAuth app, a per-instance OAuth app, an app password, or nothing (sandbox, webhook). */
  readonly connect: 'oauth' | 'password' | 'none';
  /** The default API base (absent where the user names the instance or PDS). */
  readonly defaultBaseUrl?: string;
  /** Environment variable names of the operator's app, e.g. X_CLIENT_ID / X_CLIENT_SECRET. */
  readonly appEnv?: { clientId: string; clientSecret: string };
  readonly oauth?: OAuthFlow;
  readonly password?: PasswordFlow;
  /** Accounts also connect through AT Protocol OAuth (server/platforms/bluesky-oauth.ts: PAR, PKCE, DPoP by @atproto/oauth-client-node), besides `connect`. */
  readonly atprotoOAuth?: boolean;
  /** The account(s) a fresh credential acts for (more than one: the user chooses, one integration each). */
  readAccounts?(input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number }): Promise<PlatformAccount[]>;
  /** The account's own limits (read at connect and refresh), when the platform publishes them. */
  readLimits?(input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number }): Promise<AccountLimits | null>;
  /** The publishing side, shared by every account of the connector. */
  create(options: ConnectorOptions): Connector;
}
