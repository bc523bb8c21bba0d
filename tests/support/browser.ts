// The web pages' browser tests: the machine's Chromium driven by
// playwright-core, one page per test with its console watched, sign-in as a
// person does it, and axe-core's check (0 serious or critical violations).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** CHROMIUM_PATH, else the first Chromium on the PATH (Debian's package installs `chromium`). */
export function findChromium(): string | null {
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

export const chromiumPath = findChromium();

export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: chromiumPath!, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

/** A fresh context (no session, no storage), UTC and en-GB unless told otherwise; clipboard allowed. */
export async function newContext(browser: Browser, opts: Parameters<Browser['newContext']>[0] = {}): Promise<BrowserContext> {
  const ctx = await browser.newContext({ timezoneId: 'UTC', locale: 'en-GB', viewport: { width: 1280, height: 960 }, ...opts });
  return ctx;
}

/** A page whose console errors, CSP reports and uncaught exceptions are collected in `problems`. */
export async function watchedPage(ctx: BrowserContext): Promise<{ page: Page; problems: string[] }> {
  const page = await ctx.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return { page, problems };
}

/** Signs in through the app's form at `<baseUrl><path>` and waits for the navigation bar. */
export async function signInAt(page: Page, baseUrl: string, who: { email: string; password: string }, pagePath = '/app') {
  await page.goto(`${baseUrl}${pagePath}`);
  await page.fill('#signin input[name=email]', who.email);
  await page.fill('#signin input[name=password]', who.password);
  await page.click('#signin button[type=submit]');
  await page.locator('nav[aria-label=Pages]').waitFor();
}

/** axe-core's violations of impact serious or critical on the page as it is now (WCAG 2 A/AA rules). */
export async function seriousA11yViolations(page: Page): Promise<{ id: string; impact: string | null | undefined; help: string; targets: string[] }[]> {
  const { default: AxeBuilder } = await import('@axe-core/playwright');
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
}

/** test-results/<name>/, created. */
export function shotsDir(name: string): string {
  const dir = path.resolve('test-results', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}
