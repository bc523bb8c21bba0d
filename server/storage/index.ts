// One MediaStorage per app (per Config object): the configured driver, the
// signing secrets, and the public base URL of the disk driver's links.
// createStorageRouter registers it when the app is built; route handlers
// reach it through ctx.config, which is the same object.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DatabasePool } from 'slonik';
import type { Config } from '../config.ts';
import { DiskDriver } from './disk.ts';
import type { StorageDriver } from './driver.ts';
import { S3Driver } from './s3.ts';
import { Secrets } from './signing.ts';

export interface MediaStorage {
  config: Config;
  driver: StorageDriver;
  /** The disk driver when configured (the storage router serves its URLs). */
  disk: DiskDriver | null;
  secrets: Secrets;
}

/**
 * The origin of the request being served (scheme://host[:port]), for the
 * links of the disk driver when PUBLIC_BASE_URL is not set.
 */
export const requestOrigin = new AsyncLocalStorage<string>();

export function publicBaseUrl(config: Config): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  const origin = requestOrigin.getStore();
  if (origin) return origin;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
}

const registry = new WeakMap<Config, MediaStorage>();

export function createMediaStorage(config: Config, pool: DatabasePool | null): MediaStorage {
  const secrets = new Secrets(config, pool);
  if (config.STORAGE_DRIVER === 's3') {
    return { config, driver: new S3Driver(config), disk: null, secrets };
  }
  const disk = new DiskDriver(config, secrets, () => publicBaseUrl(config));
  return { config, driver: disk, disk, secrets };
}

/** Called once per app (createStorageRouter). */
export function registerMediaStorage(config: Config, pool: DatabasePool): MediaStorage {
  const storage = createMediaStorage(config, pool);
  registry.set(config, storage);
  return storage;
}

/** The app's MediaStorage; without a registered one (a script), one without a pool. */
export function mediaStorage(config: Config): MediaStorage {
  let storage = registry.get(config);
  if (!storage) {
    storage = createMediaStorage(config, null);
    registry.set(config, storage);
  }
  return storage;
}
