// Reviews and approval workflows over real HTTP: workflows and routing, the
// review policy, reviews and their transitions with content following its
// items, decisions (member, override, revoke, bulk), submit with requestId
// replay, inbox/summary/history, comments, reactions, reminders and
// notifications, client reviewer links, the plan gate, the expiry job, and a
// two-stage workflow end to end: a client reviewer approves through its link
// and the sandbox connector publishes (real pg-boss worker).
import { createHash } from 'node:crypto';
import PDFDocument from 'pdfkit';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerPublishJobs } from '../../server/jobs/publish.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { expireDueReviews, expireReviewAttachments } from '../../server/jobs/reviews.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
beforeAll(async () => {
  server = await startTestServer('reviews');
  api = client(server);
  (server.config as { PUBLIC_BASE_URL?: string }).PUBLIC_BASE_URL = server.baseUrl;
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerPublishJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 60_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
});

type Owner = Awaited<ReturnType<typeof signup>>;
interface Ws extends Owner {
  ws: string;
  channel: string;
  /** A member with a session: [userId, token]. */
  member(role: 'viewer' | 'editor' | 'manager', tag: string): Promise<{ userId: string; token: string }>;
  draft(caption?: string, extra?: Record<string, unknown>): Promise<string>;
  status(contentId: string): Promise<{ status: string; scheduled_at: Date | null; intended_publish_at: Date | null; publish_job_id: string | null }>;
}

