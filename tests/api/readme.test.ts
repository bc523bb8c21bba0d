// README.md's "First calls" block, run as a reader pastes it: taken from the
// README itself (so an edit that breaks it breaks this test), with bash
// -euo pipefail, against a real server whose database has no organization
// yet and whose ALLOW_SIGNUP is the default (false), as after `npm start`:
// sign-up, a key, a sandbox channel connected and a post scheduled on it with
// the key, the scheduled posts listed.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.ts';

const root = path.resolve(import.meta.dirname, '../..');
const README_URL = 'http://localhost:3000';
const MARKER = '--- readme.test.ts ---';

/** The one ```sh block of the section "### First calls" (up to the next heading). */
function firstCallsBlock(): string {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = /^### First calls\n([\s\S]*?)(?=^#{2,3} )/m.exec(readme);
  if (!section) throw new Error('README.md has no "### First calls" section');
  const blocks = [...section[1].matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  if (blocks.length !== 1) throw new Error(`README.md "### First calls" should have exactly one \`\`\`sh block; it has ${blocks.length}`);
  return blocks[0];
}

/** Fails with a message naming the missing tool, rather than skipping. */
function requireTools(...tools: string[]) {
  for (const tool of tools) {
    try {
      execFileSync('bash', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      throw new Error(`README.md's first calls need \`${tool}\` on the PATH (install it to run this test)`);
    }
  }
}

function runBash(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c) => (stdout += c));
    p.stderr.on('data', (c) => (stderr += c));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let server: TestServer;
let block: string;
beforeAll(async () => {
  requireTools('bash', 'curl', 'node');
  block = firstCallsBlock();
  server = await startTestServer('readme', { ALLOW_SIGNUP: false });
});
afterAll(async () => server?.close());

describe('README.md first calls', () => {
  it('name the API once, at http://localhost:3000 (npm start)', () => {
    expect(block.match(/localhost:\d+/g)).toEqual(['localhost:3000']);
    expect(block).toContain(`API=${README_URL}\n`);
  });

  it('run as pasted: sign up, create a key with the session, connect a sandbox channel and schedule a post with the key, list it', async () => {
    const started = Date.now();
    const script = block.replace(README_URL, server.baseUrl) + `\nprintf '\\n%s\\n%s\\n%s\\n%s\\n%s\\n%s\\n' '${MARKER}' "$SESSION" "$WS" "$KEY" "$CHANNEL" "$POST"\n`;
    const run = await runBash(script);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [last, values] = run.stdout.split(`\n${MARKER}\n`);
    const [session, ws, key, channel, post] = values.trim().split('\n');

    // 1. The sign-up answered a session token and the new workspace.
    expect(session).toMatch(/^prs_/);
    expect(ws).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const org = await server.owner.query(
      `select o.name as org, w.name as workspace from app.workspaces w join app.organizations o on o.id = w.organization_id where w.id = $1`, [ws]);
    expect(org.rows).toEqual([{ org: 'Acme', workspace: 'Marketing' }]);

    // 2. The key exists, a manager's on that workspace (connecting channels needs one), stored as its hash.
    expect(key).toMatch(/^prk_/);
    const stored = await server.owner.query('select name, role, key_hash = sha256($1::bytea) as matches from app.api_keys where key_hash = sha256($1::bytea)', [key]);
    expect(stored.rows).toEqual([{ name: 'Getting started', role: 'manager', matches: true }]);

    // 3. The key connected a sandbox channel for X in that workspace.
    const integration = await server.owner.query('select workspace_id, connector, platform, name from app.integrations where id = $1', [channel]);
    expect(integration.rows).toEqual([{ workspace_id: ws, connector: 'sandbox', platform: 'x', name: 'Acme on X (sandbox)' }]);

    // 4. The post is scheduled on it, about an hour from when the block ran, its publish job queued.
    const edition = await server.owner.query('select integration_id, status, scheduled_at from app.content_items where id = $1', [post]);
    expect(edition.rows).toEqual([{ integration_id: channel, status: 'scheduled', scheduled_at: expect.any(Date) }]);
    const at = (edition.rows[0].scheduled_at as Date).getTime();
    expect(at).toBeGreaterThan(started + 3590_000);
    expect(at).toBeLessThan(Date.now() + 3600_000);

    // 5. The last call, made with the key, listed that scheduled post.
    const answer = JSON.parse(last);
    expect(answer.data).toEqual([expect.objectContaining({ id: post, integrationId: channel, platform: 'x', status: 'scheduled', caption: 'Hello from Pressroom' })]);
    expect(answer.meta).toMatchObject({ total: 1 });
  });

  it('fail loudly when a step fails: a second sign-up is refused and its error is printed', async () => {
    const run = await runBash(block.replace(README_URL, server.baseUrl));
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr.trim())).toMatchObject({ error: { code: 'SIGNUP_CLOSED' } });
  });
});
