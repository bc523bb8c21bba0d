// Bluesky through AT Protocol OAuth (docs/connectors-bluesky.md, "OAuth"): the
// second way a Bluesky account connects, besides app passwords
// (server/platforms/bluesky.ts). The protocol (handle and PDS resolution, the
// authorization server's metadata, PAR, PKCE S256, DPoP with its nonces,
// private_key_jwt client authentication, the token exchange and refresh, the
// issuer checks) is @atproto/oauth-client-node's; this file gives it what it
// needs of Pressroom:
//
// - the client: a confidential web client whose id is the URL of its metadata
//   document, <PUBLIC_BASE_URL>/oauth/bluesky/client-metadata.json, with its
//   public keys at /oauth/bluesky/jwks.json (both served by
//   server/routes/connections.ts), when the server's base is https on a domain
//   name; on a loopback base (http://127.0.0.1:<port>, development and the
//   tests) the AT Protocol's loopback client (`http://localhost?redirect_uri=
//   ...&scope=...`, public, no key, sessions of at most two weeks on
//   bsky.social's servers); any other base (plain http on a network address)
//   cannot connect Bluesky through OAuth (409 BLUESKY_OAUTH_UNAVAILABLE);
// - the signing key (ES256 private JWK): BLUESKY_OAUTH_PRIVATE_KEY, else
//   generated once into DATA_DIR/bluesky-oauth-key.json (mode 0600), as the
//   vault key is; several hosts must share it (its public half is the JWKS);
// - the state store: app.atproto_oauth_states through api.atproto_oauth_state_*
//   (the library's state: issuer, DPoP key, PKCE verifier, app state, one vault
//   ciphertext per authorization, 10 minutes, engine-only);
// - the session store: the integration's credentials. A callback's session (the
//   DPoP-bound access and refresh tokens, the DPoP private key, the issuer) is
//   captured and stored as the integration's credentials
//   (app.integration_credentials, vault-encrypted) by the framework; a refresh
//   runs under the credential's row lock (server/platforms/credentials.ts) with
//   a store that holds that one session, and the rotated tokens are stored in
//   the same transaction. A store keyed by DID alone would let a connection in
//   one workspace revoke the session of another (the library revokes the
//   stored session of the DID on every callback).
//
// Publishing signs each request with the session's DPoP key (dpopHeaders
// below, used by the connector's XRPC calls in bluesky.ts), so a copied access
// token is worthless without the key.
import { createHash, createPrivateKey, randomBytes, randomUUID, sign as cryptoSign } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  buildAtprotoLoopbackClientId,
  JoseKey,
  NodeOAuthClient,
  OAuthResponseError,
  requestLocalLock,
  TokenRefreshError,
  type NodeSavedSession,
  type NodeSavedSessionStore,
  type NodeSavedState,
  type NodeSavedStateStore,
  type OAuthClientMetadataInput,
} from '@atproto/oauth-client-node';
import { checkWebhookUrl, WebhookUrlError } from '../net/ssrf.ts';
import { ConnectorError, type IntegrationCredentials, type OAuthClientConfig, type RefreshOutcome, type TokenSet } from './types.ts';
import type { CredentialVault } from './vault.ts';

export const BLUESKY_OAUTH_SCOPE = 'atproto transition:generic';
export const CLIENT_METADATA_PATH = '/oauth/bluesky/client-metadata.json';
export const JWKS_PATH = '/oauth/bluesky/jwks.json';
export const OAUTH_KEY_FILE = 'bluesky-oauth-key.json';
export const DEFAULT_PLC_URL = 'https://plc.directory';
const CALLBACK_PATH = '/v1/oauth/callback/bluesky';

// ---------------------------------------------------------------------------
// The client: which kind, its metadata, its key
// ---------------------------------------------------------------------------

export type ClientMode = { kind: 'web'; base: string } | { kind: 'loopback'; base: string } | { kind: 'unavailable'; reason: string };

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** The kind of OAuth client a server at `base` can be (see the file's head). */
export function clientModeOf(baseUrl: string): ClientMode {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    return { kind: 'unavailable', reason: `The server's base URL is not a URL (${baseUrl.slice(0, 100)}).` };
  }
  const base = u.origin;
  const ip = /^\d+\.\d+\.\d+\.\d+$/.test(u.hostname) || u.hostname.startsWith('[');
  if (u.protocol === 'https:' && !LOOPBACK_HOSTS.has(u.hostname) && !ip && u.hostname.includes('.')) return { kind: 'web', base };
  if (u.protocol === 'http:' && LOOPBACK_HOSTS.has(u.hostname)) return { kind: 'loopback', base };
  return {
    kind: 'unavailable',
    reason: `Bluesky's OAuth needs this server's client metadata at an https URL on a domain name: set PUBLIC_BASE_URL to one (now ${base}), or use a loopback address (http://127.0.0.1:<port>) in development; app passwords work either way (POST .../integrations/connect-password).`,
  };
}

