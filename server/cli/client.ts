// `pressroom login|workspaces|content|media|integrations|reviews|analytics`:
// the API client commands of the `pressroom` command, beside the
// administrator's commands (server/cli/pressroom.ts). They talk to a running
// server over HTTP with an API key, through the typed client
// (clients/typescript), so they have exactly the rights, limits and audit of
// any other API call. Documented in docs/clients.md; the exit codes are
// EXIT below.
import { createReadStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import {
  createPressroomClient,
  isEdition,
  paginateOffset,
  PressroomError,
  unwrap,
  uploadMedia,
  type ContentListEntry,
  type PressroomClient,
  type Schema,
} from '../../clients/typescript/src/index.ts';

export const CLIENT_COMMANDS = ['login', 'logout', 'workspaces', 'content', 'media', 'integrations', 'reviews', 'analytics'] as const;

export const EXIT = {
  OK: 0,
  /** The API refused the request (a 4xx not below) or failed (5xx). */
  REFUSED: 1,
  USAGE: 2,
  /** No credentials, or the API refused them (401). */
  UNAUTHENTICATED: 3,
  /** The credentials may not do this (403). */
  FORBIDDEN: 4,
  /** 404. */
  NOT_FOUND: 5,
  /** The server could not be reached. */
  UNREACHABLE: 6,
  /** Still rate limited (429) after the client's retries. */
  RATE_LIMITED: 7,
} as const;

export const CLIENT_USAGE = `API client (needs a running server and an API key):
  login [--url URL] [--key KEY | --key-env NAME]
                  Checks the key against the server and stores it for that URL in
                  the config directory (mode 0600). Without --key/--key-env the key
                  is read from stdin (piped) or asked for (terminal, not echoed).
  logout [--url URL]
                  Forgets the key of that URL.
  workspaces      The workspaces the key can use.
  content list [--status S] [--limit N] [--offset N] [--all]
                  Editions: one per channel of a root (drafts, scheduled, sent, failed).
  content roots [--limit N] [--offset N] [--all]
                  Roots with their editions, ideas (no channel yet) included.
  content get ID   (ID: an edition, as content list shows)
  content create --caption TEXT [--channel INTEGRATION_ID]... [--media MEDIA_ID]...
                 [--title T] [--at ISO_TIME | --now]
                  A draft unless --at (scheduled) or --now (published at once): one
                  edition per --channel; without one, an idea (see content roots).
  content check --caption TEXT [--channel INTEGRATION_ID]... [--media MEDIA_ID]...
                 [--title T] [--at ISO_TIME | --now]
                  The same body checked against each channel's platform rules;
                  nothing is written. Exit status 1 when a problem is found.
  content schedule ID --at ISO_TIME
  content publish ID
  content revert ID
                  ID is a scheduled edition: every scheduled edition of its root
                  returns to draft.
  media upload FILE... [--folder ID] [--alt TEXT]
                  Signed upload of each file; a progress bar on a terminal.
  integrations list
  integrations create --platform P --name NAME [--username U]
                 [--connector sandbox|webhook] [--behavior B] [--webhook-url URL] [--secret S]
                  Connects a channel (manager role). sandbox (the default) simulates
                  platform P with its rules; --behavior succeed|fail|
                  transient-then-succeed|unknown. webhook POSTs each publish, signed,
                  to --webhook-url; the secret is issued and shown once unless --secret.
  integrations delete ID
                  Disconnects a channel (manager role; refused while editions are
                  scheduled on it).
  reviews inbox [--platform P] [--urgency overdue|today|week|later|all]
  analytics summary [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--integration ID]...

  Options of every client command:
    --json            one JSON document on stdout (tables otherwise)
    --url URL         the server (else PRESSROOM_URL, else the one of the last login)
    -w, --workspace ID  the workspace (else PRESSROOM_WORKSPACE, else the login's
                      default, else the key's only workspace)
  PRESSROOM_API_KEY overrides the stored key; PRESSROOM_CONFIG_DIR the directory
  (default $XDG_CONFIG_HOME/pressroom or ~/.config/pressroom).

  Errors go to stderr as "pressroom: CODE: message (request id ...)", or with --json
  to stdout as {"error":{"code","message","requestId","status","details"}}.
  Exit codes: 0 done, 1 refused by the API or server error, 2 usage error,
  3 not signed in or key refused (401), 4 forbidden (403), 5 not found (404),
  6 server unreachable, 7 still rate limited (429) after retries.
`;

export interface ClientIO {
  env: NodeJS.ProcessEnv;
  stdoutIsTTY: boolean;
  stderrIsTTY: boolean;
  stdinIsTTY: boolean;
  /** Progress and notices (stderr). */
  writeErr(text: string): void;
  /** Terminal width for tables (columns), when a terminal. */
  columns?: number;
}

export interface ClientOutcome {
  exitCode: number;
  stdout: string;
  stderr?: string;
}

class CliUsage extends Error {}
class CliFailure extends Error {
  readonly code: string;
  readonly exitCode: number;
  constructor(code: string, message: string, exitCode: number) {
    super(message);
    this.code = code;
    this.exitCode = exitCode;
  }
}

// ---------------------------------------------------------------------------
// Credentials
// ---------------------------------------------------------------------------

interface StoredConfig {
  current?: string;
  servers: Record<string, { apiKey: string; workspaceId?: string | null; savedAt: string }>;
}

export function configDir(env: NodeJS.ProcessEnv): string {
  if (env.PRESSROOM_CONFIG_DIR) return env.PRESSROOM_CONFIG_DIR;
  if (process.platform === 'win32' && env.APPDATA) return path.join(env.APPDATA, 'pressroom');
  return path.join(env.XDG_CONFIG_HOME || path.join(env.HOME || homedir(), '.config'), 'pressroom');
}

const credentialsFile = (env: NodeJS.ProcessEnv) => path.join(configDir(env), 'credentials.json');

function readConfig(env: NodeJS.ProcessEnv): StoredConfig {
  const file = credentialsFile(env);
  if (!existsSync(file)) return { servers: {} };
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as StoredConfig;
    return { current: parsed.current, servers: parsed.servers ?? {} };
  } catch (e) {
    throw new CliFailure('CONFIG_INVALID', `Cannot read ${file}: ${(e as Error).message}; delete it and log in again.`, EXIT.USAGE);
  }
}

