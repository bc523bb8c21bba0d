// Connected accounts over HTTP (docs/connectors.md): which platforms can be
// connected here, the OAuth 2.0 flow (start, public callback, reconnect), the
// account choice of a consent that covers several accounts, and app-password
// sign-in. The rules are SQL's (db/migrations/committed/000030-connected-accounts.sql, split 10-connected-accounts.sql);
// this file does what SQL cannot: the platform calls (through each module of
// the registry, server/platforms/index.ts), PKCE, and the encryption of every
// credential with the vault (server/platforms/vault.ts) before it reaches the
// database. No token, code, verifier or client secret is ever answered,
// logged, audited or replayed: answers carry ids and URLs only.
//
//   POST {ws}/integrations/connect          -> 201 {authorizeUrl, state, expiresAt, ...}
//   POST {ws}/integrations/{id}/reconnect   -> the same, for the integration's account
//   GET  /v1/oauth/callback/{platform}      -> 303 to returnTo with integration=, connection= or error=
//   GET  {ws}/pending-connections/{id}, POST .../choose
//   POST {ws}/integrations/connect-password -> 201 IntegrationDetail (Bluesky app passwords)
//   GET  {ws}/platforms                     -> what can be connected here, and why not
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import type { Config } from '../config.ts';
import { jsonResult, sql } from '../db/pool.ts';
import type { AppDeps } from '../deps.ts';
import { ApiError, errorBody } from '../errors.ts';
import { clientKey } from '../http/client-address.ts';
import { toApiError } from '../http/errors.ts';
import type { HandlerContext, PhasedRoute, RouteTable } from '../http/pipeline.ts';
import type { ResponseData } from '../http/types.ts';
import { checkWebhookUrl, WebhookUrlError } from '../net/ssrf.ts';
import { publicBaseUrl } from '../storage/index.ts';
import { accountEndpoint, credentialPayload, envApp, readAccountLimits, vaultOf } from '../platforms/credentials.ts';
import { CONNECTOR_MODULES, CONNECTOR_NAMES, isConnectorName, platformModule } from '../platforms/index.ts';
import { ConnectorError, type AccountLimits, type IntegrationCredentials, type PlatformAccount, type PlatformApp, type PlatformEndpoint, type PlatformModule, type TokenSet } from '../platforms/types.ts';
import type { CredentialVault } from '../platforms/vault.ts';
import {
  CLIENT_METADATA_PATH,
  clientMetadataOf,
  clientModeOf,
  databaseStateStore,
  JWKS_PATH,
  oauthClient,
  publicJwks,
  redirectUriOf,
  SessionBox,
  tokensOfSession,
  type ClientMode,
  type StateSql,
} from '../platforms/bluesky-oauth.ts';
import type { NodeSavedState } from '@atproto/oauth-client-node';

export const OAUTH_CALLBACK_ROUTE = '/v1/oauth/callback/{platform}';
const STATE_FORMAT = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{43})$/;

// ---------------------------------------------------------------------------
// Shared pieces
// ---------------------------------------------------------------------------

/** Whether a callback's platform segment is a connector's (or platform's) that connects through AT Protocol OAuth. */
function atprotoPlatform(segment: string): boolean {
  return CONNECTOR_NAMES.some((n) => CONNECTOR_MODULES[n].atprotoOAuth === true && (n === segment || CONNECTOR_MODULES[n].platforms.includes(segment)));
}

