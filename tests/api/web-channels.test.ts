// The channels page (/app/channels, web/pages/channels.tsx) in Chromium, as a
// person uses it, against a real server and PostgreSQL and the repository's
// platform fakes (tests/support/fakes/mastodon.ts, linkedin.ts) and the
// reference Bluesky PDS (tests/support/pds.ts): sandbox and webhook channels,
// the OAuth round trip (the fake's consent page sends the browser to the
// callback, which sends it back to the page), LinkedIn's account choice, a
// Bluesky app password, a channel that needs a reconnect, disconnecting, and
// what a viewer sees. Every result is checked through the API; axe-core checks
// each state. Screenshots go to test-results/web-channels/.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, signInAt, watchedPage } from '../support/browser.ts';
import { startFakeLinkedIn, type FakeLinkedIn } from '../support/fakes/linkedin.ts';
import { startFakeMastodon, type FakeMastodon } from '../support/fakes/mastodon.ts';
import { client, signup } from '../support/http.ts';
import { startPds, type PdsAccount, type TestPds } from '../support/pds.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

if (!chromiumPath) console.warn('web-channels.test.ts: no Chromium found (install Debian\'s `chromium` or set CHROMIUM_PATH); the browser tests are skipped.');

const KEYS = `1:${randomBytes(32).toString('base64')}`;
let server: TestServer;
let api: ReturnType<typeof client>;
let mastodon: FakeMastodon;
let linkedin: FakeLinkedIn;
let pds: TestPds;
let bsky: PdsAccount;
let browser: Browser;
const SHOTS = chromiumPath ? shotsDir('web-channels') : '';

beforeAll(async () => {
  if (!chromiumPath) return;
  mastodon = await startFakeMastodon();
  linkedin = await startFakeLinkedIn();
  pds = await startPds({ appViewUrl: null });
  server = await startTestServer('web_channels', {
    // The fakes and the PDS listen on this machine's loopback addresses.
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: true,
    CREDENTIALS_KEYS: KEYS,
    LINKEDIN_API_BASE_URL: linkedin.url,
    LINKEDIN_CLIENT_ID: linkedin.app.clientId,
    LINKEDIN_CLIENT_SECRET: linkedin.app.clientSecret,
    PUBLISH_TIMEOUT_MS: 5000,
  });
  // The operator registered this server's callback in the LinkedIn app.
  linkedin.app.redirectUris.push(`${server.baseUrl}/v1/oauth/callback/linkedin`);
  api = client(server);
  bsky = await pds.createAccount(`wc${randomBytes(3).toString('hex')}`);
  browser = await launchBrowser();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await mastodon?.close();
  await linkedin?.close();
  await pds?.stop();
});

type Owner = Awaited<ReturnType<typeof signup>>;

