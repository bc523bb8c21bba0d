// app.settings has one writer (server/db/settings.ts, README.md "Configuration"): the API
// process writes its environment's values at start; a worker-only process (`npm run worker`,
// RUN_API=false) writes nothing, logs one error line per setting its environment sets to
// another value, and runs on the database's values. Real processes of server/main.ts on the
// test database, and real sign-ups over HTTP.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.ts';
import { SETTING_VARIABLES, settingsAtStart } from '../../server/db/settings.ts';
import { createLogger } from '../../server/log.ts';
import { client } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PASSWORD = 'correct horse battery staple';

let server: TestServer;
let api: ReturnType<typeof client>;
let tmp = '';

beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'settings-owner-'));
  server = await startTestServer('settings_owner', { ALLOW_SIGNUP: false });
  api = client(server);
  // The first organization may always sign up; sign-up is closed after it.
  const first = await api.post('/v1/auth/signup', { email: 'first@example.com', password: PASSWORD, organizationName: 'First', workspaceName: 'W' });
  expect(first.status).toBe(201);
});

afterAll(async () => {
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const inForce = async (key: string) => (await server.owner.query('select value from app.settings where key = $1', [key])).rows[0]?.value;

/** The environment a child starts from: this one without any variable the server reads for the database, its role or a setting. */
function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const v of [...Object.values(SETTING_VARIABLES), 'DATABASE_URL', 'APP_DATABASE_URL', 'RUN_API', 'RUN_WORKER', 'PORT', 'HOST',
    'METRICS_PORT', 'METRICS_TOKEN', 'LOG_LEVEL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'CREDENTIALS_KEYS']) delete env[v];
  return {
    ...env,
    DATABASE_URL: server.db.ownerUrl,
    APP_DATABASE_URL: server.db.appUrl,
    DATA_DIR: tmp,
    LOG_LEVEL: 'info',
    SHUTDOWN_TIMEOUT_MS: '2000',
  };
}

interface LogLine {
  level: string;
  msg: string;
  [k: string]: unknown;
}

/**
 * Runs server/main.ts until it logs `ready` (its start is over), then stops it with SIGTERM;
 * returns every JSON line it wrote.
 */
async function runMain(env: NodeJS.ProcessEnv, ready: string): Promise<LogLine[]> {
  const child = spawn(process.execPath, [path.join(ROOT, 'server/main.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (c) => (err += c));
  const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? String(code))));
  const lines = () =>
    out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c) => {
        out += c;
        if (lines().some((l) => l.msg === ready)) resolve();
      });
      void exited.then((code) => reject(new Error(`server/main.ts exited (${code}) before "${ready}":\n${out}\n${err}`)));
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  }
  // Drained and stopped (0), or ended by the signal when it came before main.ts had installed its
  // handlers, right after the line awaited: either way the start is over and logged.
  expect(['0', 'SIGTERM'], out + err).toContain(await exited);
  return lines();
}

const aboutSettings = (lines: LogLine[]) => lines.filter((l) => /setting/i.test(l.msg));

