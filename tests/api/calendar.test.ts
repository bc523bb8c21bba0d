// The calendar page at /app (server/web-app.ts, web/pages/calendar.tsx): its headers and
// bundle over plain HTTP, then in a real browser (playwright-core driving the
// machine's Chromium): sign in, see an edition created through the API on its
// day, open a failed one in the composer, drag one to another day and check
// through the API that it moved, drag it into the past and see the refusal.
// Screenshots go to test-results/calendar/.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('calendar');
  api = client(server);
});
afterAll(async () => server?.close());

/** CHROMIUM_PATH, else the first Chromium on the PATH (Debian's package installs `chromium`). */
function findChromium(): string | null {
  const env = process.env.CHROMIUM_PATH;
  if (env) return existsSync(env) ? env : null;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome']) {
    try {
      const p = execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
      if (p) return p;
    } catch {
      // not this one
    }
  }
  return null;
}
const chromiumPath = findChromium();
if (!chromiumPath) console.warn('calendar.test.ts: no Chromium found (install Debian\'s `chromium` or set CHROMIUM_PATH); the browser tests are skipped.');

const SHOTS = path.resolve('test-results', 'calendar');

describe('GET /app', () => {
  it('serves the page with a nonce-based Content-Security-Policy and no-store', async () => {
    const res = await fetch(`${server.baseUrl}/app`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const csp = res.headers.get('content-security-policy')!;
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await res.text();
    expect(html).toContain(`<meta name="csp-nonce" content="${nonce}">`);
    expect(html).not.toContain('__NONCE__');
    // every request gets its own nonce
    const again = await fetch(`${server.baseUrl}/app/`);
    expect(again.headers.get('content-security-policy')).not.toBe(csp);
  });

  it('serves the bundle from this origin (no CDN), with an ETag', async () => {
    const js = await fetch(`${server.baseUrl}/app/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/^text\/javascript/);
    const body = await js.text();
    expect(body).toContain('fc-daygrid'); // FullCalendar is inside
    expect(body).not.toMatch(/https?:\/\/(cdn|unpkg|jsdelivr)/);
    const etag = js.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const cached = await fetch(`${server.baseUrl}/app/app.js`, { headers: { 'If-None-Match': etag } });
    expect(cached.status).toBe(304);
    const css = await fetch(`${server.baseUrl}/app/app.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(await css.text()).toContain('.st-failed');
  });

  it('other methods and paths under /app are the API\'s JSON 404', async () => {
    const res = await fetch(`${server.baseUrl}/app/nope.js`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('NOT_FOUND');
  });
});

const day = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * 86_400_000);

describe.skipIf(!chromiumPath)('the calendar in Chromium', () => {
  it('signs in, shows editions on their day, drags one to another day, shows a refusal', { timeout: 120_000 }, async () => {
    const { chromium } = await import('playwright-core');
    mkdirSync(SHOTS, { recursive: true });

    const o = await signup(api);
    const base = `/v1/workspaces/${o.workspaceId}`;
    const integration = async (platform: string, name: string) =>
      (
        await server.owner.query(
          `insert into app.integrations (organization_id, workspace_id, connector, platform, name) values ($1, $2, 'sandbox', $3, $4) returning id`,
          [o.organizationId, o.workspaceId, platform, name],
        )
      ).rows[0].id as string;
    const x = await integration('x', 'Acme on X');
    const li = await integration('linkedin', 'Acme on LinkedIn');

    // Dates in UTC (the browser runs in UTC too). The month view of today's month
    // holds yesterday unless today is its first cell (a Monday the 1st): then
    // the previous month's view, whose last row is this month's first week.
    const now = new Date();
    const today = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const viewDate = today.getUTCDate() === 1 && today.getUTCDay() === 1 ? addDays(today, -1) : today;
    const d1 = day(addDays(today, 1));
    const d2 = day(addDays(today, 2));
    const past = day(addDays(today, -1));

    const created = await api.post(
      `${base}/content`,
      { intent: 'schedule', scheduledAt: `${d1}T10:00:00.000Z`, caption: 'Spring launch thread', title: 'Spring launch', channels: [{ integrationId: x }] },
      { token: o.token },
    );
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.editions[0].id as string;
    const scheduledAt = async () => new Date((await api.get(`${base}/content/${id}`, { token: o.token })).body.data.scheduledAt).toISOString();

    // A failed edition yesterday on LinkedIn (fixture row; the publishing engine's states are another area's).
    const c = server.owner;
    await c.query('begin');
    await c.query('set local session_replication_role = replica');
    const root = await c.query(`insert into app.content_roots (organization_id, workspace_id, caption) values ($1, $2, 'Webinar recap') returning id`, [o.organizationId, o.workspaceId]);
    await c.query(
      `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at, error) values ($1, $2, $3, $4, 'failed', $5, 'Token expired')`,
      [o.organizationId, o.workspaceId, root.rows[0].id, li, `${past}T09:00:00Z`],
    );
    await c.query('commit');

    const browser = await chromium.launch({ executablePath: chromiumPath!, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    try {
      const context = await browser.newContext({ timezoneId: 'UTC', locale: 'en-GB', viewport: { width: 1280, height: 960 } });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));
      // The page asks for the visible range only (GET content?scheduledFrom=&scheduledTo=).
      const listed: URL[] = [];
      page.on('request', (r) => {
        const u = new URL(r.url());
        if (r.method() === 'GET' && /\/content$/.test(u.pathname)) listed.push(u);
      });

      await page.goto(`${server.baseUrl}/app#view=dayGridMonth&date=${day(viewDate)}`);
      await page.fill('input[name=email]', o.email);
      await page.fill('input[name=password]', 'wrong password');
      await page.click('#signin button[type=submit]');
      // (A refused sign-in checks the password hash first, which takes longer than poll's default second on a busy machine.)
      await expect.poll(() => page.textContent('#signin .error'), { timeout: 15_000 }).toContain('INVALID_CREDENTIALS');
      await page.fill('input[name=password]', o.password);
      await page.click('#signin button[type=submit]');

      const cell = (d: string) => page.locator(`td.fc-daygrid-day[data-date="${d}"]`);
      const launch = page.locator('.fc-event', { hasText: 'Spring launch' });
      await launch.waitFor();
      expect(await cell(d1).locator('.fc-event', { hasText: 'Spring launch' }).count()).toBe(1);
      expect(await launch.textContent()).toContain('Acme on X');
      const failed = cell(past).locator('.fc-event.st-failed', { hasText: 'Webinar recap' });
      expect(await failed.count()).toBe(1);
      expect(listed.length).toBeGreaterThan(0);
      for (const u of listed) {
        const from = Date.parse(u.searchParams.get('scheduledFrom') ?? '');
        const to = Date.parse(u.searchParams.get('scheduledTo') ?? '');
        // a month view: at most six weeks, plus a week's margin before it for sent editions
        expect(to - from).toBeGreaterThan(0);
        expect(to - from).toBeLessThanOrEqual(49 * 86_400_000);
      }
      expect(await failed.getAttribute('class')).not.toContain('fc-event-draggable');
      expect(await launch.getAttribute('class')).toContain('fc-event-draggable');
      await page.screenshot({ path: path.join(SHOTS, '1-month.png'), fullPage: true });

      // Filters: status and channel.
      await page.uncheck('input[name=status][value=failed]');
      await expect.poll(() => page.locator('.fc-event.st-failed').count()).toBe(0);
      await page.check('input[name=status][value=failed]');
      await page.selectOption('#channel', x);
      await expect.poll(() => page.locator('.fc-event.st-failed').count()).toBe(0);
      expect(await launch.count()).toBe(1);
      await page.selectOption('#channel', '');
      await expect.poll(() => page.locator('.fc-event.st-failed').count()).toBe(1);

      // Open one: the composer at /app/compose/<id> (web/pages/compose.tsx), with the
      // failed edition's channel and error, read-only but for its retry.
      const failedId = (await c.query(`select id from app.content_items where workspace_id = $1 and status = 'failed'`, [o.workspaceId])).rows[0].id as string;
      await failed.click();
      await page.waitForURL(`${server.baseUrl}/app/compose/${failedId}`);
      const edition = page.locator(`#edition-${failedId}`);
      await edition.waitFor();
      expect(await edition.textContent()).toContain('Token expired');
      expect(await edition.textContent()).toContain('Acme on LinkedIn');
      expect(await edition.textContent()).toContain('failed');
      expect(await page.locator(`#retry-${failedId}`).count()).toBe(1);
      expect(await page.inputValue('#caption')).toBe('Webinar recap');
      expect(await page.locator('#caption').isDisabled()).toBe(true);
      await page.screenshot({ path: path.join(SHOTS, '2-detail.png') });
      // Back to the calendar, at the same view (the hash).
      await page.goBack();
      await launch.waitFor();

      /** Drags the launch edition onto a day cell, with real mouse moves. */
      const dragTo = async (d: string) => {
        const from = (await launch.boundingBox())!;
        const to = (await cell(d).boundingBox())!;
        await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
        await page.mouse.down();
        await page.mouse.move(from.x + from.width / 2 + 5, from.y + from.height / 2 + 5, { steps: 3 });
        await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 12 });
        await page.mouse.up();
      };

      // Drag to the next day: the schedule route moves it, same time of day.
      await dragTo(d2);
      await page.locator('#notice.ok').waitFor();
      expect(await page.textContent('#notice')).toContain('Rescheduled');
      await expect.poll(scheduledAt).toBe(`${d2}T10:00:00.000Z`);
      await expect.poll(() => cell(d2).locator('.fc-event', { hasText: 'Spring launch' }).count()).toBe(1);
      await page.screenshot({ path: path.join(SHOTS, '3-moved.png'), fullPage: true });

      // Into the past: the API refuses, the page says so and puts it back.
      await dragTo(past);
      await page.locator('#notice.error').waitFor();
      const text = (await page.textContent('#notice'))!;
      expect(text).toContain('Could not reschedule');
      expect(text).toContain('VALIDATION_FAILED');
      expect(text).toContain('scheduledAt');
      await page.screenshot({ path: path.join(SHOTS, '4-refused.png'), fullPage: true });
      expect(await cell(d2).locator('.fc-event', { hasText: 'Spring launch' }).count()).toBe(1);
      expect(await scheduledAt()).toBe(`${d2}T10:00:00.000Z`);

      // Both drags went through the schedule route and its audit, like any API call.
      await expect
        .poll(async () => (await c.query(`select status, error_code from audit.api_calls where workspace_id = $1 and method = 'PATCH' and route like '%/schedule' order by occurred_at`, [o.workspaceId])).rows)
        .toEqual([{ status: 200, error_code: null }, { status: 400, error_code: 'VALIDATION_FAILED' }]);

      // The week view of that day (the view lives in the hash; the session survives a reload).
      await page.goto(`${server.baseUrl}/app#view=timeGridWeek&date=${d2}`);
      await page.reload();
      await expect.poll(() => page.locator('.fc-timegrid-event', { hasText: 'Spring launch' }).count()).toBe(1);
      expect(await page.locator('.fc-timegrid-event', { hasText: 'Spring launch' }).textContent()).toContain('10:00');
      await page.screenshot({ path: path.join(SHOTS, '5-week.png'), fullPage: true });

      // Only the page's own failed requests (401 wrong password, 400 refusal) may appear in the console.
      expect(problems.filter((p) => !/status of (400|401)/.test(p))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
