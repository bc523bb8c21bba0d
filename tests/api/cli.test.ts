// The `pressroom` admin command, spawned for real (through bin/pressroom.mjs)
// against a fresh clone of the migrated template; stdout must be exactly one
// JSON document, and the database must show the change.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startEmbedded, type EmbeddedDatabase } from '../../server/db/embedded.ts';
import { verifyPassword } from '../../server/security.ts';
import { APP_ROLE_PASSWORD, cloneDatabase, type TestDatabase } from '../support/db.ts';
import { client } from '../support/http.ts';
import { injectedCluster, startTestServer, type TestServer } from '../support/server.ts';

const BIN = fileURLToPath(new URL('../../bin/pressroom.mjs', import.meta.url));
const DAY = 24 * 3600 * 1000;

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

// Settings of the surrounding shell must not leak into the command; DATA_DIR
// points nowhere so a mistake can never touch a real embedded cluster.
const SCRUB = ['DATABASE_URL', 'APP_DATABASE_URL', 'DATA_DIR', 'EMBEDDED_PG_PORT', 'TRIAL_DAYS', 'DEFAULT_PLAN', 'LOG_LEVEL'];
const NOWHERE = path.join(tmpdir(), 'pressroom-cli-test-nowhere');

function cli(args: string[], env: Record<string, string | undefined> = {}, node = process.execPath): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: NOWHERE };
  for (const k of SCRUB.filter((k) => k !== 'DATA_DIR')) delete childEnv[k];
  Object.assign(childEnv, env);
  return new Promise((resolve, reject) => {
    const child = spawn(node, [BIN, ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

/** Asserts exit 0 and one JSON document on stdout; returns it. */
async function ok(args: string[], env: Record<string, string | undefined>) {
  const r = await cli(args, env);
  expect(r.code, `pressroom ${args.join(' ')}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  expect(r.json, `stdout is one JSON document: ${r.stdout}`).toBeDefined();
  return r.json;
}

/** Asserts exit 1 with the error JSON and the given code; returns the error. */
async function fails(args: string[], env: Record<string, string | undefined>, code: string) {
  const r = await cli(args, env);
  expect(r.code, `pressroom ${args.join(' ')}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(1);
  expect(r.json?.error?.code, r.stdout).toBe(code);
  expect(typeof r.json.error.message).toBe('string');
  return r.json.error;
}

const uniq = () => Math.random().toString(36).slice(2, 10);
const near = (iso: string | null, expected: number, toleranceMs = 120_000) => {
  expect(iso).not.toBeNull();
  expect(Math.abs(Date.parse(iso!) - expected)).toBeLessThan(toleranceMs);
};

// Each run is a fresh Node process (about a second on a busy machine).
describe('pressroom CLI against DATABASE_URL', { timeout: 60_000 }, () => {
  let db: TestDatabase;
  let owner: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    db = await cloneDatabase(injectedCluster(), inject('template'), 'cli');
    owner = new pg.Client({ connectionString: db.ownerUrl });
    await owner.connect();
    env = { DATABASE_URL: db.ownerUrl };
  });
  afterAll(async () => {
    await owner?.end();
    await db?.drop();
  });

  async function orgRow(id: string) {
    return (await owner.query('select * from app.organizations where id = $1', [id])).rows[0];
  }

  it('prints usage for help (exit 0) and without a command (exit 2)', async () => {
    const [help, dashHelp, cmdHelp, none] = await Promise.all([
      cli(['help']),
      cli(['--help']),
      cli(['set-plan', '--help']),
      cli([]),
    ]);
    for (const r of [help, dashHelp, cmdHelp]) {
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Usage: pressroom <command>');
    }
    for (const name of ['set-plan', 'create-org', 'create-user', 'reset-password', 'bi-password', 'app-password', 'list-orgs', 'migrate', '--password-env']) {
      expect(help.stdout).toContain(name);
    }
    expect(none.code).toBe(2);
    expect(none.stdout).toContain('Usage: pressroom <command>');
  });

  it('answers usage errors with exit 2 and an error document, before touching the database', async () => {
    const unreachable = { DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/nothing' };
    const cases = [
      ['frobnicate'],
      ['set-plan', '--org', '0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90'],
      ['create-org', '--name', 'Acme', '--colour', 'red'],
      ['create-org', '--name', 'Acme', 'stray'],
      ['create-org', '--name'],
      ['create-user', '--org', '0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90', '--email', 'a@example.com'],
      ['reset-password', '--email', 'a@example.com', '--password', 'long enough password', '--password-env', 'X'],
      ['list-orgs', '--org', 'x'],
    ];
    const results = await Promise.all(cases.map((args) => cli(args, unreachable)));
    results.forEach((r, i) => {
      expect(r.code, `${cases[i].join(' ')}: ${r.stdout}`).toBe(2);
      expect(r.json.error.code).toBe('USAGE');
      expect(r.stderr).toContain('Usage: pressroom');
    });
    expect(results[0].json.error.message).toContain('Unknown command "frobnicate"');
    expect(results[1].json.error.message).toContain('--plan');
  });

  it('reports an unreachable database as error JSON with exit 1', async () => {
    const e = await fails(['list-orgs'], { DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/nothing' }, 'DATABASE_UNAVAILABLE');
    expect(e.message).toMatch(/reach|use/);
  });

  it('migrate is idempotent', async () => {
    expect(await ok(['migrate'], env)).toEqual({ migrated: true });
    expect(await ok(['migrate'], env)).toEqual({ migrated: true });
    const applied = await owner.query('select count(*)::int as n from graphile_migrate.migrations');
    expect(applied.rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it('create-org creates an organization on the given or default plan', async () => {
    const before = Date.now();
    const trial = await ok(['create-org', '--name', '  Trial Co  '], { ...env, TRIAL_DAYS: '5' });
    expect(trial).toMatchObject({ name: 'Trial Co', plan: 'trial' });
    near(trial.trialEndsAt, before + 5 * DAY);
    expect((await orgRow(trial.id)).plan).toBe('trial');

    const basic = await ok(['create-org', '--name', 'Basic Co', '--plan', 'basic'], env);
    expect(basic).toMatchObject({ name: 'Basic Co', plan: 'basic', trialEndsAt: null });

    const dflt = await ok(['create-org', '--name', 'Default Co'], { ...env, DEFAULT_PLAN: 'standard' });
    expect(dflt.plan).toBe('standard');
    expect((await orgRow(dflt.id)).plan).toBe('standard');
  });

  it('create-org refuses a bad plan or an empty name (exit 1)', async () => {
    const [badPlan, empty] = await Promise.all([
      fails(['create-org', '--name', 'X', '--plan', 'gold'], env, 'INVALID_INPUT'),
      fails(['create-org', '--name', '   '], env, 'INVALID_INPUT'),
    ]);
    expect(badPlan.details).toEqual([{ field: '--plan', message: expect.stringContaining('trial, basic, standard, premium') }]);
    expect(empty.details[0].field).toBe('--name');
    const n = await owner.query("select count(*)::int as n from app.organizations where name in ('X')");
    expect(n.rows[0].n).toBe(0);
  });

  it('set-plan moves between plans and starts a trial only when none is running', async () => {
    const org = await ok(['create-org', '--name', 'Plans Co'], { ...env, TRIAL_DAYS: '3' });
    const trialEnd = org.trialEndsAt;

    // Paid plans keep trialEndsAt.
    const premium = await ok(['set-plan', '--org', org.id, '--plan', 'premium'], env);
    expect(premium).toMatchObject({ id: org.id, plan: 'premium', trialEndsAt: trialEnd });
    expect((await orgRow(org.id)).plan).toBe('premium');

    // Back to trial while the trial still runs: same end.
    const again = await ok(['set-plan', '--org', org.id, '--plan', 'trial'], { ...env, TRIAL_DAYS: '30' });
    expect(again).toMatchObject({ plan: 'trial', trialEndsAt: trialEnd });

    // Trial over: choosing trial starts a new one of TRIAL_DAYS.
    await owner.query("update app.organizations set trial_ends_at = now() - interval '1 day' where id = $1", [org.id]);
    const before = Date.now();
    const renewed = await ok(['set-plan', '--org', org.id, '--plan', 'trial'], { ...env, TRIAL_DAYS: '7' });
    expect(renewed.plan).toBe('trial');
    near(renewed.trialEndsAt, before + 7 * DAY);

    // A paid organization that never had a trial gets one.
    const paid = await ok(['create-org', '--name', 'Paid Co', '--plan', 'standard'], env);
    const toTrial = await ok(['set-plan', '--org', paid.id, '--plan', 'trial'], { ...env, TRIAL_DAYS: '2' });
    near(toTrial.trialEndsAt, Date.now() + 2 * DAY);
    const row = await orgRow(paid.id);
    expect(row.plan).toBe('trial');
    near(row.trial_ends_at.toISOString(), Date.now() + 2 * DAY);
  });

  it('set-plan refuses a bad plan, a malformed id and an unknown organization (exit 1)', async () => {
    const org = await ok(['create-org', '--name', 'Refusals Co', '--plan', 'basic'], env);
    const [badPlan, badId, unknown] = await Promise.all([
      fails(['set-plan', '--org', org.id, '--plan', 'enterprise'], env, 'INVALID_INPUT'),
      fails(['set-plan', '--org', 'not-a-uuid', '--plan', 'basic'], env, 'INVALID_INPUT'),
      fails(['set-plan', '--org', '0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90', '--plan', 'basic'], env, 'ORG_NOT_FOUND'),
    ]);
    expect(badPlan.details[0].field).toBe('--plan');
    expect(badId.details[0].field).toBe('--org');
    expect(unknown.message).toContain('0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90');
    expect((await orgRow(org.id)).plan).toBe('basic');
  });

  it('create-user creates an active user with a hashed password and never prints the hash', async () => {
    const org = await ok(['create-org', '--name', 'Users Co'], env);
    const email = `Ada-${uniq()}@Example.com`;
    const r = await cli(['create-user', '--org', org.id, '--email', email, '--password', 'correct horse battery', '--org-role', 'owner'], env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json).toMatchObject({ email, organizationId: org.id, orgRole: 'owner', status: 'active' });
    expect(Object.keys(r.json).sort()).toEqual(['createdAt', 'email', 'id', 'orgRole', 'organizationId', 'status']);
    expect(r.stdout).not.toContain('scrypt');
    const row = (await owner.query('select * from app.users where id = $1', [r.json.id])).rows[0];
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(await verifyPassword('correct horse battery', row.password_hash)).toBe(true);

    // The role defaults to member; the password may come from the environment or a file.
    const fromEnv = await ok(['create-user', '--org', org.id, '--email', `env-${uniq()}@example.com`, '--password-env', 'PRESSROOM_TEST_PW'], {
      ...env,
      PRESSROOM_TEST_PW: 'password from the environment',
    });
    expect(fromEnv.orgRole).toBe('member');
    const envHash = (await owner.query('select password_hash from app.users where id = $1', [fromEnv.id])).rows[0].password_hash;
    expect(await verifyPassword('password from the environment', envHash)).toBe(true);

    const dir = mkdtempSync(path.join(tmpdir(), 'pressroom-cli-'));
    try {
      const file = path.join(dir, 'pw');
      writeFileSync(file, 'password from a file\n');
      const fromFile = await ok(['create-user', '--org', org.id, '--email', `file-${uniq()}@example.com`, '--password-file', file, '--org-role', 'admin'], env);
      expect(fromFile.orgRole).toBe('admin');
      const fileHash = (await owner.query('select password_hash from app.users where id = $1', [fromFile.id])).rows[0].password_hash;
      expect(await verifyPassword('password from a file', fileHash)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('create-user refuses taken emails, unknown organizations and bad input (exit 1)', async () => {
    const org = await ok(['create-org', '--name', 'Refused Users Co'], env);
    const email = `taken-${uniq()}@example.com`;
    await ok(['create-user', '--org', org.id, '--email', email, '--password', 'first password ok'], env);
    const base = ['--password', 'long enough password'];
    const [taken, unknownOrg, badEmail, shortPw, badRole, unsetEnv] = await Promise.all([
      fails(['create-user', '--org', org.id, '--email', email.toUpperCase(), ...base], env, 'EMAIL_TAKEN'),
      fails(['create-user', '--org', '0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90', '--email', `x-${uniq()}@example.com`, ...base], env, 'ORG_NOT_FOUND'),
      fails(['create-user', '--org', org.id, '--email', 'not an email', ...base], env, 'INVALID_INPUT'),
      fails(['create-user', '--org', org.id, '--email', `y-${uniq()}@example.com`, '--password', 'short'], env, 'INVALID_INPUT'),
      fails(['create-user', '--org', org.id, '--email', `z-${uniq()}@example.com`, ...base, '--org-role', 'king'], env, 'INVALID_INPUT'),
      fails(['create-user', '--org', org.id, '--email', `w-${uniq()}@example.com`, '--password-env', 'PRESSROOM_TEST_UNSET'], env, 'INVALID_INPUT'),
    ]);
    expect(taken.details).toEqual({ field: '--email' });
    expect(badEmail.details[0].field).toBe('--email');
    expect(shortPw.details[0]).toEqual({ field: '--password', message: 'must be at least 12 characters' });
    expect(badRole.details[0].field).toBe('--org-role');
    expect(unsetEnv.message).toContain('PRESSROOM_TEST_UNSET');
    expect(unknownOrg.message).toContain('0b6c1f5e');
    const n = await owner.query('select count(*)::int as n from app.users where organization_id = $1', [org.id]);
    expect(n.rows[0].n).toBe(1);
  });

  it('reset-password sets the hash, activates an invited user and revokes open sessions', async () => {
    const org = await ok(['create-org', '--name', 'Reset Co'], env);
    const email = `invited-${uniq()}@example.com`;
    const user = (
      await owner.query("insert into app.users (organization_id, email, org_role, status) values ($1, $2, 'member', 'invited') returning id", [org.id, email])
    ).rows[0];
    const session = (hex: string, expires: string, revoked: string | null) =>
      owner.query(`insert into app.sessions (user_id, organization_id, token_hash, expires_at, revoked_at) values ($1, $2, $3, now() + $4::interval, $5)`, [
        user.id,
        org.id,
        Buffer.from(hex.repeat(32), 'hex'),
        expires,
        revoked,
      ]);
    await session('a1', '1 day', null); // open
    await session('a2', '2 days', null); // open
    await session('a3', '1 day', new Date(Date.now() - 3600_000).toISOString()); // already revoked
    await session('a4', '-1 hour', null); // expired

    const out = await ok(['reset-password', '--email', email.toUpperCase(), '--password-env', 'NEW_PW'], { ...env, NEW_PW: 'a brand new password' });
    expect(out).toEqual({ userId: user.id, email, status: 'active', previousStatus: 'invited', sessionsRevoked: 2 });
    const row = (await owner.query('select status, password_hash from app.users where id = $1', [user.id])).rows[0];
    expect(row.status).toBe('active');
    expect(await verifyPassword('a brand new password', row.password_hash)).toBe(true);
    const open = await owner.query('select count(*)::int as n from app.sessions where user_id = $1 and revoked_at is null and expires_at > now()', [user.id]);
    expect(open.rows[0].n).toBe(0);

    // Again: nothing left to revoke.
    const second = await ok(['reset-password', '--email', email, '--password', 'yet another password'], env);
    expect(second).toMatchObject({ previousStatus: 'active', sessionsRevoked: 0 });
  });

  it('reset-password with an address that is an account and invitations of other organizations', async () => {
    // An invitation is not an account (db/migrations/committed/000005-members-readable-webhook-secrets-no-email-enumeration.sql, split 30-no-email-enumeration.sql).
    const [home, first, second] = await Promise.all(['Home Co', 'First Inviter Co', 'Second Inviter Co'].map((n) => ok(['create-org', '--name', n], env)));
    const email = `shared-${uniq()}@example.com`;
    const invite = async (orgId: string) =>
      (await owner.query("insert into app.users (organization_id, email, org_role, status) values ($1, $2, 'member', 'invited') returning id", [orgId, email])).rows[0].id as string;
    const firstInvite = await invite(first.id);
    const secondInvite = await invite(second.id);
    // Only invitations: the oldest is activated, or the one --org names.
    const oldest = await ok(['reset-password', '--email', email, '--password', 'first password ok'], env);
    expect(oldest).toMatchObject({ userId: firstInvite, previousStatus: 'invited', status: 'active' });
    // Now an account exists: another invitation of the address cannot become a second one.
    const refused = await fails(['reset-password', '--email', email, '--org', second.id, '--password', 'second password ok'], env, 'EMAIL_TAKEN');
    expect(refused.details).toEqual({ field: '--email' });
    expect((await owner.query('select status from app.users where id = $1', [secondInvite])).rows[0].status).toBe('invited');
    // Without --org the account is chosen, never an invitation.
    const again = await ok(['reset-password', '--email', email.toUpperCase(), '--password', 'third password ok'], env);
    expect(again).toMatchObject({ userId: firstInvite, previousStatus: 'active' });
    await fails(['reset-password', '--email', email, '--org', home.id, '--password', 'fourth password ok'], env, 'USER_NOT_FOUND');
  });

  it('reset-password refuses an unknown email or a short password', async () => {
    const [unknown, short, missing] = await Promise.all([
      fails(['reset-password', '--email', `nobody-${uniq()}@example.com`, '--password', 'long enough password'], env, 'USER_NOT_FOUND'),
      fails(['reset-password', '--email', 'a@example.com', '--password', 'too short'], env, 'INVALID_INPUT'),
      cli(['reset-password', '--email', 'a@example.com'], env),
    ]);
    expect(unknown.details).toEqual({ field: '--email' });
    expect(short.details[0].field).toBe('--password');
    expect(missing.code).toBe(2);
    expect(missing.json.error.code).toBe('USAGE');
  });

  it('bi-password lets pressroom_bi sign in and read reporting, and nothing else', async () => {
    const secret = `bi ' quote \\ ${uniq()} "x"`;
    expect(await ok(['bi-password', '--password-env', 'BI_PW'], { ...env, BI_PW: secret })).toEqual({ role: 'pressroom_bi', ok: true });
    const u = new URL(db.ownerUrl);
    u.username = 'pressroom_bi';
    u.password = encodeURIComponent(secret);
    const bi = new pg.Client({ connectionString: u.toString() });
    await bi.connect();
    try {
      await expect(bi.query('select count(*) from reporting.workspaces')).resolves.toBeDefined();
      await expect(bi.query('select count(*) from app.organizations')).rejects.toMatchObject({ code: '42501' });
    } finally {
      await bi.end();
    }
    await fails(['bi-password', '--password', 'short'], env, 'INVALID_INPUT');
  });

  it('app-password sets the login password of pressroom_app', async () => {
    // Roles are cluster-wide and other test files sign in as pressroom_app
    // with APP_ROLE_PASSWORD, so set exactly that.
    expect(await ok(['app-password', '--password', APP_ROLE_PASSWORD], env)).toEqual({ role: 'pressroom_app', ok: true });
    const app = new pg.Client({ connectionString: db.appUrl });
    await app.connect();
    try {
      expect((await app.query('select current_user as u')).rows[0].u).toBe('pressroom_app');
    } finally {
      await app.end();
    }
    await fails(['app-password', '--password-env', 'PRESSROOM_TEST_UNSET'], env, 'INVALID_INPUT');
  });

  it('list-orgs lists organizations with user and workspace counts', async () => {
    const org = await ok(['create-org', '--name', 'Counted Co', '--plan', 'premium'], env);
    await ok(['create-user', '--org', org.id, '--email', `c1-${uniq()}@example.com`, '--password', 'counted password 1'], env);
    await ok(['create-user', '--org', org.id, '--email', `c2-${uniq()}@example.com`, '--password', 'counted password 2'], env);
    await owner.query("insert into app.workspaces (organization_id, name) values ($1, 'One'), ($1, 'Two'), ($1, 'Three')", [org.id]);
    const list = await ok(['list-orgs'], env);
    expect(Array.isArray(list)).toBe(true);
    const total = await owner.query('select count(*)::int as n from app.organizations');
    expect(list).toHaveLength(total.rows[0].n);
    expect(list.find((o: any) => o.id === org.id)).toMatchObject({ name: 'Counted Co', plan: 'premium', userCount: 2, workspaceCount: 3 });
    for (const o of list) expect(o).toEqual(expect.objectContaining({ id: expect.any(String), userCount: expect.any(Number), workspaceCount: expect.any(Number) }));
  });

  // The wrapper must reach Node 24 from an older Node (the system one here).
  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
    try {
      return existsSync(p) && Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]']).toString().trim()) < 24;
    } catch {
      return false;
    }
  });
  it.skipIf(!oldNode)('bin/pressroom.mjs runs the CLI on Node 24 when started by an older Node, passing the exit code', async () => {
    const help = await cli(['help'], {}, oldNode);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: pressroom');
    const list = await cli(['list-orgs'], env, oldNode);
    expect(list.code).toBe(0);
    expect(Array.isArray(list.json)).toBe(true);
    const bad = await cli(['set-plan', '--org', 'nope', '--plan', 'basic'], env, oldNode);
    expect(bad.code).toBe(1);
    expect(bad.json.error.code).toBe('INVALID_INPUT');
  });
});

describe('a user made by the CLI signs in over HTTP', { timeout: 60_000 }, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('cli_http');
  });
  afterAll(async () => server?.close());

  it('create-user, sign in, reset-password revokes the session, set-plan ends a lapsed trial', async () => {
    const env = { DATABASE_URL: server.db.ownerUrl };
    const api = client(server);
    const org = await ok(['create-org', '--name', 'Signed In Co'], env);
    const email = `cli-${uniq()}@example.com`;
    const user = await ok(['create-user', '--org', org.id, '--email', email, '--password', 'first password here', '--org-role', 'owner'], env);

    const session = await api.post('/v1/auth/sessions', { email, password: 'first password here' });
    expect(session.status).toBe(201);
    expect(session.body.data.user.id).toBe(user.id);
    const token = session.body.data.token as string;
    expect((await api.get('/v1/workspaces', { token })).status).toBe(200);

    const reset = await ok(['reset-password', '--email', email, '--password', 'second password here'], env);
    expect(reset.sessionsRevoked).toBe(1);
    expect((await api.get('/v1/workspaces', { token })).status).toBe(401);
    expect((await api.post('/v1/auth/sessions', { email, password: 'first password here' })).status).toBe(401);
    const fresh = await api.post('/v1/auth/sessions', { email, password: 'second password here' });
    expect(fresh.status).toBe(201);
    const freshToken = fresh.body.data.token as string;

    // A lapsed trial locks the API until an operator picks a paid plan.
    await server.owner.query("update app.organizations set trial_ends_at = now() - interval '1 hour' where id = $1", [org.id]);
    const locked = await api.get('/v1/workspaces', { token: freshToken });
    expect(locked.status).toBe(401);
    expect(locked.body.error.code).toBe('PLAN_REQUIRED');
    expect((await ok(['set-plan', '--org', org.id, '--plan', 'basic'], env)).plan).toBe('basic');
    expect((await api.get('/v1/workspaces', { token: freshToken })).status).toBe(200);
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

describe('embedded PostgreSQL under DATA_DIR (no DATABASE_URL, or an empty one)', () => {
  let dir: string;
  let port: number;
  let running: EmbeddedDatabase | null = null;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'pressroom-cli-embedded-'));
    chmodSync(dir, 0o755); // the cluster runs as the postgres user when we are root
    port = await freePort();
  });
  afterAll(async () => {
    await running?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts and stops the cluster itself, or joins the one the server runs', { timeout: 120_000 }, async () => {
    // DATABASE_URL= (empty, as Compose and .env files give) is unset too: the embedded cluster.
    const env = { DATA_DIR: dir, EMBEDDED_PG_PORT: String(port), DATABASE_URL: '', APP_DATABASE_URL: '' };
    const pidFile = path.join(dir, 'pg', 'postmaster.pid');

    // Nothing runs: the CLI creates and starts the cluster, migrates, and stops it.
    const org = await ok(['create-org', '--name', 'Embedded Co', '--plan', 'basic'], env);
    expect(org.plan).toBe('basic');
    expect(existsSync(pidFile)).toBe(false);

    // The server runs it: the CLI joins (starting it again would fail) and leaves it running.
    running = await startEmbedded({ dataDir: dir, port, database: 'pressroom' });
    const list = await ok(['list-orgs'], env);
    expect(list.map((o: any) => o.id)).toEqual([org.id]);
    await ok(['set-plan', '--org', org.id, '--plan', 'premium'], env);
    expect(existsSync(pidFile)).toBe(true);
    const c = new pg.Client({ connectionString: running.ownerUrl() });
    await c.connect();
    try {
      expect((await c.query('select plan from app.organizations where id = $1', [org.id])).rows[0].plan).toBe('premium');
    } finally {
      await c.end();
    }
  });
});
