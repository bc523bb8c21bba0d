// The PDF analytics report over HTTP with a real pg-boss worker: POST queues
// it (standard plan), the job renders it, GET gives a signed download URL;
// the PDF's text, extracted here from its content streams, holds the same
// figures as the summary route for the same period; one page is rendered to
// PNG with Debian's pdftoppm when it is installed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inflateSync } from 'node:zlib';
import { PgBoss } from 'pg-boss';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeReports, registerAnalyticsJobs, runMetricsSync } from '../../server/jobs/analytics.ts';
import { PGBOSS_SCHEMA } from '../../server/jobs/queues.ts';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let boss: PgBoss;
beforeAll(async () => {
  server = await startTestServer('analytics_report');
  api = client(server);
  boss = new PgBoss({ connectionString: server.db.ownerUrl, schema: PGBOSS_SCHEMA, max: 3, superviseIntervalSeconds: 5 });
  boss.on('error', () => {});
  await boss.start();
  await registerAnalyticsJobs(boss, server.deps, { pollingIntervalSeconds: 0.5 });
}, 60_000);
afterAll(async () => {
  await boss?.stop({ graceful: false, close: true, timeout: 2000 }).catch(() => {});
  await server?.close();
});

const DAY = 86_400_000;
const isoDay = (d: Date) => d.toISOString().slice(0, 10);
const fmt = (n: number) => (Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 2 }));

/**
 * The text of a PDF: every text-showing operator (Tj, TJ) of every content
 * stream, inflated when FlateDecode, one line per operator. Enough for the
 * standard fonts pdfkit writes (hex strings in Windows-1252).
 */
function pdfText(pdf: Buffer): string {
  const s = pdf.toString('latin1');
  const lines: string[] = [];
  const decode = (hex: string) => Buffer.from(hex.replace(/\s+/g, ''), 'hex').toString('latin1');
  for (let i = s.indexOf('stream'); i !== -1; i = s.indexOf('stream', i + 6)) {
    if (s.slice(i - 3, i) === 'end') continue;
    let start = i + 6;
    if (s[start] === '\r') start++;
    if (s[start] === '\n') start++;
    const end = s.indexOf('endstream', start);
    const dict = s.slice(s.lastIndexOf('<<', i), i);
    let data = Buffer.from(s.slice(start, end), 'latin1');
    if (dict.includes('/FlateDecode')) {
      try {
        data = inflateSync(data);
      } catch {
        continue;
      }
    }
    const content = data.toString('latin1');
    for (const m of content.matchAll(/\[((?:<[0-9a-fA-F\s]*>|[-\d.\s])*)\]\s*TJ|<([0-9a-fA-F\s]*)>\s*Tj/g)) {
      lines.push(m[1] !== undefined ? [...m[1].matchAll(/<([0-9a-fA-F\s]*)>/g)].map((h) => decode(h[1])).join('') : decode(m[2]));
    }
    i = end;
  }
  return lines.join('\n');
}