/** The client's metadata document (what /oauth/bluesky/client-metadata.json serves for a web client). */
export function clientMetadataOf(mode: Exclude<ClientMode, { kind: 'unavailable' }>): OAuthClientMetadataInput {
  if (mode.kind === 'loopback') {
    // The redirect must be an IP literal; the port is this server's.
    const u = new URL(mode.base);
    const host = u.hostname === 'localhost' ? '127.0.0.1' : u.hostname;
    const redirect = `http://${host}${u.port ? `:${u.port}` : ''}${CALLBACK_PATH}`;
    const clientId = buildAtprotoLoopbackClientId({ scope: BLUESKY_OAUTH_SCOPE, redirect_uris: [redirect] });
    return {
      client_id: clientId,
      client_name: 'Pressroom (loopback development client)',
      redirect_uris: [redirect] as [string],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: BLUESKY_OAUTH_SCOPE,
      application_type: 'native',
      token_endpoint_auth_method: 'none',
      dpop_bound_access_tokens: true,
    };
  }
  return {
    client_id: `${mode.base}${CLIENT_METADATA_PATH}`,
    client_name: 'Pressroom',
    client_uri: mode.base,
    redirect_uris: [`${mode.base}${CALLBACK_PATH}`],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: BLUESKY_OAUTH_SCOPE,
    application_type: 'web',
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'ES256',
    dpop_bound_access_tokens: true,
    jwks_uri: `${mode.base}${JWKS_PATH}`,
  };
}

/** The redirect URI of a client (the callback route, as the client metadata names it). */
export function redirectUriOf(mode: Exclude<ClientMode, { kind: 'unavailable' }>): string {
  return clientMetadataOf(mode).redirect_uris[0]!;
}

const keys = new Map<string, Promise<JoseKey>>();

/** The client's ES256 signing key: BLUESKY_OAUTH_PRIVATE_KEY, else DATA_DIR/bluesky-oauth-key.json (made on first use). */
export function signingKey(config: Pick<OAuthClientConfig, 'DATA_DIR' | 'BLUESKY_OAUTH_PRIVATE_KEY'>): Promise<JoseKey> {
  const id = config.BLUESKY_OAUTH_PRIVATE_KEY ? `env:${createHash('sha256').update(config.BLUESKY_OAUTH_PRIVATE_KEY).digest('hex')}` : `file:${path.resolve(config.DATA_DIR, OAUTH_KEY_FILE)}`;
  let k = keys.get(id);
  if (!k) {
    k = loadKey(config);
    keys.set(id, k);
    k.catch(() => keys.delete(id));
  }
  return k;
}

async function loadKey(config: Pick<OAuthClientConfig, 'DATA_DIR' | 'BLUESKY_OAUTH_PRIVATE_KEY'>): Promise<JoseKey> {
  let text: string;
  let where: string;
  if (config.BLUESKY_OAUTH_PRIVATE_KEY) {
    text = config.BLUESKY_OAUTH_PRIVATE_KEY;
    where = 'BLUESKY_OAUTH_PRIVATE_KEY';
  } else {
    const file = path.resolve(config.DATA_DIR, OAUTH_KEY_FILE);
    where = file;
    if (!existsSync(file)) {
      const made = await JoseKey.generate(['ES256'], `pressroom-${randomBytes(6).toString('hex')}`);
      mkdirSync(path.dirname(file), { recursive: true });
      try {
        // 'wx': two processes starting together never both write a key.
        writeFileSync(file, `${JSON.stringify(made.privateJwk)}\n`, { mode: 0o600, flag: 'wx' });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      try {
        chmodSync(file, 0o600);
      } catch {
        // not the owner: reading is all that is needed
      }
    }
    text = readFileSync(file, 'utf8');
  }
  let jwk: Record<string, unknown>;
  try {
    jwk = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new ConnectorError('MISSING_SECRET', `${where}: the Bluesky OAuth key is a JSON Web Key (an ES256 private key).`);
  }
  if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || typeof jwk.d !== 'string') {
    throw new ConnectorError('MISSING_SECRET', `${where}: the Bluesky OAuth key must be an ES256 (P-256) private JWK.`);
  }
  const kid = typeof jwk.kid === 'string' && jwk.kid ? jwk.kid : `pressroom-${createHash('sha256').update(String(jwk.x)).digest('hex').slice(0, 12)}`;
  return JoseKey.fromJWK({ ...jwk, kid, alg: 'ES256', use: 'sig' }, kid);
}

