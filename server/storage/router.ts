import express from 'express';
import type { DatabasePool } from 'slonik';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';

/** Routes outside /v1 that serve signed storage URLs (the media issue fills this in). */
export function createStorageRouter(_deps: { pool: DatabasePool; config: Config; log: Logger }): express.Router {
  return express.Router();
}
