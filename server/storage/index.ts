// One MediaStorage per process, built by createAppDeps (server/deps.ts) and
// handed to the app, the worker and every request's context (ctx.storage):
// the configured driver, the signing secrets, and the base URL of the disk
// driver's links. A request sees the storage `at` its own origin, so links
// point where the client reached the API when PUBLIC_BASE_URL is not set.
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
  /** Where links point: PUBLIC_BASE_URL, else this view's request origin, else HOST:PORT. */
  baseUrl(): string;
  /** The same storage (same secrets) for a request reached at `origin` (scheme://host[:port]). */
  at(origin: string | null): MediaStorage;
}

/** The base URL of links: PUBLIC_BASE_URL, else the request's origin, else the address the API listens on. */
export function publicBaseUrl(config: Config, origin: string | null = null): string {
  if (config.PUBLIC_BASE_URL) return config.PUBLIC_BASE_URL.replace(/\/+$/, '');
  if (origin) return origin;
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.PORT}`;
}

function build(config: Config, secrets: Secrets, origin: string | null): MediaStorage {
  const baseUrl = () => publicBaseUrl(config, origin);
  // S3 links and configured base URLs do not depend on the request.
  const at = (o: string | null) => (o === origin || config.PUBLIC_BASE_URL || config.STORAGE_DRIVER === 's3' ? storage : build(config, secrets, o));
  let storage: MediaStorage;
  if (config.STORAGE_DRIVER === 's3') {
    storage = { config, driver: new S3Driver(config), disk: null, secrets, baseUrl, at };
  } else {
    const disk = new DiskDriver(config, secrets, baseUrl);
    storage = { config, driver: disk, disk, secrets, baseUrl, at };
  }
  return storage;
}

/**
 * The storage of a configuration. With a pool, the signing secret comes from
 * the database when SIGNED_URL_SECRET is unset; without one (a script), it
 * must be configured.
 */
export function createMediaStorage(config: Config, pool: DatabasePool | null): MediaStorage {
  return build(config, new Secrets(config, pool), null);
}