/** Where the platform sends the browser back: `<PUBLIC_BASE_URL or the request's origin>/v1/oauth/callback/<platform>`. */
export function callbackUrl(baseUrl: string, platform: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/v1/oauth/callback/${encodeURIComponent(platform)}`;
}

/** The origins a returnTo may go to: this server's, and CORS_ORIGINS (never `*`). */
function returnToAllowed(config: Config, baseUrl: string, url: URL): boolean {
  const own = new URL(baseUrl).origin;
  return url.origin === own || config.CORS_ORIGINS.filter((o) => o !== '*').includes(url.origin);
}

/** The checked returnTo of a start: default `<base>/app`; 400 INVALID_RETURN_TO for another origin. */
function checkReturnTo(config: Config, baseUrl: string, given: string | undefined): string {
  if (given === undefined) return `${baseUrl.replace(/\/+$/, '')}/app`;
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new ApiError(400, 'INVALID_RETURN_TO', 'returnTo is not a URL.', { field: 'returnTo' });
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || !returnToAllowed(config, baseUrl, url)) {
    throw new ApiError(400, 'INVALID_RETURN_TO', "returnTo must be on this server's origin or one of CORS_ORIGINS, without credentials.", {
      field: 'returnTo',
      allowedOrigins: [new URL(baseUrl).origin, ...config.CORS_ORIGINS.filter((o) => o !== '*')],
    });
  }
  return url.toString();
}

/** An instance or PDS URL reduced to its origin; 400 INVALID_INSTANCE_URL when it is not an http(s) URL without credentials. */
function instanceOrigin(raw: string, field: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError(400, 'INVALID_INSTANCE_URL', `${field} is not a URL.`, { field });
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.origin.length > 2048) {
    throw new ApiError(400, 'INVALID_INSTANCE_URL', `${field} must be an http or https URL without credentials.`, { field });
  }
  return url.origin;
}

/** The SSRF guard of webhook URLs, on a user-given instance (400 WEBHOOK_URL_PRIVATE_NETWORK, WEBHOOK_HOST_UNRESOLVABLE). */
async function guardInstance(config: Config, origin: string, field: string): Promise<void> {
  // Platform calls to a user-given host go over https only (server/platforms/http.ts) unless private networks are allowed.
  if (origin.startsWith('http:') && !config.WEBHOOK_ALLOW_PRIVATE_NETWORKS) {
    throw new ApiError(400, 'INVALID_INSTANCE_URL', `${field} must be an https URL.`, { field });
  }
  try {
    await checkWebhookUrl(origin, { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS });
  } catch (e) {
    if (e instanceof WebhookUrlError) throw new ApiError(400, e.code, e.message.replace(/webhook/gi, 'instance'), { ...e.details, field });
    throw e;
  }
}

/** Where the platform's API is for a connection (accountEndpoint); 400 INSTANCE_URL_REQUIRED when the connector has no base of its own. */
export function endpointFor(config: Config, connector: string, instanceUrl: string | null): PlatformEndpoint {
  const endpoint = accountEndpoint(config, connector, instanceUrl);
  if (!endpoint) throw new ApiError(400, 'INSTANCE_URL_REQUIRED', "This platform needs the account's server: give instanceUrl.", { field: 'instanceUrl' });
  return endpoint;
}

/** Removes every given secret from a text (platform messages are scrubbed by the modules; this is the second lock). */
export function scrub(text: string, secrets: (string | null | undefined)[]): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out.slice(0, 500);
}

/** The credentials of a token set, as the vault keeps them. */
export function credentialsOf(tokens: TokenSet, extra: Record<string, unknown> = {}): IntegrationCredentials {
  const now = Date.now();
  return {
    accessToken: tokens.accessToken,
    refreshToken: tokens.refreshToken,
    expiresAt: tokens.expiresIn ? new Date(now + tokens.expiresIn * 1000).toISOString() : null,
    refreshExpiresAt: tokens.refreshExpiresIn ? new Date(now + tokens.refreshExpiresIn * 1000).toISOString() : null,
    scopes: tokens.scopes,
    extra: { ...(tokens.extra ?? {}), ...extra },
  };
}

/**
 * One account as SQL takes it (api.oauth_complete, api.connect_with_password): public fields and the credential's ciphertext;
 * `limits`, the account's own limits for the content checks (app.connection_save stores them; absent when they could not be read).
 */
export function accountPayload(vault: CredentialVault, integrationId: string, account: PlatformAccount, credentials: IntegrationCredentials, refreshable: boolean, limits?: AccountLimits | null) {
  const merged: IntegrationCredentials = { ...credentials, extra: { ...credentials.extra, ...(account.extra ?? {}) } };
  return {
    integrationId,
    accountId: account.id,
    username: account.username,
    name: account.name,
    kind: account.kind ?? null,
    avatarUrl: account.avatarUrl ?? null,
    profileUrl: account.profileUrl ?? null,
    credential: credentialPayload(vault, integrationId, merged, refreshable),
    ...(limits !== undefined ? { limits } : {}),
  };
}

function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

// ---------------------------------------------------------------------------
// Starting a connection (connect and reconnect)
// ---------------------------------------------------------------------------

interface Prepared {
  connector: string;
  connect: 'oauth' | 'password' | 'none';
  platform: string;
  integrationId: string | null;
  instanceUrl: string | null;
  app: { id: string; clientId: string; redirectUri: string | null; source: 'admin' | 'registered' } | null;
}

interface StartClaim {
  prep: Prepared;
  module: PlatformModule;
  redirectUri: string;
  returnTo: string;
  /** The app to use: from the environment, stored (its id), or to be registered on the instance in `work`; `atproto`: the AT Protocol OAuth client (Bluesky). */
  app: { kind: 'env'; app: PlatformApp } | { kind: 'stored'; id: string; clientId: string } | { kind: 'register' } | { kind: 'atproto'; mode: Exclude<ClientMode, { kind: 'unavailable' }>; handle: string | null };
}

interface StartWork {
  state: string;
  stateHash: Buffer;
  verifierCiphertext: Buffer | null;
  authorizeUrl: string;
  registered: { id: string; clientId: string; secretCiphertext: string; redirectUri: string; scopes: string[] } | null;
  storedAppId: string | null;
  /** AT Protocol OAuth: the library's state (key and value), stored in finish beside the connection's state. */
  atprotoState?: { key: string; value: NodeSavedState } | null;
}

/** What starting needs of a request's context (connect and reconnect alike). */
type StartCtx = Pick<HandlerContext, 'call' | 'config' | 'storage'>;

async function beginStart(ctx: StartCtx, input: { platform: string | null; connector: string | null; integrationId: string | null; instanceUrl: string | null; returnTo: string | undefined; handle?: string | null }): Promise<{ claim: StartClaim }> {
  const baseUrl = ctx.storage.baseUrl();
  // The role and the platform first (SQL), then the return URL.
  const prep = await ctx.call<Prepared>(sql.fragment`api.connect_prepare(${input.platform}, ${input.connector}, ${input.integrationId}, ${input.instanceUrl})`);
  const returnTo = checkReturnTo(ctx.config, baseUrl, input.returnTo);
  const module = platformModule(prep.connector);
  if (module.atprotoOAuth) {
    // AT Protocol OAuth (server/platforms/bluesky-oauth.ts): the client is this server, named by its base URL.
    const mode = clientModeOf(baseUrl);
    if (mode.kind === 'unavailable') throw new ApiError(409, 'BLUESKY_OAUTH_UNAVAILABLE', mode.reason, { connector: prep.connector, baseUrl: new URL(baseUrl).origin });
    return { claim: { prep, module, redirectUri: redirectUriOf(mode), returnTo, app: { kind: 'atproto', mode, handle: input.handle ?? null } } };
  }
  if (input.handle) throw new ApiError(400, 'VALIDATION_FAILED', 'handle is for Bluesky (AT Protocol) accounts only.', { fields: [{ field: 'handle', code: 'not_applicable', message: 'is for Bluesky only' }] });
  if (prep.connect !== 'oauth' || !module.oauth) {
    throw new ApiError(400, 'CONNECT_FLOW_NOT_APPLICABLE', `The ${prep.connector} connector signs in with an app password: use POST .../integrations/connect-password.`, { connector: prep.connector });
  }
  const redirectUri = callbackUrl(baseUrl, prep.platform);
  let app: StartClaim['app'];
  if (module.oauth.needsOperatorApp && prep.instanceUrl) {
    // One service at the operator's base: a user-given host would receive the operator's client secret.
    throw new ApiError(400, 'INVALID_INSTANCE_URL', `${prep.platform} is one service: instanceUrl is only for platforms where each account names its server (Mastodon).`, { field: 'instanceUrl' });
  }
  if (module.oauth.needsOperatorApp) {
    const fromEnv = envApp(ctx.config, module);
    if (fromEnv) app = { kind: 'env', app: fromEnv };
    else if (prep.app && prep.app.source === 'admin') app = { kind: 'stored', id: prep.app.id, clientId: prep.app.clientId };
    else {
      throw new ApiError(409, 'PLATFORM_APP_NOT_CONFIGURED', `No ${prep.connector} app is configured on this server: the operator sets ${module.appEnv ? `${module.appEnv.clientId} and ${module.appEnv.clientSecret}` : 'its client id and secret'}, or runs \`npx pressroom platform-app set ${prep.connector} --client-id ... --client-secret-env VAR\`.`, {
        connector: prep.connector,
        env: module.appEnv ? [module.appEnv.clientId, module.appEnv.clientSecret] : [],
      });
    }
  } else {
    if (!prep.instanceUrl) throw new ApiError(400, 'INSTANCE_URL_REQUIRED', `A ${prep.platform} account lives on its own server: give instanceUrl (e.g. https://mastodon.social).`, { field: 'instanceUrl' });
    // An app registered on this instance for this very callback is reused; otherwise one is registered.
    app = prep.app && prep.app.source === 'registered' && prep.app.redirectUri === redirectUri ? { kind: 'stored', id: prep.app.id, clientId: prep.app.clientId } : { kind: 'register' };
  }
  return { claim: { prep, module, redirectUri, returnTo, app } };
}

