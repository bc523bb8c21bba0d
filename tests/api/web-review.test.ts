// The client review page (/review, web/review/main.tsx) in Chromium at phone
// size, as a client with no account uses it: a review with two posts (an X
// post with an image and a thread, a LinkedIn post with a video) is sent
// through the API; the page is opened at the link's url; the client approves
// one, requests changes with a comment on the other and comments; the API
// shows the decisions and the comment; a reload works from sessionStorage;
// once the review is cancelled the page says the link has ended. The token
// never appears in a request URL, only in the Authorization header.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import path from 'node:path';
import { chromiumPath, launchBrowser, newContext, seriousA11yViolations, shotsDir, watchedPage } from '../support/browser.ts';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { mp4, png, upload } from './media-fixtures.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('web-review');
  api = client(server);
  (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
}, 60_000);
afterAll(async () => server?.close());

describe('GET /review', () => {
  it('serves the page and its own bundle under the strict CSP', async () => {
    const res = await fetch(`${server.baseUrl}/review`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const js = await fetch(`${server.baseUrl}/review/review.js`);
    expect(js.status).toBe(200);
    expect(await js.text()).toContain('/v1/review-link');
    const css = await fetch(`${server.baseUrl}/review/review.css`);
    expect(await css.text()).toContain('.rv-post');
  });
});

describe.skipIf(!chromiumPath)('the client review page in Chromium', () => {
  it('a client reviews on a phone: approve, request changes, comment, reload, ended link', { timeout: 180_000 }, async () => {
    const shots = shotsDir('review');
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };
    const channel = async (platform: string, name: string) => {
      const r = await api.post(`${ws}/integrations`, { connector: 'sandbox', platform, name }, t);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return (r.body.data.id ?? r.body.data.integration?.id) as string;
    };
    const x = await channel('x', 'Acme on X');
    const li = await channel('linkedin', 'Acme on LinkedIn');
    const image = (await upload(api, o.token, o.workspaceId, png(320, 200, 7), { filename: 'launch.png', contentType: 'image/png' })).media;
    const video = (await upload(api, o.token, o.workspaceId, mp4({ width: 320, height: 240, durationMs: 2000 }), { filename: 'teaser.mp4', contentType: 'video/mp4' })).media;
    const reply = (await upload(api, o.token, o.workspaceId, png(240, 160, 3), { filename: 'reply.png', contentType: 'image/png' })).media;
    const alt = await api.patch(`${ws}/media/${image.id}`, { altText: 'Three linen shirts on a rail' }, t);
    expect(alt.status, JSON.stringify(alt.body)).toBe(200);

    const draft = async (body: Record<string, unknown>) => {
      const r = await api.post(`${ws}/content`, { intent: 'draft', ...body }, t);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.data.editions[0].id as string;
    };
    const xPost = await draft({
      caption: 'Spring launch is here',
      channels: [{ integrationId: x, mediaIds: [image.id], thread: [{ caption: 'Second post of the thread', mediaIds: [reply.id] }] }],
    });
    const liPost = await draft({ caption: 'A teaser for our LinkedIn followers', channels: [{ integrationId: li, mediaIds: [video.id] }] });

    // The client decides first; an approval then goes to the team, so the review stays open after both decisions.
    const created = await api.post(`${ws}/reviews`, {
      title: 'Spring campaign',
      message: 'Please look at both posts before Friday.',
      stages: [
        { name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'Clara@Example.com', name: 'Clara' }] },
        { name: 'Team', rule: 'all', approvers: [{ type: 'member', userId: o.userId }] },
      ],
      contentIds: [xPost, liPost],
    }, t);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const reviewId = created.body.data.id as string;
    const itemOf = (contentId: string) => (created.body.data.items as { id: string; contentId: string }[]).find((i) => i.contentId === contentId)!.id;
    const xItem = itemOf(xPost);
    const liItem = itemOf(liPost);
    const sent = await api.post(`${ws}/reviews/${reviewId}/send`, undefined, t);
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    const link = sent.body.data.links[0] as { token: string; url: string };
    expect(link.url).toBe(`${server.baseUrl}/review#token=${link.token}`);

    const browser = await launchBrowser();
    try {
      const ctx = await newContext(browser, { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
      const { page, problems } = await watchedPage(ctx);
      const urls: string[] = [];
      const linkCalls: { url: string; auth: string | undefined }[] = [];
      page.on('request', (r) => {
        urls.push(r.url());
        if (new URL(r.url()).pathname.startsWith('/v1/')) linkCalls.push({ url: r.url(), auth: r.headers().authorization });
      });
      const card = (itemId: string) => page.locator(`article[data-item="${itemId}"]`);
      const noSideScroll = async () => expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375);

      await page.goto(link.url);
      await page.locator('h1', { hasText: 'Spring campaign' }).waitFor();
      // The token left the address bar for this tab's sessionStorage.
      expect(page.url()).toBe(`${server.baseUrl}/review`);
      expect(await page.evaluate<string | null>("sessionStorage.getItem('pressroom.reviewLink')")).toBe(link.token);
      expect(await page.textContent('body')).not.toContain(link.token);
      expect(await page.textContent('.rv-intro')).toContain('Please look at both posts before Friday.');
      expect(await page.textContent('#progress')).toContain('2 wait for your decision');

      // Each post as it will be shown: channel, text, media from signed URLs, the thread.
      await expect.poll(() => card(xItem).locator('.rv-feed li').count()).toBeGreaterThan(0);
      expect(await card(xItem).locator('h2').textContent()).toContain('Acme on X');
      expect(await card(xItem).locator('.rv-caption').first().textContent()).toBe('Spring launch is here');
      expect(await card(xItem).locator('.rv-thread').textContent()).toContain('Second post of the thread');
      const img = card(xItem).locator('img.rv-media-el').first();
      await img.scrollIntoViewIfNeeded();
      await expect.poll(() => img.evaluate((el) => { const i = el as unknown as { complete: boolean; naturalWidth: number }; return i.complete && i.naturalWidth; })).toBe(320);
      // The media's alt text is the image's alt, as the platform will announce it.
      expect(await img.getAttribute('alt')).toBe('Three linen shirts on a rail');
      // The thread message's own media, from its own signed URL.
      const replyImg = card(xItem).locator('.rv-thread img.rv-media-el');
      await replyImg.scrollIntoViewIfNeeded();
      await expect.poll(() => replyImg.evaluate((el) => { const i = el as unknown as { complete: boolean; naturalWidth: number }; return i.complete && i.naturalWidth; })).toBe(240);
      expect(await replyImg.getAttribute('alt')).toBe('Image 1: reply.png');
      const vid = card(liItem).locator('video.rv-media-el');
      expect(await vid.getAttribute('controls')).not.toBeNull();
      expect(await vid.getAttribute('src')).toMatch(/^http/);
      expect(await card(liItem).locator('.rv-state').textContent()).toBe('Waiting for your decision');
      await noSideScroll();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(shots, '1-review-phone.png'), fullPage: true });

      // Approve the X post.
      await card(xItem).locator('button.rv-approve').tap();
      await expect.poll(() => card(xItem).locator('.rv-mine').textContent()).toContain('approved');
      await expect.poll(() => card(xItem).locator('.rv-state').textContent()).toBe('In review: with Team');
      expect(await card(xItem).locator('button.rv-approve').count()).toBe(0);

      // Request changes on the LinkedIn post: first without a comment (refused on the page), then with one.
      await card(liItem).locator('button.rv-changes').tap();
      expect(await card(liItem).locator('.field-error').textContent()).toContain('comment is needed');
      expect(await page.evaluate<string | undefined>('document.activeElement?.tagName')).toBe('TEXTAREA');
      expect(await seriousA11yViolations(page)).toEqual([]);
      await card(liItem).locator('textarea').fill('Please use the new logo in the video.');
      await card(liItem).locator('button.rv-changes').tap();
      await expect.poll(() => card(liItem).locator('.rv-state').textContent()).toBe('Changes requested');
      expect(await card(liItem).locator('.rv-mine').textContent()).toContain('Please use the new logo in the video.');

      // A comment on the X post.
      await card(xItem).locator('textarea').fill('Love the colours!');
      await card(xItem).locator('button.rv-comment').tap();
      await card(xItem).locator('.rv-feed li[data-event="comment"]', { hasText: 'Love the colours!' }).waitFor();
      expect(await card(xItem).locator('.rv-said').textContent()).toContain('comment was added');
      expect(await page.textContent('#progress')).toContain('none waits');
      await noSideScroll();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(shots, '2-decided-phone.png'), fullPage: true });

      // Through the API: the client's decisions, the comment with the change request, the item states.
      const review = (await api.get(`${ws}/reviews/${reviewId}`, t)).body.data;
      const byId = new Map((review.items as { id: string; state: string; currentStage: number; decisions: { approver: string; decision: string; comment: string | null }[] }[]).map((i) => [i.id, i]));
      expect(byId.get(xItem)).toMatchObject({ state: 'pending', currentStage: 1 });
      expect(byId.get(xItem)!.decisions).toEqual([expect.objectContaining({ approver: 'client:clara@example.com', decision: 'approved', comment: null })]);
      expect(byId.get(liItem)).toMatchObject({ state: 'changes_requested' });
      expect(byId.get(liItem)!.decisions).toEqual([
        expect.objectContaining({ approver: 'client:clara@example.com', decision: 'changes_requested', comment: 'Please use the new logo in the video.' }),
      ]);
      const feed = (await api.get(`${ws}/reviews/${reviewId}/items/${xItem}/activity`, t)).body.data as { kind: string; body: string | null; actorName: string | null }[];
      expect(feed).toContainEqual(expect.objectContaining({ kind: 'comment', body: 'Love the colours!', actorName: 'Clara' }));

      // A reload works from sessionStorage and shows the state after the decisions.
      await page.reload();
      await page.locator('h1', { hasText: 'Spring campaign' }).waitFor();
      // (each card reads its activity on its own, in any order)
      await expect.poll(() => card(liItem).locator('.rv-mine').count()).toBe(1);
      expect(await card(liItem).locator('.rv-state').textContent()).toBe('Changes requested');
      await expect.poll(() => card(xItem).locator('.rv-state').textContent()).toBe('In review: with Team');
      await noSideScroll();

      // The review is cancelled: the next call the page makes meets the ended link, and so does a reload.
      const cancelled = await api.post(`${ws}/reviews/${reviewId}/cancel`, undefined, t);
      expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(201);
      await card(xItem).locator('textarea').fill('One more thing');
      await card(xItem).locator('button.rv-comment').tap();
      await page.locator('#ended h1', { hasText: 'This review link has ended' }).waitFor();
      expect(await page.textContent('#ended')).toContain('ask the person who sent you the link for a new one');
      expect(await page.textContent('#ended')).toContain('UNAUTHENTICATED');
      await page.reload();
      await page.locator('#ended').waitFor();
      await noSideScroll();
      expect(await seriousA11yViolations(page)).toEqual([]);
      await page.screenshot({ path: path.join(shots, '3-ended-phone.png'), fullPage: true });
      // Nothing was added after the cancel.
      const after = (await api.get(`${ws}/reviews/${reviewId}/items/${xItem}/activity`, t)).body.data as { body: string | null }[];
      expect(after.map((a) => a.body)).not.toContain('One more thing');

      // The token was never in a URL the browser asked for; the link routes had it as the bearer.
      expect(urls.length).toBeGreaterThan(5);
      expect(urls.filter((u) => u.includes(link.token) || u.includes(encodeURIComponent(link.token)))).toEqual([]);
      expect(linkCalls.length).toBeGreaterThan(4);
      for (const c of linkCalls) {
        expect(new URL(c.url).pathname).toMatch(/^\/v1\/review-link/);
        expect(c.auth).toBe(`Bearer ${link.token}`);
      }
      // The server's audit of the link's calls has routes without it either.
      const audited = await server.owner.query(`select route from audit.api_calls where organization_id = $1 and actor_kind = 'review_link'`, [o.organizationId]);
      expect(audited.rows.length).toBeGreaterThan(4);
      expect(audited.rows.filter((r: { route: string }) => r.route.includes(link.token))).toEqual([]);
      // Only the ended link's 401s may appear in the console.
      expect(problems.filter((p) => !/status of 401/.test(p))).toEqual([]);

      // Without a token (a fresh tab, an address without its fragment): a clear page too.
      const bare = await newContext(browser, { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
      const { page: p2, problems: p2problems } = await watchedPage(bare);
      await p2.goto(`${server.baseUrl}/review`);
      await p2.locator('#missing h1', { hasText: 'This page needs your review link' }).waitFor();
      expect(await seriousA11yViolations(p2)).toEqual([]);
      await p2.screenshot({ path: path.join(shots, '4-missing-phone.png'), fullPage: true });
      expect(p2problems).toEqual([]);

      // The client's decision on the last open item completes the review (and so ends the link): the page says so and keeps what was decided.
      const last = await api.post(`${ws}/reviews`, {
        title: 'One more post', contentIds: [await draft({ caption: 'Last one', channels: [{ integrationId: x }] })],
        stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'clara@example.com', name: 'Clara' }] }],
      }, t);
      expect(last.status, JSON.stringify(last.body)).toBe(201);
      const lastLink = (await api.post(`${ws}/reviews/${last.body.data.id}/send`, undefined, t)).body.data.links[0] as { url: string };
      const p3ctx = await newContext(browser, { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
      const { page: p3, problems: p3problems } = await watchedPage(p3ctx);
      await p3.goto(lastLink.url);
      await p3.locator('h1', { hasText: 'One more post' }).waitFor();
      await p3.locator('button.rv-approve').tap();
      await p3.locator('#completed').waitFor();
      expect(await p3.textContent('#completed')).toContain('this link has now ended');
      expect(await p3.locator('.rv-state').textContent()).toBe('Approved');
      expect(await p3.locator('.rv-mine').textContent()).toContain('approved');
      expect(await p3.locator('textarea').count()).toBe(0);
      expect(await seriousA11yViolations(p3)).toEqual([]);
      await p3.screenshot({ path: path.join(shots, '5-completed-phone.png'), fullPage: true });
      expect((await api.get(`${ws}/reviews/${last.body.data.id}`, t)).body.data).toMatchObject({ status: 'completed', items: [{ state: 'approved' }] });
      expect(p3problems).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