function writeConfig(env: NodeJS.ProcessEnv, config: StoredConfig): string {
  const dir = configDir(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = credentialsFile(env);
  // Written aside with mode 0600 and renamed over: never readable by others, never half written.
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
  return file;
}

function normalizeUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliUsage(`--url must be a URL such as http://localhost:3000 (got "${raw}")`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new CliUsage(`--url must be http or https (got "${raw}")`);
  return u.origin + u.pathname.replace(/\/+$/, '');
}

interface Session {
  baseUrl: string;
  apiKey: string;
  storedWorkspace: string | null;
}

function session(values: Values, env: NodeJS.ProcessEnv): Session {
  const config = readConfig(env);
  const given = (values.url as string | undefined) ?? (env.PRESSROOM_URL || config.current);
  if (!given) throw new CliFailure('NOT_SIGNED_IN', 'No server: run `pressroom login --url URL`, or set PRESSROOM_URL and PRESSROOM_API_KEY.', EXIT.UNAUTHENTICATED);
  const baseUrl = normalizeUrl(given);
  const stored = config.servers[baseUrl];
  const apiKey = env.PRESSROOM_API_KEY || stored?.apiKey;
  if (!apiKey) throw new CliFailure('NOT_SIGNED_IN', `No API key for ${baseUrl}: run \`pressroom login --url ${baseUrl}\` or set PRESSROOM_API_KEY.`, EXIT.UNAUTHENTICATED);
  return { baseUrl, apiKey, storedWorkspace: env.PRESSROOM_API_KEY ? null : (stored?.workspaceId ?? null) };
}

function sdkFor(s: { baseUrl: string; apiKey: string }, io: ClientIO, json: boolean): PressroomClient {
  return createPressroomClient({
    baseUrl: s.baseUrl,
    apiKey: s.apiKey,
    headers: { 'User-Agent': 'pressroom-cli/0.1' },
    onRetry: (r) => {
      if (!json && io.stderrIsTTY && r.status === 429) io.writeErr(`rate limited; retrying in ${Math.ceil(r.delayMs / 1000)} s\n`);
    },
  });
}

// ---------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------

interface Result {
  json: unknown;
  human: string;
  /** Default EXIT.OK. */
  exitCode?: number;
}

type Cell = string | number | boolean | null | undefined;

function table(headers: string[], rows: Cell[][], io: Pick<ClientIO, 'stdoutIsTTY'>): string {
  if (rows.length === 0) return '(none)\n';
  const max = io.stdoutIsTTY ? 48 : Infinity;
  const text = (c: Cell) => {
    const s = c === null || c === undefined || c === '' ? '-' : String(c).replace(/\s+/g, ' ');
    return s.length > max ? s.slice(0, max - 1) + '…' : s;
  };
  const cells = rows.map((r) => r.map(text));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}

function fields(pairs: [string, Cell][]): string {
  const w = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${(k + ':').padEnd(w + 1)} ${v === null || v === undefined || v === '' ? '-' : v}`).join('\n') + '\n';
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(2)} GB`;
}

function progressBar(io: ClientIO, label: string) {
  let lastDraw = 0;
  return {
    update(sent: number, total: number) {
      const now = Date.now();
      if (sent < total && now - lastDraw < 80) return;
      lastDraw = now;
      const width = 30;
      const done = total === 0 ? width : Math.round((sent / total) * width);
      const pct = total === 0 ? 100 : Math.floor((sent / total) * 100);
      io.writeErr(`\r${label} [${'#'.repeat(done)}${'-'.repeat(width - done)}] ${String(pct).padStart(3)}% ${bytes(sent)}/${bytes(total)}`);
    },
    finish() {
      io.writeErr('\n');
    },
  };
}

// ---------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------

type Values = Record<string, string | boolean | string[] | undefined>;

interface Ctx {
  io: ClientIO;
  values: Values;
  positionals: string[];
  json: boolean;
}

const COMMON: ParseArgsOptionsConfig = {
  json: { type: 'boolean' },
  url: { type: 'string' },
  workspace: { type: 'string', short: 'w' },
  help: { type: 'boolean', short: 'h' },
};

interface Sub {
  options?: ParseArgsOptionsConfig;
  /** Positionals: exact count, or at least min. */
  args: { min: number; max: number; names: string };
  run(ctx: Ctx): Promise<Result>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uuidArg(value: string, what: string): string {
  if (!UUID.test(value)) throw new CliUsage(`${what} must be a UUID (got "${value}")`);
  return value;
}

function intFlag(values: Values, name: string, min: number, max: number): number | undefined {
  const v = values[name] as string | undefined;
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new CliUsage(`--${name} must be a whole number from ${min} to ${max} (got "${v}")`);
  return Number(v);
}

function isoFlag(values: Values, name: string): string | undefined {
  const v = values[name] as string | undefined;
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}T/.test(v)) throw new CliUsage(`--${name} must be an ISO 8601 time such as 2030-05-04T09:00:00Z (got "${v}")`);
  return new Date(t).toISOString();
}