/** AT Protocol OAuth: the library resolves the account's authorization server and pushes the request (PAR, PKCE, DPoP). */
async function atprotoStart(config: Config, claim: StartClaim & { app: { kind: 'atproto' } }, workspaceId: string): Promise<StartWork> {
  const { prep } = claim;
  const endpoint = endpointFor(config, prep.connector, prep.instanceUrl);
  const state = `${workspaceId}.${randomBytes(32).toString('base64url')}`;
  const stateHash = createHash('sha256').update(state, 'utf8').digest();
  // The library's state is written with the connection's (finish); here it is only captured.
  let captured: { key: string; value: NodeSavedState } | null = null;
  let client: Awaited<ReturnType<typeof oauthClient>>;
  try {
    client = await oauthClient({
      config,
      mode: claim.app.mode,
      stateStore: { get: async () => undefined, set: async (key, value) => void (captured = { key, value }), del: async () => {} },
      sessionStore: new SessionBox(),
      handleResolver: endpoint.baseUrl,
    });
  } catch (e) {
    // The operator's signing key is unusable (BLUESKY_OAUTH_PRIVATE_KEY): the reason names the variable, never the key.
    if (e instanceof ConnectorError) throw new ApiError(409, 'BLUESKY_OAUTH_UNAVAILABLE', e.message, { connector: prep.connector });
    throw e;
  }
  let url: URL;
  try {
    // A handle (or DID) names the account (and is the consent page's login hint); else the PDS or the sign-in service.
    url = await client.authorize(claim.app.handle ?? endpoint.baseUrl, { state, scope: clientMetadataOf(claim.app.mode).scope });
  } catch (e) {
    const field = claim.app.handle ? 'handle' : 'instanceUrl';
    throw new ApiError(400, 'INSTANCE_UNREACHABLE', `The Bluesky authorization server of ${claim.app.handle ?? endpoint.baseUrl} could not be reached or refused the request: ${scrub((e as Error).message, [])}`, { field });
  }
  if (!captured) throw new ApiError(500, 'INTERNAL', 'The OAuth client kept no state.');
  return { state, stateHash, verifierCiphertext: null, authorizeUrl: url.toString(), registered: null, storedAppId: null, atprotoState: captured };
}

