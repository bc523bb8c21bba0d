// The connector registry: one connector per kind, by the name stored in
// app.integrations.connector. OAuth connectors for real platforms register
// here later, each with its API base URL from the options (baseUrls), so
// tests can point them at a local fake.
import type { Config } from '../config.ts';
import { createSandboxConnector } from './sandbox.ts';
import { ConnectorError, type Connector, type ConnectorName, type ConnectorOptions } from './types.ts';
import { createWebhookConnector } from './webhook.ts';

export * from './types.ts';
export { YOUTUBE_VIDEO_CATEGORIES } from './reference.ts';
export { sandboxBoards, SANDBOX_BEHAVIORS } from './sandbox.ts';
export { checkWebhookUrl, classifyAddress, WebhookUrlError } from '../net/ssrf.ts';
export { signWebhookBody, verifyWebhookSignature } from './webhook.ts';
export { requestSandboxStore, workerSandboxStore } from './stores.ts';

export const CONNECTOR_NAMES: readonly ConnectorName[] = ['sandbox', 'webhook'];

export interface RegistryOptions {
  timeoutMs: number;
  allowPrivateNetworks: boolean;
  /** Per-connector base URL overrides (sandbox permalinks now; platform APIs later). */
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
  const connectors = new Map<string, Connector>([
    ['sandbox', createSandboxConnector(opts('sandbox'))],
    ['webhook', createWebhookConnector(opts('webhook'))],
  ]);
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
export function connectorRegistryFor(config: Pick<Config, 'PUBLISH_TIMEOUT_MS' | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'>): ConnectorRegistry {
  return createConnectorRegistry({ timeoutMs: config.PUBLISH_TIMEOUT_MS, allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS });
}
