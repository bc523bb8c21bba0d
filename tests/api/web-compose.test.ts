// The composer (/app/compose, web/pages/compose.tsx) in a real Chromium over a
// real server and database, used as a person uses it: choose two channels of
// different platforms (X and LinkedIn, whose rules differ), type, see the check
// route's problem appear beside X's caption and fix it, add a thread message,
// upload a PNG (progress, alt text) and a file the API refuses, pick campaign
// and tag, be refused for scheduling without a time, schedule for tomorrow
// 10:00 in the workspace's zone (Europe/Berlin, the browser runs in UTC), and
// check every result through the API; then find the post on the calendar, open
// it in the composer and reschedule it there. Also: save a draft, a phone-width
// layout. axe-core on every state. Screenshots in test-results/web-compose/.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, signInAt, watchedPage } from '../support/browser.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { png } from './media-fixtures.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('web_compose');
  api = client(server);
});
afterAll(async () => server?.close());

const TZ = 'Europe/Berlin';

/** The wall-clock date (YYYY-MM-DD) of an instant in a zone. */
const dateIn = (d: Date, timeZone: string) => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);
const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T12:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** The UTC instant of a Berlin wall-clock time: the one of +1 h and +2 h whose Berlin reading is that time (no shared code with the page). */
function berlinToUtc(date: string, time: string): string {
  const [h, m] = time.split(':').map(Number);
  for (const offset of [1, 2]) {
    const utc = new Date(Date.parse(`${date}T00:00:00Z`) + ((h - offset) * 60 + m) * 60_000);
    const wall = new Intl.DateTimeFormat('en-CA', { timeZone: TZ, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(utc);
    if (wall === `${date}, ${time}`) return utc.toISOString();
  }
  throw new Error(`no Berlin instant for ${date} ${time}`);
}

async function fixtures() {
  const o = await signup(api);
  // A workspace in Berlin's zone, so the page's wall-clock conversion is tested (the browser runs in UTC).
  const w = await api.post('/v1/workspaces', { name: 'Berlin office', timezone: TZ }, { token: o.token });
  expect(w.status, JSON.stringify(w.body)).toBe(201);
  const ws = w.body.data.id as string;
  const base = `/v1/workspaces/${ws}`;
  const channel = async (platform: string, name: string) => {
    const r = await api.post(`${base}/integrations`, { connector: 'sandbox', platform, name }, { token: o.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as string;
  };
  const x = await channel('x', 'Acme on X');
  const li = await channel('linkedin', 'Acme on LinkedIn');
  const campaign = await api.post(`${base}/campaigns`, { name: 'Spring launch' }, { token: o.token });
  expect(campaign.status).toBe(201);
  const tag = await api.post(`${base}/tags`, { name: 'product' }, { token: o.token });
  expect(tag.status).toBe(201);
  await api.post(`${base}/tags`, { name: 'hiring' }, { token: o.token });
  return { o, ws, base, x, li, campaignId: campaign.body.data.id as string, tagId: tag.body.data.id as string };
}

describe.skipIf(!chromiumPath)('the composer in Chromium', () => {
  it('composes for X and LinkedIn with live problems, upload and alt text, schedules in the workspace zone, reopens from the calendar', { timeout: 240_000 }, async () => {
    const f = await fixtures();
    const { o, base, x, li } = f;
    const shots = shotsDir('web-compose');
    const browser = await launchBrowser();
    try {
      const ctx = await newContext(browser);
      const { page, problems } = await watchedPage(ctx);
      await signInAt(page, server.baseUrl, o, '/app/compose');
      // The Berlin workspace, chosen in the header as a person would.
      await page.selectOption('#workspace', f.ws);
      await page.locator(`input[name=channel][value="${x}"]`).waitFor();
      expect(await page.textContent('h1')).toBe('New post');
      expect(await page.textContent('#tz-note')).toContain(TZ);
      await page.screenshot({ path: path.join(shots, '1-empty.png'), fullPage: true });
      expect(await seriousA11yViolations(page)).toEqual([]);

      // Two channels, a caption too long for X (280) but fine for LinkedIn (3000).
      await page.check(`input[name=channel][value="${x}"]`);
      await page.check(`input[name=channel][value="${li}"]`);
      const long = 'Our spring collection is here: linen shirts, light jackets and the new canvas bag. '.repeat(4).trim();
      expect([...long].length).toBeGreaterThan(280);
      await page.fill('#caption', long);
      // Each channel's caption starts as the shared one.
      expect(await page.inputValue(`#ch-${x}-caption`)).toBe(long);
      expect(await page.textContent(`#ch-${x}-mode`)).toBe('follows the shared caption');
      // The check route's problem appears live beside X's caption, with its code; none for LinkedIn.
      const xProblem = page.locator(`#ch-${x}-caption-problems [data-code=caption_too_long]`);
      await xProblem.waitFor();
      expect(await xProblem.textContent()).toMatch(/280/);
      expect(await page.locator(`#ch-${li}-caption-problems li`).count()).toBe(0);
      expect(await page.getAttribute(`#ch-${x}-count`, 'class')).toContain('over');
      expect(await page.textContent(`#ch-${x}-count`)).toBe(`${[...long].length} / 280 (${[...long].length - 280} over)`);
      expect(await page.getAttribute(`#ch-${li}-count`, 'class')).not.toContain('over');
      // The preview folds LinkedIn's text and marks X's as over the limit.
      expect(await page.textContent(`.pv[data-channel="${li}"] .pv-more`)).toBe('…see more');
      expect(await page.textContent(`.pv[data-channel="${x}"] .pv-over`)).toContain('over the limit of 280');
      await page.screenshot({ path: path.join(shots, '2-problems.png'), fullPage: true });
      expect(await seriousA11yViolations(page)).toEqual([]);

      // Fix it: a caption of X's own ("customised"), then the problem goes.
      const short = 'Spring is here: linen, canvas, light jackets.';
      await page.fill(`#ch-${x}-caption`, short);
      expect(await page.textContent(`#ch-${x}-mode`)).toBe('customised');
      await expect.poll(() => xProblem.count()).toBe(0);
      await expect.poll(() => page.textContent('#check-state')).toContain("every channel's rules are met");
      // X has threads, LinkedIn has not.
      expect(await page.locator(`#ch-${li}-add-thread`).count()).toBe(0);
      await page.click(`#ch-${x}-add-thread`);
      await page.fill(`#ch-${x}-thread-0`, 'Part two: the canvas bag, in three colours.');

      // Upload a PNG through the page: progress shown and complete, then its alt text.
      await page.setInputFiles('#upload', { name: 'flat-lay.png', mimeType: 'image/png', buffer: png(64, 48, 7) });
      const done = page.locator('.upload-done progress');
      await done.waitFor();
      expect(await done.getAttribute('value')).toBe(await done.getAttribute('max'));
      expect(await page.textContent('.upload-done label')).toBe('flat-lay.png: uploaded');
      const attached = page.locator('.attached-item');
      expect(await attached.count()).toBe(1);
      expect(await attached.textContent()).toContain('flat-lay.png');
      const alt = attached.locator('input[id^=alt-]');
      const mediaId = (await alt.getAttribute('id'))!.slice(4);
      await alt.fill('Linen shirts and a canvas bag laid out on a table');
      await alt.press('Tab');
      await expect.poll(() => page.textContent(`#alt-${mediaId}-state`)).toBe('Alt text saved.');
      // The thumbnail is the signed view URL, loaded under the page's CSP.
      await expect.poll(() => page.evaluate<number>("document.querySelector('.attached-item img.thumb')?.naturalWidth ?? 0")).toBe(64);

      // A file the API refuses (not an image, whatever its name): the answer beside the upload field.
      await page.setInputFiles('#upload', { name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('%PDF-1.7 not an image at all\n'.repeat(20)) });
      await page.locator('#upload-problems .field-error').waitFor();
      expect(await page.textContent('#upload-problems')).toContain('UNSUPPORTED_MEDIA_FORMAT');
      expect(await attached.count()).toBe(1);

      // The library dialog lists the upload, already chosen.
      await page.click('#open-library');
      const dialog = page.locator('dialog#library');
      await dialog.waitFor({ state: 'visible' });
      const item = dialog.locator(`input[name=library-item][value="${mediaId}"]`);
      await item.waitFor();
      expect(await item.isChecked()).toBe(true);
      expect(await dialog.locator('input[name=library-item]').count()).toBe(1);
      await page.screenshot({ path: path.join(shots, '3-library.png') });
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.click('#library-done');
      await dialog.waitFor({ state: 'hidden' });

      // Planning metadata.
      await page.fill('#title', 'Spring launch post');
      await page.selectOption('#campaign', f.campaignId);
      await page.check(`input[name=tag][value="${f.tagId}"]`);

      // Schedule without a time: the API refuses, and says so beside the time.
      await page.click('#schedule');
      await page.locator('#notice.error').waitFor();
      expect(await page.textContent('#notice')).toContain('Could not schedule');
      expect(await page.textContent('#notice')).toContain('VALIDATION_FAILED');
      await page.locator('#schedule-problems [data-code=required]').waitFor();
      expect(page.url()).toBe(`${server.baseUrl}/app/compose`);

      // Tomorrow 10:00 in Berlin.
      const tomorrow = addDays(dateIn(new Date(), TZ), 1);
      const expected = berlinToUtc(tomorrow, '10:00');
      await page.fill('#date', tomorrow);
      await page.fill('#time', '10:00');
      expect(await page.textContent('#when-summary')).toContain(`10:00 (${TZ})`);
      await expect.poll(() => page.locator('#schedule-problems li').count()).toBe(0);
      await page.click('#schedule');
      await page.waitForURL(/\/app\/compose\/[0-9a-f-]{36}$/);
      const openedId = page.url().split('/').pop()!;
      await page.locator('#notice.ok').waitFor();
      expect(await page.textContent('#notice')).toContain(`Scheduled for`);
      expect(await page.textContent('#notice')).toContain('on 2 channels');
      await page.locator('#editions').waitFor();
      expect(await page.textContent('h1')).toBe('Edit post');

      // Through the API: one root, two scheduled editions at 10:00 Berlin, captions, thread, media with alt text, planning.
      const opened = (await api.get(`${base}/content/${openedId}`, { token: o.token })).body.data;
      const root = (await api.get(`${base}/content-roots/${opened.rootId}`, { token: o.token })).body.data;
      expect(root.editions.map((e: any) => [e.integrationId, e.status, new Date(e.scheduledAt).toISOString()]).sort()).toEqual(
        [[x, 'scheduled', expected], [li, 'scheduled', expected]].sort(),
      );
      expect(root.caption).toBe(long);
      expect(root.mediaIds).toEqual([mediaId]);
      expect(root.organizationalTitle).toBe('Spring launch post');
      expect(root.campaignId).toBe(f.campaignId);
      expect(root.metadata.tagIds).toEqual([f.tagId]);
      const byChannel = Object.fromEntries(root.editions.map((e: any) => [e.integrationId, e]));
      expect(byChannel[x].captionOverride).toBe(short);
      expect(byChannel[li].captionOverride).toBeNull();
      const xDetail = (await api.get(`${base}/content/${byChannel[x].id}`, { token: o.token })).body.data;
      expect(xDetail.thread.map((t: any) => t.caption)).toEqual(['Part two: the canvas bag, in three colours.']);
      expect(xDetail.media.map((m: any) => [m.id, m.altText])).toEqual([[mediaId, 'Linen shirts and a canvas bag laid out on a table']]);
      // The refusal and the success were ordinary API calls, audited as such.
      const calls = (await server.owner.query(`select status, error_code from audit.api_calls where workspace_id = $1 and method = 'POST' and route like '%/content' order by occurred_at`, [f.ws])).rows;
      expect(calls).toEqual([{ status: 400, error_code: 'VALIDATION_FAILED' }, { status: 201, error_code: null }]);

      // Edit mode shows the editions and their time in the zone.
      expect(await page.textContent('#editions')).toContain('Acme on X');
      expect(await page.textContent('#editions')).toContain('Acme on LinkedIn');
      expect(await page.inputValue('#date')).toBe(tomorrow);
      expect(await page.inputValue('#time')).toBe('10:00');
      expect(await page.inputValue(`#ch-${x}-caption`)).toBe(short);
      await page.screenshot({ path: path.join(shots, '4-edit.png'), fullPage: true });
      expect(await seriousA11yViolations(page)).toEqual([]);

      // The calendar (week of tomorrow; the browser is in UTC) shows both; clicking one opens the composer.
      await page.goto(`${server.baseUrl}/app#view=timeGridWeek&date=${tomorrow}`);
      const ev = page.locator('.fc-event', { hasText: 'Acme on X · Spring launch post' });
      await ev.waitFor();
      expect(await page.locator('.fc-event', { hasText: 'Acme on LinkedIn · Spring launch post' }).count()).toBe(1);
      await ev.click();
      await page.waitForURL(`${server.baseUrl}/app/compose/${byChannel[x].id}`);
      await page.locator('#editions').waitFor();
      expect(await page.textContent('h1')).toBe('Edit post');
      expect(await page.getAttribute(`#edition-${byChannel[x].id}`, 'class')).toContain('focus');

      // Reschedule in the composer: both editions move to 11:30 Berlin.
      await page.fill('#time', '11:30');
      await page.click('#save');
      await page.locator('#notice.ok').waitFor();
      const moved = berlinToUtc(tomorrow, '11:30');
      await expect.poll(async () => (await api.get(`${base}/content-roots/${opened.rootId}`, { token: o.token })).body.data.editions.map((e: any) => new Date(e.scheduledAt).toISOString())).toEqual([moved, moved]);
      await page.screenshot({ path: path.join(shots, '5-rescheduled.png'), fullPage: true });

      // Only the page's deliberate refusals (400 schedule without a time, 415 the bad file) reach the console.
      expect(problems.filter((p) => !/status of (400|415)/.test(p))).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it('saves a draft, and lays out on a phone', { timeout: 120_000 }, async () => {
    const f = await fixtures();
    const shots = shotsDir('web-compose');
    const browser = await launchBrowser();
    try {
      const ctx = await newContext(browser, { viewport: { width: 375, height: 800 } });
      const { page, problems } = await watchedPage(ctx);
      await signInAt(page, server.baseUrl, f.o, '/app/compose');
      await page.selectOption('#workspace', f.ws);
      await page.locator(`input[name=channel][value="${f.li}"]`).waitFor();
      await page.check(`input[name=channel][value="${f.li}"]`);
      await page.fill('#caption', 'An idea for next week: our team at the spring fair.');
      // No horizontal scrolling at 375 px.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);
      await page.screenshot({ path: path.join(shots, '6-phone.png'), fullPage: true });
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.click('#save-draft');
      await page.waitForURL(/\/app\/compose\/[0-9a-f-]{36}$/);
      await page.locator('#notice.ok').waitFor();
      expect(await page.textContent('#notice')).toContain('Saved as a draft on 1 channel');
      const id = page.url().split('/').pop()!;
      const d = (await api.get(`${f.base}/content/${id}`, { token: f.o.token })).body.data;
      expect([d.status, d.integrationId, d.caption, d.scheduledAt]).toEqual(['draft', f.li, 'An idea for next week: our team at the spring fair.', null]);
      expect(await page.textContent(`#edition-${id}`)).toContain('draft');
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
