// The settings page (/app/settings, web/pages/settings*.tsx) in a real
// Chromium against a real server and PostgreSQL, used as a person would:
// an API key made in the page, copied from it and used with curl, then
// revoked; a member invited and their role changed; a webhook subscribed to a
// local receiver (the real pg-boss worker of server/jobs/lifecycle.ts
// delivers) that verifies every request with the secret the page showed once,
// a test event sent and redelivered. Every result is checked through the API;
// axe on each state; screenshots in test-results/web-settings/.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { PgBoss } from 'pg-boss';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerLifecycleJobs } from '../../server/jobs/lifecycle.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, signInAt, watchedPage } from '../support/browser.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
let browser: Browser;

/** The webhook receiver: verifies each request with `secret` (the one the page showed), answers 200. */
const receiver = { secret: '', got: [] as { id: string; type: string; verified: boolean }[] };
let receiverServer: http.Server;
let receiverUrl = '';

if (!chromiumPath) console.warn('web-settings.test.ts: no Chromium found (install Debian\'s `chromium` or set CHROMIUM_PATH); the browser tests are skipped.');

beforeAll(async () => {
  // Loopback receivers are refused unless the operator allows private networks (docs/webhooks.md).
  server = await startTestServer('web-settings', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
  receiverServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let verified = false;
      try {
        new Webhook(receiver.secret).verify(body, req.headers as Record<string, string>);
        verified = true;
      } catch {
        verified = false;
      }
      receiver.got.push({ id: String(req.headers['webhook-id']), type: JSON.parse(body).type, verified });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => receiverServer.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiverServer.address() as AddressInfo).port}/hook`;
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerLifecycleJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
  if (chromiumPath) browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  receiverServer?.closeAllConnections();
  await new Promise<void>((r) => (receiverServer ? receiverServer.close(() => r()) : r()));
  await server?.close();
});

const SHOTS = shotsDir('web-settings');
const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

/** curl as a script would call the API with a key: the status and the parsed body. */
async function curl(key: string, url: string): Promise<{ status: number; body: any }> {
  const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${key}`, url]);
  const cut = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(cut + 1)), body: JSON.parse(stdout.slice(0, cut)) };
}

/** No console errors but the 4xx answers the test provokes on purpose. */
const unexpected = (problems: string[]) => problems.filter((p) => !/status of (400|409)/.test(p));