/** The JWKS a web client publishes (/oauth/bluesky/jwks.json): the signing key's public half. */
export async function publicJwks(config: Pick<OAuthClientConfig, 'DATA_DIR' | 'BLUESKY_OAUTH_PRIVATE_KEY'>): Promise<{ keys: Record<string, unknown>[] }> {
  const key = await signingKey(config);
  return { keys: [{ ...key.publicJwk }] };
}

// ---------------------------------------------------------------------------
// The library's client, one per operation
// ---------------------------------------------------------------------------

/** A fetch that refuses private and loopback addresses (the SSRF guard of webhook URLs) unless WEBHOOK_ALLOW_PRIVATE_NETWORKS. */
function guardedFetch(allowPrivateNetworks: boolean, timeoutMs: number): typeof globalThis.fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!allowPrivateNetworks) {
      try {
        await checkWebhookUrl(url, { allowPrivateNetworks: false });
      } catch (e) {
        if (e instanceof WebhookUrlError) throw new TypeError(`Refused to reach ${new URL(url).host}: ${e.message}`);
        throw e;
      }
    }
    const signal = init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    return globalThis.fetch(input, { ...init, signal });
  };
}

/** A session store holding at most one session in memory: what a callback or a refresh reads and writes. */
export class SessionBox implements NodeSavedSessionStore {
  session: NodeSavedSession | undefined;
  sub: string | undefined;
  constructor(sub?: string, session?: NodeSavedSession) {
    this.sub = sub;
    this.session = session;
  }
  async get(sub: string) {
    return sub === this.sub ? this.session : undefined;
  }
  async set(sub: string, session: NodeSavedSession) {
    this.sub = sub;
    this.session = session;
  }
  async del(sub: string) {
    if (sub === this.sub) this.session = undefined;
  }
}

export interface ClientContext {
  config: OAuthClientConfig;
  mode: Exclude<ClientMode, { kind: 'unavailable' }>;
  stateStore: NodeSavedStateStore;
  sessionStore: NodeSavedSessionStore;
  /** Where handles are resolved (com.atproto.identity.resolveHandle): the sign-in service. */
  handleResolver: string;
}

export async function oauthClient(c: ClientContext): Promise<NodeOAuthClient> {
  const allow = c.config.WEBHOOK_ALLOW_PRIVATE_NETWORKS;
  return new NodeOAuthClient({
    clientMetadata: clientMetadataOf(c.mode),
    keyset: c.mode.kind === 'web' ? [await signingKey(c.config)] : undefined,
    stateStore: c.stateStore,
    sessionStore: c.sessionStore,
    requestLock: requestLocalLock,
    fetch: guardedFetch(allow, c.config.PUBLISH_TIMEOUT_MS),
    // http PDSes and authorization servers only where private networks are allowed (tests, private deployments).
    allowHttp: allow,
    plcDirectoryUrl: c.config.BLUESKY_PLC_URL ?? DEFAULT_PLC_URL,
    handleResolver: c.handleResolver,
  });
}

// ---------------------------------------------------------------------------
// The state store, in the database
// ---------------------------------------------------------------------------

/** How the state store reaches the database: the server's login runs api.atproto_oauth_state_* (pressroom_app). */
export interface StateSql {
  put(keyHash: Buffer, ciphertext: Buffer, keyVersion: number): Promise<void>;
  get(keyHash: Buffer): Promise<{ ciphertext: string; keyVersion: number } | null>;
  del(keyHash: Buffer): Promise<void>;
}

const stateHash = (key: string) => createHash('sha256').update(key, 'utf8').digest();

/** The library's StateStore over app.atproto_oauth_states, each value one vault ciphertext bound to its key's hash. */
export function databaseStateStore(
  db: StateSql,
  vault: CredentialVault,
): { set(key: string, value: NodeSavedState): Promise<void>; get(key: string): Promise<NodeSavedState | undefined>; del(key: string): Promise<void> } {
  const binding = (h: Buffer) => `atproto-oauth-state:${h.toString('hex')}`;
  return {
    async set(key, value) {
      const h = stateHash(key);
      await db.put(h, vault.encryptJson(binding(h), value), vault.currentVersion);
    },
    async get(key) {
      const h = stateHash(key);
      const row = await db.get(h);
      if (!row) return undefined;
      return vault.decryptJson<NodeSavedState>(binding(h), Buffer.from(row.ciphertext, 'base64'));
    },
    async del(key) {
      await db.del(stateHash(key));
    },
  };
}