describe('a worker-only process', () => {
  it('with ALLOW_SIGNUP=true against false in force: writes nothing, logs an error naming ALLOW_SIGNUP, sign-up stays closed', async () => {
    expect(await inForce('allow_signup')).toBe(false);
    const lines = await runMain({ ...baseEnv(), RUN_API: 'false', ALLOW_SIGNUP: 'true' }, 'worker running');

    const said = aboutSettings(lines);
    expect(said, JSON.stringify(lines)).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 'error', setting: 'allow_signup', variable: 'ALLOW_SIGNUP', env: true, database: false });
    expect(said[0].msg).toBe(
      "settings differ: ALLOW_SIGNUP=true in this process's environment, false in the database; the database's values are in force; " +
        'set them on the API process (RUN_API=true), which writes them at start',
    );
    // Not written: the database still says false, and sign-up is refused over HTTP.
    expect(await inForce('allow_signup')).toBe(false);
    const second = await api.post('/v1/auth/signup', { email: 'second@example.com', password: PASSWORD, organizationName: 'Second', workspaceName: 'W' });
    expect(second.status).toBe(403);
    expect(second.body.error.code).toBe('SIGNUP_CLOSED');
  }, 60_000);

  it('whose environment sets nothing else than what is in force logs nothing about settings', async () => {
    // ALLOW_SIGNUP=false is set and agrees; RATE_LIMIT_READ is unset: its default (120) is not the
    // 100000 in force, and that is no disagreement.
    expect(await inForce('rate_limit_read')).toBe(100000);
    const lines = await runMain({ ...baseEnv(), RUN_API: 'false', ALLOW_SIGNUP: 'false', TRIAL_DAYS: '3' }, 'worker running');
    expect(lines.some((l) => l.msg === 'worker running')).toBe(true);
    expect(aboutSettings(lines), JSON.stringify(lines)).toEqual([]);
    expect(lines.filter((l) => l.level === 'error'), JSON.stringify(lines)).toEqual([]);
    expect(await inForce('rate_limit_read')).toBe(100000);
  }, 60_000);

  it('runs on the values in force: its configuration takes them, whatever its environment said', async () => {
    const logged: string[] = [];
    const log = createLogger('debug', {}, { destination: { write: (s: string) => void logged.push(s) } });
    const config = loadConfig({ RUN_API: 'false', PUBLISH_MAX_ATTEMPTS: '2' } as NodeJS.ProcessEnv);
    expect(config.PUBLISH_MAX_ATTEMPTS).toBe(2);
    expect(config.RATE_LIMIT_READ).toBe(120);
    const differences = await settingsAtStart(server.pool, config, log, { RUN_API: 'false', PUBLISH_MAX_ATTEMPTS: '2' });
    expect(differences).toEqual([{ key: 'publish_max_attempts', variable: 'PUBLISH_MAX_ATTEMPTS', env: 2, database: 5 }]);
    expect(logged.map((l) => JSON.parse(l)).map((l) => [l.level, l.variable])).toEqual([['error', 'PUBLISH_MAX_ATTEMPTS']]);
    // The publish engine's last attempt (server/jobs/publish.ts) is now the one SQL counts to.
    expect(config.PUBLISH_MAX_ATTEMPTS).toBe(5);
    expect(config.RATE_LIMIT_READ).toBe(100000);
    expect(config.ALLOW_SIGNUP).toBe(false);
    expect(await inForce('publish_max_attempts')).toBe(5);
  });
});

describe('the API process', () => {
  it('owns the settings: it writes its environment\'s values and logs what it changed', async () => {
    const lines = await runMain({ ...baseEnv(), RUN_API: 'true', RUN_WORKER: 'false', PORT: '0', ALLOW_SIGNUP: 'true', RATE_LIMIT_READ: '100000' }, 'listening');
    const said = aboutSettings(lines);
    expect(said, JSON.stringify(lines)).toHaveLength(1);
    expect(said[0].level).toBe('warn');
    // Every setting it did not set gets its default, which changed those the test server had raised.
    expect(said[0].changed).toEqual(
      expect.arrayContaining([
        { variable: 'ALLOW_SIGNUP', from: false, to: true },
        { variable: 'AUTH_FAILURE_LIMIT', from: 100000, to: 30 },
      ]),
    );
    expect((said[0].changed as { variable: string }[]).map((c) => c.variable)).not.toContain('RATE_LIMIT_READ');
    expect(await inForce('allow_signup')).toBe(true);
    // In force for every process: the test server now lets a further organization sign up.
    const second = await api.post('/v1/auth/signup', { email: 'second@example.com', password: PASSWORD, organizationName: 'Second', workspaceName: 'W' });
    expect(second.status).toBe(201);
  }, 60_000);
});