async function workStart(config: Config, claim: StartClaim, workspaceId: string): Promise<StartWork> {
  if (claim.app.kind === 'atproto') return atprotoStart(config, claim as StartClaim & { app: { kind: 'atproto' } }, workspaceId);
  const { prep, module, redirectUri } = claim;
  const oauth = module.oauth!;
  const endpoint = endpointFor(config, prep.connector, prep.instanceUrl);
  const vault = vaultOf(config);
  let clientId: string;
  let registered: StartWork['registered'] = null;
  let storedAppId: string | null = null;
  if (claim.app.kind === 'env') clientId = claim.app.app.clientId;
  else if (claim.app.kind === 'stored') {
    clientId = claim.app.clientId;
    storedAppId = claim.app.id;
  } else {
    if (!oauth.registerApp) throw new ApiError(409, 'PLATFORM_APP_NOT_CONFIGURED', `The ${prep.connector} connector cannot register an app.`, { connector: prep.connector });
    let app: PlatformApp;
    try {
      app = await oauth.registerApp({ endpoint, redirectUri, scopes: oauth.scopes, timeoutMs: config.PUBLISH_TIMEOUT_MS });
    } catch (e) {
      if (e instanceof ConnectorError) {
        throw new ApiError(400, 'INSTANCE_UNREACHABLE', `The instance ${prep.instanceUrl} did not register Pressroom's app: ${e.message}`, { field: 'instanceUrl', instanceUrl: prep.instanceUrl });
      }
      throw e;
    }
    const id = randomUUID();
    registered = {
      id,
      clientId: app.clientId,
      secretCiphertext: vault.encrypt(`platform-app:${id}`, app.clientSecret ?? '').toString('base64'),
      redirectUri,
      scopes: oauth.scopes,
    };
    clientId = app.clientId;
    storedAppId = id;
  }
  const state = `${workspaceId}.${randomBytes(32).toString('base64url')}`;
  const stateHash = createHash('sha256').update(state, 'utf8').digest();
  const p = oauth.pkce ? pkce() : null;
  const verifierCiphertext = p ? vault.encrypt(`oauth-state:${stateHash.toString('hex')}`, p.verifier) : null;
  let authorizeUrl: string;
  try {
    authorizeUrl = oauth.authorizeUrl({ endpoint, app: { clientId, clientSecret: null }, redirectUri, state, codeChallenge: p?.challenge ?? null, scopes: oauth.scopes });
  } catch (e) {
    if (e instanceof ConnectorError) throw new ApiError(409, 'PLATFORM_APP_NOT_CONFIGURED', e.message, { connector: prep.connector });
    throw e;
  }
  return { state, stateHash, verifierCiphertext, authorizeUrl, registered, storedAppId };
}

async function finishStart(ctx: StartCtx, claim: StartClaim, work: StartWork): Promise<{ status: 201; data: ResponseData<'connectIntegration_v1'> }> {
  const { prep } = claim;
  const appArg = work.registered ? work.registered : work.storedAppId ? { id: work.storedAppId } : null;
  if (work.atprotoState) {
    // The OAuth client's state store (app.atproto_oauth_states), written as this manager in the connection's transaction.
    const db: StateSql = {
      put: async (h, ciphertext, keyVersion) => void (await ctx.call(sql.fragment`api.atproto_oauth_state_put(${sql.binary(h)}, ${sql.binary(ciphertext)}, ${keyVersion}::int)`)),
      get: async () => null,
      del: async () => {},
    };
    await databaseStateStore(db, vaultOf(ctx.config)).set(work.atprotoState.key, work.atprotoState.value);
  }
  type Begun = Pick<ResponseData<'connectIntegration_v1'>, 'expiresAt' | 'connector' | 'platform' | 'integrationId'>;
  const r = await ctx.call<Begun>(sql.fragment`api.connect_begin(
    ${prep.integrationId ? null : prep.platform}, ${prep.integrationId ? null : prep.connector}, ${prep.integrationId}, ${prep.instanceUrl},
    ${sql.binary(work.stateHash)}, ${work.verifierCiphertext ? sql.binary(work.verifierCiphertext) : null},
    ${claim.redirectUri}, ${claim.returnTo}, ${appArg ? sql.jsonb(appArg) : null})`);
  return {
    status: 201 as const,
    data: {
      authorizeUrl: work.authorizeUrl,
      state: work.state,
      expiresAt: r.expiresAt,
      connector: r.connector,
      platform: r.platform,
      redirectUri: claim.redirectUri,
      integrationId: r.integrationId,
    },
  };
}

// ---------------------------------------------------------------------------
// The routes of the pipeline
// ---------------------------------------------------------------------------

interface ListedConnectors {
  connectors: { connector: string; platforms: string[]; connect: 'oauth' | 'password' | 'none'; operatorApp: boolean }[];
  platformNames: Record<string, string>;
}

interface PasswordClaim {
  prep: Prepared;
  module: PlatformModule;
}


const connectRoute: PhasedRoute<'connectIntegration_v1', never, StartClaim, StartWork> = {
  phases: {
    begin: (ctx) =>
      beginStart(ctx, {
        platform: ctx.body.platform,
        connector: ctx.body.connector ?? null,
        integrationId: null,
        instanceUrl: ctx.body.instanceUrl === undefined ? null : instanceOrigin(ctx.body.instanceUrl, 'instanceUrl'),
        returnTo: ctx.body.returnTo,
        handle: ctx.body.handle ?? null,
      }),
    // The instance's address is resolved and checked after the role (begin), outside any transaction.
    work: async (ctx, claim) => {
      if (claim.prep.instanceUrl) await guardInstance(ctx.config, claim.prep.instanceUrl, 'instanceUrl');
      return workStart(ctx.config, claim, ctx.workspaceId!);
    },
    finish: (ctx, claim, work) => finishStart(ctx, claim, work),
    abandon: async () => {},
  },
};

const reconnectRoute: PhasedRoute<'reconnectIntegration_v1', never, StartClaim, StartWork> = {
  phases: {
    begin: (ctx) => beginStart(ctx, { platform: null, connector: null, integrationId: ctx.params.id, instanceUrl: null, returnTo: ctx.body?.returnTo }),
    work: async (ctx, claim) => {
      // The stored instance is checked again: its address may have changed since the connection.
      if (claim.prep.instanceUrl) await guardInstance(ctx.config, claim.prep.instanceUrl, 'instanceUrl');
      return workStart(ctx.config, claim, ctx.workspaceId!);
    },
    finish: (ctx, claim, work) => finishStart(ctx, claim, work),
    abandon: async () => {},
  },
};

interface PasswordWork {
  instanceUrl: string | null;
  account: ReturnType<typeof accountPayload>;
}

