// The API client commands of `pressroom` (server/cli/client.ts), spawned for
// real through bin/pressroom.mjs against a real server: login and its
// credentials file, the env overrides, tables and --json, every command of
// docs/clients.md, the exit codes and the request id of errors, and the
// media upload's progress bar on a real pseudo-terminal (util-linux
// `script`), absent when piped.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png } from './media-fixtures.ts';

const BIN = fileURLToPath(new URL('../../bin/pressroom.mjs', import.meta.url));
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  json: any;
}

let server: TestServer;
let dir: string;
let ws: string;
let key: string;
let managerKey: string;
let integrationId: string;
let env: Record<string, string>;

function cli(args: string[], extra: Record<string, string | undefined> = {}, stdin?: string): Promise<Run> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const k of ['PRESSROOM_URL', 'PRESSROOM_API_KEY', 'PRESSROOM_WORKSPACE', 'DATABASE_URL']) delete childEnv[k];
  Object.assign(childEnv, extra);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: childEnv, stdio: ['pipe', 'pipe', 'pipe'] });
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
    child.stdin.end(stdin ?? '');
  });
}

async function ok(args: string[], extra: Record<string, string | undefined> = {}) {
  const r = await cli(args, extra);
  expect(r.code, `pressroom ${args.join(' ')}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

beforeAll(async () => {
  server = await startTestServer('cli_client');
  dir = mkdtempSync(path.join(tmpdir(), 'pressroom-cli-client-'));
  env = { PRESSROOM_CONFIG_DIR: path.join(dir, 'config') };
  const api = client(server);
  const owner = await signup(api);
  ws = owner.workspaceId;
  key = (await createKey(api, owner.token, ws, { role: 'editor' })).key;
  managerKey = (await createKey(api, owner.token, ws, { role: 'manager' })).key;
  integrationId = (
    await server.owner.query(`insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', 'x', 'CLI Sandbox X') returning id`, [
      owner.organizationId,
      ws,
    ])
  ).rows[0].id;
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * For tests that run the command a dozen times or more: each run starts Node (about a second
 * alone, several while the browser tests share the machine's two cores).
 */
const MANY_RUNS = { timeout: 120_000 };

describe('login and credentials', () => {
  it('without credentials says so, exit 3', async () => {
    const r = await cli(['workspaces']);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^pressroom: NOT_SIGNED_IN: /);
  });

  it('refuses a wrong key with the request id, exit 3, and stores nothing', async () => {
    const r = await cli(['login', '--url', server.baseUrl, '--key', 'prk_not_a_real_key_000000000000']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`^pressroom: \\w+: .*\\(request id ${UUID.source}\\)`));
    const j = await cli(['login', '--url', server.baseUrl, '--key', 'prk_not_a_real_key_000000000000', '--json']);
    expect(j.code).toBe(3);
    expect(j.json.error).toMatchObject({ status: 401, requestId: expect.stringMatching(UUID) });
    expect(() => statSync(path.join(dir, 'config', 'credentials.json'))).toThrow();
  });

  it('login reads the key from stdin, checks it, stores it with mode 0600; later commands use it', async () => {
    const r = await cli(['login', '--url', server.baseUrl + '/'], {}, key + '\n');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Signed in to ${server.baseUrl}`);
    const file = path.join(dir, 'config', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, 'config')).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored).toMatchObject({ current: server.baseUrl, servers: { [server.baseUrl]: { apiKey: key, workspaceId: ws } } });
    expect(r.stdout).not.toContain(key);

    const human = await ok(['workspaces']);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+ROLE\s+TIMEZONE$/);
    expect(human.stdout).toContain(ws);
    const json = await ok(['workspaces', '--json']);
    expect(json.json).toEqual([expect.objectContaining({ id: ws, role: 'editor' })]);
  });

  it('PRESSROOM_URL and PRESSROOM_API_KEY override the stored credentials', async () => {
    const r = await ok(['workspaces', '--json'], { PRESSROOM_CONFIG_DIR: path.join(dir, 'empty'), PRESSROOM_URL: server.baseUrl, PRESSROOM_API_KEY: key });
    expect(r.json.map((w: any) => w.id)).toEqual([ws]);
    const bad = await cli(['workspaces'], { PRESSROOM_API_KEY: 'prk_wrong_wrong_wrong_wrong_wrong' });
    expect(bad.code).toBe(3);
  });

  it('an empty PRESSROOM_URL or PRESSROOM_WORKSPACE is unset: the stored login applies', async () => {
    const r = await ok(['workspaces', '--json'], { PRESSROOM_URL: '', PRESSROOM_WORKSPACE: '', PRESSROOM_API_KEY: '' });
    expect(r.json.map((w: any) => w.id)).toEqual([ws]);
    expect((await ok(['integrations', 'list', '--json'], { PRESSROOM_URL: '', PRESSROOM_WORKSPACE: '' })).json).toEqual([expect.objectContaining({ id: integrationId })]);
  });

  it('an unreachable server is exit 6', async () => {
    const r = await cli(['workspaces'], { PRESSROOM_URL: 'http://127.0.0.1:1', PRESSROOM_API_KEY: key });
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^pressroom: UNREACHABLE: /);
  });
});

describe('content', () => {
  it('create, list, get, schedule, revert and publish, in tables and JSON', MANY_RUNS, async () => {
    const created = await ok(['content', 'create', '--caption', 'From the CLI', '--channel', integrationId, '--json']);
    const rootId = created.json.rootId as string;
    const editionId = created.json.editions[0].id as string;
    expect(created.json.editions).toEqual([expect.objectContaining({ integrationId, status: 'draft' })]);

    const list = await ok(['content', 'list', '--status', 'draft']);
    expect(list.stdout.split('\n')[0]).toMatch(/^ID\s+STATUS\s+PLATFORM\s+SCHEDULED\s+CAPTION$/);
    expect(list.stdout).toContain(editionId);
    expect(list.stdout).toContain('From the CLI');
    const all = await ok(['content', 'list', '--all', '--json']);
    expect(all.json.data.map((c: any) => c.id)).toContain(editionId);

    const got = await ok(['content', 'get', editionId, '--json']);
    expect(got.json).toMatchObject({ id: editionId, caption: 'From the CLI', status: 'draft' });
    const gotHuman = await ok(['content', 'get', editionId]);
    expect(gotHuman.stdout).toMatch(/^status:\s+draft$/m);

    const at = new Date(Date.now() + 7 * 24 * 3600_000).toISOString();
    const scheduled = await ok(['content', 'schedule', editionId, '--at', at]);
    expect(scheduled.stdout).toContain('Scheduled');
    const row = async () => (await server.owner.query('select status, scheduled_at from app.content_items where id = $1', [editionId])).rows[0];
    expect(await row()).toMatchObject({ status: 'scheduled', scheduled_at: new Date(at) });

    const reverted = await ok(['content', 'revert', editionId, '--json']);
    expect(reverted.json.rootId).toBe(rootId);
    expect(reverted.json.editions[0]).toMatchObject({ id: editionId, status: 'draft' });
    expect((await row()).status).toBe('draft');

    const published = await ok(['content', 'publish', editionId, '--json']);
    expect(published.json).toBeTruthy();
    expect((await row()).status).not.toBe('draft');
  });

  it('schedules at creation with --at and refuses a time in the past with the field, exit 1', async () => {
    const r = await cli(['content', 'create', '--caption', 'late', '--channel', integrationId, '--at', '2001-01-01T00:00:00Z']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^pressroom: VALIDATION_FAILED: .*\\(request id ${UUID.source}\\)`));
    expect(r.stderr).toMatch(/^ {2}scheduledAt: /m);
  });

  it("content check answers each channel's problems (exit 1 when there are), writing nothing", async () => {
    const count = async () => (await server.owner.query('select count(*)::int as n from app.content_items')).rows[0].n as number;
    const before = await count();
    const good = await ok(['content', 'check', '--caption', 'Fits', '--channel', integrationId, '--json']);
    expect(good.json).toMatchObject({ valid: true, channels: [{ integrationId, platform: 'x', valid: true, problems: [] }] });
    const bad = await cli(['content', 'check', '--caption', 'z'.repeat(300), '--channel', integrationId]);
    expect(bad.code).toBe(1);
    expect(bad.stdout.split('\n')[0]).toBe('Problems found');
    expect(bad.stdout).toMatch(/^CHANNEL\s+PLATFORM\s+FIELD\s+CODE\s+MESSAGE$/m);
    expect(bad.stdout).toMatch(new RegExp(`${integrationId}\\s+x\\s+channels\\.0\\.caption\\s+caption_too_long`));
    expect(await count()).toBe(before);
  });

  it('a missing item is exit 5 with the request id the server logged', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    const r = await cli(['content', 'get', missing, '--json']);
    expect(r.code).toBe(5);
    expect(r.json.error).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    const audit = await server.owner.query('select count(*)::int as n from audit.api_calls where request_id::text = $1', [r.json.error.requestId]);
    expect(audit.rows[0].n).toBe(1);
  });

  it('content created without a channel is an idea: content create says where it is, content roots lists it, content list (editions) does not', async () => {
    const created = await ok(['content', 'create', '--caption', 'An idea from the CLI']);
    const rootId = UUID.exec(created.stdout)![0];
    expect(created.stdout).toBe(`Created: root ${rootId}, an idea: no channel, so no edition yet. \`content list\` lists editions; \`content roots\` lists it (and every root).\n`);

    const editions = await ok(['content', 'list', '--all', '--json']);
    expect(editions.json.data.filter((c: any) => c.rootId === rootId)).toEqual([]);
    const roots = await ok(['content', 'roots', '--json']);
    expect(roots.json.data.find((r: any) => r.id === rootId)).toMatchObject({ caption: 'An idea from the CLI', editions: [] });
    expect(roots.json.meta).toMatchObject({ offset: 0, total: expect.any(Number) });
    const human = await ok(['content', 'roots']);
    expect(human.stdout.split('\n')[0]).toMatch(/^ROOT\s+EDITIONS\s+TITLE\s+CAPTION\s+UPDATED$/);
    expect(human.stdout).toMatch(new RegExp(`^${rootId}\\s+idea\\s+-\\s+An idea from the CLI\\s`, 'm'));
    // A root with editions shows each one's platform and status.
    expect(human.stdout).toMatch(/^\S+\s+x:\w+/m);
    const all = await ok(['content', 'roots', '--all', '--json']);
    expect(all.json.data.map((r: any) => r.id)).toContain(rootId);

    // An empty workspace's edition list says where ideas are.
    const fresh = await signup(client(server));
    const freshKey = (await createKey(client(server), fresh.token, fresh.workspaceId, { role: 'editor' })).key;
    const freshEnv = { PRESSROOM_URL: server.baseUrl, PRESSROOM_API_KEY: freshKey };
    await ok(['content', 'create', '--caption', 'first idea'], freshEnv);
    const empty = await ok(['content', 'list'], freshEnv);
    expect(empty.stdout).toBe('(none)\nNo editions. Content created without a channel is an idea, with no edition: `pressroom content roots` lists it.\n');
  });

  it('an empty --channel, or one swallowed by an unquoted empty variable, is a usage error that says so', async () => {
    const count = async () => (await server.owner.query('select count(*)::int as n from app.content_roots where workspace_id = $1', [ws])).rows[0].n as number;
    const before = await count();
    const cases: [string[], RegExp][] = [
      [['content', 'create', '--caption', 'x', '--channel', ''], /^pressroom: USAGE: content create: --channel is empty \(an unset shell variable\?\); it takes an integration id: `pressroom integrations list` shows them/],
      [['content', 'create', '--caption', 'x', '--channel', integrationId, '--channel', ' '], /--channel is empty/],
      [['content', 'check', '--caption', 'x', '--channel', '--at', '2030-01-01T00:00:00Z'], /^pressroom: USAGE: content check: --channel has no value: the argument after it, "--at", is an option \(an empty shell variable left unquoted\?\)/],
      [['content', 'list', '-w', '--all'], /-w has no value: the argument after it, "--all", is an option/],
      [['content', 'list', '--workspace', ''], /--workspace is empty .*`pressroom workspaces` shows them/],
      [['workspaces', '--url', ''], /--url is empty/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).not.toMatch(/ambiguous/);
    }
    expect(await count()).toBe(before);
  });

  it('usage errors are exit 2 and name the problem', MANY_RUNS, async () => {
    const cases: [string[], RegExp][] = [
      [['content', 'frobnicate'], /content frobnicate: unknown; content takes list, roots, get, create, check, schedule, publish, revert/],
      [['content', 'get', 'not-a-uuid'], /ID must be a UUID/],
      [['content', 'get'], /content get takes ID \(got none\)/],
      [['content', 'list', '--limit', '500'], /--limit must be a whole number from 1 to 100/],
      [['content', 'schedule', '00000000-0000-4000-8000-000000000000'], /needs --at/],
      [['workspaces', '--bogus'], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    const j = await cli(['content', 'get', '--json']);
    expect(j.code).toBe(2);
    expect(j.json.error.code).toBe('USAGE');
  });
});