describe.skipIf(!chromiumPath)('the settings page in Chromium', () => {
  it('API keys: create with role and expiry, shown once, copied, used with curl, revoked', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    // A second workspace the owner manages: offered in the form, unticked.
    const second = await api.post('/v1/workspaces', { name: 'Berlin office', timezone: 'Europe/Berlin' }, { token: o.token });
    expect(second.status).toBe(201);
    const berlin = second.body.data.id as string;
    const ctx = await newContext(browser, { permissions: ['clipboard-read', 'clipboard-write'] });
    const { page, problems } = await watchedPage(ctx);
    await signInAt(page, server.baseUrl, o, '/app/settings');
    await expect.poll(() => page.locator('[role=tab][aria-selected=true]').textContent()).toBe('API keys');
    await page.locator('#keys-empty').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'keys-empty');

    // An empty name: the API's refusal beside the field, and no key made.
    await page.click('#key-form button[type=submit]');
    const nameErr = page.locator('#key-name-err');
    await nameErr.waitFor();
    expect(await nameErr.textContent()).toMatch(/\S/);
    expect(await page.getAttribute('#key-name', 'aria-invalid')).toBe('true');
    expect(await page.getAttribute('#key-name', 'aria-describedby')).toContain('key-name-err');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'keys-bad-name');
    expect((await api.get(`/v1/workspaces/${o.workspaceId}/api-keys`, { token: o.token })).body.data).toEqual([]);

    // Role editor, the current workspace (ticked by default) and the second one, an expiry date.
    const expiry = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    await page.fill('#key-name', 'CI publisher');
    await page.selectOption('#key-role', 'editor');
    expect(await page.isChecked(`#key-form input[name=workspaceIds][value="${o.workspaceId}"]`)).toBe(true);
    expect(await page.isChecked(`#key-form input[name=workspaceIds][value="${berlin}"]`)).toBe(false);
    await page.check('#key-form label:has-text("Berlin office") input');
    await page.fill('#key-expires', expiry);
    await page.click('#key-form button[type=submit]');
    const secret = page.locator('#new-key [data-testid=secret]');
    await secret.waitFor();
    const raw = (await secret.textContent())!;
    expect(raw).toMatch(/^prk_/);
    expect(await page.locator('#new-key').textContent()).toContain('will not be shown again');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'keys-shown-once');

    // The copy button puts exactly the key on the clipboard.
    await page.click('#new-key button:has-text("Copy")');
    await expect.poll(() => page.evaluate<string>('navigator.clipboard.readText()')).toBe(raw);

    // The API holds it as asked: role editor, this workspace, expiring at the end of that day (UTC workspace).
    const listed = (await api.get(`/v1/workspaces/${o.workspaceId}/api-keys`, { token: o.token })).body.data;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: 'CI publisher', role: 'editor', workspaceCount: 2 });
    expect(listed[0].workspaces.map((w: { id: string }) => w.id).sort()).toEqual([o.workspaceId, berlin].sort());
    expect(new Date(listed[0].expiresAt).toISOString()).toBe(`${expiry}T23:59:00.000Z`);
    expect(raw.startsWith(listed[0].keyPrefix)).toBe(true);

    // A script uses it.
    const used = await curl(raw, `${server.baseUrl}/v1/workspaces`);
    expect(used.status).toBe(200);
    expect(used.body.data.map((w: { id: string }) => w.id).sort()).toEqual([o.workspaceId, berlin].sort());
    expect(used.body.data.every((w: { role: string }) => w.role === 'editor')).toBe(true);

    // Neither the address nor the browser's storage holds the key.
    expect(page.url()).not.toContain(raw);
    const stored = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })');
    expect(stored).not.toContain(raw);

    // Reloaded: the key is gone, the list shows its prefix and its last use.
    await page.reload();
    const row = page.locator(`#keys-list tr[data-key-id="${listed[0].id}"]`);
    await row.waitFor();
    expect(await page.locator('#new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(raw);
    const rowText = (await row.textContent())!;
    expect(rowText).toContain(listed[0].keyPrefix);
    expect(rowText).toContain('editor');
    expect(rowText).toContain('Berlin office');
    expect(rowText).not.toContain('never'); // used once by curl, and it expires
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'keys-list');

    // Revoke through the confirm dialog: curl is refused from now on.
    await row.locator('button', { hasText: 'Revoke' }).click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'keys-revoke-dialog');
    await dialog.locator('button', { hasText: 'Revoke key' }).click();
    await page.locator('#keys-empty').waitFor();
    expect((await curl(raw, `${server.baseUrl}/v1/workspaces`)).status).toBe(401);
    expect((await api.get(`/v1/workspaces/${o.workspaceId}/api-keys`, { token: o.token })).body.data).toEqual([]);
    expect(unexpected(problems)).toEqual([]);
    await ctx.close();
  });

  it('members: invite, change the role, see a refusal, remove', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const ctx = await newContext(browser);
    const { page, problems } = await watchedPage(ctx);
    await signInAt(page, server.baseUrl, o, '/app/settings');
    await page.click('[role=tab]:has-text("Members")');
    await expect.poll(() => new URL(page.url()).searchParams.get('tab')).toBe('members');
    await page.locator('#members-list').waitFor();
    expect(await page.locator('#members-list').textContent()).toContain(o.email);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'members');

    // A malformed address: the refusal beside the field.
    await page.fill('#invite-email', 'not-an-address');
    await page.click('#invite-form button[type=submit]');
    await page.locator('#invite-email-err').waitFor();
    expect(await page.getAttribute('#invite-email', 'aria-invalid')).toBe('true');

    const members = async () => (await api.get(`/v1/workspaces/${o.workspaceId}/members`, { token: o.token })).body.data as { userId: string; email: string; role: string; status: string }[];
    const guest = `grace-${Date.now()}@example.com`;
    await page.fill('#invite-email', guest);
    await page.selectOption('#invite-role', 'viewer');
    await page.click('#invite-form button[type=submit]');
    const row = page.locator('#members-list tr', { hasText: guest });
    await row.waitFor();
    expect(await page.locator('#invite-email-err').count()).toBe(0);
    expect(await row.textContent()).toContain('invited');
    let grace = (await members()).find((m) => m.email === guest)!;
    expect(grace).toMatchObject({ role: 'viewer', status: 'invited' });

    // Change the role with the row's select.
    await row.locator('select').selectOption('editor');
    await expect.poll(async () => (await members()).find((m) => m.email === guest)?.role).toBe('editor');
    await expect.poll(() => page.locator('#notice').textContent()).toContain('is now editor');

    // Demoting the only manager is refused by the API, shown, and the select shows the role kept.
    const me = page.locator('#members-list tr', { hasText: o.email });
    await me.locator('select').selectOption('viewer');
    await expect.poll(() => page.locator('#notice').textContent()).toContain('LAST_MANAGER');
    await expect.poll(() => me.locator('select').inputValue()).toBe('manager');
    expect((await members()).find((m) => m.email === o.email)?.role).toBe('manager');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'members-refusal');

    // Remove through the confirm dialog.
    await row.locator('button', { hasText: 'Remove' }).click();
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await dialog.locator('button', { hasText: 'Remove member' }).click();
    await row.waitFor({ state: 'detached' });
    grace = (await members()).find((m) => m.email === guest)!;
    expect(grace).toBeUndefined();
    expect(unexpected(problems)).toEqual([]);
    await ctx.close();
  });

  it('webhooks: bad URL beside the field, create, secret once, test, delivery, redeliver, pause, rotate', { timeout: 150_000 }, async () => {
    const o = await signup(api);
    const base = `/v1/workspaces/${o.workspaceId}/webhooks`;
    const ctx = await newContext(browser);
    const { page, problems } = await watchedPage(ctx);
    await signInAt(page, server.baseUrl, o, '/app/settings?tab=webhooks');
    await page.locator('#webhook-form').waitFor();
    await page.getByText('No webhooks yet.').waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'webhooks-empty');

    await page.fill('#wh-url', 'not a url');
    await page.click('#webhook-form button[type=submit]');
    const urlErr = page.locator('#wh-url-err');
    await urlErr.waitFor();
    expect(await urlErr.textContent()).toContain('INVALID_WEBHOOK_URL');
    expect(await page.getAttribute('#wh-url', 'aria-invalid')).toBe('true');
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'webhooks-bad-url');
    expect((await api.get(base, { token: o.token })).body.data).toEqual([]);

    await page.fill('#wh-url', receiverUrl);
    await page.check('#webhook-form input[value="content.created"]');
    await page.uncheck('#webhook-form input[value="content.failed"]');
    await page.fill('#wh-description', 'Publishing alerts');
    await page.click('#webhook-form button[type=submit]');
    const secretBox = page.locator('#new-secret [data-testid=secret]');
    await secretBox.waitFor();
    const secret = (await secretBox.textContent())!;
    expect(secret).toMatch(/^whsec_/);
    receiver.secret = secret;
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'webhooks-secret-once');
    const subs = (await api.get(base, { token: o.token })).body.data;
    expect(subs).toHaveLength(1);
    expect(subs[0]).toMatchObject({ url: receiverUrl, events: ['content.created', 'content.published'], description: 'Publishing alerts', active: true });
    expect(subs[0]).not.toHaveProperty('secret');
    const subId = subs[0].id as string;

    // Send a test from the detail the page opened: it is delivered, signed with the secret shown.
    await page.locator('#webhook-detail').waitFor();
    await page.click('#webhook-detail button:has-text("Send test")');
    const delivered = page.locator('#deliveries-list tbody tr', { hasText: 'delivered' });
    await delivered.first().waitFor({ timeout: 30_000 });
    expect(await delivered.first().textContent()).toContain('HTTP 200');
    expect(receiver.got.filter((g) => g.type === 'webhook.test')).toEqual([expect.objectContaining({ verified: true })]);
    await page.locator('#log-list tbody tr', { hasText: 'HTTP 200' }).first().waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'webhooks-delivered');

    // Redeliver: a second delivery of the same event (same webhook-id).
    await delivered.first().locator('button', { hasText: 'Redeliver' }).click();
    await expect.poll(() => page.locator('#deliveries-list tbody tr', { hasText: 'delivered' }).count(), { timeout: 30_000 }).toBe(2);
    const ds = (await api.get(`${base}/${subId}/deliveries`, { token: o.token })).body.data;
    expect(ds).toHaveLength(2);
    expect(ds.every((d: { state: string }) => d.state === 'delivered')).toBe(true);
    expect(ds.find((d: { redeliveryOf: string | null }) => d.redeliveryOf)).toBeTruthy();
    const tests = receiver.got.filter((g) => g.type === 'webhook.test');
    expect(tests).toHaveLength(2);
    expect(tests[1].id).toBe(tests[0].id);
    expect(tests.every((t) => t.verified)).toBe(true);

    // Pause it and change its events.
    await page.uncheck('#webhook-edit input[name=active]');
    await page.check('#webhook-edit input[value="review.completed"]');
    await page.click('#webhook-edit button[type=submit]');
    await expect.poll(async () => (await api.get(`${base}/${subId}`, { token: o.token })).body.data).toMatchObject({
      active: false, pausedReason: 'manual', events: ['content.created', 'content.published', 'review.completed'],
    });
    await page.locator('#webhooks-list', { hasText: 'paused by a manager' }).waitFor();

    // Rotate: a new secret, shown once, replacing the old one.
    await page.click('#webhook-detail button:has-text("Rotate secret")');
    const dialog = page.locator('dialog[open]');
    await dialog.waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    await dialog.locator('button', { hasText: 'Rotate secret' }).click();
    await expect.poll(() => secretBox.textContent()).not.toBe(secret);
    expect(await secretBox.textContent()).toMatch(/^whsec_/);

    // Leaving the tab drops the secret; coming back does not show it.
    const rotated = (await secretBox.textContent())!;
    await page.click('[role=tab]:has-text("API keys")');
    await page.click('[role=tab]:has-text("Webhooks")');
    await page.locator('#webhooks-list').waitFor();
    expect(await page.content()).not.toContain(rotated);

    // At a phone's width the page fits (tables scroll inside their box).
    await page.setViewportSize({ width: 375, height: 800 });
    await page.click('#webhooks-list button:has-text("Manage")');
    await page.locator('#deliveries-list').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'webhooks-phone');
    expect(unexpected(problems)).toEqual([]);
    await ctx.close();
  });

  it('an editor sees what the role allows: no keys or webhooks, members without addresses or controls', { timeout: 90_000 }, async () => {
    const o = await signup(api);
    // A user of the owner's organization with the owner's password (as tests/api/api-keys.test.ts makes one), added as editor.
    const address = `ed-${Date.now()}@example.com`;
    await server.owner.query(
      `insert into app.users (organization_id, email, password_hash, org_role, status)
       select organization_id, $2, password_hash, 'member', 'active' from app.users where id = $1`,
      [o.userId, address],
    );
    expect((await api.post(`/v1/workspaces/${o.workspaceId}/members`, { email: address, role: 'editor' }, { token: o.token })).status).toBe(201);
    const ctx = await newContext(browser);
    const { page, problems } = await watchedPage(ctx);
    await signInAt(page, server.baseUrl, { email: address, password: o.password }, '/app/settings');
    await page.getByText('needs the manager role').waitFor();
    expect(await page.locator('#key-form').count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.click('[role=tab]:has-text("Members")');
    await page.locator('#members-list').waitFor();
    const list = (await page.locator('#members-list').textContent())!;
    expect(list).not.toContain(o.email); // addresses are private to managers
    expect(list).toContain('editor');
    expect(await page.locator('#invite-form').count()).toBe(0);
    expect(await page.locator('#members-list select, #members-list button').count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await shot(page, 'members-as-editor');
    await page.click('[role=tab]:has-text("Webhooks")');
    await page.getByText('Lifecycle webhooks need the manager role').waitFor();
    expect(await page.locator('#webhook-form').count()).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(unexpected(problems)).toEqual([]);
    await ctx.close();
  });

  it('the tabs follow the ARIA pattern: arrow keys move and the tab is kept in the address', { timeout: 60_000 }, async () => {
    const o = await signup(api);
    const ctx = await newContext(browser);
    const { page, problems } = await watchedPage(ctx);
    await signInAt(page, server.baseUrl, o, '/app/settings?tab=members');
    await page.locator('#members-list').waitFor();
    await page.focus('[role=tab][aria-selected=true]');
    await page.keyboard.press('ArrowRight');
    await page.locator('#webhook-form').waitFor();
    expect(new URL(page.url()).searchParams.get('tab')).toBe('webhooks');
    expect(await page.evaluate<string>('document.activeElement?.textContent')).toBe('Webhooks');
    await page.keyboard.press('Home');
    await page.locator('#key-form').waitFor();
    expect(new URL(page.url()).searchParams.get('tab')).toBe('keys');
    await page.reload();
    await page.locator('#key-form').waitFor();
    expect(await page.getAttribute('#tab-keys', 'aria-selected')).toBe('true');
    expect(await page.locator('h1').count()).toBe(1);
    expect(unexpected(problems)).toEqual([]);
    await ctx.close();
  });
});
