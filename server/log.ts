// The process's logger: pino, one JSON object per line on stdout (time as
// ISO 8601, level as its name, msg, then the fields: requestId among them
// on a request's child logger). Errors passed as `err` (or `error`) are
// serialized with their stack and their `cause` chain; secrets are redacted
// by field name wherever they sit (see SECRET_FIELDS). LOG_LEVEL (README.md,
// Configuration) picks the threshold: debug, info, warn, error or silent.
import { pino, stdSerializers, type DestinationStream } from 'pino';

export type Level = 'debug' | 'info' | 'warn' | 'error';

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/**
 * Field names whose values never reach a log line, at the top level and in
 * nested objects (headers, request bodies, configs). Matched exactly (case
 * counts), so both spellings of the usual ones are listed.
 */
export const SECRET_FIELDS = [
  'authorization', 'Authorization', 'proxy-authorization', 'cookie', 'Cookie', 'set-cookie', 'Set-Cookie',
  'x-api-key', 'apiKey', 'api_key',
  'password', 'newPassword', 'currentPassword', 'passwordHash',
  'token', 'accessToken', 'refreshToken', 'sessionToken', 'idToken',
  'secret', 'clientSecret', 'signingSecret', 'webhookSecret', 'secretAccessKey', 'privateKey',
  'SIGNED_URL_SECRET', 'S3_SECRET_ACCESS_KEY', 'S3_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN',
  'DATABASE_URL', 'APP_DATABASE_URL', 'TEST_DATABASE_URL', 'connectionString', 'ownerUrl', 'appUrl',
];

/** Top level, one and two levels down (e.g. {req: {headers: {authorization}}}). */
const REDACT_PATHS = SECRET_FIELDS.flatMap((name) => {
  const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : `["${name}"]`;
  const dot = key.startsWith('[') ? '' : '.';
  return [key, `*${dot}${key}`, `*.*${dot}${key}`];
});

/** Writes through process.stdout.write at each call, so a redirection of it (the CLI sends logs to stderr) is honoured. */
const stdout: DestinationStream = { write: (line: string) => void process.stdout.write(line) };

/** Error-like values (an Error, or anything with message and stack) with their stack and causes; others as they are. */
const errSerializer = stdSerializers.errWithCause;

function wrap(p: pino.Logger): Logger {
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (fields) p[level](fields, msg);
    else p[level](msg);
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (fields) => wrap(p.child(fields)),
  };
}

export interface LoggerOptions {
  /** Where the lines go; default: process.stdout. Tests pass a capturing stream. */
  destination?: DestinationStream;
}

export function createLogger(level: Level | 'silent' = 'info', base: Record<string, unknown> = {}, options: LoggerOptions = {}): Logger {
  const p = pino(
    {
      level,
      base: { pid: process.pid, ...base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: errSerializer, error: errSerializer, cause: errSerializer },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    },
    options.destination ?? stdout,
  );
  return wrap(p);
}
