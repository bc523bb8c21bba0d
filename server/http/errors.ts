// The one place where failures become HTTP answers. SQL raises PTxyz with the
// machine code in DETAIL and JSON details in HINT (db/ERRORS.md); built-in
// SQLSTATEs map by class. Anything unknown is a 500 with no internals shown.

import { ApiError } from '../errors.ts';

export { ApiError };

interface PgErrorLike {
  code?: string;
  message?: string;
  detail?: string;
  hint?: string;
  constraint?: string;
  column?: string;
  table?: string;
}

function findPgError(error: unknown): PgErrorLike | null {
  let e: any = error;
  for (let i = 0; i < 5 && e; i++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && 'severity' in e) return e;
    e = e.cause;
  }
  return null;
}

const BUILTIN: Record<string, [number, string, string]> = {
  '23505': [409, 'CONFLICT', 'A resource with these values already exists.'],
  '23503': [409, 'CONFLICT', 'The request refers to a resource that does not exist or is still in use.'],
  '23514': [400, 'VALIDATION_FAILED', 'A value breaks a rule of this resource.'],
  '23502': [400, 'VALIDATION_FAILED', 'A required value is missing.'],
  '22P02': [400, 'VALIDATION_FAILED', 'A value has the wrong format.'],
  '22007': [400, 'VALIDATION_FAILED', 'A date or time has the wrong format.'],
  '22008': [400, 'VALIDATION_FAILED', 'A date or time is out of range.'],
  '22003': [400, 'VALIDATION_FAILED', 'A number is out of range.'],
  '22001': [400, 'VALIDATION_FAILED', 'A value is too long.'],
  '22023': [400, 'VALIDATION_FAILED', 'A value is not valid.'],
  '22021': [400, 'VALIDATION_FAILED', 'A value contains a character that is not allowed (NUL).'],
  '22P05': [400, 'VALIDATION_FAILED', 'A value contains a character that is not allowed (NUL).'],
  '40001': [409, 'CONFLICT', 'The request collided with a concurrent change; retry it.'],
  '40P01': [409, 'CONFLICT', 'The request collided with a concurrent change; retry it.'],
  '55P03': [409, 'CONFLICT', 'The resource is locked by another request; retry it.'],
  '57014': [503, 'TIMEOUT', 'The request took too long and was cancelled.'],
  '42501': [403, 'FORBIDDEN', 'The credential may not do this.'],
};

export function toApiError(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  const pg = findPgError(error);
  if (!pg?.code) return null;
  const m = /^PT(\d{3})$/.exec(pg.code);
  if (m) {
    let details: Record<string, unknown> | null = null;
    if (pg.hint) {
      try {
        details = JSON.parse(pg.hint);
      } catch {
        details = null;
      }
    }
    return new ApiError(Number(m[1]), pg.detail || 'ERROR', pg.message ?? 'Request refused.', details);
  }
  const builtin = BUILTIN[pg.code];
  if (builtin) {
    const details: Record<string, unknown> = {};
    if (pg.constraint) details.constraint = pg.constraint;
    if (pg.column) details.field = pg.column;
    return new ApiError(builtin[0], builtin[1], builtin[2], Object.keys(details).length ? details : null);
  }
  return null;
}

/** Errors of express.json (body-parser) as API errors. */
export function bodyParserError(err: any, limitBytes: number): ApiError | null {
  if (err?.type === 'entity.parse.failed') return new ApiError(400, 'MALFORMED_JSON', 'The body is not valid JSON.');
  if (err?.type === 'entity.too.large') return new ApiError(413, 'PAYLOAD_TOO_LARGE', `The body is larger than ${limitBytes} bytes.`);
  if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') {
    return new ApiError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported body encoding or charset.');
  }
  if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) {
    return new ApiError(err.status, 'BAD_REQUEST', String(err.message ?? 'Bad request.'));
  }
  return null;
}