async function waitForReport(url: string, token: string) {
  for (let i = 0; i < 120; i++) {
    const r = await api.get(url, { token });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    if (r.body.data.status === 'ready' || r.body.data.status === 'failed') return r.body.data;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error('the report was not rendered in time');
}

describe('PDF analytics report', () => {
  let owner: Awaited<ReturnType<typeof signup>>;
  let pdf: Buffer;
  let ready: { id: string; downloadUrl: string };
  const today = new Date();
  const from = isoDay(new Date(today.getTime() - 13 * DAY));
  const to = isoDay(today);

  beforeAll(async () => {
    owner = await signup(api);
    const ids: string[] = [];
    for (const platform of ['x', 'instagram']) {
      const r = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name: `Our ${platform}` }, { token: owner.token });
      ids.push(r.body.data.id);
    }
    const c = server.owner;
    await c.query('begin');
    await c.query('set local session_replication_role = replica');
    for (let i = 0; i < 6; i++) {
      const root = await c.query(`insert into app.content_roots (organization_id, workspace_id, caption) values ($1, $2, $3) returning id`,
        [owner.organizationId, owner.workspaceId, `Post number ${i + 1} about our launch`]);
      await c.query(
        `insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, sent_at, platform_post_id)
         values ($1, $2, $3, $4, 'sent', $5, 'sb-' || gen_random_uuid())`,
        [owner.organizationId, owner.workspaceId, root.rows[0].id, ids[i % 2], new Date(today.getTime() - (10 - i) * DAY).toISOString()]);
    }
    await c.query('commit');
    for (const daysAgo of [8, 4, 1]) {
      await runMetricsSync(server.deps, { at: () => new Date(today.getTime() - daysAgo * DAY) });
      await c.query(`update app.analytics_post_sync set last_attempt_at = last_attempt_at - interval '2 days' where workspace_id = $1`, [owner.workspaceId]);
      await c.query(`update app.integration_sync_state set account_attempt_at = account_attempt_at - interval '2 days' where workspace_id = $1`, [owner.workspaceId]);
    }
  });

  it('POST queues it, the job renders it, GET gives a signed download of a real PDF', async () => {
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    const created = await api.post(`/v1/workspaces/${owner.workspaceId}/analytics/reports`, { from, to }, { token: viewer.key });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body.data).toMatchObject({ status: 'queued', from, to, integrationIds: null, downloadUrl: null });
    const report = await waitForReport(`/v1/workspaces/${owner.workspaceId}/analytics/reports/${created.body.data.id}`, viewer.key);
    expect(report.status, report.error).toBe('ready');
    expect(report.fileSize).toBeGreaterThan(1000);
    expect(new Date(report.downloadUrlExpiresAt).getTime()).toBeGreaterThan(Date.now());
    const res = await fetch(report.downloadUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/pdf');
    expect(res.headers.get('content-disposition')).toContain(`analytics-${from}-${to}.pdf`);
    pdf = Buffer.from(await res.arrayBuffer());
    ready = report;
    expect(pdf.byteLength).toBe(report.fileSize);
    expect(pdf.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(pdf.subarray(-6).toString('latin1')).toContain('%%EOF');
    // The signature is the credential.
    const forged = new URL(report.downloadUrl);
    forged.searchParams.set('signature', 'AAAA');
    expect((await fetch(forged)).status).not.toBe(200);
  });

  it('its text holds the figures of the summary route for the same period, and the top posts', async () => {
    expect(pdf, 'the report of the test before').toBeTruthy();
    const text = pdfText(pdf);
    expect(text).toContain('Analytics report');
    expect(text).toContain(`Period: ${from} to ${to} (UTC)`);
    const summary = (await api.get(`/v1/workspaces/${owner.workspaceId}/analytics/summary?from=${from}&to=${to}`, { token: owner.token })).body.data;
    expect(summary.metrics.impressions.value).toBeGreaterThan(0);
    const rows: [string, string][] = [['Impressions', 'impressions'], ['Reach', 'reach'], ['Engagements', 'engagements'], ['Likes', 'likes'],
      ['Comments', 'comments'], ['Shares', 'shares'], ['Saves', 'saves'], ['Clicks', 'clicks'], ['Video views', 'videoViews'],
      ['Posts published', 'postsPublished'], ['Followers', 'followers'], ['Engagement rate (%)', 'engagementRatePercent']];
    for (const [label, key] of rows) {
      const f = summary.metrics[key];
      expect(text, label).toContain(`${label}: ${fmt(f.value)} | previous ${fmt(f.previous)}`);
    }
    const top = (await api.get(`/v1/workspaces/${owner.workspaceId}/analytics/posts?from=${from}&to=${to}&sortBy=impressions&limit=3`, { token: owner.token })).body.data;
    expect(text).toContain('Top posts by impressions');
    for (const p of top) expect(text).toContain(fmt(p.impressions));
    expect(text).toContain('Impressions and engagements per day');
    expect(text).toContain('Impressions per day by platform');
  });

  const pdftoppm = spawnSync('pdftoppm', ['-v']).error ? null : 'pdftoppm';
  it.skipIf(!pdftoppm)('renders its first page to PNG with pdftoppm', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pressroom-report-'));
    try {
      writeFileSync(path.join(dir, 'report.pdf'), pdf);
      const r = spawnSync('pdftoppm', ['-png', '-r', '40', '-f', '1', '-l', '1', '-singlefile', path.join(dir, 'report.pdf'), path.join(dir, 'page')]);
      expect(r.status, r.stderr?.toString()).toBe(0);
      const png = readFileSync(path.join(dir, 'page.png'));
      expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
      // An A4 page at 40 dpi: 331 x 468 pixels (IHDR width and height).
      expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([331, 468]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a report past its retention goes, file and row', async () => {
    expect(ready, 'the report of the first test').toBeTruthy();
    expect(await purgeReports(server.deps)).toBe(0);
    const file = path.join(server.config.DATA_DIR, 'media', 'reports', owner.workspaceId, ready.id);
    expect(existsSync(file), 'the disk driver keeps the PDF under DATA_DIR/media/reports').toBe(true);
    await server.owner.query(`update app.analytics_reports set finished_at = now() - interval '31 days' where id = $1`, [ready.id]);
    expect(await purgeReports(server.deps)).toBe(1);
    expect((await api.get(`/v1/workspaces/${owner.workspaceId}/analytics/reports/${ready.id}`, { token: owner.token })).status).toBe(404);
    expect((await fetch(ready.downloadUrl)).status).toBe(404);
    const rows = await server.owner.query(`select count(*)::int as n from app.analytics_reports where id = $1`, [ready.id]);
    expect(rows.rows[0].n).toBe(0);
    expect(existsSync(file)).toBe(false);
  });

  it('needs the standard plan: a basic organization gets 401 PLAN_REQUIRED with the reason', async () => {
    const basic = await signup(api);
    await server.owner.query(`update app.organizations set plan = 'basic', trial_ends_at = null where id = $1`, [basic.organizationId]);
    const r = await api.post(`/v1/workspaces/${basic.workspaceId}/analytics/reports`, {}, { token: basic.token });
    expect([r.status, r.body.error.code]).toEqual([401, 'PLAN_REQUIRED']);
    expect(r.body.error.message).toMatch(/standard/);
    expect(r.body.error.details).toMatchObject({ plan: 'basic', requiredPlan: 'standard' });
    expect((await api.get(`/v1/workspaces/${basic.workspaceId}/analytics/reports/${crypto.randomUUID()}`, { token: basic.token })).status).toBe(401);
    // Other analytics routes work on basic.
    expect((await api.get(`/v1/workspaces/${basic.workspaceId}/analytics/summary`, { token: basic.token })).status).toBe(200);
  });

  it('bad input is a 4xx; another workspace\'s report is not found', async () => {
    const base = `/v1/workspaces/${owner.workspaceId}/analytics/reports`;
    expect((await api.post(base, { from: to, to: from }, { token: owner.token })).status).toBe(400);
    expect((await api.post(base, { integrationIds: ['nope'] }, { token: owner.token })).status).toBe(400);
    expect((await api.post(base, { format: 'docx' }, { token: owner.token })).status).toBe(400);
    const missing = await api.post(base, { integrationIds: [crypto.randomUUID()] }, { token: owner.token });
    expect([missing.status, missing.body.error.code]).toEqual([404, 'INTEGRATION_NOT_FOUND']);
    const other = await signup(api);
    const theirs = await api.post(`/v1/workspaces/${other.workspaceId}/analytics/reports`, {}, { token: other.token });
    expect(theirs.status).toBe(202);
    expect((await api.get(`${base}/${theirs.body.data.id}`, { token: owner.token })).status).toBe(404);
    // Defaults: the 30 days ending today, every integration.
    expect(theirs.body.data).toMatchObject({ to: isoDay(new Date()), integrationIds: null });
  });
});