async function workspace(): Promise<Ws> {
  const o = await signup(api);
  const ws = `/v1/workspaces/${o.workspaceId}`;
  const ch = await api.post(`${ws}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, { token: o.token });
  expect(ch.status, JSON.stringify(ch.body)).toBe(201);
  const channel = (ch.body.data.id ?? ch.body.data.integration?.id) as string;
  return {
    ...o,
    ws,
    channel,
    member: async (role, tag) => {
      const email = `${tag}-${Math.random().toString(36).slice(2, 7)}@example.com`;
      const r = await api.post(`${ws}/members`, { email, role }, { token: o.token });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      const userId = (await server.owner.query(`select id from app.users where lower(email) = $1`, [email])).rows[0].id as string;
      await server.owner.query(`update app.users set status = 'active', password_hash = 'not-a-real-hash' where id = $1`, [userId]);
      const token = `prs_test_${userId.replace(/-/g, '')}`;
      await server.owner.query(
        `insert into app.sessions (user_id, organization_id, token_hash, expires_at) values ($1, $2, $3, now() + interval '1 day')`,
        [userId, o.organizationId, createHash('sha256').update(token).digest()],
      );
      return { userId, token };
    },
    draft: async (caption = 'Hello review', extra = {}) => {
      const r = await api.post(`${ws}/content`, { intent: 'draft', caption, channels: [{ integrationId: channel }], ...extra }, { token: o.token });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body.data.editions[0].id as string;
    },
    status: async (id) =>
      (await server.owner.query(`select status, scheduled_at, intended_publish_at, publish_job_id from app.content_items where id = $1`, [id])).rows[0],
  };
}

const stage = (name: string, approvers: unknown[], rule: 'all' | 'any' | 'quorum' = 'all', extra: Record<string, unknown> = {}) => ({
  name,
  rule,
  approvers,
  ...extra,
});
const member = (userId: string) => ({ type: 'member', userId });

/** A real one-page PDF, rendered by pdfkit. */
async function renderedPdf(text: string): Promise<Buffer> {
  const doc = new PDFDocument({ size: 'A4' });
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((resolve) => doc.on('end', resolve));
  doc.fontSize(14).text(text);
  doc.end();
  await ended;
  return Buffer.concat(chunks);
}
const clientReviewer = (email: string, name = 'Client') => ({ type: 'client', email, name });

async function liveJobs(contentId: string) {
  return Number(
    (await server.owner.query(`select count(*) from pgboss.job where name = 'content.publish' and singleton_key = $1 and state in ('created', 'retry')`, [contentId]))
      .rows[0].count,
  );
}

async function waitFor<T>(what: string, fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('approval workflows and the review policy', () => {
  it('creates, lists in routing order, reorders, routes, updates, refuses duplicates and deletes', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const a = await api.post(`${w.ws}/approval-workflows`, { name: 'LinkedIn only', match: { platforms: ['linkedin'] }, stages: [stage('Brand', [member(w.userId)])] }, t);
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    expect(a.body.data).toMatchObject({ position: 0, active: true, autoScheduleOnApproval: false, inUse: false });
    const b = await api.post(`${w.ws}/approval-workflows`, { name: 'Catch-all', stages: [stage('Any', [member(w.userId)], 'any')] }, t);
    expect(b.body.data.position).toBe(1);
    expect(b.body.data.match).toEqual({ integrationIds: [], platforms: [], tagIds: [], campaignIds: [] });
    expect((await api.post(`${w.ws}/approval-workflows`, { name: ' catch-ALL ', stages: [stage('S', [member(w.userId)])] }, t)).body.error.code).toBe('NAME_TAKEN');

    // Routing: the channel is x, so the catch-all routes it.
    const content = await w.draft();
    let res = await api.post(`${w.ws}/reviews/resolve`, { contentIds: [content] }, t);
    expect(res.status).toBe(200);
    expect(res.body.data[0]).toMatchObject({ contentId: content, platform: 'x', workflow: { id: b.body.data.id }, reviewRequired: false, approved: false });
    // Unsaved channels route as authored; an x-only workflow first in order wins.
    const c = await api.post(`${w.ws}/approval-workflows`, { name: 'X first', match: { integrationIds: [w.channel] }, stages: [stage('S', [member(w.userId)])] }, t);
    res = await api.put(`${w.ws}/approval-workflows/order`, { workflowIds: [c.body.data.id, a.body.data.id, b.body.data.id] }, t);
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: any) => x.name)).toEqual(['X first', 'LinkedIn only', 'Catch-all']);
    res = await api.post(`${w.ws}/reviews/resolve`, { channels: [{ integrationId: w.channel }] }, t);
    expect(res.body.data[0]).toMatchObject({ contentId: null, workflow: { id: c.body.data.id } });
    // Inactive workflows do not route.
    await api.patch(`${w.ws}/approval-workflows/${c.body.data.id}`, { active: false }, t);
    res = await api.post(`${w.ws}/reviews/resolve`, { channels: [{ integrationId: w.channel }] }, t);
    expect(res.body.data[0].workflow.id).toBe(b.body.data.id);
    // Reorder must list every workflow once.
    res = await api.put(`${w.ws}/approval-workflows/order`, { workflowIds: [a.body.data.id] }, t);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_FAILED');
    // Stage rules: quorum within the approvers; approvers are editors or managers; unknown channel in match.
    res = await api.post(`${w.ws}/approval-workflows`, { name: 'Bad', stages: [stage('Q', [member(w.userId)], 'quorum', { quorum: 2 })] }, t);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: any) => f.code)).toContain('out_of_range');
    const viewer = await w.member('viewer', 'viewer');
    res = await api.post(`${w.ws}/approval-workflows`, { name: 'Bad2', match: { integrationIds: [crypto.randomUUID()] }, stages: [stage('V', [member(viewer.userId)])] }, t);
    expect(res.body.error.details.fields.map((f: any) => f.code).sort()).toEqual(['not_an_editor', 'not_found']);
    // Managers only write workflows.
    const editor = await w.member('editor', 'editor');
    expect((await api.post(`${w.ws}/approval-workflows`, { name: 'E', stages: [stage('S', [member(w.userId)])] }, { token: editor.token })).body.error.code).toBe('ROLE_REQUIRED');
    expect((await api.get(`${w.ws}/approval-workflows`, { token: viewer.token })).status).toBe(200);
    // In use by an open review: 409, deactivate instead; then deletable once the review is closed.
    const review = await api.post(`${w.ws}/reviews`, { title: 'R', workflowId: b.body.data.id, contentIds: [content] }, t);
    expect(review.status, JSON.stringify(review.body)).toBe(201);
    res = await api.delete(`${w.ws}/approval-workflows/${b.body.data.id}`, t);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'WORKFLOW_IN_USE', details: { reviewIds: [review.body.data.id] } });
    const cancelled = await api.post(`${w.ws}/reviews/${review.body.data.id}/cancel`, undefined, t);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(201);
    res = await api.delete(`${w.ws}/approval-workflows/${b.body.data.id}`, t);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ id: b.body.data.id, deleted: true });
    expect((await api.get(`${w.ws}/approval-workflows/${b.body.data.id}`, t)).status).toBe(404);
  });

  it('required policy: schedule, publish and intent schedule answer 409 REVIEW_REQUIRED with the routing', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const wf = await api.post(`${w.ws}/approval-workflows`, { name: 'All', stages: [stage('S', [member(w.userId)])] }, t);
    expect((await api.get(`${w.ws}/review-policy`, t)).body.data).toEqual({ reviewPolicy: 'none' });
    expect((await api.put(`${w.ws}/review-policy`, { reviewPolicy: 'required' }, t)).body.data).toEqual({ reviewPolicy: 'required' });
    const content = await w.draft();
    const later = new Date(Date.now() + 86_400_000).toISOString();
    let res = await api.patch(`${w.ws}/content/${content}/schedule`, { scheduledAt: later }, t);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('REVIEW_REQUIRED');
    expect(res.body.error.details.resolutions[0]).toMatchObject({ contentId: content, workflow: { id: wf.body.data.id }, reviewRequired: true, approved: false });
    res = await api.post(`${w.ws}/content/${content}/publish`, undefined, t);
    expect(res.body.error.code).toBe('REVIEW_REQUIRED');
    res = await api.post(`${w.ws}/content`, { intent: 'schedule', scheduledAt: later, caption: 'x', channels: [{ integrationId: w.channel }] }, t);
    expect(res.body.error.code).toBe('REVIEW_REQUIRED');
    // Approved, it schedules; an edit after approval needs a new review.
    const r = await api.post(`${w.ws}/reviews`, { title: 'R', workflowId: wf.body.data.id, contentIds: [content] }, t);
    await api.post(`${w.ws}/reviews/${r.body.data.id}/send`, undefined, t);
    const item = r.body.data.items[0].id;
    res = await api.post(`${w.ws}/reviews/${r.body.data.id}/items/${item}/decision`, { decision: 'approved' }, t);
    expect(res.body.data).toMatchObject({ itemState: 'approved', contentStatus: 'draft', reviewStatus: 'completed' });
    expect((await api.post(`${w.ws}/reviews/resolve`, { contentIds: [content] }, t)).body.data[0].approved).toBe(true);
    expect((await api.patch(`${w.ws}/content/${content}/schedule`, { scheduledAt: later }, t)).status).toBe(200);
    await api.post(`${w.ws}/content/${content}/revert-to-draft`, {}, t);
    await api.patch(`${w.ws}/content/${content}`, { caption: 'changed after approval' }, t);
    expect((await api.patch(`${w.ws}/content/${content}/schedule`, { scheduledAt: later }, t)).body.error.code).toBe('REVIEW_REQUIRED');
  });

  it('review routes need the Standard plan: a basic organization gets 401 PLAN_REQUIRED', async () => {
    const w = await workspace();
    await server.owner.query(`update app.organizations set plan = 'basic', trial_ends_at = null where id = $1`, [w.organizationId]);
    const res = await api.get(`${w.ws}/reviews`, { token: w.token });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'PLAN_REQUIRED', details: { plan: 'basic', requiredPlan: 'standard' } });
    expect((await api.get(`${w.ws}/approval-workflows`, { token: w.token })).body.error.code).toBe('PLAN_REQUIRED');
    expect((await api.get(`${w.ws}/reviews/history/content/${crypto.randomUUID()}`, { token: w.token })).body.error.code).toBe('PLAN_REQUIRED');
    // Content routes stay on basic.
    expect((await api.get(`${w.ws}/content`, { token: w.token })).status).toBe(200);
  });
});

describe('reviews: transitions, content following its items, decisions', () => {
  it('send holds content (a scheduled edition keeps its time, loses its job); cancel returns it', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const draft = await w.draft('a draft');
    const at = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const sched = await w.draft('to schedule');
    await api.patch(`${w.ws}/content/${sched}/schedule`, { scheduledAt: at }, t);
    expect(await liveJobs(sched)).toBe(1);
    const r = await api.post(`${w.ws}/reviews`, { title: 'Week 1', message: 'Please look', stages: [stage('Me', [member(w.userId)])], contentIds: [draft, sched] }, t);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.data).toMatchObject({ status: 'draft', configRevision: 1, title: 'Week 1' });
    expect(r.body.data.items.map((i: any) => i.state)).toEqual(['pending', 'pending']);
    // An edition is in one open review at a time.
    const again = await api.post(`${w.ws}/reviews`, { title: 'Dup', stages: [stage('Me', [member(w.userId)])], contentIds: [draft] }, t);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONTENT_IN_REVIEW');
    const send = await api.post(`${w.ws}/reviews/${r.body.data.id}/send`, undefined, t);
    expect(send.status).toBe(201);
    expect(send.body.data).toMatchObject({ status: 'active', links: [] });
    expect((await w.status(draft)).status).toBe('pending_approval');
    const held = await w.status(sched);
    expect(held.status).toBe('pending_approval');
    expect(held.intended_publish_at?.getTime()).toBe(new Date(at).getTime());
    expect(await liveJobs(sched)).toBe(0);
    // Content in review: no edit (400), no schedule or publish (409 REVIEW_IN_PROGRESS), no delete.
    let res = await api.patch(`${w.ws}/content/${draft}`, { caption: 'edit' }, t);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_CONTENT_STATUS');
    res = await api.patch(`${w.ws}/content/${draft}/schedule`, { scheduledAt: at }, t);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'REVIEW_IN_PROGRESS', details: { reviewId: r.body.data.id } });
    expect((await api.post(`${w.ws}/content/${draft}/publish`, undefined, t)).body.error.code).toBe('REVIEW_IN_PROGRESS');
    expect((await api.delete(`${w.ws}/content/${draft}`, t)).body.error.code).toBe('REVIEW_IN_PROGRESS');
    // A sent review cannot be sent again; cancel returns content where it was.
    expect((await api.post(`${w.ws}/reviews/${r.body.data.id}/send`, undefined, t)).body.error.code).toBe('INVALID_REVIEW_STATUS');
    res = await api.post(`${w.ws}/reviews/${r.body.data.id}/cancel`, undefined, t);
    expect(res.body.data).toEqual({ reviewId: r.body.data.id, status: 'cancelled' });
    expect((await w.status(draft)).status).toBe('draft');
    const back = await w.status(sched);
    expect(back.status).toBe('scheduled');
    expect(back.scheduled_at?.getTime()).toBe(new Date(at).getTime());
    expect(await liveJobs(sched)).toBe(1);
    expect((await api.post(`${w.ws}/reviews/${r.body.data.id}/cancel`, undefined, t)).body.error.code).toBe('INVALID_REVIEW_STATUS');
    // Draft -> cancelled too; an empty review cannot be sent.
    const empty = await api.post(`${w.ws}/reviews`, { title: 'Empty', stages: [stage('Me', [member(w.userId)])] }, t);
    expect((await api.post(`${w.ws}/reviews/${empty.body.data.id}/send`, undefined, t)).body.error.code).toBe('REVIEW_EMPTY');
    expect((await api.post(`${w.ws}/reviews/${empty.body.data.id}/cancel`, undefined, t)).body.data.status).toBe('cancelled');
    const list = await api.get(`${w.ws}/reviews?status=cancelled`, t);
    expect(list.body.data.map((x: any) => x.id).sort()).toEqual([r.body.data.id, empty.body.data.id].sort());
  });

  it('decisions persona by persona: approver of the open stage, of a later stage, non-approver, viewer; all and quorum rules; rejection and edit', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const ann = await w.member('editor', 'ann');
    const bob = await w.member('editor', 'bob');
    const cat = await w.member('manager', 'cat');
    const viewer = await w.member('viewer', 'vic');
    const stranger = await w.member('editor', 'stranger');
    const c1 = await w.draft('one');
    const c2 = await w.draft('two');
    const r = await api.post(
      `${w.ws}/reviews`,
      {
        title: 'Two stages',
        stages: [stage('Team', [member(ann.userId), member(bob.userId)], 'all'), stage('Lead', [member(cat.userId), member(w.userId)], 'quorum', { quorum: 1 })],
        contentIds: [c1, c2],
      },
      t,
    );
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const rid = r.body.data.id;
    const [i1, i2] = [c1, c2].map((c) => r.body.data.items.find((x: any) => x.contentId === c).id);
    await api.post(`${w.ws}/reviews/${rid}/send`, undefined, t);
    const decide = (token: string, item: string, decision: string, comment?: string) =>
      api.post(`${w.ws}/reviews/${rid}/items/${item}/decision`, comment ? { decision, comment } : { decision }, { token });
    // Later-stage approver, non-approver, viewer: refused.
    expect((await decide(cat.token, i1, 'approved')).body.error.code).toBe('NOT_AN_APPROVER');
    expect((await decide(stranger.token, i1, 'approved')).body.error.code).toBe('NOT_AN_APPROVER');
    expect((await decide(viewer.token, i1, 'approved')).body.error.code).toBe('ROLE_REQUIRED');
    // Stage 1 (all): Ann then Bob close it; the Lead stage opens.
    let res = await decide(ann.token, i1, 'approved', 'fine');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ itemState: 'pending', currentStage: 0, contentStatus: 'pending_approval' });
    expect((await decide(ann.token, i1, 'approved')).body.error.code).toBe('ALREADY_DECIDED');
    // Revoke while the stage is open, decide again.
    expect((await api.post(`${w.ws}/reviews/${rid}/items/${i1}/revoke`, {}, { token: ann.token })).status).toBe(201);
    expect((await api.post(`${w.ws}/reviews/${rid}/items/${i1}/revoke`, {}, { token: ann.token })).body.error.code).toBe('NOTHING_TO_REVOKE');
    await decide(ann.token, i1, 'approved');
    res = await decide(bob.token, i1, 'approved');
    expect(res.body.data).toMatchObject({ itemState: 'pending', currentStage: 1 });
    // Now Ann is an approver of a closed stage: refused; Bob cannot revoke a closed stage.
    expect((await decide(ann.token, i1, 'approved')).body.error.code).toBe('NOT_AN_APPROVER');
    expect((await api.post(`${w.ws}/reviews/${rid}/items/${i1}/revoke`, {}, { token: bob.token })).body.error.code).toBe('NOTHING_TO_REVOKE');
    // Quorum 1 of the Lead stage: Cat approves, the item is approved, content is draft (no intended time).
    res = await decide(cat.token, i1, 'approved');
    expect(res.body.data).toMatchObject({ itemState: 'approved', contentStatus: 'draft', reviewStatus: 'active' });
    // Item 2: a change request rejects it and completes the review.
    res = await decide(bob.token, i2, 'changes_requested', 'too long');
    expect(res.body.data).toMatchObject({ itemState: 'changes_requested', contentStatus: 'rejected', reviewStatus: 'completed' });
    expect((await decide(ann.token, i2, 'approved')).body.error.code).toBe('INVALID_REVIEW_STATUS');
    // The content list's review filters: the rejected edition waits on an edit; the approved one can be scheduled.
    let list = await api.get(`${w.ws}/content?reviewLifecycleState=changes_requested`, t);
    expect(list.body.data.map((x: any) => [x.id, x.reviewLifecycle.nextAction, x.reviewLifecycle.blocker])).toEqual([[c2, 'edit', 'changes_requested']]);
    list = await api.get(`${w.ws}/content?reviewLifecycleNextAction=schedule&reviewLifecyclePhase=decided`, t);
    expect(list.body.data.map((x: any) => x.id)).toEqual([c1]);
    // Editing rejected content returns it to draft.
    res = await api.patch(`${w.ws}/content/${c2}`, { caption: 'shorter' }, t);
    expect(res.status).toBe(200);
    expect((await w.status(c2)).status).toBe('draft');
    // The review as read: decisions per item, history per content and per review.
    const got = await api.get(`${w.ws}/reviews/${rid}`, { token: viewer.token });
    expect(got.body.data.status).toBe('completed');
    expect(got.body.data.items.find((x: any) => x.id === i1).decisions.map((d: any) => [d.decision, d.revokedAt !== null])).toEqual([
      ['approved', true], ['approved', false], ['approved', false], ['approved', false],
    ]);
    const hist = await api.get(`${w.ws}/reviews/history`, t);
    expect(hist.body.meta).toMatchObject({ total: 1, hasMore: false });
    expect(hist.body.data[0].id).toBe(rid);
    const byContent = await api.get(`${w.ws}/reviews/history/content/${c2}`, t);
    expect(byContent.body.data, JSON.stringify(byContent.body)).toHaveLength(1);
    expect(byContent.body.data[0], JSON.stringify(byContent.body.data[0])).toMatchObject({ state: 'changes_requested', reviewStatus: 'completed' });
    const one = await api.get(`${w.ws}/reviews/history/${rid}`, t);
    expect(one.body.data.activity.map((a: any) => a.event)).toEqual(expect.arrayContaining(['sent', 'approved', 'revoked', 'stage_opened', 'changes_requested', 'completed']));
  });

  it('override (manager, reason required), bulk decisions with partial success, add and remove items, replace stages, update', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const ed = await w.member('editor', 'ed');
    const c1 = await w.draft('1');
    const c2 = await w.draft('2');
    const c3 = await w.draft('3');
    const r = await api.post(`${w.ws}/reviews`, { title: 'B', stages: [stage('S', [member(w.userId)])], contentIds: [c1, c2] }, t);
    const rid = r.body.data.id;
    // Update bumps the config revision; a stale one is refused.
    let res = await api.patch(`${w.ws}/reviews/${rid}`, { title: 'Bulk', expectedConfigRevision: 1 }, t);
    expect(res.body.data).toMatchObject({ configRevision: 2, review: { title: 'Bulk' } });
    expect((await api.patch(`${w.ws}/reviews/${rid}`, { title: 'x', expectedConfigRevision: 1 }, t)).body.error.code).toBe('REVIEW_CONFIG_STALE');
    await api.post(`${w.ws}/reviews/${rid}/send`, undefined, t);
    // Add an item to an active review: its content enters review at once.
    res = await api.post(`${w.ws}/reviews/${rid}/items`, { contentId: c3 }, t);
    expect(res.status).toBe(201);
    const i3 = res.body.data.id;
    expect((await w.status(c3)).status).toBe('pending_approval');
    // Remove it: content back to draft.
    res = await api.delete(`${w.ws}/reviews/${rid}/items/${i3}`, t);
    expect(res.body.data).toEqual({ reviewId: rid, itemId: i3, state: 'removed' });
    expect((await w.status(c3)).status).toBe('draft');
    // Replace the stages of the active review: Ed decides now; the old stage's decisions are kept.
    const [i1, i2] = [c1, c2].map((c) => r.body.data.items.find((x: any) => x.contentId === c).id);
    res = await api.put(`${w.ws}/reviews/${rid}/stages`, { stages: [stage('Ed', [member(ed.userId)])] }, t);
    expect(res.body.data).toMatchObject({ configRevision: 3, links: [] });
    // Override needs the manager role and a reason.
    expect((await api.post(`${w.ws}/reviews/${rid}/items/${i1}/override`, { decision: 'approved', reason: 'ok' }, { token: ed.token })).body.error.code).toBe('ROLE_REQUIRED');
    res = await api.post(`${w.ws}/reviews/${rid}/items/${i1}/override`, { decision: 'approved', reason: 'Approved by phone' }, t);
    expect(res.status).toBe(201);
    expect((await w.status(c1)).status).toBe('draft');
    // Bulk: one result per decision, each with its own outcome.
    res = await api.post(`${w.ws}/reviews/${rid}/items/decisions`, {
      decisions: [
        { itemId: i1, decision: 'approved' },
        { itemId: i2, decision: 'approved' },
        { itemId: crypto.randomUUID(), decision: 'approved' },
      ],
    }, { token: ed.token });
    expect(res.status).toBe(201);
    expect(res.body.data.map((x: any) => [x.ok, x.error?.code ?? null])).toEqual([[false, 'ITEM_ALREADY_DECIDED'], [true, null], [false, 'NOT_FOUND']]);
    expect(res.body.data[1].result).toMatchObject({ itemState: 'approved', reviewStatus: 'completed' });
  });

  it('submit: groups, replays by requestId, refuses REVIEW_REQUIRED, REVIEW_WORKFLOW_UNAVAILABLE and REVIEW_SUBMIT_STALE; preview says why', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const wf = await api.post(`${w.ws}/approval-workflows`, { name: 'WF', stages: [stage('S', [member(w.userId)])] }, t);
    const other = await api.post(`${w.ws}/approval-workflows`, { name: 'LinkedIn', match: { platforms: ['linkedin'] }, stages: [stage('S', [member(w.userId)])] }, t);
    await api.put(`${w.ws}/review-policy`, { reviewPolicy: 'required' }, t);
    const [c1, c2, c3] = [await w.draft('1'), await w.draft('2'), await w.draft('3')];
    const resolved = (await api.post(`${w.ws}/reviews/resolve`, { contentIds: [c1, c2, c3] }, t)).body.data;
    // None with schedule under required: 409 with the routing, nothing done.
    let res = await api.post(`${w.ws}/reviews/submit`, { items: [{ contentId: c1, choice: { type: 'none' }, action: 'schedule', scheduledAt: new Date(Date.now() + 86_400_000).toISOString() }] }, t);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'REVIEW_REQUIRED', details: { resolutions: [{ contentId: c1 }] } });
    // A workflow that does not match the channel.
    res = await api.post(`${w.ws}/reviews/submit`, { items: [{ contentId: c1, choice: { type: 'workflow', workflowId: other.body.data.id } }] }, t);
    expect(res.body.error.code).toBe('REVIEW_WORKFLOW_UNAVAILABLE');
    // A stale version.
    res = await api.post(`${w.ws}/reviews/submit`, { items: [{ contentId: c1, contentVersion: resolved[0].contentVersion + 1, choice: { type: 'workflow', workflowId: wf.body.data.id } }] }, t);
    expect(res.body.error.code).toBe('REVIEW_SUBMIT_STALE');
    // Two groups: the workflow group (c1, c2) and custom stages (c3): two reviews sent at once.
    const body = {
      requestId: 'req-1',
      title: 'Launch',
      items: [
        { contentId: c1, contentVersion: resolved[0].contentVersion, group: 'a', choice: { type: 'workflow', workflowId: wf.body.data.id } },
        { contentId: c2, contentVersion: resolved[1].contentVersion, group: 'a', choice: { type: 'workflow', workflowId: wf.body.data.id } },
        { contentId: c3, group: 'b', choice: { type: 'custom', stages: [stage('Client', [clientReviewer('client@example.com', 'Cli')])] } },
      ],
    };
    res = await api.post(`${w.ws}/reviews/submit`, body, t);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.replayed).toBe(false);
    const results = res.body.data.results;
    expect(results.map((x: any) => x.outcome)).toEqual(['review_sent', 'review_sent', 'review_sent']);
    expect(results[0].reviewId).toBe(results[1].reviewId);
    expect(results[2].reviewId).not.toBe(results[0].reviewId);
    expect(results[2].links[0]).toMatchObject({ email: 'client@example.com', name: 'Cli' });
    expect(results[2].links[0].token).toMatch(/^prr_[0-9a-f]{64}$/);
    // Beside the token, the review page's address with the token in its fragment (server/routes/reviews.ts).
    expect(results[2].links[0].url).toBe(`${server.baseUrl}/review#token=${results[2].links[0].token}`);
    for (const c of [c1, c2, c3]) expect((await w.status(c)).status).toBe('pending_approval');
    // The retry replays the stored results; nothing is made twice.
    const replay = await api.post(`${w.ws}/reviews/submit`, body, t);
    expect(replay.body.data).toEqual({ ...res.body.data, replayed: true });
    expect(Number((await server.owner.query(`select count(*) from app.reviews where workspace_id = $1`, [w.workspaceId])).rows[0].count)).toBe(2);
    // Items without a group are a review each.
    const [c5, c6] = [await w.draft('5'), await w.draft('6')];
    res = await api.post(`${w.ws}/reviews/submit`, { items: [c5, c6].map((contentId) => ({ contentId, choice: { type: 'workflow', workflowId: wf.body.data.id } })) }, t);
    expect(res.body.data.requestId).toBeNull();
    expect(new Set(res.body.data.results.map((x: any) => x.reviewId)).size).toBe(2);
    // Preview: in review, wrong status, unknown.
    const c4 = await w.draft('4');
    res = await api.post(`${w.ws}/reviews/preview`, { contentIds: [c1, c4, crypto.randomUUID()] }, t);
    expect(res.status).toBe(201);
    expect(res.body.data.map((x: any) => [x.eligible, x.reason])).toEqual([[false, 'in_review'], [true, null], [false, 'not_found']]);
  });
});

