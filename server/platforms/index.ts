// The connector registry: the ONE list of the connectors this server has
// (docs/connectors.md, "Adding a connector"). Each connector is one file
// exporting a PlatformModule; CONNECTOR_MODULES names each by the connector
// name stored in app.integrations.connector. Everything else follows from
// this list:
//   - app.connectors (SQL) is written from it after every migration
//     (connectorDeclarations -> app.declare_connectors, server/db/migrate.ts),
//     and app.integrations.connector references that table;
//   - ConnectorName (types.ts) is the union of its keys: the compiler refuses a
//     registry that misses a name or lists one more;
//   - the contract's connector enums are held against it by
//     tests/api/connectors-registry.test.ts;
//   - the publish worker, the inbox and analytics get each Connector from
//     createConnectorRegistry, with the API base of the operator's override
//     (CONNECTOR_BASE_URL_ENV) or the module's default.
import type { Config } from '../config.ts';
import { bluesky } from './bluesky.ts';
import { linkedin } from './linkedin.ts';
import { mastodon } from './mastodon.ts';
import { createSandboxConnector } from './sandbox.ts';
import { ConnectorError, type Connector, type ConnectorName, type ConnectorOptions, type PlatformModule } from './types.ts';
import { createWebhookConnector } from './webhook.ts';
import { x } from './x.ts';

export * from './types.ts';
export { YOUTUBE_VIDEO_CATEGORIES } from './reference.ts';
export { sandboxBoards, SANDBOX_BEHAVIORS } from './sandbox.ts';
export { checkWebhookUrl, classifyAddress, WebhookUrlError } from '../net/ssrf.ts';
export { signWebhookBody, verifyWebhookSignature } from './webhook.ts';
export { requestSandboxStore, workerSandboxStore } from './stores.ts';

/** The platform codes of app.platforms (reference data), which sandbox and webhook publish to. */
export const PLATFORM_CODES = ['bluesky', 'facebook', 'instagram', 'linkedin', 'mastodon', 'pinterest', 'threads', 'tiktok', 'x', 'youtube'] as const;

/** The simulated platform (server/platforms/sandbox.ts): every platform, nothing to sign in to. */
export const sandbox: PlatformModule = {
  name: 'sandbox',
  platforms: PLATFORM_CODES,
  connect: 'none',
  create: (options) => createSandboxConnector(options),
};

/** A signed POST to the user's own URL (server/platforms/webhook.ts): every platform, nothing to sign in to. */
export const webhook: PlatformModule = {
  name: 'webhook',
  platforms: PLATFORM_CODES,
  connect: 'none',
  create: (options) => createWebhookConnector(options),
};

/** The registry: one entry per connector, keyed by its name. */
export const CONNECTOR_MODULES: { readonly [K in ConnectorName]: PlatformModule & { readonly name: K } } = {
  sandbox: sandbox as PlatformModule & { name: 'sandbox' },
  webhook: webhook as PlatformModule & { name: 'webhook' },
  mastodon: mastodon as PlatformModule & { name: 'mastodon' },
  x: x as PlatformModule & { name: 'x' },
  bluesky: bluesky as PlatformModule & { name: 'bluesky' },
  linkedin: linkedin as PlatformModule & { name: 'linkedin' },
};

export const CONNECTOR_NAMES = Object.keys(CONNECTOR_MODULES) as ConnectorName[];

export function isConnectorName(name: string): name is ConnectorName {
  return Object.hasOwn(CONNECTOR_MODULES, name);
}

/** The module of a connector name; throws ConnectorError UNKNOWN_CONNECTOR. */
export function platformModule(name: string): PlatformModule {
  if (!isConnectorName(name)) throw new ConnectorError('UNKNOWN_CONNECTOR', `No connector named ${name}.`, { connector: name });
  return CONNECTOR_MODULES[name];
}

/**
 * The configuration variable that overrides a connector's API base (tests
 * point it at a local fake; a private deployment at its own proxy). An
 * operator-set base is trusted: it may be loopback or private. Mastodon has
 * none: every account names its own instance.
 */
export const CONNECTOR_BASE_URL_ENV = {
  x: 'X_API_BASE_URL',
  linkedin: 'LINKEDIN_API_BASE_URL',
  bluesky: 'BLUESKY_SERVICE_URL',
} as const satisfies Partial<Record<ConnectorName, keyof Config>>;

/** The operator's API base of a connector: its override, else the module's default; null where the user names the server. */
export function connectorBaseUrl(config: Partial<Config>, name: ConnectorName): string | null {
  const env = (CONNECTOR_BASE_URL_ENV as Partial<Record<ConnectorName, keyof Config>>)[name];
  const set = env ? config[env] : undefined;
  if (typeof set === 'string' && set) return set.replace(/\/+$/, '');
  return CONNECTOR_MODULES[name].defaultBaseUrl ?? null;
}

/** What app.declare_connectors takes: each connector's name, platforms and how it connects. */
export function connectorDeclarations(): { name: ConnectorName; platforms: string[]; connect: PlatformModule['connect']; oauth: boolean }[] {
  return CONNECTOR_NAMES.map((name) => ({
    name,
    platforms: [...CONNECTOR_MODULES[name].platforms].sort(),
    connect: CONNECTOR_MODULES[name].connect,
    // Whether POST {ws}/integrations/connect starts a connection of it (app.connectors.oauth).
    oauth: CONNECTOR_MODULES[name].connect === 'oauth' || CONNECTOR_MODULES[name].atprotoOAuth === true,
  }));
}

export interface RegistryOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Per-connector base URL overrides (sandbox permalinks; platform APIs). */
  baseUrls?: Partial<Record<string, string>>;
}

export interface ConnectorRegistry {
  get(name: string): Connector;
  names(): readonly string[];
}

export function createConnectorRegistry(options: RegistryOptions): ConnectorRegistry {
  const opts = (name: string): ConnectorOptions => ({
    timeoutMs: options.timeoutMs,
    allowPrivateNetworks: options.allowPrivateNetworks,
    baseUrl: options.baseUrls?.[name],
  });
  const connectors = new Map<string, Connector>(CONNECTOR_NAMES.map((name) => [name, CONNECTOR_MODULES[name].create(opts(name))]));
  return {
    get(name) {
      const c = connectors.get(name);
      if (!c) throw new ConnectorError('UNKNOWN_CONNECTOR', `No connector named ${name}.`, { connector: name });
      return c;
    },
    names: () => [...connectors.keys()],
  };
}

/**
 * The registry of a server configuration: built once per process by
 * createAppDeps (server/deps.ts) and shared by the API and the worker.
 */
export function connectorRegistryFor(config: Pick<Config, 'PUBLISH_TIMEOUT_MS' | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'> & Partial<Config>): ConnectorRegistry {
  const baseUrls: Record<string, string> = {};
  for (const name of Object.keys(CONNECTOR_BASE_URL_ENV) as (keyof typeof CONNECTOR_BASE_URL_ENV)[]) {
    const env = CONNECTOR_BASE_URL_ENV[name];
    const set = config[env];
    if (typeof set === 'string' && set) baseUrls[name] = set;
  }
  return createConnectorRegistry({ timeoutMs: config.PUBLISH_TIMEOUT_MS, allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS, baseUrls });
}