async function connect(ctx: Ctx): Promise<{ sdk: PressroomClient; s: Session }> {
  const s = session(ctx.values, ctx.io.env);
  return { sdk: sdkFor(s, ctx.io, ctx.json), s };
}

async function workspaceOf(ctx: Ctx): Promise<{ sdk: PressroomClient; ws: string }> {
  const { sdk, s } = await connect(ctx);
  const given = (ctx.values.workspace as string | undefined) ?? (ctx.io.env.PRESSROOM_WORKSPACE || s.storedWorkspace);
  if (given) return { sdk, ws: uuidArg(given, '--workspace') };
  const { data } = await unwrap(sdk.GET('/v1/workspaces'));
  if (data.length === 1) return { sdk, ws: data[0].id };
  throw new CliUsage(
    data.length === 0
      ? 'The key can use no workspace'
      : `The key can use ${data.length} workspaces; choose one with --workspace ID or PRESSROOM_WORKSPACE (${data.map((w) => `${w.id} ${w.name}`).join('; ')})`,
  );
}

async function readKey(ctx: Ctx): Promise<string> {
  const { io, values } = ctx;
  if (values.key !== undefined && values['key-env'] !== undefined) throw new CliUsage('Give only one of --key, --key-env');
  if (values.key !== undefined) return values.key as string;
  if (values['key-env'] !== undefined) {
    const v = io.env[values['key-env'] as string];
    if (!v) throw new CliUsage(`The environment variable ${values['key-env']} (from --key-env) is not set or empty`);
    return v;
  }
  if (!io.stdinIsTTY) {
    let text = '';
    for await (const chunk of process.stdin) text += chunk;
    return text.trim();
  }
  // A terminal: ask, without echoing what is typed.
  io.writeErr('API key: ');
  const rl = createInterface({ input: process.stdin, terminal: true });
  const rlw = rl as unknown as { _writeToOutput?: (s: string) => void };
  rlw._writeToOutput = () => {};
  const key = await new Promise<string>((resolve) => rl.question('', resolve));
  rl.close();
  io.writeErr('\n');
  return key.trim();
}

const contentPath = (ws: string, id: string) => ({ params: { path: { workspaceId: ws, id } } });

const contentRow = (c: ContentListEntry): Cell[] => (isEdition(c) ? [c.id, c.status, c.platform, c.scheduledAt, c.caption] : [c.id, 'deleted', '-', '-', '-']);

/** Where a root with no channel is: the API lists editions under {ws}/content and roots (ideas included) under {ws}/content-roots. */
const IDEA_NOTE = 'an idea: no channel, so no edition yet. `content list` lists editions; `content roots` lists it (and every root)';

function mutation(r: Schema<'ContentMutationResult'>, verb: string): Result {
  if (r.editions.length === 0) return { json: r, human: `${verb}: root ${r.rootId}, ${IDEA_NOTE}.\n` };
  return {
    json: r,
    human: `${verb}: root ${r.rootId}\n` + table(['EDITION', 'STATUS', 'INTEGRATION', 'SCHEDULED'], r.editions.map((e) => [e.id, e.status, e.integrationId, e.scheduledAt]), { stdoutIsTTY: false }),
  };
}