describe('inbox, comments, reactions, reminders and notifications', () => {
  it('the inbox lists what waits on the caller by platform and urgency; summary counts it', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const ann = await w.member('editor', 'ann');
    const c1 = await w.draft('1');
    const c2 = await w.draft('2');
    const r = await api.post(`${w.ws}/reviews`, {
      title: 'Inbox', dueAt: new Date(Date.now() + 3 * 86_400_000).toISOString(),
      stages: [stage('Ann', [member(ann.userId)], 'all', { dueInHours: 1 })], contentIds: [c1, c2],
    }, t);
    await api.post(`${w.ws}/reviews/${r.body.data.id}/send`, undefined, t);
    let res = await api.get(`${w.ws}/reviews/inbox?platform=all&urgency=all`, { token: ann.token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((x: any) => x.contentId).sort()).toEqual([c1, c2].sort());
    expect(res.body.data[0]).toMatchObject({ reviewTitle: 'Inbox', currentStageName: 'Ann' });
    expect(['today', 'week']).toContain(res.body.data[0].urgency);
    expect((await api.get(`${w.ws}/reviews/inbox?platform=linkedin&urgency=all`, { token: ann.token })).body.data).toEqual([]);
    expect((await api.get(`${w.ws}/reviews/inbox?platform=x&urgency=overdue`, { token: ann.token })).body.data).toEqual([]);
    // Overdue once the stage's due time passed.
    await server.owner.query(`update app.review_items set stage_opened_at = now() - interval '2 hours' where content_id = $1`, [c1]);
    res = await api.get(`${w.ws}/reviews/inbox?platform=x&urgency=overdue`, { token: ann.token });
    expect(res.body.data.map((x: any) => x.contentId)).toEqual([c1]);
    res = await api.get(`${w.ws}/reviews/summary`, { token: ann.token });
    expect(res.body.data.total).toBe(2);
    expect(res.body.data.overdue).toBe(1);
    // The owner is no approver: nothing waits on them.
    expect((await api.get(`${w.ws}/reviews/summary`, t)).body.data).toEqual({ total: 0, overdue: 0, today: 0, week: 0, later: 0 });
    // A bad urgency is a 400.
    expect((await api.get(`${w.ws}/reviews/inbox?platform=x&urgency=soon`, t)).status).toBe(400);
    // Decided items leave the inbox.
    await api.post(`${w.ws}/reviews/${r.body.data.id}/items/${r.body.data.items.find((x: any) => x.contentId === c2).id}/decision`, { decision: 'approved' }, { token: ann.token });
    expect((await api.get(`${w.ws}/reviews/summary`, { token: ann.token })).body.data.total).toBe(1);
  });

  it('comments with mentions, reactions (one per person), remind (once an hour), notifications feed with read state', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const ann = await w.member('editor', 'ann');
    const bob = await w.member('editor', 'bob');
    const c1 = await w.draft('1');
    const r = await api.post(`${w.ws}/reviews`, { title: 'Talk', stages: [stage('Ann', [member(ann.userId)])], contentIds: [c1] }, t);
    const rid = r.body.data.id;
    const iid = r.body.data.items[0].id;
    await api.post(`${w.ws}/reviews/${rid}/send`, undefined, t);
    let res = await api.post(`${w.ws}/reviews/${rid}/items/${iid}/comments`, { body: '@bob can you check?', mentions: [bob.userId] }, t);
    expect(res.status).toBe(201);
    const commentId = res.body.data.id;
    expect(res.body.data).toMatchObject({ kind: 'comment', body: '@bob can you check?', mentions: [bob.userId] });
    expect((await api.post(`${w.ws}/reviews/${rid}/items/${iid}/comments`, { body: 'x', mentions: [crypto.randomUUID()] }, t)).body.error.code).toBe('VALIDATION_FAILED');
    // Reactions: one per person, replaced; removed.
    const react = (token: string, emoji: string) => api.post(`${w.ws}/reviews/${rid}/items/${iid}/activity/${commentId}/reactions`, { emoji }, { token });
    for (const [who, emoji] of [[ann.token, '👍'], [bob.token, '👍'], [bob.token, '🎉']]) {
      const rr = await react(who, emoji);
      expect(rr.status, JSON.stringify(rr.body)).toBe(201);
    }
    res = await api.get(`${w.ws}/reviews/${rid}/items/${iid}/activity`, t);
    const entry = res.body.data.find((a: any) => a.id === commentId);
    expect(entry.reactions.map((x: any) => [x.emoji, x.count])).toEqual([['🎉', 1], ['👍', 1]]);
    res = await api.delete(`${w.ws}/reviews/${rid}/items/${iid}/activity/${commentId}/reactions/${encodeURIComponent('🎉')}`, { token: bob.token });
    expect(res.body.data).toEqual({ activityId: commentId, emoji: '🎉', reacted: false });
    expect((await api.delete(`${w.ws}/reviews/${rid}/items/${iid}/activity/${commentId}/reactions/${encodeURIComponent('🎉')}`, { token: bob.token })).status).toBe(404);
    // Remind: Ann is pending; a second reminder within the hour is refused.
    res = await api.post(`${w.ws}/reviews/${rid}/remind`, { message: 'Friday!' }, t);
    expect(res.body.data).toMatchObject({ reminded: 1, notifications: 1 });
    res = await api.post(`${w.ws}/reviews/${rid}/remind`, {}, t);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('REMIND_TOO_SOON');
    // Ann's feed: the review request and the reminder; Bob's: the mention.
    res = await api.get('/v1/me/notifications?limit=1', { token: ann.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data[0]).toMatchObject({ kind: 'review_reminder', reviewId: rid, read: false });
    expect(res.body.meta).toMatchObject({ limit: 1, unread: 2 });
    const next = await api.get(`/v1/me/notifications?limit=1&cursor=${res.body.meta.nextCursor}`, { token: ann.token });
    expect(next.body.data[0].kind).toBe('review_requested');
    expect(next.body.meta.nextCursor).toBeNull();
    expect((await api.get('/v1/me/notifications', { token: bob.token })).body.data.map((n: any) => n.kind)).toEqual(['mention']);
    res = await api.post('/v1/me/notifications/read', { all: true }, { token: ann.token });
    expect(res.body.data).toEqual({ marked: 2 });
    expect((await api.get('/v1/me/notifications?unread=true', { token: ann.token })).body.data).toEqual([]);
    // Session only: an API key is refused.
    const key = await createKey(api, w.token, w.workspaceId, { role: 'editor' });
    expect((await api.get('/v1/me/notifications', { token: key.key })).body.error.code).toBe('SESSION_REQUIRED');
  });

  it('comment attachments: init, PUT, complete (type from the bytes), comment with them; abort and expiry leave no file', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const c1 = await w.draft('1');
    const r = await api.post(`${w.ws}/reviews`, { title: 'Files', stages: [stage('Me', [member(w.userId)])], contentIds: [c1] }, t);
    const base = `${w.ws}/reviews/${r.body.data.id}/items/${r.body.data.items[0].id}/comment-attachments`;
    const pdf = Buffer.from('%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n');
    // Refused at init: another type, too large.
    expect((await api.post(`${base}/init`, { filename: 'a.txt', contentType: 'text/plain', size: 10 }, t)).status).toBe(415);
    const big = await api.post(`${base}/init`, { filename: 'big.pdf', contentType: 'application/pdf', size: 26_214_401 }, t);
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('MEDIA_TOO_LARGE');
    // A PDF: init, PUT, complete.
    let res = await api.post(`${base}/init`, { filename: 'brief.pdf', contentType: 'application/pdf', size: pdf.length }, t);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const att = res.body.data;
    expect(att).toMatchObject({ state: 'pending', viewUrl: null });
    expect((await api.post(`${base}/${att.id}/complete`, undefined, t)).body.error.code).toBe('UPLOAD_NOT_RECEIVED');
    const put = await fetch(att.uploadUrl, { method: 'PUT', headers: att.headers, body: pdf });
    expect(put.status).toBeLessThan(300);
    res = await api.post(`${base}/${att.id}/complete`, undefined, t);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ state: 'completed', fileSize: pdf.length, contentType: 'application/pdf' });
    const served = await fetch(res.body.data.viewUrl);
    expect(Buffer.from(await served.arrayBuffer()).equals(pdf)).toBe(true);
    // Completing again answers the same attachment.
    expect((await api.post(`${base}/${att.id}/complete`, undefined, t)).body.data.state).toBe('completed');
    // A comment carries it; the activity signs its view URL.
    res = await api.post(`${w.ws}/reviews/${r.body.data.id}/items/${r.body.data.items[0].id}/comments`, { body: 'see the brief', attachmentIds: [att.id] }, t);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.attachments).toEqual([expect.objectContaining({ id: att.id, filename: 'brief.pdf', contentType: 'application/pdf' })]);
    expect(JSON.stringify(res.body)).not.toContain('storageKey');
    expect((await api.post(`${w.ws}/reviews/${r.body.data.id}/items/${r.body.data.items[0].id}/comments`, { body: 'again', attachmentIds: [att.id] }, t)).status).toBe(400);
    // Bytes that are not what was declared: 415, and the bytes are gone.
    const liar = (await api.post(`${base}/init`, { filename: 'x.png', contentType: 'image/png', size: pdf.length }, t)).body.data;
    await fetch(liar.uploadUrl, { method: 'PUT', headers: liar.headers, body: pdf });
    res = await api.post(`${base}/${liar.id}/complete`, undefined, t);
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('UNSUPPORTED_MEDIA_FORMAT');
    // Abort: the keys are queued for the media purge job.
    const gone = (await api.post(`${base}/init`, { filename: 'b.pdf', contentType: 'application/pdf', size: pdf.length }, t)).body.data;
    await fetch(gone.uploadUrl, { method: 'PUT', headers: gone.headers, body: pdf });
    res = await api.post(`${base}/${gone.id}/abort`, undefined, t);
    expect(res.body.data).toEqual({ attachmentId: gone.id, state: 'aborted' });
    expect((await api.post(`${base}/${gone.id}/abort`, undefined, t)).body.error.code).toBe('UPLOAD_SESSION_CLOSED');
    const garbage = async (id: string) =>
      (await server.owner.query(`select reason from app.media_storage_garbage where storage_key like '%' || $1 order by 1`, [id])).rows.map((x) => x.reason);
    expect(await garbage(gone.id)).toEqual(['upload_aborted', 'upload_aborted']);
    // Never completed: the job expires it.
    const late = (await api.post(`${base}/init`, { filename: 'c.pdf', contentType: 'application/pdf', size: pdf.length }, t)).body.data;
    await server.owner.query(`update app.review_attachments set expires_at = now() - interval '1 second' where id = $1`, [late.id]);
    expect(await expireReviewAttachments(server.pool)).toBe(1);
    expect(await garbage(late.id)).toEqual(['upload_expired', 'upload_expired']);
    expect((await api.post(`${base}/${late.id}/complete`, undefined, t)).body.error.code).toBe('UPLOAD_SESSION_CLOSED');
  });

  it('comment attachments: a rendered PDF is accepted; a file named .pdf that is no PDF is 415 and stays uncompleted', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const c1 = await w.draft('1');
    const r = await api.post(`${w.ws}/reviews`, { title: 'PDFs', stages: [stage('Me', [member(w.userId)])], contentIds: [c1] }, t);
    const base = `${w.ws}/reviews/${r.body.data.id}/items/${r.body.data.items[0].id}/comment-attachments`;
    const attach = async (filename: string, bytes: Buffer) => {
      const a = (await api.post(`${base}/init`, { filename, contentType: 'application/pdf', size: bytes.length }, t)).body.data;
      expect((await fetch(a.uploadUrl, { method: 'PUT', headers: a.headers, body: bytes })).status).toBeLessThan(300);
      return { id: a.id as string, res: await api.post(`${base}/${a.id}/complete`, undefined, t) };
    };
    const pdf = await renderedPdf('The brief: launch on Monday.');
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const ok = await attach('brief.pdf', pdf);
    expect(ok.res.status, JSON.stringify(ok.res.body)).toBe(201);
    expect(ok.res.body.data).toMatchObject({ state: 'completed', fileSize: pdf.length, contentType: 'application/pdf' });
    expect(Buffer.from(await (await fetch(ok.res.body.data.viewUrl)).arrayBuffer()).equals(pdf)).toBe(true);

    // Renamed: a PNG, and text that mentions PDF, both called .pdf.
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
    for (const [name, bytes] of [['image.pdf', png], ['notes.pdf', Buffer.from('PDF notes, not a PDF: application/pdf (they look like application/pdf)\n')]] as const) {
      const bad = await attach(name, bytes);
      expect(bad.res.status, name).toBe(415);
      expect(bad.res.body.error.code).toBe('UNSUPPORTED_MEDIA_FORMAT');
      expect(bad.res.body.error.details).toMatchObject({ attachmentId: bad.id, declared: 'application/pdf' });
      const row = await server.owner.query(`select state, file_size from app.review_attachments where id = $1`, [bad.id]);
      expect(row.rows).toEqual([{ state: 'pending', file_size: null }]);
    }
  });

  it('the expiry job expires an active review past its due time and returns pending content to draft', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const c1 = await w.draft('1');
    const r = await api.post(`${w.ws}/reviews`, { title: 'Due', dueAt: new Date(Date.now() + 60_000).toISOString(), stages: [stage('Me', [member(w.userId)])], contentIds: [c1] }, t);
    await api.post(`${w.ws}/reviews/${r.body.data.id}/send`, undefined, t);
    expect(await expireDueReviews(server.pool)).toBe(0);
    await server.owner.query(`update app.reviews set due_at = now() - interval '1 second' where id = $1`, [r.body.data.id]);
    expect(await expireDueReviews(server.pool)).toBe(1);
    expect(await expireDueReviews(server.pool)).toBe(0);
    expect((await api.get(`${w.ws}/reviews/${r.body.data.id}`, t)).body.data.status).toBe('expired');
    expect((await w.status(c1)).status).toBe('draft');
  });
});