describe('media upload', () => {
  let files: string[];
  beforeAll(() => {
    files = [png(300, 200, 1), png(64, 48, 2)].map((bytes, i) => {
      const f = path.join(dir, `upload-${i}.png`);
      writeFileSync(f, bytes);
      return f;
    });
  });

  it('uploads several files; piped, no progress bar and a table', async () => {
    const r = await ok(['media', 'upload', ...files]);
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')[0]).toMatch(/^ID\s+FILE\s+TYPE\s+SIZE\s+DIMENSIONS$/);
    expect(r.stdout).toContain('upload-0.png');
    expect(r.stdout).toContain('300x200');
    expect(r.stdout).toContain('64x48');
    const json = await ok(['media', 'upload', files[1], '--json', '--alt', 'tiny']);
    expect(json.json).toEqual([expect.objectContaining({ filename: 'upload-1.png', type: 'image', width: 64, height: 48 })]);
    const stored = await server.owner.query("select count(*)::int as n from app.media_items where workspace_id = $1 and filename like 'upload-%'", [ws]);
    expect(stored.rows[0].n).toBe(3);
  });

  it('a missing file is a usage error before anything is sent', async () => {
    const r = await cli(['media', 'upload', path.join(dir, 'nope.png')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/FILE_NOT_FOUND: .*no such file/);
  });

  const hasScript = (() => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  it.skipIf(!hasScript)('draws a progress bar on a real terminal (util-linux script)', async () => {
    const command = [process.execPath, BIN, 'media', 'upload', files[0]].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const out = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
      const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], { env: { ...process.env, ...env, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, text }));
      child.stdin.end();
    });
    expect(out.code, out.text).toBe(0);
    expect(out.text).toMatch(/\rupload-0\.png \[#{30}\] 100% /);
    expect(out.text).toMatch(/upload-0\.png \[-{30}\]\s+0% /);
    expect(out.text).toContain('300x200');
  });
});