/** The options of content create and content check, and the create body they make. */
const CONTENT_BODY_OPTIONS = {
  caption: { type: 'string' },
  title: { type: 'string' },
  channel: { type: 'string', multiple: true },
  media: { type: 'string', multiple: true },
  at: { type: 'string' },
  now: { type: 'boolean' },
} as const;

function contentBody(v: Values): Schema<'CreatePublicPostDto'> {
  if (v.at !== undefined && v.now) throw new CliUsage('Give --at or --now, not both');
  const scheduledAt = isoFlag(v, 'at');
  const channels = ((v.channel as string[] | undefined) ?? []).map((c) => ({ integrationId: uuidArg(c, '--channel') }));
  const mediaIds = ((v.media as string[] | undefined) ?? []).map((m) => uuidArg(m, '--media'));
  return {
    intent: scheduledAt ? 'schedule' : v.now ? 'publish_now' : 'draft',
    ...(scheduledAt ? { scheduledAt } : {}),
    ...(v.caption !== undefined ? { caption: v.caption as string } : {}),
    ...(v.title !== undefined ? { title: v.title as string } : {}),
    ...(channels.length ? { channels } : {}),
    ...(mediaIds.length ? { mediaIds } : {}),
  };
}

const CONTENT_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
  '.gif': 'image/gif',
  '.mp4': 'video/mp4',
  '.m4v': 'video/mp4',
  '.mov': 'video/quicktime',
  '.webm': 'video/webm',
};

async function contentTypeOf(file: string): Promise<string> {
  const byName = CONTENT_TYPES[path.extname(file).toLowerCase()];
  if (byName) return byName;
  const { fileTypeFromFile } = await import('file-type');
  const found = await fileTypeFromFile(file);
  if (!found) throw new CliFailure('UNSUPPORTED_MEDIA_FORMAT', `${file}: not a supported media file (PNG, JPEG, WebP, GIF, MP4, MOV, WebM)`, EXIT.REFUSED);
  return found.mime;
}

