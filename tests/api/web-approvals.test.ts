// The Approvals page (/app/approvals, web/pages/approvals.tsx) in Chromium:
// an editor who is the approver of a review's internal stage signs in, sees
// the item in the inbox, comments, is stopped from requesting changes without
// a comment, approves; a second item decided meanwhile by another approver
// shows the API's refusal; a draft review with a client is sent from the
// reviews list and its client link is shown once. Everything is checked
// through the API.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../server/security.ts';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, signInAt, watchedPage } from '../support/browser.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('web-approvals');
  api = client(server);
  (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
}, 60_000);
afterAll(async () => server?.close());

describe.skipIf(!chromiumPath)('the Approvals page in Chromium', () => {
  it('an editor decides and comments in the inbox; a draft review is sent and its client link shown once', { timeout: 180_000 }, async () => {
    const shots = shotsDir('approvals');
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };

    // An editor with a password, signing in as a person does.
    const edEmail = `ed-${Math.random().toString(36).slice(2, 7)}@example.com`;
    const edPassword = 'editor password 123';
    expect((await api.post(`${ws}/members`, { email: edEmail, role: 'editor' }, t)).status).toBe(201);
    const edId = (await server.owner.query(`select id from app.users where lower(email) = $1`, [edEmail])).rows[0].id as string;
    await server.owner.query(`update app.users set status = 'active', password_hash = $2 where id = $1`, [edId, await hashPassword(edPassword)]);

    const ch = await api.post(`${ws}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Acme on X' }, t);
    expect(ch.status, JSON.stringify(ch.body)).toBe(201);
    const channel = (ch.body.data.id ?? ch.body.data.integration?.id) as string;
    const draft = async (caption: string) => {
      const r = await api.post(`${ws}/content`, { intent: 'draft', caption, channels: [{ integrationId: channel }] }, t);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.data.editions[0].id as string;
    };
    const review = async (body: Record<string, unknown>, send = true) => {
      const r = await api.post(`${ws}/reviews`, body, t);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      if (send) expect((await api.post(`${ws}/reviews/${r.body.data.id}/send`, undefined, t)).status).toBe(201);
      return { id: r.body.data.id as string, item: r.body.data.items[0]?.id as string };
    };
    const dueAt = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const mine = await review({
      title: 'Launch copy', dueAt, contentIds: [await draft('We launch on Monday')],
      stages: [{ name: 'Marketing', rule: 'all', approvers: [{ type: 'member', userId: edId }] }],
    });
    const shared = await review({
      title: 'Either of us', contentIds: [await draft('Shared approval post')],
      stages: [{ name: 'Leads', rule: 'any', approvers: [{ type: 'member', userId: edId }, { type: 'member', userId: o.userId }] }],
    });
    const pitch = await review({
      title: 'Client pitch', contentIds: [await draft('For the client')],
      stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'cleo@example.com', name: 'Cleo' }] }],
    }, false);

    const browser = await launchBrowser();
    try {
      const ctx = await newContext(browser);
      await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.baseUrl });
      const { page, problems } = await watchedPage(ctx);
      await signInAt(page, server.baseUrl, { email: edEmail, password: edPassword }, '/app/approvals');
      await page.locator('h1', { hasText: 'Approvals' }).waitFor();
      const item = (id: string) => page.locator(`article[data-item="${id}"]`);
      await item(mine.item).waitFor();
      expect(await page.locator('#inbox article').count()).toBe(2);
      expect(await item(mine.item).textContent()).toContain('We launch on Monday');
      expect(await item(mine.item).textContent()).toContain('Marketing');
      await expect.poll(() => item(mine.item).locator('h3').textContent()).toContain('Acme on X'); // once the channels are read
      await expect.poll(() => item(mine.item).locator('.ap-feed li').count()).toBeGreaterThan(0);
      await expect.poll(async () => (await page.locator('tr[data-review] [data-status]').allTextContents()).sort()).toEqual(['active', 'active', 'draft']);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(shots, '1-inbox.png'), fullPage: true });

      // A comment.
      await item(mine.item).locator('textarea').fill('Could we say "Monday 9:00"?');
      await item(mine.item).locator('button.ap-comment').click();
      await item(mine.item).locator('.ap-feed li[data-event="comment"]', { hasText: 'Monday 9:00' }).waitFor();
      // Request changes needs a comment: stopped on the page, next to the field.
      await item(mine.item).locator('button.ap-changes').click();
      expect(await item(mine.item).locator('.field-error').textContent()).toContain('comment is needed');
      expect(await seriousA11yViolations(page)).toEqual([]);
      // Approve, with a comment.
      await item(mine.item).locator('textarea').fill('Fine by me.');
      await item(mine.item).locator('button.ap-approve').click();
      await item(mine.item).locator('.ap-outcome[data-state="approved"]').waitFor();
      expect(await page.textContent('#notice')).toContain('Approved');
      expect(await item(mine.item).locator('button.ap-approve').count()).toBe(0);
      await item(mine.item).locator('.ap-feed li[data-event="approved"]').first().waitFor();
      // The review completed: no more comment box there, and the reviews list reads its new status.
      expect(await item(mine.item).locator('form').count()).toBe(0);
      await expect.poll(() => page.locator(`tr[data-review="${mine.id}"] [data-status]`).textContent()).toBe('completed');

      const got = (await api.get(`${ws}/reviews/${mine.id}`, t)).body.data;
      expect(got.status).toBe('completed');
      expect(got.items[0].state).toBe('approved');
      expect(got.items[0].decisions).toEqual([expect.objectContaining({ userId: edId, decision: 'approved', comment: 'Fine by me.' })]);
      const feed = (await api.get(`${ws}/reviews/${mine.id}/items/${mine.item}/activity`, t)).body.data as { kind: string; actor: string; body: string | null }[];
      expect(feed).toContainEqual(expect.objectContaining({ kind: 'comment', actor: `user:${edId}`, body: 'Could we say "Monday 9:00"?' }));

      // The owner decides the shared item meanwhile: the editor's approval is refused by the API, and the page says why.
      expect((await api.post(`${ws}/reviews/${shared.id}/items/${shared.item}/decision`, { decision: 'approved' }, t)).status).toBe(201);
      await item(shared.item).locator('button.ap-approve').click();
      await page.locator('#notice.error').waitFor();
      expect(await page.textContent('#notice')).toContain('Could not record the decision');
      // (its one item decided, the review completed: the API answers 409 INVALID_REVIEW_STATUS)
      expect(await page.textContent('#notice')).toContain('INVALID_REVIEW_STATUS');
      await page.screenshot({ path: path.join(shots, '2-decided-refused.png'), fullPage: true });
      const sharedNow = (await api.get(`${ws}/reviews/${shared.id}`, t)).body.data;
      expect(sharedNow.items[0].decisions.map((d: { userId: string }) => d.userId)).toEqual([o.userId]);
      // A refreshed inbox no longer holds either.
      await page.click('#inbox-refresh');
      await page.locator('#inbox-empty').waitFor();

      // Send the draft review: its client link is shown once, as the review page's URL.
      const row = page.locator(`tr[data-review="${pitch.id}"]`);
      await row.locator('button.ap-send').click();
      await page.locator('#client-links').waitFor();
      const url = (await page.locator('#client-links .ap-link-url').textContent())!;
      expect(url).toMatch(new RegExp(`^${server.baseUrl.replace(/[.]/g, '\\.')}/review#token=prr_[0-9a-f]{64}$`));
      expect(await page.textContent('#client-links')).toContain('Cleo');
      await expect.poll(() => row.locator('[data-status]').textContent()).toBe('active');
      expect((await api.get(`${ws}/reviews/${pitch.id}`, t)).body.data.status).toBe('active');
      const token = decodeURIComponent(url.split('#token=')[1]);
      expect((await api.get('/v1/review-link', { token })).body.data.review.title).toBe('Client pitch');
      await page.locator('#client-links button.copy').click();
      await expect.poll(() => page.evaluate<string>('navigator.clipboard.readText()')).toBe(url);
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(shots, '3-client-links.png'), fullPage: true });
      // Kept nowhere: not in storage, not in the address, gone after a reload.
      const stored = await page.evaluate<string>('JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }) + location.href');
      expect(stored).not.toContain(token);
      await page.reload();
      await page.locator(`tr[data-review="${pitch.id}"]`).waitFor();
      expect(await page.locator('#client-links').count()).toBe(0);
      expect(await page.textContent('body')).not.toContain(token);

      // Only the refused decision's 409 may appear in the console.
      expect(problems.filter((p) => !/status of 409/.test(p))).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