describe('integrations, reviews, analytics', () => {
  it('integrations list', async () => {
    const r = await ok(['integrations', 'list']);
    expect(r.stdout).toMatch(new RegExp(`^${integrationId}\\s+x\\s+CLI Sandbox X\\s+-\\s+active\\s+sandbox$`, 'm'));
    expect((await ok(['integrations', 'list', '--json'])).json).toEqual([expect.objectContaining({ id: integrationId })]);
  });

  it('integrations create and delete, with the rules and roles of the API', MANY_RUNS, async () => {
    const asManager = { PRESSROOM_URL: server.baseUrl, PRESSROOM_API_KEY: managerKey };
    const created = await ok(['integrations', 'create', '--platform', 'x', '--name', 'Made by the CLI', '--username', 'acme'], asManager);
    const id = UUID.exec(created.stdout)![0];
    expect(created.stdout.split('\n')[0]).toBe(`Connected X (sandbox); use it with --channel ${id}`);
    expect(created.stdout).toMatch(/^status:\s+active$/m);
    expect((await server.owner.query('select workspace_id, connector, platform, name, username from app.integrations where id = $1', [id])).rows).toEqual([
      { workspace_id: ws, connector: 'sandbox', platform: 'x', name: 'Made by the CLI', username: 'acme' },
    ]);
    const listed = await ok(['integrations', 'list', '--json'], asManager);
    expect(listed.json.map((i: any) => i.id)).toContain(id);

    // A sandbox that fails every publish, in JSON.
    const failing = await ok(['integrations', 'create', '--platform', 'linkedin', '--name', 'Failing', '--behavior', 'fail', '--json'], asManager);
    expect(failing.json).toMatchObject({ connector: 'sandbox', platform: 'linkedin', settings: { behavior: 'fail' } });

    // The README's path with the command: schedule on the new channel, list it.
    const at = new Date(Date.now() + 3600_000).toISOString();
    const post = await ok(['content', 'create', '--caption', 'Hello from the CLI', '--channel', id, '--at', at, '--json'], asManager);
    const editionId = post.json.editions[0].id;
    const scheduled = await ok(['content', 'list', '--status', 'scheduled', '--json'], asManager);
    expect(scheduled.json.data).toContainEqual(expect.objectContaining({ id: editionId, integrationId: id, status: 'scheduled' }));

    // Refused while an edition is scheduled on it (409, exit 1); deleted once it is not.
    const busy = await cli(['integrations', 'delete', id, '--json'], asManager);
    expect(busy.code).toBe(1);
    expect(busy.json.error).toMatchObject({ code: 'INTEGRATION_HAS_SCHEDULED_CONTENT', status: 409, details: { count: 1, contentIds: [editionId] } });
    await ok(['content', 'revert', editionId], asManager);
    const deleted = await ok(['integrations', 'delete', id], asManager);
    expect(deleted.stdout).toBe(`Disconnected ${id}.\n`);
    expect((await ok(['integrations', 'list', '--json'], asManager)).json.map((i: any) => i.id)).not.toContain(id);
    expect((await cli(['integrations', 'delete', id], asManager)).code).toBe(5);

    // The API's rules: an editor may not connect channels (403, exit 4); the webhook URL guard; the platforms and settings.
    const editor = await cli(['integrations', 'create', '--platform', 'x', '--name', 'Editor tries']);
    expect(editor.code).toBe(4);
    expect(editor.stderr).toMatch(/^pressroom: ROLE_REQUIRED: .*\(request id /);
    const privateHook = await cli(['integrations', 'create', '--connector', 'webhook', '--platform', 'x', '--name', 'Hook', '--webhook-url', 'http://127.0.0.1:9/hook', '--json'], asManager);
    expect(privateHook.code).toBe(1);
    expect(privateHook.json.error.code).toBe('WEBHOOK_URL_PRIVATE_NETWORK');
    const unknown = await cli(['integrations', 'create', '--platform', 'myspace', '--name', 'Old', '--json'], asManager);
    expect(unknown.code).toBe(1);
    expect(['UNKNOWN_PLATFORM', 'VALIDATION_FAILED']).toContain(unknown.json.error.code);
    const behavior = await cli(['integrations', 'create', '--platform', 'x', '--name', 'Odd', '--behavior', 'sometimes', '--json'], asManager);
    expect(behavior.code).toBe(1);
    const missing = await cli(['integrations', 'create', '--name', 'No platform'], asManager);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/integrations create needs --platform/);
    const names = await server.owner.query(`select name from app.integrations where workspace_id = $1 and name in ('Editor tries', 'Hook', 'Old', 'Odd')`, [ws]);
    expect(names.rows).toEqual([]);
  });

  it('reviews inbox', async () => {
    const r = await ok(['reviews', 'inbox', '--json']);
    expect(r.json).toEqual([]);
    expect((await ok(['reviews', 'inbox', '--urgency', 'today'])).stdout).toBe('(none)\n');
    expect((await cli(['reviews', 'inbox', '--urgency', 'someday'])).code).toBe(2);
  });

  it('analytics summary', async () => {
    const r = await ok(['analytics', 'summary', '--from', '2030-01-01', '--to', '2030-01-31', '--json']);
    expect(r.json.period).toMatchObject({ from: '2030-01-01', to: '2030-01-31' });
    const human = await ok(['analytics', 'summary']);
    expect(human.stdout).toMatch(/^Period \d{4}-\d{2}-\d{2} to /);
    expect(human.stdout).toMatch(/^impressions\s+0\s+0\s+0/m);
  });

  it('a workspace the key cannot use is exit 4', async () => {
    const api = client(server);
    const other = await signup(api);
    const r = await cli(['integrations', 'list', '--workspace', other.workspaceId]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/request id/);
  });
});

describe('the administrator commands stay', () => {
  it('by their names and under admin; help shows both', async () => {
    const env2 = { DATABASE_URL: server.db.ownerUrl };
    const a = await ok(['list-orgs'], env2);
    const b = await ok(['admin', 'list-orgs'], env2);
    expect(JSON.parse(a.stdout).length).toBeGreaterThan(0);
    expect(JSON.parse(b.stdout)).toEqual(JSON.parse(a.stdout));
    const help = await ok(['help']);
    expect(help.stdout).toContain('create-org');
    expect(help.stdout).toContain('media upload FILE...');
    expect(help.stdout).toContain('Exit codes: 0 done, 1 refused');
  });
});