const COMMANDS: Record<string, Record<string, Sub>> = {
  login: {
    '': {
      options: { key: { type: 'string' }, 'key-env': { type: 'string' } },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const config = readConfig(ctx.io.env);
        const given = (ctx.values.url as string | undefined) ?? (ctx.io.env.PRESSROOM_URL || config.current);
        if (!given) throw new CliUsage('login needs --url URL (or PRESSROOM_URL)');
        const baseUrl = normalizeUrl(given);
        const apiKey = await readKey(ctx);
        if (!apiKey) throw new CliUsage('No API key given');
        const sdk = sdkFor({ baseUrl, apiKey }, ctx.io, ctx.json);
        const { data } = await unwrap(sdk.GET('/v1/workspaces'));
        const workspaceId = data.length === 1 ? data[0].id : null;
        config.servers[baseUrl] = { apiKey, workspaceId, savedAt: new Date().toISOString() };
        config.current = baseUrl;
        const file = writeConfig(ctx.io.env, config);
        const summary = { url: baseUrl, keyPrefix: apiKey.slice(0, 12), workspaces: data.length, defaultWorkspaceId: workspaceId, credentialsFile: file };
        return {
          json: summary,
          human: `Signed in to ${baseUrl} with ${summary.keyPrefix}… (${data.length} workspace${data.length === 1 ? '' : 's'}${workspaceId ? `, default ${data[0].name}` : ''}).\nSaved to ${file} (mode 0600).\n`,
        };
      },
    },
  },
  logout: {
    '': {
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const config = readConfig(ctx.io.env);
        const given = (ctx.values.url as string | undefined) ?? (ctx.io.env.PRESSROOM_URL || config.current);
        if (!given) return { json: { removed: false }, human: 'Not signed in.\n' };
        const baseUrl = normalizeUrl(given);
        const removed = Object.hasOwn(config.servers, baseUrl);
        delete config.servers[baseUrl];
        if (config.current === baseUrl) delete config.current;
        writeConfig(ctx.io.env, config);
        return { json: { url: baseUrl, removed }, human: removed ? `Forgot the key of ${baseUrl}.\n` : `No key was stored for ${baseUrl}.\n` };
      },
    },
  },
  workspaces: {
    '': {
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const { sdk } = await connect(ctx);
        const { data } = await unwrap(sdk.GET('/v1/workspaces'));
        return { json: data, human: table(['ID', 'NAME', 'ROLE', 'TIMEZONE'], data.map((w) => [w.id, w.name, w.role, w.timezone]), ctx.io) };
      },
    },
  },
  content: {
    list: {
      options: { status: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' }, all: { type: 'boolean' } },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const status = ctx.values.status as Schema<'ContentStatus'> | undefined;
        const limit = intFlag(ctx.values, 'limit', 1, 100) ?? 20;
        const offset = intFlag(ctx.values, 'offset', 0, 1_000_000) ?? 0;
        const page = (o: number, l: number) => sdk.GET('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws }, query: { offset: o, limit: l, ...(status ? { status } : {}) } } });
        let items: ContentListEntry[];
        let meta: unknown;
        if (ctx.values.all) {
          items = [];
          for await (const item of paginateOffset((o) => page(o, 100), offset)) items.push(item);
          meta = { total: items.length };
        } else {
          const body = await unwrap(page(offset, limit));
          items = body.data;
          meta = body.meta;
        }
        const m = meta as { total: number; hasMore?: boolean };
        const footer =
          !ctx.values.all && m.hasMore
            ? `${items.length} of ${m.total}; more with --offset ${offset + items.length} or --all\n`
            : items.length === 0 && offset === 0
              ? 'No editions. Content created without a channel is an idea, with no edition: `pressroom content roots` lists it.\n'
              : '';
        return { json: { data: items, meta }, human: table(['ID', 'STATUS', 'PLATFORM', 'SCHEDULED', 'CAPTION'], items.map(contentRow), ctx.io) + footer };
      },
    },
    roots: {
      options: { limit: { type: 'string' }, offset: { type: 'string' }, all: { type: 'boolean' } },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const limit = intFlag(ctx.values, 'limit', 1, 500) ?? 20;
        const offset = intFlag(ctx.values, 'offset', 0, 1_000_000) ?? 0;
        const page = (o: number, l: number) => sdk.GET('/v1/workspaces/{workspaceId}/content-roots', { params: { path: { workspaceId: ws }, query: { offset: o, limit: l } } });
        let roots: Schema<'ContentRoot'>[];
        let meta: Schema<'ContentPageMeta'> | { total: number };
        if (ctx.values.all) {
          roots = [];
          for await (const root of paginateOffset((o) => page(o, 500), offset)) roots.push(root);
          meta = { total: roots.length };
        } else {
          ({ data: roots, meta } = await unwrap(page(offset, limit)));
        }
        const footer = 'hasMore' in meta && meta.hasMore ? `${roots.length} of ${meta.total}; more with --offset ${offset + roots.length} or --all\n` : '';
        const rows = roots.map((r): Cell[] => [
          r.id,
          r.editions.length ? r.editions.map((e) => `${e.platform}:${e.status}`).join(' ') : 'idea',
          r.title ?? r.organizationalTitle,
          r.caption,
          r.updatedAt,
        ]);
        return { json: { data: roots, meta }, human: table(['ROOT', 'EDITIONS', 'TITLE', 'CAPTION', 'UPDATED'], rows, ctx.io) + footer };
      },
    },
    get: {
      args: { min: 1, max: 1, names: 'ID' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.GET('/v1/workspaces/{workspaceId}/content/{id}', contentPath(ws, uuidArg(ctx.positionals[0], 'ID'))));
        const d = data as unknown as Record<string, Cell>;
        const pairs: [string, Cell][] = Object.entries(d)
          .filter(([, v]) => v === null || typeof v !== 'object')
          .map(([k, v]) => [k, v as Cell]);
        return { json: data, human: fields(pairs) };
      },
    },
    create: {
      options: CONTENT_BODY_OPTIONS,
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const body = contentBody(ctx.values);
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.POST('/v1/workspaces/{workspaceId}/content', { params: { path: { workspaceId: ws } }, body }));
        return mutation(data, 'Created');
      },
    },
    check: {
      options: CONTENT_BODY_OPTIONS,
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const body = contentBody(ctx.values);
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.POST('/v1/workspaces/{workspaceId}/content/check', { params: { path: { workspaceId: ws } }, body }));
        const rows: Cell[][] = [
          ...data.problems.map((p): Cell[] => ['-', '-', p.field, p.code, p.message]),
          ...data.channels.flatMap((c) =>
            c.problems.length
              ? c.problems.map((p): Cell[] => [c.integrationId, c.platform, p.field, p.code, p.message])
              : [[c.integrationId, c.platform, '-', 'ok', '-'] as Cell[]],
          ),
        ];
        return {
          json: data,
          human: `${data.valid ? 'Valid' : 'Problems found'}\n` + table(['CHANNEL', 'PLATFORM', 'FIELD', 'CODE', 'MESSAGE'], rows, { stdoutIsTTY: false }),
          exitCode: data.valid ? EXIT.OK : EXIT.REFUSED,
        };
      },
    },
    schedule: {
      options: { at: { type: 'string' } },
      args: { min: 1, max: 1, names: 'ID' },
      async run(ctx) {
        const scheduledAt = isoFlag(ctx.values, 'at');
        if (!scheduledAt) throw new CliUsage('content schedule needs --at ISO_TIME');
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.PATCH('/v1/workspaces/{workspaceId}/content/{id}/schedule', { ...contentPath(ws, uuidArg(ctx.positionals[0], 'ID')), body: { scheduledAt } }));
        return mutation(data, 'Scheduled');
      },
    },
    publish: {
      args: { min: 1, max: 1, names: 'ID' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.POST('/v1/workspaces/{workspaceId}/content/{id}/publish', contentPath(ws, uuidArg(ctx.positionals[0], 'ID'))));
        return { json: data, human: `Publishing ${ctx.positionals[0]}: ${JSON.stringify(data)}\n` };
      },
    },
    revert: {
      args: { min: 1, max: 1, names: 'ID' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.POST('/v1/workspaces/{workspaceId}/content/{id}/revert-to-draft', { ...contentPath(ws, uuidArg(ctx.positionals[0], 'ID')), body: {} }));
        return mutation(data, 'Reverted to draft');
      },
    },
  },
  media: {
    upload: {
      options: { folder: { type: 'string' }, alt: { type: 'string' } },
      args: { min: 1, max: 100, names: 'FILE...' },
      async run(ctx) {
        const files = ctx.positionals.map((f) => {
          let st;
          try {
            st = statSync(f);
          } catch (e) {
            throw new CliFailure('FILE_NOT_FOUND', `${f}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`, EXIT.USAGE);
          }
          if (!st.isFile()) throw new CliFailure('FILE_NOT_FOUND', `${f}: not a file`, EXIT.USAGE);
          if (st.size === 0) throw new CliFailure('FILE_EMPTY', `${f}: the file is empty`, EXIT.USAGE);
          return { file: f, size: st.size };
        });
        const folderId = ctx.values.folder !== undefined ? uuidArg(ctx.values.folder as string, '--folder') : undefined;
        const { sdk, ws } = await workspaceOf(ctx);
        const showProgress = ctx.io.stderrIsTTY && !ctx.json;
        const uploaded = [];
        for (const { file, size } of files) {
          const contentType = await contentTypeOf(file);
          const bar = showProgress ? progressBar(ctx.io, path.basename(file)) : null;
          const item = await uploadMedia(sdk, {
            workspaceId: ws,
            filename: path.basename(file),
            contentType,
            size,
            body: () => createReadStream(file, { highWaterMark: 256 * 1024 }),
            ...(folderId ? { folderId } : {}),
            ...(ctx.values.alt !== undefined ? { altText: ctx.values.alt as string } : {}),
            onProgress: bar ? (p) => bar.update(p.sentBytes, p.totalBytes) : undefined,
          });
          bar?.finish();
          uploaded.push(item);
        }
        return {
          json: uploaded,
          human: table(['ID', 'FILE', 'TYPE', 'SIZE', 'DIMENSIONS'], uploaded.map((m) => [m.id, m.filename, m.contentType, bytes(m.fileSize), m.width && m.height ? `${m.width}x${m.height}` : null]), ctx.io),
        };
      },
    },
  },
  integrations: {
    list: {
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.GET('/v1/workspaces/{workspaceId}/integrations', { params: { path: { workspaceId: ws } } }));
        return { json: data, human: table(['ID', 'PLATFORM', 'NAME', 'USERNAME', 'STATUS', 'CONNECTOR'], data.map((i) => [i.id, i.platform, i.name, i.username, i.status, i.connector]), ctx.io) };
      },
    },
    create: {
      options: {
        platform: { type: 'string' },
        name: { type: 'string' },
        connector: { type: 'string' },
        username: { type: 'string' },
        behavior: { type: 'string' },
        // --url is the server's (every client command takes it).
        'webhook-url': { type: 'string' },
        secret: { type: 'string' },
      },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        // The body of POST {ws}/integrations as given; the API applies its rules
        // (manager role, platforms, connector settings, the webhook URL guard).
        const v = ctx.values as Record<string, string | undefined>;
        const missing = ['platform', 'name'].filter((f) => v[f] === undefined);
        if (missing.length) throw new CliUsage(`integrations create needs ${missing.map((f) => `--${f}`).join(', ')}`);
        const body = {
          connector: (v.connector ?? 'sandbox') as Schema<'CreateIntegrationDto'>['connector'],
          platform: v.platform as Schema<'IntegrationPlatform'>,
          name: v.name!,
          ...(v.username !== undefined ? { username: v.username } : {}),
          ...(v.behavior !== undefined ? { settings: { behavior: v.behavior as NonNullable<Schema<'IntegrationSettings'>['behavior']> } } : {}),
          ...(v['webhook-url'] !== undefined ? { url: v['webhook-url'] } : {}),
          ...(v.secret !== undefined ? { secret: v.secret } : {}),
        };
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.POST('/v1/workspaces/{workspaceId}/integrations', { params: { path: { workspaceId: ws } }, body }));
        const pairs: [string, Cell][] = [
          ['id', data.id],
          ['connector', data.connector],
          ['platform', data.platform],
          ['name', data.name],
          ['username', data.username],
          ['status', data.status],
          ['webhookUrl', data.webhookUrl],
        ];
        if (data.secret) pairs.push(['secret', `${data.secret}  (shown this once: store it in the receiver)`]);
        return { json: data, human: `Connected ${data.platformName} (${data.connector}); use it with --channel ${data.id}\n` + fields(pairs) };
      },
    },
    delete: {
      args: { min: 1, max: 1, names: 'ID' },
      async run(ctx) {
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(sdk.DELETE('/v1/workspaces/{workspaceId}/integrations/{id}', { params: { path: { workspaceId: ws, id: uuidArg(ctx.positionals[0], 'ID') } } }));
        return { json: data, human: `Disconnected ${data.id}.\n` };
      },
    },
  },
  reviews: {
    inbox: {
      options: { platform: { type: 'string' }, urgency: { type: 'string' } },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        const urgency = (ctx.values.urgency as string | undefined) ?? 'all';
        const urgencies = ['overdue', 'today', 'week', 'later', 'all'] as const;
        if (!(urgencies as readonly string[]).includes(urgency)) throw new CliUsage(`--urgency must be one of ${urgencies.join(', ')}`);
        const { sdk, ws } = await workspaceOf(ctx);
        const { data } = await unwrap(
          sdk.GET('/v1/workspaces/{workspaceId}/reviews/inbox', {
            params: { path: { workspaceId: ws }, query: { platform: (ctx.values.platform as string | undefined) ?? 'all', urgency: urgency as (typeof urgencies)[number] } },
          }),
        );
        return {
          json: data,
          human: table(['ITEM', 'REVIEW', 'CONTENT', 'STATE', 'PLATFORM', 'DUE', 'URGENCY', 'CAPTION'], data.map((r) => [r.id, r.reviewTitle ?? r.reviewId, r.contentId, r.state, r.platform, r.dueAt, r.urgency, r.caption]), ctx.io),
        };
      },
    },
  },
  analytics: {
    summary: {
      options: { from: { type: 'string' }, to: { type: 'string' }, integration: { type: 'string', multiple: true } },
      args: { min: 0, max: 0, names: '' },
      async run(ctx) {
        for (const f of ['from', 'to']) {
          const v = ctx.values[f] as string | undefined;
          if (v !== undefined && !/^\d{4}-\d{2}-\d{2}$/.test(v)) throw new CliUsage(`--${f} must be a date such as 2030-05-04 (got "${v}")`);
        }
        const ids = ((ctx.values.integration as string[] | undefined) ?? []).map((i) => uuidArg(i, '--integration'));
        const { sdk, ws } = await workspaceOf(ctx);
        const query = {
          ...(ctx.values.from ? { from: ctx.values.from as string } : {}),
          ...(ctx.values.to ? { to: ctx.values.to as string } : {}),
          ...(ids.length ? { integrationIds: ids.join(',') } : {}),
        };
        const { data } = await unwrap(sdk.GET('/v1/workspaces/{workspaceId}/analytics/summary', { params: { path: { workspaceId: ws }, query } }));
        const rows = Object.entries(data.metrics).map(([k, f]) => [k, f.value, f.previous, f.change, f.changePercent === null ? null : `${f.changePercent}%`] as Cell[]);
        return {
          json: data,
          human: `Period ${data.period.from} to ${data.period.to} (previous ${data.previousPeriod.from} to ${data.previousPeriod.to})\n` + table(['METRIC', 'VALUE', 'PREVIOUS', 'CHANGE', 'CHANGE %'], rows, ctx.io),
        };
      },
    },
  },
};

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

