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

const DATA_EXCEPTION: [number, string, string] = [400, 'VALIDATION_FAILED', 'A value is not valid for its field.'];

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
  // Any other data exception (SQLSTATE class 22: a value the column or
  // function cannot take, e.g. 22009 for a UTC offset beyond ±15:59) is the
  // client's value, never a server failure.
  const builtin = BUILTIN[pg.code] ?? (pg.code.startsWith('22') ? DATA_EXCEPTION : undefined);
  if (builtin) {
    const details: Record<string, unknown> = {};
    if (pg.constraint) details.constraint = pg.constraint;
    if (pg.column) details.field = pg.column;
    if (pg.code.startsWith('22')) details.sqlstate = pg.code;
    return new ApiError(builtin[0], builtin[1], builtin[2], Object.keys(details).length ? details : null);
  }
  return null;
}

/** Errors of express.json (body-parser) as API errors. */
export function bodyParserError(err: any, limitBytes: number): ApiError | null {
  if (err?.type === 'entity.nesting.too.deep') return new ApiError(400, 'NESTING_TOO_DEEP', String(err.message));
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

/**
 * The request fields a data exception (SQLSTATE class 22) is about, where it
 * can be told: PostgreSQL quotes the value it could not take ('invalid input
 * syntax for type uuid: "x"', 'time zone displacement out of range:
 * "2030-01-01T00:00:00+16:00"'), and the fields of the request holding that
 * very string are named. Empty when nothing matches.
 */
export function dataExceptionFields(error: unknown, input: Record<string, unknown>): { field: string; code: string; message: string }[] {
  const pg = findPgError(error);
  if (!pg?.code?.startsWith('22')) return [];
  const quoted = /"((?:[^"\\]|\\.)*)"/.exec(pg.message ?? '')?.[1];
  if (!quoted) return [];
  const out: { field: string; code: string; message: string }[] = [];
  const stack: [string, unknown][] = Object.entries(input);
  while (stack.length && out.length < 20) {
    const [field, v] = stack.pop()!;
    if (typeof v === 'string' || typeof v === 'number') {
      if (String(v) === quoted || (typeof v === 'number' && Number(quoted) === v)) out.push({ field, code: 'invalid_value', message: 'is not a value this field can take' });
    } else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) stack.push([`${field}.${k}`, x]);
    }
  }
  return out.sort((a, b) => a.field.localeCompare(b.field));
}
