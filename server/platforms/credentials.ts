// The worker's side of connected accounts (docs/connectors.md, "Credentials"):
// reading an integration's credentials for a connector call, and refreshing
// them, always under the row lock of app.credentials_lock so that two workers
// never refresh the same grant (X rotates refresh tokens: a second refresh with
// the spent token kills the grant), the rotated token stored in the same
// transaction. A refusal for good (`revoked`) marks the integration
// reconnect_required (app.integration_reconnect_required); an outage (`retry`)
// only counts a failure with backoff (app.credentials_refresh_failed): an
// outage never disconnects anyone. Everything runs as pressroom_worker.
import type { DatabasePool, DatabaseTransactionConnection } from 'slonik';
import type { Config } from '../config.ts';
import { jsonResult, sql } from '../db/pool.ts';
import { asWorker } from '../db/worker.ts';
import type { Logger } from '../log.ts';
import { CONNECTOR_MODULES, connectorBaseUrl, isConnectorName, platformModule } from './index.ts';
import { ConnectorError, type AccountLimits, type IntegrationCredentials, type IntegrationRef, type PlatformApp, type PlatformEndpoint, type PlatformModule, type RefreshOutcome } from './types.ts';
import { CredentialVault } from './vault.ts';

/** Whether a connector publishes as a connected account (its credentials in app.integration_credentials), unlike sandbox and webhook. */
export function connectsAccount(connector: string): boolean {
  return isConnectorName(connector) && CONNECTOR_MODULES[connector].connect !== 'none';
}

/** What the credential functions need of the configuration. */
export type CredentialsConfig = Pick<Config, 'DATA_DIR' | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS' | 'PUBLISH_TIMEOUT_MS'> & Partial<Config>;

const vaults = new WeakMap<object, CredentialVault>();
/** The credential vault of a configuration (CREDENTIALS_KEYS, else DATA_DIR/credentials.key), made once per configuration object. */
export function vaultOf(config: Pick<Config, 'DATA_DIR'> & Partial<Config>): CredentialVault {
  let v = vaults.get(config);
  if (!v) {
    v = CredentialVault.fromConfig(config);
    vaults.set(config, v);
  }
  return v;
}

/** The operator's app of a connector from the environment (its module's appEnv), or null. */
export function envApp(config: Partial<Config>, module: PlatformModule): PlatformApp | null {
  if (!module.appEnv) return null;
  const c = config as Record<string, unknown>;
  const id = c[module.appEnv.clientId];
  const secret = c[module.appEnv.clientSecret];
  return typeof id === 'string' && id ? { clientId: id, clientSecret: typeof secret === 'string' && secret ? secret : null } : null;
}

/**
 * Where the platform's API is for an account: its own server (a Mastodon
 * instance, a Bluesky PDS; guarded unless WEBHOOK_ALLOW_PRIVATE_NETWORKS), or
 * the operator's base (trusted). Null when the connector has neither.
 */
export function accountEndpoint(config: Pick<Config, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'> & Partial<Config>, connector: string, instanceUrl: string | null): PlatformEndpoint | null {
  if (instanceUrl) return { baseUrl: instanceUrl, allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS };
  const base = isConnectorName(connector) ? connectorBaseUrl(config, connector) : null;
  return base ? { baseUrl: base, allowPrivateNetworks: true } : null;
}

/** A credential row as app.credentials_for and app.credentials_lock answer it. */
export interface CredentialRow {
  integrationId: string;
  workspaceId: string;
  connector: string;
  platform: string;
  instanceUrl: string | null;
  accountId: string | null;
  connectionState: 'ok' | 'reconnect_required';
  connectionReason: string | null;
  ciphertext: string | null;
  keyVersion: number | null;
  expiresAt: string | null;
  refreshExpiresAt: string | null;
  refreshable: boolean;
  hasRefreshToken: boolean;
  refreshFailures: number;
  nextRefreshAt: string | null;
}

/** An account's credentials for a connector call, or why there are none. */
export type AccountCredentials =
  | { state: 'ok'; credentials: IntegrationCredentials; endpoint: PlatformEndpoint; ciphertext: string }
  | { state: 'reconnect_required'; reason: string }
  | { state: 'missing'; reason: string }
  /** The token is expired and the platform could not refresh it now (5xx, 429, network): try later. */
  | { state: 'retry'; reason: string; retryAt: Date | null };

/** How long before its expiry an access token is refreshed before a call. */
export const REFRESH_MARGIN_MS = 60_000;