const passwordRoute: PhasedRoute<'connectIntegrationWithPassword_v1', never, PasswordClaim, PasswordWork> = {
  phases: {
    begin: async (ctx) => {
      const service = ctx.body.serviceUrl === undefined ? null : instanceOrigin(ctx.body.serviceUrl, 'serviceUrl');
      const prep = await ctx.call<Prepared>(sql.fragment`api.connect_prepare(${ctx.body.platform}, ${ctx.body.connector ?? null}, ${ctx.body.integrationId ?? null}, ${service})`);
      const module = platformModule(prep.connector);
      if (prep.connect !== 'password' || !module.password) {
        throw new ApiError(400, 'CONNECT_FLOW_NOT_APPLICABLE', `The ${prep.connector} connector signs in through the platform: use POST .../integrations/connect.`, { connector: prep.connector });
      }
      return { claim: { prep, module } };
    },
    work: async (ctx, { prep, module }) => {
      const config = ctx.config;
      // A reconnect signs in where the account lives; a new connection where the body says.
      const instanceUrl = prep.integrationId ? prep.instanceUrl : ctx.body.serviceUrl === undefined ? null : instanceOrigin(ctx.body.serviceUrl, 'serviceUrl');
      if (instanceUrl) await guardInstance(config, instanceUrl, 'serviceUrl');
      const endpoint = endpointFor(config, prep.connector, instanceUrl);
      const secrets = [ctx.body.appPassword];
      let tokens: TokenSet;
      try {
        tokens = await module.password!.signIn({ endpoint, identifier: ctx.body.identifier, password: ctx.body.appPassword, timeoutMs: config.PUBLISH_TIMEOUT_MS });
      } catch (e) {
        if (e instanceof ConnectorError) throw new ApiError(400, 'SIGN_IN_FAILED', scrub(`The sign-in was refused or could not be made: ${e.message}`, secrets), { field: 'appPassword' });
        throw e;
      }
      const credentials = credentialsOf(tokens, instanceUrl ? { instanceUrl } : {});
      let accounts: PlatformAccount[];
      try {
        accounts = module.readAccounts ? await module.readAccounts({ endpoint, credentials, timeoutMs: config.PUBLISH_TIMEOUT_MS }) : [];
      } catch (e) {
        if (e instanceof ConnectorError) throw new ApiError(400, 'SIGN_IN_FAILED', scrub(`The account could not be read: ${e.message}`, [...secrets, tokens.accessToken, tokens.refreshToken]));
        throw e;
      }
      if (accounts.length === 0) throw new ApiError(400, 'SIGN_IN_FAILED', 'The platform named no account for this sign-in.');
      const integrationId = prep.integrationId ?? randomUUID();
      const limits = await readAccountLimits(module, { endpoint, credentials, timeoutMs: config.PUBLISH_TIMEOUT_MS });
      return { instanceUrl, account: accountPayload(vaultOf(config), integrationId, accounts[0]!, credentials, true, limits) };
    },
    finish: async (ctx, { prep }, work) => {
      const data = await ctx.call<ResponseData<'connectIntegrationWithPassword_v1'>>(sql.fragment`api.connect_with_password(
        ${prep.integrationId ? null : prep.platform}, ${prep.integrationId ? null : prep.connector}, ${prep.integrationId}, ${work.instanceUrl}, ${sql.jsonb(work.account)})`);
      return { status: 201 as const, data };
    },
    abandon: async () => {},
  },
};

export const connectionRoutes = {
  listPlatforms_v1: {
    handle: async (ctx) => {
      const listed = await ctx.call<ListedConnectors>(sql.fragment`api.list_connectors()`);
      const baseUrl = ctx.storage.baseUrl();
      const data: ResponseData<'listPlatforms_v1'> = [];
      for (const c of listed.connectors) {
        if (!isConnectorName(c.connector)) continue; // retired but still named by integrations: nothing to connect
        const module = platformModule(c.connector);
        const needsApp = c.connect === 'oauth' && Boolean(module.oauth?.needsOperatorApp);
        const connectable = !needsApp || Boolean(envApp(ctx.config, module)) || c.operatorApp;
        for (const platform of c.platforms) {
          data.push({
            platform: platform as ResponseData<'listPlatforms_v1'>[number]['platform'],
            platformName: listed.platformNames[platform] ?? platform,
            connector: c.connector as ResponseData<'listPlatforms_v1'>[number]['connector'],
            connect: c.connect,
            oauth: c.connect === 'oauth' ? connectable : module.atprotoOAuth === true && clientModeOf(baseUrl).kind !== 'unavailable',
            connectable,
            reason: connectable
              ? null
              : { code: 'PLATFORM_APP_NOT_CONFIGURED', message: `No ${c.connector} app is configured on this server; the operator registers one (callback ${callbackUrl(baseUrl, platform)}).` },
            needsInstanceUrl: c.connect === 'password' || (c.connect === 'oauth' && !module.oauth?.needsOperatorApp),
            callbackUrl: c.connect === 'oauth' ? callbackUrl(baseUrl, platform) : null,
            scopes: module.oauth?.scopes ?? [],
            configure:
              needsApp && module.appEnv
                ? { env: [module.appEnv.clientId, module.appEnv.clientSecret], command: `npx pressroom platform-app set ${c.connector} --client-id <id> --client-secret-env <VAR>` }
                : null,
          });
        }
      }
      return { data };
    },
  },

  connectIntegration_v1: connectRoute,
  reconnectIntegration_v1: reconnectRoute,
  connectIntegrationWithPassword_v1: passwordRoute,
  getPendingConnection_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_pending_connection(${params.id})`) }),
  },

  choosePendingConnection_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.choose_pending_connection(${params.id}, ${sql.array(body.accountIds, 'text')})`),
    }),
  },
} satisfies Partial<RouteTable>;

