// A team's week in the browser, end to end, as the web app's pages promise it
// (docs/web-app.md): a new user creates an account on the sign-in form,
// connects two sandbox channels on the Channels page, writes one post for
// both in the composer with an uploaded image and its alt text, sees X's
// character limit refuse the shared caption and fixes it with X's own
// caption, schedules it, finds it on the calendar, opens it from there and
// sends it for review to a client; the client opens the link in a fresh
// browser with no session, approves one post and asks for changes on the
// other; the API shows both decisions. Then an API key made on the Settings
// page reads the same posts with curl. axe-core on each page; screenshots in
// test-results/journey/ (docs/images/ holds copies for the README).
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, watchedPage } from '../support/browser.ts';
import { client } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png } from './media-fixtures.ts';

const run = promisify(execFile);
let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('web_journey');
  api = client(server);
});
afterAll(async () => server?.close());

describe.skipIf(!chromiumPath)('a week in the web app', () => {
  it('sign up, connect, compose with a problem fixed, schedule, calendar, client review, API key with curl', { timeout: 300_000 }, async () => {
    const shots = shotsDir('journey');
    const email = `journey-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const password = 'correct horse battery staple';
    const browser = await launchBrowser();
    try {
      const ctx = await newContext(browser, { viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
      const { page, problems } = await watchedPage(ctx);
      const a11y = async () => expect(await seriousA11yViolations(page)).toEqual([]);

      // Sign up on the sign-in form: an organization and its first workspace.
      await page.goto(`${server.baseUrl}/app`);
      await page.click('#signin button.link');
      await page.fill('#signin input[name=email]', email);
      await page.fill('#signin input[name=password]', password);
      await page.fill('#signin input[name=organizationName]', 'Acme');
      await page.fill('#signin input[name=workspaceName]', 'Acme social');
      await a11y();
      await page.click('#signin button[type=submit]');
      await page.locator('nav[aria-label=Pages]').waitFor();
      const session = (await api.post('/v1/auth/sessions', { email, password })).body.data.token as string;
      const workspaceId = ((await api.get('/v1/workspaces', { token: session })).body.data as { id: string; name: string }[])
        .find((w) => w.name === 'Acme social')!.id;
      const base = `/v1/workspaces/${workspaceId}`;

      // Channels: two sandbox channels, standing for X and LinkedIn.
      await page.click('nav a[href="/app/channels"]');
      await page.locator('#add-sandbox').waitFor();
      for (const [name, platform] of [['Acme on X', 'x'], ['Acme on LinkedIn', 'linkedin']]) {
        await page.click('#add-sandbox');
        await page.fill('#channel-name', name);
        await page.selectOption('#channel-platform', platform);
        await page.click('#channel-form button[type=submit]');
        await page.locator('#notice.ok', { hasText: `Connected ${name}` }).waitFor();
      }
      await page.locator('tr.ch-row', { hasText: 'Acme on LinkedIn' }).waitFor();
      await a11y();
      await page.screenshot({ path: path.join(shots, '1-channels.png'), fullPage: true });
      const channels = (await api.get(`${base}/integrations`, { token: session })).body.data as { id: string; name: string; platform: string }[];
      const x = channels.find((c) => c.platform === 'x')!.id;
      const li = channels.find((c) => c.platform === 'linkedin')!.id;

      // Compose one post for both.
      await page.click('nav a[href="/app/compose"]');
      await page.locator(`input[name=channel][value="${x}"]`).waitFor();
      await page.check(`input[name=channel][value="${x}"]`);
      await page.check(`input[name=channel][value="${li}"]`);
      const long = 'Our spring collection is in the shop from Monday: linen shirts, light jackets, canvas bags in three colours and a new line of recycled wool socks. Come and see us, or order online with free delivery until the end of the month. '.repeat(2).trim();
      await page.fill('#caption', long);
      // X's limit: the check route's problem appears beside X's caption only.
      const xProblem = page.locator(`#ch-${x}-caption-problems [data-code=caption_too_long]`);
      await xProblem.waitFor();
      expect(await page.locator(`#ch-${li}-caption-problems li`).count()).toBe(0);
      // The image, uploaded here, with its alt text.
      await page.setInputFiles('#upload', { name: 'spring.png', mimeType: 'image/png', buffer: png(400, 300, 5) });
      await page.locator('.upload-done progress').waitFor();
      const alt = page.locator('.attached-item input[id^=alt-]');
      await alt.fill('Linen shirts and canvas bags on a shop table');
      await alt.press('Tab');
      await expect.poll(async () => page.textContent(`#${(await alt.getAttribute('id'))!}-state`)).toBe('Alt text saved.');
      await a11y();
      await page.screenshot({ path: path.join(shots, '2-composer-problem.png'), fullPage: true });
      // Fixed with X's own caption.
      await page.fill(`#ch-${x}-caption`, 'Spring is in the shop from Monday: linen, canvas, wool. Free delivery all month.');
      await expect.poll(() => xProblem.count()).toBe(0);
      await expect.poll(() => page.textContent('#check-state')).toContain("every channel's rules are met");
      // Schedule for tomorrow 10:00 in the workspace's zone (UTC here).
      const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
      await page.fill('#date', tomorrow);
      await page.fill('#time', '10:00');
      await page.screenshot({ path: path.join(shots, '3-composer.png'), fullPage: true });
      await page.click('#schedule');
      await page.waitForURL(/\/app\/compose\/[0-9a-f-]{36}$/);
      const editionId = page.url().split('/').pop()!;
      const opened = (await api.get(`${base}/content/${editionId}`, { token: session })).body.data;
      const root = (await api.get(`${base}/content-roots/${opened.rootId}`, { token: session })).body.data;
      expect(root.editions.map((e: { integrationId: string; status: string; scheduledAt: string }) => [e.integrationId, e.status, new Date(e.scheduledAt).toISOString()]).sort())
        .toEqual([[x, 'scheduled', `${tomorrow}T10:00:00.000Z`], [li, 'scheduled', `${tomorrow}T10:00:00.000Z`]].sort());
      const xEdition = root.editions.find((e: { integrationId: string }) => e.integrationId === x).id as string;
      const liEdition = root.editions.find((e: { integrationId: string }) => e.integrationId === li).id as string;

      // On the calendar, on its day; opening it opens the composer.
      await page.goto(`${server.baseUrl}/app#view=dayGridMonth&date=${tomorrow}`);
      const event = page.locator(`td.fc-daygrid-day[data-date="${tomorrow}"] .fc-event`, { hasText: 'Acme on LinkedIn' });
      await event.waitFor();
      expect(await page.locator(`td.fc-daygrid-day[data-date="${tomorrow}"] .fc-event`).count()).toBe(2);
      await a11y();
      await page.screenshot({ path: path.join(shots, '4-calendar.png'), fullPage: true });
      await event.click();
      await page.waitForURL(`${server.baseUrl}/app/compose/${liEdition}`);
      await page.locator('#editions').waitFor();

      // Send it for review to a client; the link is shown once, as the review page's URL.
      await page.click('#open-review');
      await page.fill('#review-client-email', 'cleo@client.example');
      await page.fill('#review-client-name', 'Cleo');
      await a11y();
      await page.click('#send-review');
      const linkEl = page.locator('.review-link-url');
      await linkEl.waitFor();
      const url = (await linkEl.textContent())!;
      expect(url).toMatch(new RegExp(`^${server.baseUrl}/review#token=prr_[0-9a-f]{64}$`));
      await page.screenshot({ path: path.join(shots, '5-sent-for-review.png'), fullPage: true });

      // The client: a fresh browser, no session, a phone.
      const clientCtx = await newContext(browser, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
      const { page: cp, problems: clientProblems } = await watchedPage(clientCtx);
      await cp.goto(url);
      const card = (editionOf: string) => cp.locator('article.rv-item', { hasText: editionOf === x ? 'Acme on X' : 'Acme on LinkedIn' });
      await card(x).waitFor();
      await expect.poll(() => card(x).locator('img.rv-media-el').first().getAttribute('alt')).toBe('Linen shirts and canvas bags on a shop table');
      await card(x).locator('button.rv-approve').tap();
      await expect.poll(() => card(x).locator('.rv-state').textContent()).toBe('Approved');
      await card(li).locator('textarea').fill('Could the LinkedIn text mention the wool socks first?');
      await card(li).locator('button.rv-changes').tap();
      await expect.poll(() => card(li).locator('.rv-state').textContent()).toBe('Changes requested');
      expect(await seriousA11yViolations(cp)).toEqual([]);
      await cp.screenshot({ path: path.join(shots, '6-client-review.png'), fullPage: true });
      expect(clientProblems).toEqual([]);

      // Through the API: the client's two decisions.
      const reviews = (await api.get(`${base}/reviews`, { token: session })).body.data as { id: string }[];
      expect(reviews).toHaveLength(1);
      const review = (await api.get(`${base}/reviews/${reviews[0].id}`, { token: session })).body.data;
      const byContent = new Map((review.items as { contentId: string; state: string; decisions: { approver: string; decision: string; comment: string | null }[] }[]).map((i) => [i.contentId, i]));
      expect(byContent.get(xEdition)).toMatchObject({ state: 'approved', decisions: [expect.objectContaining({ approver: 'client:cleo@client.example', decision: 'approved' })] });
      expect(byContent.get(liEdition)).toMatchObject({
        state: 'changes_requested',
        decisions: [expect.objectContaining({ decision: 'changes_requested', comment: 'Could the LinkedIn text mention the wool socks first?' })],
      });

      // Settings: an API key, shown once, used with curl.
      await page.click('nav a[href="/app/settings"]');
      await page.locator('#key-form').waitFor();
      await page.fill('#key-name', 'Reporting script');
      await page.selectOption('#key-role', 'viewer');
      await page.click('#key-form button[type=submit]');
      const secret = page.locator('#new-key [data-testid=secret]');
      await secret.waitFor();
      const key = (await secret.textContent())!.trim();
      expect(key).toMatch(/^prk_/);
      await a11y();
      const { stdout } = await run('curl', ['-s', '-w', '\n%{http_code}', '-H', `Authorization: Bearer ${key}`, `${server.baseUrl}${base}/content-roots/${opened.rootId}`]);
      const lines = stdout.trimEnd().split('\n');
      expect(lines.pop()).toBe('200');
      const viaKey = JSON.parse(lines.join('\n')).data as { editions: { id: string; integrationId: string }[] };
      expect(viaKey.editions.map((e) => e.id).sort()).toEqual([xEdition, liEdition].sort());
      // A viewer key reads, and may not write.
      const write = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-X', 'DELETE', '-H', `Authorization: Bearer ${key}`, `${server.baseUrl}${base}/content/${xEdition}`]);
      expect(write.stdout).toBe('403');

      // Only the API's own refusals may be in the console (none expected on this path).
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
