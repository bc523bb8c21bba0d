// The dependencies of one Pressroom process, built once (server/main.ts, or a
// test) and passed explicitly to the app (server/app.ts), the worker
// (server/jobs/) and every request's context (server/http/pipeline.ts).
import type { DatabasePool } from 'slonik';
import { createCredentialService, type CredentialService } from './platforms/credentials.ts';
import type { Config } from './config.ts';
import type { Logger } from './log.ts';
import { connectorRegistryFor, type ConnectorRegistry } from './platforms/index.ts';
import { createMediaStorage, type MediaStorage } from './storage/index.ts';

export interface AppDeps {
  pool: DatabasePool;
  config: Config;
  log: Logger;
  /** Media storage: the driver, the signing secrets, the base URL of links. */
  storage: MediaStorage;
  /** One connector per kind, shared by requests and the publish worker. */
  connectors: ConnectorRegistry;
  /** Connected accounts' credentials (decrypted for the platform call only; server/platforms/credentials.ts). */
  credentials: CredentialService;
}

/** Builds the storage and connector registry of a configuration around a pool and a logger. */
export function createAppDeps(base: { pool: DatabasePool; config: Config; log: Logger }): AppDeps {
  return {
    ...base,
    storage: createMediaStorage(base.config, base.pool),
    connectors: connectorRegistryFor(base.config),
    credentials: createCredentialService(base),
  };
}