// ---------------------------------------------------------------------------
// The callback: public, answered with a redirect
// ---------------------------------------------------------------------------

interface TakenState {
  found: boolean;
  reason?: 'state_unknown' | 'state_used' | 'state_expired';
  returnTo?: string;
  workspaceId: string;
  organizationId: string;
  userId: string | null;
  apiKeyId: string | null;
  connector: string;
  platform: string;
  instanceUrl: string | null;
  redirectUri: string;
  integrationId: string | null;
  verifierCiphertext: string | null;
  stateHashHex: string;
  app: { id: string; clientId: string; secretCiphertext: string | null } | null;
  currentCredential: { ciphertext: string; keyVersion: number } | null;
}

/** What api.oauth_complete's refusals become in the redirect's `error`. */
const COMPLETE_ERRORS: Record<string, string> = {
  RECONNECT_ACCOUNT_MISMATCH: 'reconnect_account_mismatch',
  ACCOUNT_ALREADY_CONNECTED: 'account_already_connected',
  ROLE_REQUIRED: 'not_a_manager',
  STATE_USED: 'state_used',
  STATE_UNKNOWN: 'state_unknown',
  REFRESH_TOKEN_DROPPED: 'server_error',
  NO_ACCOUNT: 'account_lookup_failed',
};

class CallbackError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** The served routes of the callback router (server/app.ts holds them against the contract's x-browser-redirect operations). */
export function createOAuthCallbackRouter(deps: AppDeps) {
  const { pool, config, log } = deps;
  const router = express.Router();
  /** The AT Protocol OAuth client's state store (app.atproto_oauth_states), read and deleted as the server's login. */
  const atprotoStates = databaseStateStore(
    {
      put: async () => {
        throw new Error('states are written by POST .../integrations/connect');
      },
      get: async (h) =>
        (await pool.oneFirst(sql.type(jsonResult)`select api.atproto_oauth_state_get(${sql.binary(h)}) as result`)) as unknown as { ciphertext: string; keyVersion: number } | null,
      del: async (h) => void (await pool.query(sql.unsafe`select api.atproto_oauth_state_del(${sql.binary(h)})`)),
    },
    vaultOf(config),
  );

  // The AT Protocol OAuth client's documents (server/platforms/bluesky-oauth.ts): public, fetched by
  // the authorization servers. The metadata names this server's base (PUBLIC_BASE_URL, else the request's).
  router.get(CLIENT_METADATA_PATH, (req: Request, res: Response) => {
    const origin = `${req.protocol}://${req.get('host') ?? `${config.HOST}:${config.PORT}`}`;
    const mode = clientModeOf(publicBaseUrl(config, origin));
    res.setHeader('Cache-Control', 'public, max-age=300');
    if (mode.kind !== 'web') {
      const e = new ApiError(404, 'BLUESKY_OAUTH_UNAVAILABLE', mode.kind === 'loopback' ? 'On a loopback address the AT Protocol loopback client is used: it has no metadata document.' : mode.reason);
      res.status(404).json(errorBody(res.locals.requestId as string, e));
      return;
    }
    res.json(clientMetadataOf(mode));
  });
  router.get(JWKS_PATH, async (req: Request, res: Response) => {
    const origin = `${req.protocol}://${req.get('host') ?? `${config.HOST}:${config.PORT}`}`;
    const mode = clientModeOf(publicBaseUrl(config, origin));
    if (mode.kind !== 'web') {
      const e = new ApiError(404, 'BLUESKY_OAUTH_UNAVAILABLE', mode.kind === 'loopback' ? 'On a loopback address the AT Protocol loopback client is used: it has no keys.' : mode.reason);
      res.status(404).json(errorBody(res.locals.requestId as string, e));
      return;
    }
    try {
      const jwks = await publicJwks(config);
      res.setHeader('Cache-Control', 'public, max-age=300');
      res.json(jwks);
    } catch (e) {
      log.error('the Bluesky OAuth key could not be read', { err: e instanceof Error ? e.message : String(e) });
      res.status(500).json(errorBody(res.locals.requestId as string, new ApiError(500, 'INTERNAL', 'The OAuth key could not be read.')));
    }
  });

  /** Counts a refused call against the client address (api.inbox_hook_refused); whether it gets its own audit row. */
  const refused = async (req: Request): Promise<boolean> => {
    try {
      const r = (await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_refused(${clientKey(req)}) as result`)) as { audit: boolean };
      return r.audit;
    } catch (e) {
      log.error('counting a refused callback failed', { err: String(e) });
      return true;
    }
  };

  router.get('/v1/oauth/callback/:platform', async (req: Request, res: Response) => {
    const started = performance.now();
    const requestId = res.locals.requestId as string;
    const q = req.query as Record<string, unknown>;
    const str = (k: string) => (typeof q[k] === 'string' ? (q[k] as string) : undefined);
    let stateParam = str('state');
    const code = str('code');
    const platformError = str('error');
    const origin = `${req.protocol}://${req.get('host') ?? `${config.HOST}:${config.PORT}`}`;
    const base = publicBaseUrl(config, origin);
    let returnTo = `${base.replace(/\/+$/, '')}/app`;
    let status = 303;
    let outcome: { integration?: string; connection?: string; error?: string; description?: string } = {};
    let taken: TakenState | null = null;
    const secrets: (string | null | undefined)[] = [code, stateParam];
    // Whether this call's audit row is written: every call, but refused guesses beyond the
    // first auth_failure_audit of the minute (counted in the minute's summary row instead).
    let audited = true;
    let atprotoKey: string | null = null;
    let atprotoSaved: NodeSavedState | null = null;
    /** Revokes an AT Protocol session obtained by a callback that then failed (another account, not a manager...). */
    let atprotoRevoke: (() => Promise<void>) | null = null;
    try {
      // The failed-credential guard of the inbound hooks (api.inbox_hook_guard): an address past
      // auth_failure_limit refusals this minute is answered 429 before anything is looked up.
      const guard = (await pool.oneFirst(sql.type(jsonResult)`select api.inbox_hook_guard(${clientKey(req)}) as result`)) as {
        error?: { status: number; code: string; message: string; details?: Record<string, unknown> };
        retryAfter?: number;
        audit?: boolean;
      };
      if (guard.error) {
        status = guard.error.status;
        audited = guard.audit !== false;
        if (guard.retryAfter !== undefined) res.setHeader('Retry-After', String(guard.retryAfter));
        res.status(status).json(errorBody(requestId, new ApiError(status, guard.error.code, guard.error.message, guard.error.details ?? null)));
        return;
      }
      if (stateParam === undefined && platformError === undefined) {
        status = 400;
        const e = new ApiError(400, 'VALIDATION_FAILED', 'This is where a platform sends the browser back after its consent page, with state and code (or error).', {
          fields: [{ field: 'query.state', code: 'required', message: 'is required' }],
        });
        res.status(400).json(errorBody(requestId, e));
        return;
      }
      // AT Protocol OAuth: the PDS hands back the OAuth client's own state key; the connection's
      // state is the app state kept with it (app.atproto_oauth_states), taken here once.
      if (stateParam && !STATE_FORMAT.test(stateParam) && atprotoPlatform(String(req.params.platform))) {
        const key = stateParam;
        const saved = await atprotoStates.get(key).catch((e) => {
          log.warn('an AT Protocol OAuth state could not be read', { err: e instanceof Error ? e.message : String(e) });
          return undefined;
        });
        if (saved) {
          await atprotoStates.del(key);
          atprotoKey = key;
          atprotoSaved = saved;
        }
        stateParam = saved?.appState ?? undefined;
      }
      const m = stateParam ? STATE_FORMAT.exec(stateParam) : null;
      if (!m) {
        audited = await refused(req);
        throw new CallbackError(platformError ? 'access_denied' : 'state_unknown', 'The state is missing or malformed.');
      }
      const hash = createHash('sha256').update(stateParam!, 'utf8').digest();
      const platformSeg = String(req.params.platform).slice(0, 64);
      taken = (await pool.oneFirst(sql.type(jsonResult)`select api.oauth_take_state(${m[1]!}, ${sql.binary(hash)}, ${platformSeg}) as result`)) as unknown as TakenState;
      if (taken.returnTo) returnTo = taken.returnTo;
      if (!taken.found) {
        // A state no connection started is a guess: counted as a failed credential of the address.
        if ((taken.reason ?? 'state_unknown') === 'state_unknown') audited = await refused(req);
        throw new CallbackError(taken.reason ?? 'state_unknown', 'The state is unknown, used or expired; start again.');
      }
      if (platformError !== undefined) {
        throw new CallbackError(platformError === 'access_denied' ? 'access_denied' : 'exchange_failed', `The platform answered ${platformError.slice(0, 100)}.`);
      }
      if (!code) throw new CallbackError('exchange_failed', 'The platform sent no authorization code.');

      const module = platformModule(taken.connector);
      const vault = vaultOf(config);
      const endpoint = endpointFor(config, taken.connector, taken.instanceUrl);
      let credentials: IntegrationCredentials;
      if (module.atprotoOAuth) {
        // AT Protocol OAuth: the library exchanges the code (PKCE verifier, DPoP key, client
        // authentication), checks the issuer against the account's DID document, and hands the
        // session to the one-session store; the framework stores it as the integration's credentials.
        if (!atprotoKey || !atprotoSaved) throw new CallbackError('state_unknown', 'The state is unknown, used or expired; start again.');
        const mode = clientModeOf(new URL(taken.redirectUri).origin);
        if (mode.kind === 'unavailable') throw new CallbackError('server_error', mode.reason);
        const box = new SessionBox();
        const saved = atprotoSaved;
        const client = await oauthClient({
          config,
          mode,
          stateStore: { get: async (k) => (k === atprotoKey ? saved : undefined), set: async () => {}, del: async () => {} },
          sessionStore: box,
          handleResolver: endpoint.baseUrl,
        });
        const params = new URLSearchParams();
        for (const k of ['code', 'iss']) if (str(k) !== undefined) params.set(k, str(k)!);
        params.set('state', atprotoKey);
        try {
          await client.callback(params, { redirect_uri: taken.redirectUri as never });
        } catch (e) {
          throw new CallbackError('exchange_failed', `Bluesky did not complete the sign-in: ${(e as Error).message}`);
        }
        if (!box.session) throw new CallbackError('exchange_failed', 'Bluesky answered no session.');
        const sub = box.sub!;
        atprotoRevoke = () => client.revoke(sub);
        const tokens = tokensOfSession(box.session, clientMetadataOf(mode).client_id!, null);
        secrets.push(tokens.accessToken, tokens.refreshToken);
        if (!tokens.scopes.includes('atproto')) throw new CallbackError('missing_scope', 'The atproto permission was not granted.');
        credentials = credentialsOf(tokens, taken.instanceUrl ? { instanceUrl: taken.instanceUrl } : {});
      } else {
        const oauth = module.oauth;
        if (!oauth) throw new CallbackError('server_error', 'This connector has no OAuth flow.');
        let app: PlatformApp | null = null;
        if (taken.app) {
          app = { clientId: taken.app.clientId, clientSecret: taken.app.secretCiphertext ? vault.decrypt(`platform-app:${taken.app.id}`, Buffer.from(taken.app.secretCiphertext, 'base64')) || null : null };
        } else app = envApp(config, module);
        if (!app) throw new CallbackError('platform_app_not_configured', 'The platform app of this connector is no longer configured.');
        secrets.push(app.clientSecret);
        const verifier = taken.verifierCiphertext ? vault.decrypt(`oauth-state:${taken.stateHashHex}`, Buffer.from(taken.verifierCiphertext, 'base64')) : null;
        secrets.push(verifier);

        let tokens: TokenSet;
        try {
          tokens = await oauth.exchangeCode({ endpoint, app, redirectUri: taken.redirectUri, code, codeVerifier: verifier, timeoutMs: config.PUBLISH_TIMEOUT_MS });
        } catch (e) {
          if (e instanceof ConnectorError) {
            const missing = (e.details as { missingScopes?: unknown } | null)?.missingScopes;
            throw new CallbackError(Array.isArray(missing) ? 'missing_scope' : 'exchange_failed', e.message);
          }
          throw e;
        }
        secrets.push(tokens.accessToken, tokens.refreshToken);
        const missing = tokens.scopes.length > 0 ? oauth.requiredScopes.filter((s) => !tokens.scopes.includes(s)) : [];
        if (missing.length) throw new CallbackError('missing_scope', `These permissions were not granted: ${missing.join(', ')}.`);

        credentials = credentialsOf(tokens, taken.instanceUrl ? { instanceUrl: taken.instanceUrl } : {});
        // A reconnect keeps the stored refresh token when the platform sends none.
        if (!credentials.refreshToken && taken.integrationId && taken.currentCredential) {
          const old = vault.decryptJson<IntegrationCredentials>(`integration:${taken.integrationId}`, Buffer.from(taken.currentCredential.ciphertext, 'base64'));
          secrets.push(old.accessToken, old.refreshToken);
          if (old.refreshToken) credentials = { ...credentials, refreshToken: old.refreshToken, refreshExpiresAt: credentials.refreshExpiresAt ?? old.refreshExpiresAt ?? null };
        }
      }
      let accounts: PlatformAccount[];
      try {
        accounts = module.readAccounts ? await module.readAccounts({ endpoint, credentials, timeoutMs: config.PUBLISH_TIMEOUT_MS }) : [];
      } catch (e) {
        if (e instanceof ConnectorError) throw new CallbackError('account_lookup_failed', e.message);
        throw e;
      }
      if (accounts.length === 0) throw new CallbackError('account_lookup_failed', 'The platform named no account for this sign-in.');
      // The account's own limits (a Mastodon instance's characters and media) for the content checks; unread ones are left as stored.
      const limits = await readAccountLimits(module, { endpoint, credentials, timeoutMs: config.PUBLISH_TIMEOUT_MS });
      const payload = accounts.map((a) => accountPayload(vault, taken!.integrationId ?? randomUUID(), a, credentials, true, limits));
      let done: { returnTo: string; integrationId?: string; pendingConnectionId?: string };
      try {
        done = (await pool.oneFirst(sql.type(jsonResult)`select api.oauth_complete(${taken.workspaceId}, ${sql.binary(hash)}, ${sql.jsonb(payload)}) as result`)) as unknown as typeof done;
      } catch (e) {
        const api = toApiError(e);
        if (api && COMPLETE_ERRORS[api.code]) throw new CallbackError(COMPLETE_ERRORS[api.code]!, api.message);
        throw e;
      }
      outcome = done.pendingConnectionId ? { connection: done.pendingConnectionId } : { integration: done.integrationId! };
    } catch (e) {
      // A session the connection will not keep is revoked at its server (best effort).
      if (atprotoRevoke) await atprotoRevoke().catch(() => {});
      if (e instanceof CallbackError) outcome = { error: e.code, description: scrub(e.message, secrets) };
      else {
        outcome = { error: 'server_error', description: 'Something went wrong on our side; quote the request id to support.' };
        log.error('oauth callback failed', { requestId, err: e instanceof Error ? { message: scrub(e.message, secrets) } : 'unknown' });
      }
    } finally {
      if (status === 303) {
        const to = new URL(returnTo);
        if (outcome.integration) to.searchParams.set('integration', outcome.integration);
        if (outcome.connection) to.searchParams.set('connection', outcome.connection);
        if (outcome.error) {
          to.searchParams.set('error', outcome.error);
          if (outcome.description) to.searchParams.set('error_description', outcome.description);
        }
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('Referrer-Policy', 'no-referrer');
        res.redirect(303, to.toString());
      }
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      const errorCode =
        status === 429 ? 'AUTH_THROTTLED' : status === 400 ? 'VALIDATION_FAILED' : outcome.error ? (outcome.error === 'server_error' ? 'INTERNAL' : outcome.error.toUpperCase()) : null;
      log.info('request', { method: 'GET', route: OAUTH_CALLBACK_ROUTE, status, durationMs, code: errorCode ?? undefined });
      if (audited) try {
        const actorKind = taken?.found ? (taken.apiKeyId ? 'api_key' : 'user') : 'anonymous';
        const actorId = taken?.found ? (taken.apiKeyId ?? taken.userId) : null;
        await pool.query(sql.unsafe`select audit.record(${actorKind}, ${actorId}, null, ${taken?.found ? taken.organizationId : null},
          ${taken?.found ? taken.workspaceId : null}, 'GET', ${OAUTH_CALLBACK_ROUTE}, ${status}, ${durationMs}, ${errorCode}, ${requestId})`);
      } catch (e) {
        log.error('audit write failed', { err: String(e) });
      }
    }
  });
  return router;
}