function exitFor(status: number): number {
  if (status === 401) return EXIT.UNAUTHENTICATED;
  if (status === 403) return EXIT.FORBIDDEN;
  if (status === 404) return EXIT.NOT_FOUND;
  if (status === 429) return EXIT.RATE_LIMITED;
  return EXIT.REFUSED;
}

function failure(code: string, message: string, exitCode: number, json: boolean, extra: { requestId?: string | null; status?: number; details?: unknown } = {}): ClientOutcome {
  if (json) {
    const error = { code, message, requestId: extra.requestId ?? null, status: extra.status ?? null, details: extra.details ?? null };
    return { exitCode, stdout: JSON.stringify({ error }, null, 2) + '\n', stderr: exitCode === EXIT.USAGE ? CLIENT_USAGE : undefined };
  }
  let text = `pressroom: ${code}: ${message}`;
  if (extra.requestId) text += ` (request id ${extra.requestId})`;
  text += '\n';
  const fieldsOf = (extra.details as { fields?: { field?: string; code?: string; message?: string }[] } | null)?.fields;
  if (Array.isArray(fieldsOf)) for (const f of fieldsOf) text += `  ${f.field ?? ''}: ${f.message ?? f.code ?? ''}\n`;
  if (exitCode === EXIT.USAGE) text += 'Run `pressroom help` for usage.\n';
  return { exitCode, stdout: '', stderr: text };
}

