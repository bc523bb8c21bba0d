// The Workbench (/v2) over HTTP: every route, rows backed by content through
// the content rules, bulk partial success, bulk scheduling and its dry run,
// Idempotency-Key and the expensive throttle counting one call, CSV export
// and an import dry run against a file with every kind of defect, and
// concurrent moves that never lose or duplicate a position.
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, createKey, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
type Owner = Awaited<ReturnType<typeof signup>>;
let owner: Owner;
let wb: string;
let x: string;
let li: string;
let insta: string;

beforeAll(async () => {
  server = await startTestServer('workbench');
  api = client(server);
  owner = await signup(api, `wb${Date.now() % 1e6}`);
  wb = `/v2/workspaces/${owner.workspaceId}/workbench`;
  const channel = async (platform: string, name: string) => {
    const r = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return (r.body.data.id ?? r.body.data.integration?.id) as string;
  };
  x = await channel('x', 'X main');
  li = await channel('linkedin', 'LinkedIn page');
  insta = await channel('instagram', 'Insta');
});
afterAll(async () => server?.close());

const later = (days: number, hour = 9) => {
  const d = new Date(Date.now() + days * 86400_000);
  d.setUTCHours(hour, 0, 0, 0);
  return d.toISOString();
};

async function newPage(name: string, sections: string[] = ['Week 1', 'Week 2']) {
  const r = await api.post(`${wb}/pages`, { name, sections: sections.map((n) => ({ name: n })) }, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data as { id: string; sections: { id: string; name: string }[] };
}

async function newRow(body: Record<string, unknown>) {
  const r = await api.post(`${wb}/rows`, body, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data;
}

describe('pages and sections', () => {
  it('creates, lists, reads, changes, reorders, archives, duplicates and deletes pages', async () => {
    const a = await newPage('Alpha');
    const b = await newPage('Beta', []);
    expect(b.sections).toEqual([]);
    const list = await api.get(`${wb}/pages`, { token: owner.token });
    expect(list.status).toBe(200);
    const names = list.body.data.map((p: { name: string }) => p.name);
    expect(names.indexOf('Alpha')).toBeLessThan(names.indexOf('Beta'));

    const moved = await api.post(`${wb}/pages/${b.id}/move`, { beforeId: a.id }, { token: owner.token });
    expect(moved.status).toBe(200);
    const again = await api.get(`${wb}/pages?limit=500`, { token: owner.token });
    const order = again.body.data.map((p: { id: string }) => p.id);
    expect(order.indexOf(b.id)).toBe(order.indexOf(a.id) - 1);

    const patched = await api.patch(`${wb}/pages/${a.id}`, { name: 'Alpha 2', description: 'spring' }, { token: owner.token });
    expect(patched.body.data).toMatchObject({ name: 'Alpha 2', description: 'spring' });

    await newRow({ sectionId: a.sections[0].id, title: 'copy me', caption: 'with content', channels: [x], scheduledAt: '2031-01-05' });
    const dup = await api.post(`${wb}/pages/${a.id}/duplicate`, {}, { token: owner.token, headers: { 'idempotency-key': 'dup-1' } });
    expect(dup.status).toBe(201);
    expect(dup.body.data).toMatchObject({ name: 'Alpha 2 (copy)', sectionCount: 2, rowCount: 1 });
    const dupPage = await api.get(`${wb}/pages/${dup.body.data.id}`, { token: owner.token });
    expect(dupPage.body.data.rows[0]).toMatchObject({ title: 'copy me', scheduledAt: '2031-01-05', contentRootId: null, status: 'idea' });
    const replay = await api.post(`${wb}/pages/${a.id}/duplicate`, {}, { token: owner.token, headers: { 'idempotency-key': 'dup-1' } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.id).toBe(dup.body.data.id);

    const archived = await api.post(`${wb}/pages/${b.id}/archive`, undefined, { token: owner.token });
    expect(archived.body.data.archived).toBe(true);
    const active = await api.get(`${wb}/pages?state=active&limit=500`, { token: owner.token });
    expect(active.body.data.map((p: { id: string }) => p.id)).not.toContain(b.id);
    const onlyArchived = await api.get(`${wb}/pages?state=archived`, { token: owner.token });
    expect(onlyArchived.body.data.map((p: { id: string }) => p.id)).toEqual([b.id]);
    const restored = await api.post(`${wb}/pages/${b.id}/unarchive`, undefined, { token: owner.token });
    expect(restored.body.data).toMatchObject({ archived: false, archivedAt: null });

    const rebalanced = await api.post(`${wb}/pages/${a.id}/rebalance`, undefined, { token: owner.token });
    expect(rebalanced.body.data).toMatchObject({ pageId: a.id, sections: 2, rows: 1 });

    const del = await api.delete(`${wb}/pages/${dup.body.data.id}`, { token: owner.token });
    expect(del.body.data).toEqual({ id: dup.body.data.id, sectionsDeleted: 2, rowsDeleted: 1 });
    expect((await api.get(`${wb}/pages/${dup.body.data.id}`, { token: owner.token })).status).toBe(404);
  });

  it('sections: create, list, update, reorder, move to another page, delete moving or deleting rows', async () => {
    const p = await newPage('Sections', ['One']);
    const q = await newPage('Other', ['Target']);
    const two = await api.post(`${wb}/pages/${p.id}/sections`, { name: 'Two', color: '#112233' }, { token: owner.token });
    expect(two.status).toBe(201);
    const zero = await api.post(`${wb}/pages/${p.id}/sections`, { name: 'Zero', beforeId: p.sections[0].id }, { token: owner.token });
    const list = await api.get(`${wb}/pages/${p.id}/sections`, { token: owner.token });
    expect(list.body.data.map((s: { name: string }) => s.name)).toEqual(['Zero', 'One', 'Two']);
    const upd = await api.patch(`${wb}/sections/${two.body.data.id}`, { collapsed: true, name: 'Deux' }, { token: owner.token });
    expect(upd.body.data).toMatchObject({ collapsed: true, name: 'Deux', color: '#112233' });
    await api.post(`${wb}/sections/${zero.body.data.id}/move`, {}, { token: owner.token });
    const list2 = await api.get(`${wb}/pages/${p.id}/sections`, { token: owner.token });
    expect(list2.body.data.map((s: { name: string }) => s.name)).toEqual(['One', 'Deux', 'Zero']);

    const r1 = await newRow({ sectionId: zero.body.data.id, title: 'r1' });
    await newRow({ sectionId: zero.body.data.id, title: 'r2' });
    const moved = await api.post(`${wb}/sections/${zero.body.data.id}/move-to-page`, { pageId: q.id, beforeId: q.sections[0].id }, { token: owner.token });
    expect(moved.body.data.pageId).toBe(q.id);
    const row = await api.get(`${wb}/rows/${r1.id}`, { token: owner.token });
    expect(row.body.data.pageId).toBe(q.id);

    const bad = await api.delete(`${wb}/sections/${zero.body.data.id}`, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.fields[0].field).toBe('rows');
    const del = await api.delete(`${wb}/sections/${zero.body.data.id}?rows=move&targetSectionId=${q.sections[0].id}`, { token: owner.token });
    expect(del.body.data).toMatchObject({ rowsMoved: 2, rowsDeleted: 0 });
    const target = await api.get(`${wb}/rows?sectionId=${q.sections[0].id}`, { token: owner.token });
    expect(target.body.data.map((r: { title: string }) => r.title)).toEqual(['r1', 'r2']);
    const del2 = await api.delete(`${wb}/sections/${q.sections[0].id}?rows=delete`, { token: owner.token });
    expect(del2.body.data).toMatchObject({ rowsMoved: 0, rowsDeleted: 2 });
  });

  it('a viewer reads but cannot write; another organization sees nothing', async () => {
    const p = await newPage('Roles');
    const viewer = await createKey(api, owner.token, owner.workspaceId, { role: 'viewer' });
    expect((await api.get(`${wb}/pages/${p.id}`, { token: viewer.key })).status).toBe(200);
    const refused = await api.post(`${wb}/rows`, { sectionId: p.sections[0].id, title: 'no' }, { token: viewer.key });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('ROLE_REQUIRED');
    const other = await signup(api, `wbo${Date.now() % 1e6}`);
    const theirs = await api.get(`/v2/workspaces/${other.workspaceId}/workbench/pages/${p.id}`, { token: other.token });
    expect(theirs.status).toBe(404);
    const cross = await api.get(`${wb}/pages`, { token: other.token });
    expect(cross.status).toBe(403);
  });
});

describe('rows and their content', () => {
  it('a row with content edits its root and editions through the content rules', async () => {
    const p = await newPage('Content');
    const s = p.sections[0].id;
    const idea = await newRow({ sectionId: s, title: 'Idea', scheduledAt: '2031-02-01' });
    expect(idea).toMatchObject({ status: 'idea', contentRootId: null, channels: [], scheduledAt: '2031-02-01' });

    const at = later(3);
    const row = await newRow({ sectionId: s, title: 'Launch', caption: 'We launch soon', channels: [x, li], scheduledAt: at });
    expect(row.status).toBe('draft');
    expect(row.channels).toEqual([x, li]);
    expect(row.editions.map((e: { status: string }) => e.status)).toEqual(['draft', 'draft']);
    // The same content through /v1.
    const v1 = await api.get(`/v1/workspaces/${owner.workspaceId}/content-roots/${row.contentRootId}`, { token: owner.token });
    expect(v1.status).toBe(200);
    expect(v1.body.data.caption).toBe('We launch soon');

    const upd = await api.patch(`${wb}/rows/${row.id}`, { caption: 'We launch Tuesday', channels: [x] }, { token: owner.token });
    expect(upd.status, JSON.stringify(upd.body)).toBe(200);
    expect(upd.body.data).toMatchObject({ caption: 'We launch Tuesday', channels: [x] });
    const versions = await api.get(`/v1/workspaces/${owner.workspaceId}/content/${row.editions[0].id}/versions`, { token: owner.token });
    expect(versions.body.data.length).toBeGreaterThanOrEqual(2);

    // Platform rules hold once scheduled: X takes 280 characters.
    const sch = await api.post(`${wb}/schedule`, { rowIds: [row.id] }, { token: owner.token });
    expect(sch.body.data.rowsOk).toBe(1);
    const long = await api.patch(`${wb}/rows/${row.id}`, { caption: 'x'.repeat(400) }, { token: owner.token });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('VALIDATION_FAILED');
    // A channel of another workspace is refused with its field.
    const other = await api.patch(`${wb}/rows/${idea.id}`, { channels: [crypto.randomUUID()] }, { token: owner.token });
    expect(other.status).toBe(400);
    expect(other.body.error.details.fields[0]).toMatchObject({ field: 'channels.0', code: 'integration_not_found' });

    const dup = await api.post(`${wb}/rows/${row.id}/duplicate`, undefined, { token: owner.token });
    expect(dup.status).toBe(201);
    expect(dup.body.data).toMatchObject({ caption: 'We launch Tuesday', channels: [x], status: 'draft' });
    expect(dup.body.data.contentRootId).not.toBe(row.contentRootId);

    const got = await api.get(`${wb}/rows/${row.id}`, { token: owner.token });
    expect(got.body.data.status).toBe('scheduled');
    const del = await api.delete(`${wb}/rows/${idea.id}`, { token: owner.token });
    expect(del.body.data).toEqual({ id: idea.id, contentRootId: null });
  });

  it('lists rows with filters', async () => {
    const p = await newPage('Filters', ['A', 'B']);
    const tag = await api.post(`/v1/workspaces/${owner.workspaceId}/tags`, { name: `wbtag${Date.now() % 1e6}` }, { token: owner.token });
    const t1 = await newRow({ sectionId: p.sections[0].id, title: 'f1', caption: 'c', channels: [x], tagIds: [tag.body.data.id], scheduledAt: '2032-05-01T10:00:00Z' });
    await newRow({ sectionId: p.sections[1].id, title: 'f2', caption: 'c', channels: [li], scheduledAt: '2032-05-03' });
    await newRow({ sectionId: p.sections[1].id, title: 'f3' });
    const q = async (qs: string) => (await api.get(`${wb}/rows?pageId=${p.id}&${qs}`, { token: owner.token })).body.data.map((r: { title: string }) => r.title);
    expect(await q('')).toEqual(['f1', 'f2', 'f3']);
    expect(await q(`sectionId=${p.sections[1].id}`)).toEqual(['f2', 'f3']);
    expect(await q('status=idea')).toEqual(['f3']);
    expect(await q(`channel=${li}`)).toEqual(['f2']);
    expect(await q(`tagId=${tag.body.data.id}`)).toEqual(['f1']);
    expect(await q('from=2032-05-02T00:00:00Z&to=2032-05-04T00:00:00Z')).toEqual(['f2']);
    expect(await q('from=2032-05-01T00:00:00Z&to=2032-05-02T00:00:00Z')).toEqual(['f1']);
    const page = await api.get(`${wb}/rows?pageId=${p.id}&limit=2&offset=1`, { token: owner.token });
    expect(page.body.meta).toEqual({ limit: 2, offset: 1, total: 3, hasMore: false });
    const bad = await api.get(`${wb}/rows?from=2032-05-04T00:00:00Z&to=2032-05-01T00:00:00Z`, { token: owner.token });
    expect(bad.status).toBe(400);
    expect(t1.tagIds).toEqual([tag.body.data.id]);
  });

  it('bulk create, update and delete answer one result per item (partial success)', async () => {
    const p = await newPage('Bulk');
    const s = p.sections[0].id;
    const created = await api.post(
      `${wb}/rows/bulk-create`,
      { rows: [{ sectionId: s, title: 'b1' }, { sectionId: crypto.randomUUID(), title: 'lost' }, { sectionId: s, caption: 'b3', channels: [x, x] }, { sectionId: s, title: 'b4' }] },
      { token: owner.token, headers: { 'idempotency-key': 'bulk-create-1' } },
    );
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ succeeded: 2, failed: 2 });
    expect(created.body.data.results.map((r: { ok: boolean }) => r.ok)).toEqual([true, false, false, true]);
    expect(created.body.data.results[1].error).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(created.body.data.results[2].error.details.fields[0]).toMatchObject({ field: 'channels.1', code: 'duplicate_channel' });
    const [b1, , , b4] = created.body.data.results.map((r: { row: { id: string } | null }) => r.row);

    const updated = await api.post(`${wb}/rows/bulk-update`, { rows: [{ id: b1.id, title: 'b1!' }, { id: crypto.randomUUID(), title: 'nobody' }] }, { token: owner.token });
    expect(updated.body.data).toMatchObject({ succeeded: 1, failed: 1 });
    expect(updated.body.data.results[0].row.title).toBe('b1!');
    const deleted = await api.post(`${wb}/rows/bulk-delete`, { rowIds: [b4.id, crypto.randomUUID()] }, { token: owner.token });
    expect(deleted.body.data).toMatchObject({ succeeded: 1, failed: 1 });
    expect(deleted.body.data.results[1].error.code).toBe('NOT_FOUND');
  });

  it('pulls /v1 content in as rows, once per root', async () => {
    const p = await newPage('Pull');
    const c = await api.post(`/v1/workspaces/${owner.workspaceId}/content`, { intent: 'draft', caption: 'made in v1', title: 'From v1', channels: [{ integrationId: x }] }, { token: owner.token });
    expect(c.status, JSON.stringify(c.body)).toBe(201);
    const contentId = c.body.data.editions[0].id;
    const pulled = await api.post(`${wb}/rows/pull`, { sectionId: p.sections[0].id, contentIds: [contentId, crypto.randomUUID()] }, { token: owner.token });
    expect(pulled.body.data).toMatchObject({ succeeded: 1, failed: 1 });
    expect(pulled.body.data.results[0].row).toMatchObject({ caption: 'made in v1', channels: [x], status: 'draft', contentRootId: c.body.data.rootId });
    const again = await api.post(`${wb}/rows/pull`, { sectionId: p.sections[1].id, rootIds: [c.body.data.rootId] }, { token: owner.token });
    expect(again.body.data.results[0].error.code).toBe('ALREADY_IN_WORKBENCH');
  });
});

describe('bulk scheduling', () => {
  it('the dry run answers per row and channel and writes nothing; the commit schedules row by row', async () => {
    const p = await newPage('Schedule');
    const s = p.sections[0].id;
    const good = await newRow({ sectionId: s, title: 'good', caption: 'fine', channels: [x, li], scheduledAt: later(2) });
    const noMedia = await newRow({ sectionId: s, title: 'needs media', caption: 'pic', channels: [x, insta], scheduledAt: later(2) });
    const dateOnly = await newRow({ sectionId: s, title: 'date only', caption: 'soon', channels: [x], scheduledAt: '2031-03-03' });
    const idea = await newRow({ sectionId: s, title: 'idea' });
    const rowIds = [good.id, noMedia.id, dateOnly.id, idea.id, crypto.randomUUID()];

    const dry = await api.post(`${wb}/schedule/validate`, { rowIds }, { token: owner.token });
    expect(dry.status).toBe(200);
    expect(dry.body.data).toMatchObject({ dryRun: true, rows: 5, rowsOk: 1, rowsFailed: 4, channelsOk: 3, channelsFailed: 4 });
    const outcome = (rowId: string) => dry.body.data.results.filter((r: { rowId: string }) => r.rowId === rowId).map((r: { outcome: string; error: { code: string } | null }) => r.error?.code ?? r.outcome);
    expect(outcome(good.id)).toEqual(['valid', 'valid']);
    expect(outcome(noMedia.id)).toEqual(['valid', 'VALIDATION_FAILED']);
    expect(outcome(dateOnly.id)).toEqual(['ROW_TIME_REQUIRED']);
    expect(outcome(idea.id)).toEqual(['ROW_HAS_NO_CONTENT']);
    expect(outcome(rowIds[4])).toEqual(['NOT_FOUND']);
    const after = await api.get(`${wb}/rows/${good.id}`, { token: owner.token });
    expect(after.body.data.status).toBe('draft');

    const key = { 'idempotency-key': `sched-${Date.now()}` };
    const done = await api.post(`${wb}/schedule`, { rowIds }, { token: owner.token, headers: key });
    expect(done.body.data).toMatchObject({ dryRun: false, rowsOk: 1, rowsFailed: 4 });
    expect(done.body.data.results.filter((r: { rowId: string }) => r.rowId === noMedia.id).map((r: { outcome: string }) => r.outcome)).toEqual(['not_scheduled', 'failed']);
    expect((await api.get(`${wb}/rows/${good.id}`, { token: owner.token })).body.data.status).toBe('scheduled');
    expect((await api.get(`${wb}/rows/${noMedia.id}`, { token: owner.token })).body.data.status).toBe('draft');
    const replay = await api.post(`${wb}/schedule`, { rowIds }, { token: owner.token, headers: key });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(done.body);
    const reused = await api.post(`${wb}/schedule`, { rowIds: [good.id] }, { token: owner.token, headers: key });
    expect(reused.status).toBe(422);
  });

  it('counts one call of the expensive class however many rows', async () => {
    const p = await newPage('Throttle');
    const rows = await api.post(`${wb}/rows/bulk-create`, { rows: Array.from({ length: 30 }, (_, i) => ({ sectionId: p.sections[0].id, title: `t${i}` })) }, { token: owner.token });
    const ids = rows.body.data.results.map((r: { row: { id: string } }) => r.row.id);
    const one = await api.post(`${wb}/schedule/validate`, { rowIds: ids }, { token: owner.token });
    const two = await api.post(`${wb}/schedule/validate`, { rowIds: ids }, { token: owner.token });
    expect(one.headers.get('ratelimit-policy')).toMatch(/^"expensive";/);
    expect(Number(one.headers.get('x-ratelimit-remaining')) - Number(two.headers.get('x-ratelimit-remaining'))).toBe(1);
  });
});

describe('CSV', () => {
  it('exports a page and imports the export again', async () => {
    const p = await newPage('Export', ['Week 1']);
    await newRow({ sectionId: p.sections[0].id, title: 'e1', caption: 'Hello, "world"\nsecond line', channels: [x, li], scheduledAt: '2031-06-01T08:00:00Z' });
    await newRow({ sectionId: p.sections[0].id, title: 'e2', scheduledAt: '2031-06-02' });
    const ex = await api.get(`${wb}/pages/${p.id}/export`, { token: owner.token });
    expect(ex.status).toBe(200);
    expect(ex.body.data).toMatchObject({ filename: 'export.csv', rowCount: 2, contentType: 'text/csv; charset=utf-8' });
    const csv: string = ex.body.data.csv;
    expect(csv.startsWith('\ufeffid,section,title,caption,channels,scheduled_at')).toBe(true);
    expect(csv).toContain('"Hello, ""world""\nsecond line"');
    expect(csv).toContain('X main; LinkedIn page');
    expect(csv).toContain('2031-06-01T08:00:00Z');

    const q = await newPage('Reimport', []);
    const imp = await api.post(`${wb}/pages/${q.id}/import`, { csv }, { token: owner.token, headers: { 'idempotency-key': 'import-1' } });
    expect(imp.status, JSON.stringify(imp.body)).toBe(201);
    expect(imp.body.data).toMatchObject({ lines: 2, valid: 2, imported: 2, newSections: ['Week 1'], ignoredColumns: [] });
    const rows = await api.get(`${wb}/pages/${q.id}`, { token: owner.token });
    expect(rows.body.data.rows.map((r: { title: string; caption: string | null; channels: string[]; scheduledAt: string | null }) => [r.title, r.caption, r.channels, r.scheduledAt])).toEqual([
      ['e1', 'Hello, "world"\nsecond line', [x, li], '2031-06-01T08:00:00+00:00'],
      ['e2', null, [], '2031-06-02'],
    ]);
  });

  it('the dry run reports every defect by line and writes nothing; the commit refuses unless partial', async () => {
    const p = await newPage('Import', ['Week 1']);
    // An existing post the file repeats.
    await newRow({ sectionId: p.sections[0].id, title: 'exists', caption: 'Repeat me', channels: [x], scheduledAt: '2031-07-01T10:00:00Z' });
    await server.owner.query(`update app.workspaces set timezone = 'Europe/Paris' where id = $1`, [owner.workspaceId]);
    const lines = [
      'Section,Title,Caption,Channels,Scheduled At,Tags,Mystery',
      'Week 1,ok local time,"quoted, with comma",X main,2031-07-02 09:30,,',
      'Week 1,ok offset,"two\nlines",x main;LinkedIn page,2031-07-02T09:30:00-05:00,,',
      'New section,date only,,,2031-07-03,,',
      'Week 1,,,,,,only an ignored column',
      ',,,,,,',
      'Week 1,,bad date,X main,2031-02-30 10:00,,',
      'Week 1,,unknown channel,Nope,2031-07-04,,',
      'Week 1,,unknown tag,,,nosuchtag,',
      'Week 1,too few fields',
      'Week 1,,Repeat me,X main,2031-07-01 14:00,,',
      'Week 1,,in file twice,X main,2031-07-05 10:00,,',
      'Week 1,,in file twice,X main,2031-07-05 12:00,,',
      `Week 1,,${'y'.repeat(300)},X main,2031-07-06 10:00,,`,
    ];
    const csv = `\ufeff${lines.join('\r\n')}\r\n`;
    const before = await api.get(`${wb}/pages/${p.id}`, { token: owner.token });
    const dry = await api.post(`${wb}/pages/${p.id}/import/validate`, { csv }, { token: owner.token });
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    const d = dry.body.data;
    expect(d).toMatchObject({ dryRun: true, imported: 0, newSections: ['New section'], ignoredColumns: ['Mystery'] });
    const byLine = new Map<number, { ok: boolean; errors: { field: string | null; code: string }[]; warnings: { code: string; line: number | null; contentId: string | null }[] }>(
      d.results.map((r: { line: number }) => [r.line, r]),
    );
    // Line numbers are the file's: the quoted line break moves the lines after it by one.
    expect([...byLine.keys()]).toEqual([2, 3, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15]);
    expect(byLine.get(2)!.ok).toBe(true);
    expect(byLine.get(3)!.ok).toBe(true);
    expect(byLine.get(5)!.ok).toBe(true);
    expect(byLine.get(6)!.errors[0]).toMatchObject({ field: 'title', code: 'required' });
    expect(byLine.get(8)!.errors[0]).toMatchObject({ field: 'scheduled_at', code: 'invalid_date' });
    expect(byLine.get(9)!.errors[0]).toMatchObject({ field: 'channels', code: 'not_found' });
    expect(byLine.get(10)!.errors[0]).toMatchObject({ field: 'tags', code: 'not_found' });
    expect(byLine.get(11)!.errors[0]).toMatchObject({ code: 'column_count' });
    expect(byLine.get(12)!.warnings[0]).toMatchObject({ code: 'possible_duplicate', line: null });
    expect(byLine.get(12)!.warnings[0].contentId).toBeTruthy();
    expect(byLine.get(13)!.warnings).toEqual([]);
    expect(byLine.get(14)!.warnings[0]).toMatchObject({ code: 'possible_duplicate', line: 13 });
    // The content rules run in the dry run too: 300 characters is too long for X only once scheduled, so a draft passes.
    expect(byLine.get(15)!.ok).toBe(true);
    expect(d).toMatchObject({ lines: 12, valid: 7, invalid: 5, possibleDuplicates: 2 });
    const after = await api.get(`${wb}/pages/${p.id}`, { token: owner.token });
    expect(after.body.data.rowCount).toBe(before.body.data.rowCount);
    expect(after.body.data.sectionCount).toBe(1);

    const refused = await api.post(`${wb}/pages/${p.id}/import`, { csv }, { token: owner.token });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'CSV_IMPORT_INVALID', details: { invalid: 5, valid: 7 } });
    expect(refused.body.error.details.lines.map((l: { line: number }) => l.line)).toEqual([6, 8, 9, 10, 11]);
    expect((await api.get(`${wb}/pages/${p.id}`, { token: owner.token })).body.data.rowCount).toBe(1);

    const partial = await api.post(`${wb}/pages/${p.id}/import`, { csv, allowPartial: true }, { token: owner.token });
    expect(partial.status).toBe(201);
    expect(partial.body.data).toMatchObject({ imported: 7, invalid: 5 });
    const page = await api.get(`${wb}/pages/${p.id}`, { token: owner.token });
    expect(page.body.data.rowCount).toBe(8);
    const local = page.body.data.rows.find((r: { title: string }) => r.title === 'ok local time');
    expect(local.scheduledAt).toBe('2031-07-02T07:30:00+00:00'); // 09:30 in Paris (summer time)
    const offset = page.body.data.rows.find((r: { title: string }) => r.title === 'ok offset');
    expect(offset.scheduledAt).toBe('2031-07-02T14:30:00+00:00');
    expect(offset.channels).toEqual([x, li]);
  });

  it('refuses a file that is not CSV with the line, and a header without title or caption', async () => {
    const p = await newPage('Broken');
    const r = await api.post(`${wb}/pages/${p.id}/import/validate`, { csv: 'title,caption\nfine,"unclosed\nquote' }, { token: owner.token });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('CSV_MALFORMED');
    const h = await api.post(`${wb}/pages/${p.id}/import/validate`, { csv: 'when,notes\n2031-01-01,x\n' }, { token: owner.token });
    expect(h.status).toBe(400);
    expect(h.body.error.code).toBe('CSV_HEADER_INVALID');
  });

  it('neutralises formulas in the export with a leading quote and takes it off again on import', async () => {
    const p = await newPage('Formulas', ['Week 1']);
    const values = [
      ['=HYPERLINK("http://evil.example","click")', '+1 call us'],
      ['@SUM(A1:A9)', '-5 degrees today'],
      ['tab', '\tleading tab'],
      ['cr', '\rleading carriage return'],
      ["'=already quoted", "'plain quote stays"],
      ['plain', 'a = b + c - d @ e'],
      ['\uFF1Dfull-width', '\uFF20full-width'],
    ];
    for (const [title, caption] of values) await newRow({ sectionId: p.sections[0].id, title, caption });
    const ex = await api.get(`${wb}/pages/${p.id}/export`, { token: owner.token });
    expect(ex.status).toBe(200);
    const csv: string = ex.body.data.csv;
    expect(csv).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(csv).toContain(",'+1 call us,");
    expect(csv).toContain(",'@SUM(A1:A9),'-5 degrees today,");
    expect(csv).toContain(`,'\tleading tab,`);
    expect(csv).toContain(`"'\rleading carriage return"`);
    expect(csv).toContain(",''=already quoted,'plain quote stays,");
    expect(csv).toContain(',plain,a = b + c - d @ e,');
    expect(csv).toContain(",'\uFF1Dfull-width,'\uFF20full-width,");
    // No cell of the file begins with a formula character.
    expect(csv.split(/\r\n/).flatMap((l) => l.split(',')).filter((c) => /^"?[=+\-@\t\r\uFF1D\uFF20]/.test(c))).toEqual([]);

    const q = await newPage('Formulas again', []);
    const imp = await api.post(`${wb}/pages/${q.id}/import`, { csv }, { token: owner.token, headers: { 'idempotency-key': 'import-formulas' } });
    expect(imp.status, JSON.stringify(imp.body)).toBe(201);
    const rows = await api.get(`${wb}/pages/${q.id}`, { token: owner.token });
    expect(rows.body.data.rows.map((r: { title: string; caption: string | null }) => [r.title, r.caption])).toEqual(values);
  });

  it('neutralises formulas behind invisible leading characters and look-alike signs, and an import gives them back', async () => {
    const p = await newPage('Hidden formulas', ['Week 1']);
    // 20 formula-shaped cells a spreadsheet may run: behind a line feed, a zero-width space, a BOM, other
    // whitespace and format characters, and with the full-width, small and minus look-alikes of = + - @.
    const cells = [
      '\n=1+1', '\u200b=1+1', '\ufeff=1+1', '\u2028=1+1', '\u00a0=1+1', '\u3000+1', '\u2060@SUM(A1)', '\u200e-1', '\u000b=1+1', '\n\u200b\ufeff =1+1',
      '\ufe66HYPERLINK("http://evil.example")', '\ufe621', '\u22121', '\ufe63 1', '\ufe6bSUM(A1)',
      '\uff1d1+1', '\uff0b1', '\uff0d1', '\uff20SUM(A1)', '\u200b\uff1d1',
    ];
    expect(cells).toHaveLength(20);
    const plain = ['plain text', 'a = b', '\u200bhello', "'quoted"];
    for (const [i, caption] of [...cells, ...plain].entries()) await newRow({ sectionId: p.sections[0].id, title: `c${i}`, caption });
    const stored = (await api.get(`${wb}/pages/${p.id}`, { token: owner.token })).body.data.rows.map((r: { caption: string }) => r.caption);
    expect(stored).toEqual([...cells, ...plain]);

    const ex = await api.get(`${wb}/pages/${p.id}/export`, { token: owner.token });
    expect(ex.status).toBe(200);
    const records = parse(ex.body.data.csv as string, { bom: true }) as string[][];
    const caption = records[0].indexOf('caption');
    const exported = records.slice(1).map((r) => r[caption]);
    expect(exported).toEqual([...cells.map((c) => `'${c}`), ...plain]);

    const q = await newPage('Hidden formulas again', []);
    const imp = await api.post(`${wb}/pages/${q.id}/import`, { csv: ex.body.data.csv }, { token: owner.token, headers: { 'idempotency-key': 'import-hidden-formulas' } });
    expect(imp.status, JSON.stringify(imp.body)).toBe(201);
    const back = await api.get(`${wb}/pages/${q.id}`, { token: owner.token });
    expect(back.body.data.rows.map((r: { caption: string }) => r.caption)).toEqual([...cells, ...plain]);
  });

  it('an import takes one quote off a neutralised cell only', async () => {
    const p = await newPage('Quotes', []);
    const csv = "title,caption\r\nq1,'=1+1\r\nq2,'plain\r\nq3,''+two\r\nq4,=raw\r\n";
    const dry = await api.post(`${wb}/pages/${p.id}/import`, { csv }, { token: owner.token, headers: { 'idempotency-key': 'import-quotes' } });
    expect(dry.status, JSON.stringify(dry.body)).toBe(201);
    const rows = await api.get(`${wb}/pages/${p.id}`, { token: owner.token });
    expect(rows.body.data.rows.map((r: { caption: string | null }) => r.caption)).toEqual(['=1+1', "'plain", "'+two", '=raw']);
  });
});

describe('audit', () => {
  it('writes one audit row per /v2 call, refusals and unknown /v2 routes included', async () => {
    const rid = `wb-audit-${Date.now()}`;
    const ok = await api.get(`${wb}/pages`, { token: owner.token, headers: { 'x-request-id': `${rid}-ok` } });
    expect(ok.status).toBe(200);
    const refused = await api.post(`${wb}/schedule`, { rowIds: ['not-a-uuid'] }, { token: owner.token, headers: { 'x-request-id': `${rid}-bad` } });
    expect(refused.status).toBe(400);
    const unknown = await api.get(`${wb}/nothing-here`, { token: owner.token, headers: { 'x-request-id': `${rid}-404` }, unchecked: true });
    expect(unknown.status).toBe(404);
    const rows = await server.owner.query(
      `select request_id, method, route, status, error_code, workspace_id from audit.api_calls where request_id like $1 order by request_id`,
      [`${rid}-%`],
    );
    expect(rows.rows).toEqual([
      { request_id: `${rid}-404`, method: 'GET', route: null, status: 404, error_code: 'NOT_FOUND', workspace_id: null },
      { request_id: `${rid}-bad`, method: 'POST', route: '/v2/workspaces/{workspaceId}/workbench/schedule', status: 400, error_code: 'VALIDATION_FAILED', workspace_id: owner.workspaceId },
      { request_id: `${rid}-ok`, method: 'GET', route: '/v2/workspaces/{workspaceId}/workbench/pages', status: 200, error_code: null, workspace_id: owner.workspaceId },
    ]);
  });
});

describe('ordering under concurrency', () => {
  it('concurrent moves never lose or duplicate a position', async () => {
    const p = await newPage('Race', ['A', 'B']);
    const [A, B] = p.sections.map((s) => s.id);
    const made = await api.post(`${wb}/rows/bulk-create`, { rows: Array.from({ length: 40 }, (_, i) => ({ sectionId: i % 2 ? B : A, title: `m${i}` })) }, { token: owner.token });
    const ids: string[] = made.body.data.results.map((r: { row: { id: string } }) => r.row.id);
    const anchorA = ids[0];
    // 38 moves at once, all into the same gap (after the first row of A), from both sections.
    const moves = await Promise.all(
      ids.slice(2).map((id) => api.post(`${wb}/rows/${id}/move`, { sectionId: A, afterId: anchorA }, { token: owner.token, unchecked: true })),
    );
    const statuses = moves.map((m) => m.status);
    expect(statuses.filter((s) => s === 200).length + statuses.filter((s) => s === 409).length).toBe(moves.length);
    const rows = await api.get(`${wb}/rows?pageId=${p.id}&limit=500`, { token: owner.token });
    const all: { id: string; sectionId: string; position: string }[] = rows.body.data;
    expect(all.length).toBe(40);
    expect(new Set(all.map((r) => r.id)).size).toBe(40);
    for (const s of [A, B]) {
      const positions = all.filter((r) => r.sectionId === s).map((r) => r.position);
      expect(new Set(positions).size, `positions in section ${s} are distinct`).toBe(positions.length);
    }
    const inA = all.filter((r) => r.sectionId === A);
    expect(inA[0].id).toBe(anchorA);
    expect(inA.length).toBe(40 - 1 - statuses.filter((s) => s === 409).length);
  });
});