/** The credential as SQL stores it (app.credentials_put): ciphertext bound to integration:<id>, expiry times in clear. */
export function credentialPayload(vault: CredentialVault, integrationId: string, credentials: IntegrationCredentials, refreshable: boolean) {
  return {
    ciphertext: vault.encryptJson(`integration:${integrationId}`, credentials).toString('base64'),
    keyVersion: vault.currentVersion,
    expiresAt: credentials.expiresAt,
    refreshExpiresAt: credentials.refreshExpiresAt ?? null,
    refreshable: refreshable && Boolean(credentials.refreshToken),
    hasRefreshToken: Boolean(credentials.refreshToken),
  };
}

export interface CredentialService {
  /** The credentials of a batch of integrations (platform connectors only), refreshing those about to expire. */
  forIntegrations(ids: string[]): Promise<Map<string, AccountCredentials>>;
  /**
   * Refreshes one integration's credentials under its row lock. `force`: refresh even if the
   * token has not expired (the platform refused it: a 401); unless the stored credential is no
   * longer `seen` (another worker refreshed it meanwhile), which is then used as it is.
   */
  refresh(id: string, opts?: { force?: boolean; seen?: string; dueOnly?: boolean }): Promise<AccountCredentials>;
  /** Refreshes every credential due (app.credentials_due), one by one; returns the outcomes by state. */
  refreshDue(limit?: number): Promise<Record<string, number>>;
}

const dueSoon = (c: IntegrationCredentials, now = Date.now()) => c.expiresAt !== null && Date.parse(c.expiresAt) - now < REFRESH_MARGIN_MS;

/**
 * Refreshes at once at most: each holds a pooled connection (its row lock) while the platform
 * answers, so a burst of expiring tokens cannot take every connection of the pool.
 */
export const REFRESH_CONCURRENCY = 4;

