// Keys for what the API signs itself: the disk driver's URLs and the list
// cursors. One secret, one derived key per purpose.
//
// The secret is SIGNED_URL_SECRET when configured. Otherwise it lives in the
// database (app.server_secrets, readable only by pressroom_definer, reached
// through api.storage_signing_secret which only the server's login role may
// execute): the first process stores a random 32-byte candidate, every
// process reads back the same value. The database is the one thing every API
// process and worker shares for certain (DATA_DIR is not shared by API
// processes on different hosts with the S3 driver), it survives restarts,
// and the request role can never read it.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import { z } from 'zod';
import type { Config } from '../config.ts';
import { sql } from '../db/pool.ts';

const secretRow = z.object({ secret: z.instanceof(Buffer) });

export class Secrets {
  private loading: Promise<Buffer> | null = null;
  private readonly config: Config;
  private readonly pool: DatabasePool | null;

  constructor(config: Config, pool: DatabasePool | null) {
    this.config = config;
    this.pool = pool;
  }

  /**
   * The signing secret (cached; a failed load is retried on the next call).
   * Not callable inside a request's transaction the first time: the storage
   * router loads it before media requests open theirs.
   */
  secret(): Promise<Buffer> {
    if (this.config.SIGNED_URL_SECRET) return Promise.resolve(Buffer.from(this.config.SIGNED_URL_SECRET, 'utf8'));
    if (!this.loading) {
      const pool = this.pool;
      if (!pool) return Promise.reject(new Error('SIGNED_URL_SECRET is not set and no database pool is available to keep one'));
      this.loading = pool
        .oneFirst(sql.type(secretRow)`select api.storage_signing_secret(${sql.binary(randomBytes(32))}) as secret`)
        .catch((e) => {
          this.loading = null;
          throw e;
        });
    }
    return this.loading;
  }

  async key(purpose: 'storage-url' | 'cursor' | 'inbox-secret'): Promise<Buffer> {
    return createHmac('sha256', await this.secret()).update(`pressroom:${purpose}:v1`).digest();
  }
}

export function hmacB64(key: Buffer, data: string): string {
  return createHmac('sha256', key).update(data, 'utf8').digest('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