// ---------------------------------------------------------------------------
// Sessions as integration credentials
// ---------------------------------------------------------------------------

/** What credentials.extra.oauth keeps besides the tokens (IntegrationCredentials.accessToken/refreshToken). */
export interface AtprotoOAuthExtra {
  kind: 'atproto-oauth';
  clientId: string;
  /** The authorization server (tokenSet.iss). */
  issuer: string;
  /** The resource server: the account's PDS (tokenSet.aud). */
  aud: string;
  sub: string;
  dpopJwk: Record<string, unknown>;
  authMethod: NodeSavedSession['authMethod'];
  scope: string;
}

/** The OAuth part of a credential, or null for an app-password session. */
export function oauthExtra(credentials: IntegrationCredentials | null | undefined): AtprotoOAuthExtra | null {
  const o = credentials?.extra?.oauth as Partial<AtprotoOAuthExtra> | undefined;
  return o && o.kind === 'atproto-oauth' && typeof o.sub === 'string' && o.dpopJwk && typeof o.issuer === 'string' ? (o as AtprotoOAuthExtra) : null;
}

/** A library session as the token set the framework stores (credentials.extra.oauth holds the rest). */
export function tokensOfSession(session: NodeSavedSession, clientId: string, handle: string | null): TokenSet {
  const t = session.tokenSet;
  const expiresIn = t.expires_at ? Math.max(0, Math.floor((Date.parse(t.expires_at) - Date.now()) / 1000)) : null;
  const extra: AtprotoOAuthExtra = {
    kind: 'atproto-oauth',
    clientId,
    issuer: t.iss,
    aud: t.aud,
    sub: t.sub,
    dpopJwk: session.dpopJwk as unknown as Record<string, unknown>,
    authMethod: session.authMethod,
    scope: t.scope,
  };
  return {
    accessToken: t.access_token,
    refreshToken: t.refresh_token ?? null,
    expiresIn,
    scopes: t.scope.split(' ').filter(Boolean),
    extra: { did: t.sub, handle, pdsUrl: t.aud.replace(/\/+$/, ''), oauth: extra },
  };
}

/** The stored credential as the library's session. */
export function sessionOfCredentials(credentials: IntegrationCredentials, o: AtprotoOAuthExtra): NodeSavedSession {
  return {
    dpopJwk: o.dpopJwk as unknown as NodeSavedSession['dpopJwk'],
    authMethod: o.authMethod,
    tokenSet: {
      iss: o.issuer,
      sub: o.sub as NodeSavedSession['tokenSet']['sub'],
      aud: o.aud,
      scope: o.scope as NodeSavedSession['tokenSet']['scope'],
      access_token: credentials.accessToken,
      refresh_token: credentials.refreshToken ?? undefined,
      token_type: 'DPoP',
      expires_at: credentials.expiresAt ?? undefined,
    },
  };
}

/** The client a stored session was made by: its client id says which kind and which base. */
export function modeOfClientId(clientId: string): Exclude<ClientMode, { kind: 'unavailable' }> | null {
  if (clientId.startsWith('http://localhost')) {
    const redirect = new URL(clientId).searchParams.get('redirect_uri');
    if (!redirect) return null;
    return { kind: 'loopback', base: new URL(redirect).origin };
  }
  if (clientId.startsWith('https://') && clientId.endsWith(CLIENT_METADATA_PATH)) {
    const mode = clientModeOf(new URL(clientId).origin);
    return mode.kind === 'web' ? mode : null;
  }
  return null;
}

/**
 * Refreshes an OAuth session (PasswordFlow.refresh of bluesky.ts hands OAuth credentials here):
 * the library refreshes with the session's DPoP key and the client's authentication; the
 * framework stores the rotated tokens under the row lock it holds. A refusal for good
 * (invalid_grant, a revoked session, a client that no longer exists) is `revoked`; an outage `retry`.
 */