/** Runs `fn` over `items`, at most `n` at a time. */
async function eachLimited<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export function createCredentialService(deps: { pool: DatabasePool; config: CredentialsConfig; log: Logger }): CredentialService {
  const { pool, config, log } = deps;
  const vault = () => vaultOf(config);

  function decrypt(row: CredentialRow): IntegrationCredentials {
    return vault().decryptJson<IntegrationCredentials>(`integration:${row.integrationId}`, Buffer.from(row.ciphertext!, 'base64'));
  }

  function usable(row: CredentialRow | null): AccountCredentials | { state: 'row'; row: CredentialRow; credentials: IntegrationCredentials; endpoint: PlatformEndpoint } {
    if (!row) return { state: 'missing', reason: 'The integration does not exist.' };
    if (row.connectionState === 'reconnect_required') return { state: 'reconnect_required', reason: row.connectionReason ?? 'The platform refused the grant; connect the account again.' };
    if (!row.ciphertext) return { state: 'missing', reason: `No ${row.connector} account is connected to this integration; connect it (POST .../integrations/{id}/reconnect).` };
    const endpoint = accountEndpoint(config, row.connector, row.instanceUrl);
    if (!endpoint) return { state: 'missing', reason: `The ${row.connector} integration names no server; connect the account again.` };
    let credentials: IntegrationCredentials;
    try {
      credentials = decrypt(row);
    } catch (e) {
      // A key version no longer configured, or a tampered row: never a token in the message.
      return { state: 'missing', reason: `The stored credentials cannot be read by this server (${(e as Error).message}); check CREDENTIALS_KEYS or connect the account again.` };
    }
    return { state: 'row', row, credentials, endpoint };
  }

  /** The operator's (or the instance's) app a refresh authenticates with. */
  async function appFor(tx: DatabaseTransactionConnection, module: PlatformModule, row: CredentialRow): Promise<PlatformApp | null> {
    const fromEnv = row.instanceUrl ? null : envApp(config, module);
    if (fromEnv) return fromEnv;
    const stored = (await tx.oneFirst(sql.type(jsonResult)`select app.platform_app_for(${row.connector}, ${row.instanceUrl ?? ''}) as result`)) as unknown as {
      id: string;
      clientId: string;
      secretCiphertext: string | null;
    } | null;
    if (!stored) return null;
    return { clientId: stored.clientId, clientSecret: stored.secretCiphertext ? vault().decrypt(`platform-app:${stored.id}`, Buffer.from(stored.secretCiphertext, 'base64')) || null : null };
  }

  /**
   * The account's own limits (a Mastodon instance's characters and media, for the content checks)
   * read again after a refresh; a failed read keeps the stored ones. Never fails the refresh.
   */
  async function storeLimits(id: string, module: PlatformModule, input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number }) {
    const limits = await readAccountLimits(module, input);
    if (limits === undefined) return;
    try {
      await asWorker(pool, sql.fragment`app.integration_limits_store(${id}::uuid, ${limits ? sql.jsonb(limits as never) : null}::jsonb)`);
    } catch (e) {
      log.warn('account limits not stored', { integrationId: id, err: (e as Error).message });
    }
  }

  async function refreshLocked(id: string, opts: { force?: boolean; seen?: string; dueOnly?: boolean }): Promise<AccountCredentials> {
    // Work to do once the refresh committed and the lock is released (reading the account's limits).
    const afterCommit: (() => Promise<void>)[] = [];
    const result = await pool.transaction<AccountCredentials>(async (tx) => {
      await tx.query(sql.unsafe`select set_config('role', 'pressroom_worker', true)`);
      const row = (await tx.oneFirst(sql.type(jsonResult)`select app.credentials_lock(${id}) as result`)) as unknown as CredentialRow | null;
      const u = usable(row);
      if (u.state !== 'row') return u;
      const ok: AccountCredentials = { state: 'ok', credentials: u.credentials, endpoint: u.endpoint, ciphertext: u.row.ciphertext! };
      // Another worker refreshed it while this one waited for the lock: use theirs.
      if (opts.seen && opts.seen !== u.row.ciphertext) return ok;
      // The refresh job: another run refreshed it (or planned its next try) while this one waited for the lock.
      if (opts.dueOnly && (!u.row.nextRefreshAt || Date.parse(u.row.nextRefreshAt) > Date.now())) return ok;
      if (!opts.force && !dueSoon(u.credentials)) return ok;
      const module = platformModule(u.row.connector);
      let outcome: RefreshOutcome;
      const timeoutMs = config.PUBLISH_TIMEOUT_MS;
      if (module.connect === 'oauth' && module.oauth) {
        const app = await appFor(tx, module, u.row);
        if (!app && module.oauth.needsOperatorApp) outcome = { state: 'retry', error: `No ${u.row.connector} app is configured on this server (${module.appEnv?.clientId ?? 'platform-app set'}); the token cannot be refreshed.` };
        else outcome = await module.oauth.refresh({ endpoint: u.endpoint, app: app ?? { clientId: '', clientSecret: null }, credentials: u.credentials, timeoutMs });
      } else if (module.connect === 'password' && module.password) {
        outcome = await module.password.refresh({ endpoint: u.endpoint, credentials: u.credentials, timeoutMs, oauthClient: config });
      } else {
        return ok;
      }
      if (outcome.state === 'refreshed') {
        const t = outcome.tokens;
        const now = Date.now();
        const next: IntegrationCredentials = {
          accessToken: t.accessToken,
          // Never replace a refresh token with none (app.credentials_put refuses it too).
          refreshToken: t.refreshToken ?? u.credentials.refreshToken,
          expiresAt: t.expiresIn ? new Date(now + t.expiresIn * 1000).toISOString() : t.accessToken === u.credentials.accessToken ? u.credentials.expiresAt : null,
          refreshExpiresAt: t.refreshExpiresIn ? new Date(now + t.refreshExpiresIn * 1000).toISOString() : (u.credentials.refreshExpiresAt ?? null),
          scopes: t.scopes.length ? t.scopes : u.credentials.scopes,
          extra: { ...u.credentials.extra, ...(t.extra ?? {}) },
        };
        const payload = credentialPayload(vault(), id, next, true);
        await tx.query(sql.unsafe`select app.credentials_store(${id}, ${sql.jsonb(payload)})`);
        // The account's limits are read again with the fresh token, after the commit (not under the lock).
        afterCommit.push(() => storeLimits(id, module, { endpoint: u.endpoint, credentials: next, timeoutMs }));
        log.info('credentials refreshed', { integrationId: id, connector: u.row.connector, expiresAt: next.expiresAt });
        return { state: 'ok', credentials: next, endpoint: u.endpoint, ciphertext: payload.ciphertext };
      }
      if (outcome.state === 'revoked') {
        await tx.query(sql.unsafe`select app.integration_reconnect_required(${id}, ${outcome.reason.slice(0, 1000)})`);
        log.warn('credentials revoked: reconnect required', { integrationId: id, connector: u.row.connector, reason: outcome.reason });
        return { state: 'reconnect_required', reason: outcome.reason };
      }
      await tx.query(sql.unsafe`select app.credentials_refresh_failed(${id}, ${outcome.error.slice(0, 1000)}, ${outcome.retryAt ? outcome.retryAt.toISOString() : null}::timestamptz)`);
      log.warn('credentials refresh failed; retried later', { integrationId: id, connector: u.row.connector, error: outcome.error });
      // The old token may still work (a refresh ahead of expiry); an expired one cannot.
      if (u.credentials.expiresAt && Date.parse(u.credentials.expiresAt) <= Date.now()) return { state: 'retry', reason: outcome.error, retryAt: outcome.retryAt ?? null };
      return opts.force ? { state: 'retry', reason: outcome.error, retryAt: outcome.retryAt ?? null } : ok;
    });
    for (const f of afterCommit) await f();
    return result;
  }

  return {
    async forIntegrations(ids) {
      const out = new Map<string, AccountCredentials>();
      if (ids.length === 0) return out;
      const rows = await asWorker<CredentialRow[]>(pool, sql.fragment`app.credentials_for(${sql.array([...new Set(ids)], 'uuid')})`);
      await eachLimited(rows, REFRESH_CONCURRENCY, async (row) => {
        const u = usable(row);
        if (u.state !== 'row') return void out.set(row.integrationId, u);
        if (u.row.refreshable && dueSoon(u.credentials)) {
          try {
            out.set(row.integrationId, await refreshLocked(row.integrationId, { seen: u.row.ciphertext! }));
          } catch (e) {
            out.set(row.integrationId, { state: 'retry', reason: `The credentials could not be refreshed: ${(e as Error).message}`, retryAt: null });
          }
          return;
        }
        out.set(row.integrationId, { state: 'ok', credentials: u.credentials, endpoint: u.endpoint, ciphertext: u.row.ciphertext! });
      });
      return out;
    },
    refresh: (id, opts = {}) => refreshLocked(id, opts),
    async refreshDue(limit = 100) {
      const ids = await asWorker<string[]>(pool, sql.fragment`app.credentials_due(${limit}::int)`);
      const counts: Record<string, number> = {};
      await eachLimited(ids, REFRESH_CONCURRENCY, async (id) => {
        let state: string;
        try {
          state = (await refreshLocked(id, { force: true, dueOnly: true })).state;
        } catch (e) {
          state = 'error';
          log.error('credentials refresh errored', { integrationId: id, err: e instanceof ConnectorError ? e.message : String(e) });
        }
        counts[state] = (counts[state] ?? 0) + 1;
      });
      return counts;
    },
  };
}