describe('client reviewers, end to end', () => {
  it('two-stage workflow: member approves, the client approves through its link, the sandbox publishes', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const other = await workspace();
    const wf = await api.post(`${w.ws}/approval-workflows`, {
      name: 'Agency', autoScheduleOnApproval: true,
      stages: [stage('Team', [member(w.userId)]), stage('Client', [clientReviewer('Client@Example.com', 'Clara')])],
    }, t);
    expect(wf.status, JSON.stringify(wf.body)).toBe(201);
    const intended = new Date(Date.now() + 4000).toISOString();
    const content = await w.draft('Launch day', { intendedPublishAt: intended });
    const sub = await api.post(`${w.ws}/reviews/submit`, { requestId: 'e2e', title: 'Launch', items: [{ contentId: content, choice: { type: 'workflow', workflowId: wf.body.data.id } }] }, t);
    expect(sub.status, JSON.stringify(sub.body)).toBe(200);
    const { reviewId, itemId, links } = sub.body.data.results[0];
    expect(links).toHaveLength(1);
    const link = links[0].token as string;
    // Stored only as its SHA-256.
    const stored = (await server.owner.query(`select encode(token_hash, 'hex') as h from app.review_links where review_id = $1`, [reviewId])).rows[0].h;
    expect(stored).toBe(createHash('sha256').update(link).digest('hex'));
    // The client sees its review; it is not its turn yet.
    let res = await api.get('/v1/review-link', { token: link });
    expect(res.status).toBe(200);
    expect(res.body.data.reviewer).toMatchObject({ email: 'client@example.com', name: 'Clara' });
    expect(res.body.data.items[0]).toMatchObject({ id: itemId, contentId: content, platform: 'x', caption: 'Launch day', awaitingYou: false });
    expect((await api.post(`/v1/review-link/items/${itemId}/decision`, { decision: 'approved' }, { token: link })).body.error.code).toBe('NOT_AN_APPROVER');
    // The link is nothing else: no workspace route, no other review's item.
    expect((await api.get(`${w.ws}/reviews/${reviewId}`, { token: link })).status).toBe(401);
    expect((await api.get(`${w.ws}/content`, { token: link })).status).toBe(401);
    expect((await api.get(`/v1/review-link/items/${crypto.randomUUID()}/activity`, { token: link })).status).toBe(404);
    // A session is not a link.
    expect((await api.get('/v1/review-link', { token: w.token })).status).toBe(401);
    expect((await api.get('/v1/review-link', { token: other.token })).status).toBe(401);
    // Stage 1: the owner approves; the client's stage opens.
    res = await api.post(`${w.ws}/reviews/${reviewId}/items/${itemId}/decision`, { decision: 'approved' }, t);
    expect(res.body.data).toMatchObject({ itemState: 'pending', currentStage: 1 });
    res = await api.get('/v1/review-link', { token: link });
    expect(res.body.data.items[0]).toMatchObject({ awaitingYou: true, currentStageName: 'Client' });
    // The content list's review filters find it: waiting on the client, in this client review.
    res = await api.get(`${w.ws}/content?reviewLifecycleActor=client&reviewLifecycleBatchId=${reviewId}`, t);
    expect(res.body.data.map((x: any) => x.id)).toEqual([content]);
    expect(res.body.data[0].reviewLifecycle).toEqual({
      phase: 'review', state: 'pending', blocksPublishing: true, actor: 'client', nextAction: 'decide', blocker: 'review_pending',
      clientReview: { batchId: reviewId, itemId },
    });
    expect((await api.get(`${w.ws}/content?reviewLifecycleItemId=${itemId}&reviewLifecycleBlocksPublishing=true`, t)).body.data).toHaveLength(1);
    expect((await api.get(`${w.ws}/content?reviewLifecycleActor=team`, t)).body.data).toEqual([]);
    expect((await api.get(`${w.ws}/content`, t)).body.data).toEqual([]);
    expect((await api.get(`${w.ws}/content?workflowStatus=in_review`, t)).body.data.map((x: any) => x.id)).toEqual([content]);
    // The client comments, reacts, reads its feed (review requested), then approves.
    res = await api.post(`/v1/review-link/items/${itemId}/comments`, { body: 'Love it' }, { token: link });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ actor: 'client:client@example.com', actorName: 'Clara' });
    expect((await api.post(`/v1/review-link/items/${itemId}/activity/${res.body.data.id}/reactions`, { emoji: '❤️' }, { token: link })).status).toBe(201);
    await api.post(`${w.ws}/reviews/${reviewId}/remind`, {}, t);
    res = await api.get('/v1/review-link/notifications', { token: link });
    expect(res.body.data.map((n: any) => n.kind)).toEqual(['review_reminder', 'review_requested']);
    res = await api.post(`/v1/review-link/items/${itemId}/decision`, { decision: 'approved', comment: 'Go' }, { token: link });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ itemState: 'approved', contentStatus: 'scheduled', reviewStatus: 'completed' });
    // The review is over: its link ends.
    expect((await api.get('/v1/review-link', { token: link })).status).toBe(401);
    // Audited as review_link.
    const audit = await server.owner.query(`select count(*) from audit.api_calls where actor_kind = 'review_link' and organization_id = $1`, [w.organizationId]);
    expect(Number(audit.rows[0].count)).toBeGreaterThan(3);
    // The sandbox publishes at the intended time.
    await waitFor('publication', () => w.status(content), (s) => s.status === 'sent', 30_000);
    const posts = (await server.owner.query(`select count(*) from app.sandbox_posts where content_item_id = $1`, [content])).rows[0].count;
    expect(Number(posts)).toBe(1);
  }, 60_000);
});