/** Options whose empty value is a value, left to the API's rules (texts). */
const MAY_BE_EMPTY = new Set(['caption', 'title', 'alt']);
const EMPTY_HINT: Record<string, string> = {
  channel: 'it takes an integration id: `pressroom integrations list` shows them, `pressroom integrations create --platform x --name NAME` connects a sandbox one',
  integration: 'it takes an integration id: `pressroom integrations list` shows them',
  workspace: 'it takes a workspace id: `pressroom workspaces` shows them',
  media: 'it takes a media id: `pressroom media upload FILE` prints it',
  folder: 'it takes a media folder id',
};

/**
 * An option given an empty value (`--channel ""`, or `--channel "$ID"` with ID
 * unset): a usage error naming the option, rather than "must be a UUID (got
 * "")" or, for a text the API would take, a silent empty value.
 */
function emptyOption(values: Values): string | null {
  for (const [name, v] of Object.entries(values)) {
    if (MAY_BE_EMPTY.has(name)) continue;
    for (const one of Array.isArray(v) ? v : [v]) {
      if (typeof one === 'string' && one.trim() === '') return `--${name} is empty (an unset shell variable?); ${EMPTY_HINT[name] ?? 'give it a value or leave it out'}`;
    }
  }
  return null;
}

/**
 * node:util parseArgs' message, first line; its "argument is ambiguous" (an
 * option followed by another option, as `--channel $ID --at T` becomes when
 * ID is empty and unquoted) said plainly.
 */
