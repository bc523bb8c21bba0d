// The logger of server/log.ts writing into a captured stream: levels, the
// request id of a child, error stacks and cause chains, redaction; and the
// real process failing to start logs why (README.md, Configuration: LOG_LEVEL).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, type Level } from '../../server/log.ts';

function captured(level: Level | 'silent' = 'debug', base: Record<string, unknown> = {}) {
  const lines: string[] = [];
  const log = createLogger(level, base, { destination: { write: (s: string) => void lines.push(s) } });
  return { log, lines, entries: () => lines.map((l) => JSON.parse(l)) };
}

describe('the logger', () => {
  it('writes one JSON line per call: ISO time, level name, msg, base and fields', () => {
    const { log, lines, entries } = captured('debug', { service: 'pressroom' });
    log.info('listening', { url: 'http://127.0.0.1:1' });
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('\n')).toBe(true);
    expect(lines[0].slice(0, -1)).not.toContain('\n');
    const [e] = entries();
    expect(e).toMatchObject({ level: 'info', msg: 'listening', service: 'pressroom', url: 'http://127.0.0.1:1', pid: process.pid });
    expect(new Date(e.time).toISOString()).toBe(e.time);
  });

  it.each([
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
    ['silent', []],
  ] as const)('LOG_LEVEL=%s keeps %j', (level, kept) => {
    const { log, entries } = captured(level);
    log.debug('d');
    log.info('i');
    log.warn('w');
    log.error('e');
    expect(entries().map((e) => e.level)).toEqual(kept);
  });

  it('a child carries the request id on every line, the parent does not', () => {
    const { log, entries } = captured();
    const child = log.child({ requestId: 'req-1' });
    child.info('request', { status: 200 });
    child.child({ route: '/v1/x' }).warn('slow');
    log.info('other');
    expect(entries()).toEqual([
      expect.objectContaining({ msg: 'request', requestId: 'req-1', status: 200 }),
      expect.objectContaining({ msg: 'slow', requestId: 'req-1', route: '/v1/x' }),
      expect.not.objectContaining({ requestId: expect.anything() }),
    ]);
  });

  it('error causes and stacks are logged', () => {
    const { log, entries } = captured();
    const root = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const middle = new Error('could not migrate', { cause: root });
    log.error('failed to start', { err: new Error('could not open the database', { cause: middle }) });
    log.error('both failed', { err: new AggregateError([new Error('first'), new Error('second')], 'two failures') });
    const [a, b] = entries();
    expect(a.err).toMatchObject({ type: 'Error', message: 'could not open the database' });
    expect(a.err.stack).toMatch(/^Error: could not open the database\n\s+at /);
    expect(a.err.cause).toMatchObject({ message: 'could not migrate', cause: { message: 'connect ECONNREFUSED 127.0.0.1:1', code: 'ECONNREFUSED' } });
    expect(a.err.cause.cause.stack).toMatch(/log\.test\.ts/);
    expect(b.err.message).toBe('two failures');
    expect(b.err.aggregateErrors.map((e: { message: string }) => e.message)).toEqual(['first', 'second']);
  });

  it('secrets are redacted: headers, passwords, tokens, keys, secrets, connection strings, at any of three depths', () => {
    const { log, lines, entries } = captured();
    log.child({ token: 'child-token-value' }).warn('call', {
      headers: { authorization: 'Bearer prs_live_secret', cookie: 'sid=cookie-value', 'set-cookie': 'sid=set-cookie-value', accept: 'application/json' },
      req: { headers: { authorization: 'Bearer nested-secret' } },
      body: { email: 'ada@example.com', password: 'correct horse battery staple', newPassword: 'new-password-value' },
      apiKey: 'prk_api_key_value',
      config: { S3_SECRET_ACCESS_KEY: 's3-secret-value', SIGNED_URL_SECRET: 'signing-secret-value', DATABASE_URL: 'postgres://u:db-password@h/d' },
      integration: { settings: { secret: 'webhook-secret-value' } },
      secretAccessKey: 'aws-secret-value',
      key: 'media/ws/123', // a storage key is not a secret
    });
    const text = lines.join('');
    for (const secret of ['child-token-value', 'prs_live_secret', 'cookie-value', 'nested-secret', 'correct horse', 'new-password-value', 'prk_api_key_value',
      's3-secret-value', 'signing-secret-value', 'db-password', 'webhook-secret-value', 'aws-secret-value']) {
      expect(text).not.toContain(secret);
    }
    const [e] = entries();
    expect(e.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]', 'set-cookie': '[redacted]', accept: 'application/json' });
    expect(e.body).toEqual({ email: 'ada@example.com', password: '[redacted]', newPassword: '[redacted]' });
    expect(e.token).toBe('[redacted]');
    expect(e.key).toBe('media/ws/123');
  });

  it('the process that cannot start logs the reason on stdout', async () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const proc = spawn(process.execPath, [path.join(root, 'server/main.ts')], {
      // Nothing listens on port 1: the connection is refused.
      env: { ...process.env, DATABASE_URL: 'postgres://pressroom:hunter2@127.0.0.1:1/pressroom', LOG_LEVEL: 'info', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c) => (out += c));
    proc.stderr.on('data', (c) => (err += c));
    const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
    expect(code).toBe(1);
    const entries = out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const failed = entries.find((e) => e.msg === 'failed to start');
    expect(failed, out + err).toBeDefined();
    expect(failed).toMatchObject({ level: 'error', service: 'pressroom', err: { code: 'ECONNREFUSED' } });
    expect(failed.err.message).toMatch(/ECONNREFUSED 127\.0\.0\.1:1/);
    expect(failed.err.stack).toMatch(/\n\s+at /);
    expect(out).not.toContain('hunter2');
  });
});