export async function refreshOAuthSession(input: { credentials: IntegrationCredentials; config: OAuthClientConfig | undefined; handleResolver: string }): Promise<RefreshOutcome> {
  const o = oauthExtra(input.credentials);
  if (!o) return { state: 'revoked', reason: 'The stored Bluesky OAuth session is incomplete; connect the account again.' };
  if (!input.config) return { state: 'retry', error: 'The Bluesky OAuth session cannot be refreshed without the server configuration.', retryAt: null };
  if (!input.credentials.refreshToken) return { state: 'revoked', reason: 'The Bluesky OAuth session has no refresh token; connect the account again.' };
  const mode = modeOfClientId(o.clientId);
  if (!mode) return { state: 'revoked', reason: `The Bluesky OAuth client ${o.clientId.slice(0, 200)} is not one this server can be; connect the account again.` };
  const box = new SessionBox(o.sub, sessionOfCredentials(input.credentials, o));
  const noStates: NodeSavedStateStore = { get: async () => undefined, set: async () => {}, del: async () => {} };
  try {
    const client = await oauthClient({ config: input.config, mode, stateStore: noStates, sessionStore: box, handleResolver: input.handleResolver });
    await client.restore(o.sub, true);
  } catch (e) {
    const cause = e instanceof TokenRefreshError ? (e.cause ?? e) : e;
    if (e instanceof TokenRefreshError || (cause instanceof OAuthResponseError && cause.status >= 400 && cause.status < 500 && cause.status !== 429)) {
      return { state: 'revoked', reason: `Bluesky refused the session refresh: ${(e as Error).message.slice(0, 300)}` };
    }
    return { state: 'retry', error: `The Bluesky session refresh failed: ${(e as Error).message.slice(0, 300)}`, retryAt: null };
  }
  if (!box.session || box.session.tokenSet.access_token === input.credentials.accessToken) {
    return { state: 'retry', error: 'The Bluesky session refresh gave no new token.', retryAt: null };
  }
  const handle = typeof input.credentials.extra.handle === 'string' ? input.credentials.extra.handle : null;
  const tokens = tokensOfSession(box.session, o.clientId, handle);
  return { state: 'refreshed', tokens: { ...tokens, extra: { ...input.credentials.extra, ...tokens.extra } } };
}

// ---------------------------------------------------------------------------
// DPoP proofs for the resource server (the PDS)
// ---------------------------------------------------------------------------

/** The latest DPoP nonce each PDS gave (a proof without it is answered 401 use_dpop_nonce). */
const nonces = new Map<string, string>();

/** The headers of one request with a DPoP-bound access token: Authorization DPoP and the proof (RFC 9449). */
export function dpopHeaders(input: { method: string; url: URL; accessToken: string; dpopJwk: Record<string, unknown>; nonce?: string | null }): Record<string, string> {
  const jwk = input.dpopJwk as Record<string, unknown>;
  // The library picks the key's algorithm among the server's (ES256K first when offered).
  const algs: Record<string, [string, string]> = { 'P-256': ['ES256', 'sha256'], secp256k1: ['ES256K', 'sha256'], 'P-384': ['ES384', 'sha384'], 'P-521': ['ES512', 'sha512'] };
  const alg = jwk.kty === 'EC' ? algs[String(jwk.crv)] : undefined;
  if (!alg) throw new ConnectorError('MISSING_SECRET', 'The stored DPoP key is not an elliptic-curve key this server signs with; connect the account again.');
  const publicJwk: Record<string, unknown> = { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y };
  const header = { typ: 'dpop+jwt', alg: alg[0], jwk: publicJwk };
  const htu = `${input.url.origin}${input.url.pathname}`;
  const nonce = input.nonce ?? nonces.get(input.url.origin);
  const payload = {
    jti: randomUUID(),
    htm: input.method.toUpperCase(),
    htu,
    iat: Math.floor(Date.now() / 1000),
    ath: createHash('sha256').update(input.accessToken).digest('base64url'),
    ...(nonce ? { nonce } : {}),
  };
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const signingInput = `${b64(header)}.${b64(payload)}`;
  const key = createPrivateKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, d: jwk.d } as never, format: 'jwk' });
  const signature = cryptoSign(alg[1], Buffer.from(signingInput), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  return { authorization: `DPoP ${input.accessToken}`, dpop: `${signingInput}.${signature}` };
}

/** Remembers the nonce a PDS answered (DPoP-Nonce); true when the answer asks for a new one (401 use_dpop_nonce). */
export function noteDpopNonce(url: URL, status: number, headers: Record<string, string | string[] | undefined>): boolean {
  const raw = headers['dpop-nonce'];
  const nonce = Array.isArray(raw) ? raw[0] : raw;
  const changed = typeof nonce === 'string' && nonce.length > 0 && nonces.get(url.origin) !== nonce;
  if (typeof nonce === 'string' && nonce) nonces.set(url.origin, nonce);
  const www = String(headers['www-authenticate'] ?? '');
  return status === 401 && /use_dpop_nonce/.test(www) && changed;
}