function parseProblem(e: Error, args: string[]): string {
  const first = e.message.split('\n')[0];
  const m = /^Option '(-{1,2}[^' ]+)' argument is ambiguous/.exec(first);
  if (!m) return first;
  const next = args[args.indexOf(m[1]) + 1];
  return (
    `${m[1]} has no value: the argument after it, "${next}", is an option (an empty shell variable left unquoted?). ` +
    `Quote the value ("$VAR"); a value that starts with a dash is written ${m[1]}=VALUE`
  );
}

export async function runClient(argv: string[], io: ClientIO): Promise<ClientOutcome> {
  const json = argv.includes('--json');
  const [command, ...rest] = argv;
  const subs = COMMANDS[command];
  let subName = '';
  let args = rest;
  if (!Object.hasOwn(subs, '')) {
    subName = rest[0] ?? '';
    args = rest.slice(1);
    if (subName === '--help' || subName === '-h' || subName === 'help') return { exitCode: 0, stdout: CLIENT_USAGE };
    if (!Object.hasOwn(subs, subName)) {
      return failure('USAGE', `${command} ${subName || '(nothing)'}: unknown; ${command} takes ${Object.keys(subs).join(', ')}`, EXIT.USAGE, json);
    }
  }
  const sub = subs[subName];
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args, options: { ...COMMON, ...sub.options }, strict: true, allowPositionals: true }) as { values: Values; positionals: string[] });
  } catch (e) {
    return failure('USAGE', `${command}${subName ? ` ${subName}` : ''}: ${parseProblem(e as Error, args)}`, EXIT.USAGE, json);
  }
  if (values.help) return { exitCode: 0, stdout: CLIENT_USAGE };
  const label = `${command}${subName ? ` ${subName}` : ''}`;
  const empty = emptyOption(values);
  if (empty) return failure('USAGE', `${label}: ${empty}`, EXIT.USAGE, json);
  if (positionals.length < sub.args.min || positionals.length > sub.args.max) {
    const want = sub.args.max === 0 ? 'no arguments' : sub.args.names;
    return failure('USAGE', `${label} takes ${want} (got ${positionals.length ? positionals.join(' ') : 'none'})`, EXIT.USAGE, json);
  }
  try {
    const result = await sub.run({ io, values, positionals, json });
    return { exitCode: result.exitCode ?? EXIT.OK, stdout: json ? JSON.stringify(result.json, null, 2) + '\n' : result.human };
  } catch (e) {
    if (e instanceof CliUsage) return failure('USAGE', `${label}: ${e.message}`, EXIT.USAGE, json);
    if (e instanceof CliFailure) return failure(e.code, e.message, e.exitCode, json);
    if (e instanceof PressroomError) {
      if (e.status === 0) return failure(e.code, e.message, EXIT.REFUSED, json);
      return failure(e.code, e.message, exitFor(e.status), json, { requestId: e.requestId, status: e.status, details: e.details });
    }
    const err = e as { cause?: { code?: string; message?: string }; message?: string };
    if (e instanceof TypeError && (err.message === 'fetch failed' || err.cause)) {
      return failure('UNREACHABLE', `Cannot reach the server: ${err.cause?.message ?? err.message}`, EXIT.UNREACHABLE, json);
    }
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'ENOTFOUND') return failure('UNREACHABLE', `Cannot reach the server: ${(e as Error).message}`, EXIT.UNREACHABLE, json);
    return failure('INTERNAL', (e as Error).stack ?? String(e), EXIT.REFUSED, json);
  }
}