describe('reactions are one emoji (db/migrations/committed/000029-hostile-input-two.sql, split 05-reaction-emoji.sql)', () => {
  it('members and client links: text, markup and two emoji are 400 VALIDATION_FAILED; emoji of every shape are taken', async () => {
    const w = await workspace();
    const t = { token: w.token };
    const c1 = await w.draft('Emoji');
    const r = await api.post(`${w.ws}/reviews`, {
      title: 'Emoji', stages: [stage('All', [member(w.userId), clientReviewer('emoji@example.com', 'Emma')], 'any')], contentIds: [c1],
    }, t);
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    const rid = r.body.data.id;
    const iid = r.body.data.items[0].id;
    const sent = await api.post(`${w.ws}/reviews/${rid}/send`, undefined, t);
    const link = sent.body.data.links[0].token as string;
    const comment = await api.post(`${w.ws}/reviews/${rid}/items/${iid}/comments`, { body: 'React to me' }, t);
    const aid = comment.body.data.id;
    const member_ = `${w.ws}/reviews/${rid}/items/${iid}/activity/${aid}/reactions`;
    const client_ = `/v1/review-link/items/${iid}/activity/${aid}/reactions`;

    for (const junk of ['<script>', '<img/src=x>', 'ok', '+1', '👍👍', '\u200b👍', '👍\u200d', '🇫']) {
      for (const [path, token] of [[member_, w.token], [client_, link]] as const) {
        const res = await api.post(path, { emoji: junk }, { token });
        expect(res.status, `${path} ${JSON.stringify(junk)}`).toBe(400);
        expect(res.body.error.code).toBe('VALIDATION_FAILED');
        expect(res.body.error.details.fields).toEqual([{ field: 'emoji', code: 'not_an_emoji', message: expect.any(String) }]);
        const del = await api.delete(`${path}/${encodeURIComponent(junk)}`, { token });
        expect(del.status, `DELETE ${path} ${JSON.stringify(junk)}`).toBe(400);
      }
    }
    // Over 32 code points: refused by the contract before SQL.
    expect((await api.post(member_, { emoji: '👍'.repeat(33) }, t)).status).toBe(400);

    for (const emoji of ['👍', '❤️', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}', '1️⃣']) {
      const res = await api.post(member_, { emoji }, t);
      expect(res.status, emoji).toBe(201);
      expect(res.body.data).toEqual({ activityId: aid, emoji, reacted: true });
    }
    expect((await api.post(client_, { emoji: '🎉' }, { token: link })).status).toBe(201);
    const activity = await api.get(`${w.ws}/reviews/${rid}/items/${iid}/activity`, t);
    const entry = activity.body.data.find((a: any) => a.id === aid);
    // One per person: the member's last (the keycap) and the client's.
    expect(entry.reactions.map((x: any) => x.emoji).sort()).toEqual(['1️⃣', '🎉'].sort());
    expect((await api.delete(`${client_}/${encodeURIComponent('🎉')}`, { token: link })).body.data).toEqual({ activityId: aid, emoji: '🎉', reacted: false });
  });
});