/**
 * An account's own limits for the content checks (PlatformModule.readLimits): null when the
 * platform publishes none, undefined when they could not be read now (keep what is stored).
 */
export async function readAccountLimits(
  module: PlatformModule,
  input: { endpoint: PlatformEndpoint; credentials: IntegrationCredentials; timeoutMs: number },
): Promise<AccountLimits | null | undefined> {
  if (!module.readLimits) return null;
  try {
    return await module.readLimits(input);
  } catch {
    return undefined;
  }
}

/** Whether a connector call's thrown error says the platform refused the access token (HTTP 401, or Bluesky's ExpiredToken/InvalidToken). */
export function tokenRefused(e: unknown): boolean {
  if (!(e instanceof ConnectorError) || e.code !== 'UPSTREAM_ERROR' || !e.details) return false;
  const d = e.details;
  return d.reauth === true || d.status === 401 || (d.status === 400 && (d.error === 'ExpiredToken' || d.error === 'InvalidToken'));
}

/** A connected account's call that could not be made: why (never a token). */
export type UnusableAccount = Exclude<AccountCredentials, { state: 'ok' }>;

/**
 * Makes one connector call as a connected account (the inbox's replies, the metrics sync): with
 * its decrypted credentials and endpoint; when the platform refuses the token (`refused`, or a
 * thrown error that tokenRefused recognizes) the credentials are refreshed once under their lock
 * (CredentialService.refresh with `seen`, as the publish worker does) and the call made again.
 * Answers the call's value, or why the account cannot be used (reconnect required, missing,
 * refresh to retry). A thrown error of the (last) call is thrown.
 */
export async function callAsAccount<R>(
  service: Pick<CredentialService, 'refresh'>,
  ref: IntegrationRef,
  account: AccountCredentials | undefined,
  call: (ref: IntegrationRef) => Promise<R>,
  refused: (value: R) => boolean = () => false,
): Promise<{ state: 'called'; value: R; refreshed: boolean; account: Extract<AccountCredentials, { state: 'ok' }> } | { state: 'unusable'; account: UnusableAccount }> {
  if (!account) return { state: 'unusable', account: { state: 'missing', reason: 'No credentials were found for this integration.' } };
  if (account.state !== 'ok') return { state: 'unusable', account };
  const run = async (a: Extract<AccountCredentials, { state: 'ok' }>): Promise<{ value: R } | { error: unknown }> => {
    try {
      return { value: await call({ ...ref, credentials: a.credentials, endpoint: a.endpoint }) };
    } catch (error) {
      return { error };
    }
  };
  let used = account;
  let out = await run(used);
  let refreshed = false;
  if ('error' in out ? tokenRefused(out.error) : refused(out.value)) {
    const again = await service.refresh(ref.id, { force: true, seen: account.ciphertext });
    if (again.state !== 'ok') return { state: 'unusable', account: again };
    refreshed = true;
    used = again;
    out = await run(used);
  }
  if ('error' in out) throw out.error;
  return { state: 'called', value: out.value, refreshed, account: used };
}