async function channelsOf(o: Owner): Promise<any[]> {
  const r = await api.get(`/v1/workspaces/${o.workspaceId}/integrations`, { token: o.token });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** A signed-in page at /app/channels, its console watched. */
async function open(who: { email: string; password: string }, viewport = { width: 1280, height: 960 }) {
  const ctx = await newContext(browser, { viewport });
  const { page, problems } = await watchedPage(ctx);
  await signInAt(page, server.baseUrl, who, '/app/channels');
  await page.locator('#channels-h').waitFor();
  return { page, problems, close: () => ctx.close() };
}

async function noSeriousViolations(page: Page, state: string) {
  expect(await seriousA11yViolations(page), state).toEqual([]);
}

const shot = (page: Page, name: string, fullPage = true) => page.screenshot({ path: path.join(SHOTS, name), fullPage });

/** Console lines other than the browser's own report of the API's refusals the test provokes. */
const unexpected = (problems: string[]) => problems.filter((p) => !/the server responded with a status of (400|403|409)/.test(p));

describe.skipIf(!chromiumPath)('the channels page in Chromium', () => {
  it('a fresh workspace: sandbox and webhook channels through the page, a bad URL refused beside its field', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const { page, problems, close } = await open(o);
    try {
      await page.locator('#no-channels').waitFor();
      await page.locator('#add-sandbox').waitFor();
      // X has no operator app here: its button is disabled, with the reason and how to configure it.
      expect(await page.locator('#connect-x').isDisabled()).toBe(true);
      const why = (await page.textContent('#why-x'))!;
      expect(why).toContain('X_CLIENT_ID');
      expect(why).toContain('npx pressroom platform-app set x');
      expect(await page.locator('#connect-mastodon').isEnabled()).toBe(true);
      await noSeriousViolations(page, 'empty list');
      await shot(page, '1-empty.png');

      // A sandbox channel.
      await page.click('#add-sandbox');
      await page.locator('#channel-form').waitFor();
      await page.fill('#channel-name', 'Acme sandbox');
      await page.selectOption('#channel-platform', 'linkedin');
      await page.selectOption('#channel-behavior', 'fail');
      await noSeriousViolations(page, 'sandbox form');
      await page.click('#channel-form button[type=submit]');
      await page.locator('#notice.ok', { hasText: 'Connected Acme sandbox' }).waitFor();
      const row = page.locator('tr.ch-row', { hasText: 'Acme sandbox' });
      await row.waitFor();
      expect(await row.textContent()).toContain('LinkedIn');
      expect(await row.textContent()).toContain('Connected');
      const [sandbox] = await channelsOf(o);
      expect(sandbox).toMatchObject({ connector: 'sandbox', platform: 'linkedin', name: 'Acme sandbox', connectionState: 'ok' });
      const detail = await api.get(`/v1/workspaces/${o.workspaceId}/integrations/${sandbox.id}`, { token: o.token });
      expect(detail.body.data.settings.behavior).toBe('fail');

      // A webhook channel: a URL the API refuses, shown beside the field, then a good one.
      await page.click('#add-webhook');
      await page.locator('#webhook-url').waitFor();
      await page.fill('#channel-name', 'Intranet');
      await page.selectOption('#channel-platform', 'x');
      await page.fill('#webhook-url', 'ftp://hooks.example.com/pressroom');
      await page.click('#channel-form button[type=submit]');
      const urlError = page.locator('#webhook-url-err');
      await urlError.waitFor();
      // The contract's pattern is said in words, with the API's code.
      expect(await urlError.textContent()).toContain('must be an http:// or https:// address (VALIDATION_FAILED)');
      expect(await page.getAttribute('#webhook-url', 'aria-invalid')).toBe('true');
      expect(await page.getAttribute('#webhook-url', 'aria-describedby')).toContain('webhook-url-err');
      expect((await channelsOf(o)).length).toBe(1);
      await noSeriousViolations(page, 'webhook form with a refused URL');
      await shot(page, '2-webhook-refused.png');
      await page.fill('#webhook-url', 'http://127.0.0.1:9/hook');
      await page.click('#channel-form button[type=submit]');
      await page.locator('#notice.ok', { hasText: 'Connected Intranet' }).waitFor();
      // The secret the server issued, shown this once.
      const secret = (await page.textContent('#webhook-secret-value'))!;
      expect(secret).toMatch(/^whsec_/);
      await noSeriousViolations(page, 'webhook secret shown once');
      await shot(page, '3-webhook-secret.png');
      const hook = (await channelsOf(o)).find((i) => i.connector === 'webhook');
      expect(hook).toMatchObject({ platform: 'x', name: 'Intranet' });
      const hookDetail = await api.get(`/v1/workspaces/${o.workspaceId}/integrations/${hook.id}`, { token: o.token });
      expect(hookDetail.body.data.webhookUrl).toBe('http://127.0.0.1:9/hook');
      await page.click('#webhook-secret button:has-text("Done")');
      expect(await page.locator('#webhook-secret-value').count()).toBe(0);
      // Not kept anywhere the page can reach again.
      // (Expressions as strings: the tests are type-checked without the DOM's types.)
      expect(await page.evaluate<string>('JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + location.href')).not.toContain(secret);
      await page.reload();
      await page.locator('tr.ch-row', { hasText: 'Intranet' }).waitFor();
      expect(await page.content()).not.toContain(secret);

      // An edition scheduled on the sandbox channel: the API refuses the disconnect, the dialog says why.
      const at = new Date(Date.now() + 3 * 86_400_000).toISOString();
      const scheduled = await api.post(`/v1/workspaces/${o.workspaceId}/content`, { intent: 'schedule', scheduledAt: at, caption: 'Launch', channels: [{ integrationId: sandbox.id }] }, { token: o.token });
      expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(201);
      await page.click('button[aria-label="Disconnect Acme sandbox"]');
      await page.click('#confirm-disconnect');
      await page.locator('#disconnect-error').waitFor();
      expect(await page.textContent('#disconnect-error')).toContain('INTEGRATION_HAS_SCHEDULED_CONTENT');
      await noSeriousViolations(page, 'disconnect refused');
      await shot(page, '3b-disconnect-refused.png', false);
      await page.click('#disconnect-dialog button:has-text("Cancel")');
      expect((await channelsOf(o)).map((i) => i.id)).toContain(sandbox.id);
      expect(unexpected(problems)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('Mastodon: the OAuth round trip, a refused consent, reconnect required, reconnect, disconnect', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const { page, problems, close } = await open(o);
    try {
      mastodon.consent = 'allow';
      await page.click('#connect-mastodon');
      await page.locator('#instance-form').waitFor();
      await noSeriousViolations(page, 'Mastodon instance form');
      // An address that is no URL: the API's refusal beside the field.
      await page.fill('#instance-url', 'http://exa mple');
      await page.click('#instance-form button[type=submit]');
      await page.locator('#instance-url-err').waitFor();
      expect(await page.textContent('#instance-url-err')).toContain('INVALID_INSTANCE_URL');
      await shot(page, '4-instance-refused.png');

      // The fake's consent page (answered as if the user clicked Allow) sends the browser to the callback, then back here.
      await page.fill('#instance-url', mastodon.url);
      await page.click('#instance-form button[type=submit]');
      await page.locator('#notice.ok', { hasText: 'Connected' }).waitFor({ timeout: 30_000 });
      const [m] = await channelsOf(o);
      expect(m).toMatchObject({ connector: 'mastodon', platform: 'mastodon', accountId: mastodon.alice.id, connectionState: 'ok' });
      expect(await page.textContent('#notice')).toContain(`Connected ${m.name}.`);
      const row = page.locator(`tr[data-id="${m.id}"]`);
      await row.waitFor();
      expect(await row.textContent()).toContain(`@${mastodon.alice.username}`);
      // The callback's query is cleaned from the address.
      expect(new URL(page.url()).search).toBe('');
      expect(new URL(page.url()).pathname).toBe('/app/channels');
      await noSeriousViolations(page, 'list with a connected account');
      await shot(page, '5-mastodon-connected.png');

      // The user declines at the instance: the page says so in a sentence, with the code.
      mastodon.consent = 'deny';
      await page.click('#connect-mastodon');
      await page.fill('#instance-url', mastodon.url);
      await page.click('#instance-form button[type=submit]');
      await page.locator('#notice.error').waitFor({ timeout: 30_000 });
      const refused = (await page.textContent('#notice'))!;
      expect(refused).toContain('The permission request was declined');
      expect(refused).toContain('access_denied');
      expect(new URL(page.url()).search).toBe('');
      expect((await channelsOf(o)).length).toBe(1);
      mastodon.consent = 'allow';

      // The platform refused the grant for good (fixture: what the worker does on invalid_grant).
      await server.owner.query('select app.integration_reconnect_required($1, $2)', [m.id, 'The access token is invalid (invalid_grant)']);
      await page.reload();
      await row.locator('.badge.bad', { hasText: 'Reconnect required' }).waitFor();
      expect(await row.textContent()).toContain('The access token is invalid (invalid_grant)');
      await noSeriousViolations(page, 'list with reconnect required');
      await shot(page, '6-reconnect-required.png');
      await page.click(`button[aria-label="Reconnect ${m.name}"]`);
      await page.locator('#notice.ok', { hasText: `Reconnected ${m.name}` }).waitFor({ timeout: 30_000 });
      await expect.poll(async () => (await channelsOf(o))[0].connectionState).toBe('ok');
      await row.locator('.badge.ok', { hasText: 'Connected' }).waitFor();

      // Disconnect through the dialog; Cancel first changes nothing.
      await page.click(`button[aria-label="Disconnect ${m.name}"]`);
      const dialog = page.locator('#disconnect-dialog');
      await dialog.waitFor({ state: 'visible' });
      await noSeriousViolations(page, 'disconnect dialog');
      await shot(page, '7-disconnect-dialog.png', false);
      await dialog.locator('button', { hasText: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      expect((await channelsOf(o)).length).toBe(1);
      await page.click(`button[aria-label="Disconnect ${m.name}"]`);
      await page.click('#confirm-disconnect');
      await page.locator('#notice.ok', { hasText: `Disconnected ${m.name}` }).waitFor();
      expect(await channelsOf(o)).toEqual([]);
      await page.locator('#no-channels').waitFor();
      expect((await api.get(`/v1/workspaces/${o.workspaceId}/integrations/${m.id}`, { token: o.token })).status).toBe(404);
      expect(unexpected(problems)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('LinkedIn: the consent covers the member and a page; the choice dialog connects the page', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const { page, problems, close } = await open(o);
    try {
      linkedin.consent = 'allow';
      linkedin.signedIn = linkedin.alice.id;
      await page.click('#connect-linkedin');
      const dialog = page.locator('#choose-dialog');
      await dialog.waitFor({ state: 'visible', timeout: 30_000 });
      expect(new URL(page.url()).search).toBe('');
      const text = (await dialog.textContent())!;
      expect(text).toContain('Alice Example');
      expect(text).toContain('Acme Corp');
      // Nothing chosen yet: nothing to submit.
      expect(await dialog.locator('button[type=submit]').isDisabled()).toBe(true);
      await noSeriousViolations(page, 'account choice dialog');
      await shot(page, '8-choose.png', false);
      await dialog.getByLabel(/Acme Corp/).check();
      await dialog.locator('button[type=submit]').click();
      await page.locator('#notice.ok', { hasText: 'Connected Acme Corp' }).waitFor();
      await dialog.waitFor({ state: 'detached' });
      const list = await channelsOf(o);
      expect(list.map((i) => [i.connector, i.accountId, i.name])).toEqual([['linkedin', `urn:li:organization:${linkedin.acme.id}`, 'Acme Corp']]);
      await page.locator(`tr[data-id="${list[0].id}"]`).waitFor();
      await shot(page, '9-linkedin-page.png');
      expect(unexpected(problems)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('Bluesky: a wrong app password refused beside the field, then the right one connects', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const { page, problems, close } = await open(o);
    try {
      await page.click('#connect-bluesky');
      await page.locator('#app-password-form').waitFor();
      await page.fill('#bluesky-identifier', bsky.handle);
      await page.fill('#bluesky-app-password', 'abcd-efgh-ijkl-mnop');
      await page.fill('#bluesky-service', pds.url);
      await page.click('#app-password-form button[type=submit]');
      const err = page.locator('#bluesky-app-password-err');
      await err.waitFor({ timeout: 30_000 });
      expect(await err.textContent()).toContain('SIGN_IN_FAILED');
      expect(await page.content()).not.toContain('abcd-efgh-ijkl-mnop');
      expect(await channelsOf(o)).toEqual([]);
      await noSeriousViolations(page, 'Bluesky form with a refused password');
      await shot(page, '10-bluesky-refused.png');
      await page.fill('#bluesky-app-password', bsky.appPassword);
      await page.click('#app-password-form button[type=submit]');
      await page.locator('#notice.ok', { hasText: 'Connected' }).waitFor({ timeout: 30_000 });
      const list = await channelsOf(o);
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({ connector: 'bluesky', accountId: bsky.did, username: bsky.handle, connectionState: 'ok' });
      await page.locator(`tr[data-id="${list[0].id}"]`, { hasText: `@${bsky.handle}` }).waitFor();
      // The form is gone and the app password with it.
      expect(await page.locator('#app-password-form').count()).toBe(0);
      expect(unexpected(problems)).toEqual([]);
    } finally {
      await close();
    }
  });

  it('a viewer sees the list without connect, reconnect or disconnect; also on a phone', { timeout: 120_000 }, async () => {
    const o = await signup(api);
    const made = await api.post(`/v1/workspaces/${o.workspaceId}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Shared sandbox' }, { token: o.token });
    expect(made.status).toBe(201);
    // A viewer of the workspace (invited through the API; the fixture gives them a password).
    const viewerEmail = `viewer-${randomBytes(3).toString('hex')}@example.com`;
    const added = await api.post(`/v1/workspaces/${o.workspaceId}/members`, { email: viewerEmail, role: 'viewer' }, { token: o.token });
    expect(added.status).toBe(201);
    await server.owner.query(
      `update app.users set status = 'active', password_hash = (select password_hash from app.users where email = $2) where email = $1`,
      [viewerEmail, o.email],
    );
    const { page, problems, close } = await open({ email: viewerEmail, password: o.password }, { width: 375, height: 800 });
    try {
      await page.locator('tr.ch-row', { hasText: 'Shared sandbox' }).waitFor();
      await page.locator('#viewer-hint').waitFor();
      expect(await page.locator('#connect').count()).toBe(0);
      expect(await page.locator('button', { hasText: /^(Disconnect|Reconnect)$/ }).count()).toBe(0);
      expect(await page.locator('#add-sandbox').count()).toBe(0);
      await noSeriousViolations(page, 'viewer list on a phone');
      // Nothing wider than the phone's screen.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      await shot(page, '11-viewer-phone.png');
      expect(unexpected(problems)).toEqual([]);
    } finally {
      await close();
    }
  });
});
