// GET {ws}/content?scheduledFrom=&scheduledTo= (api.list_content): editions
// scheduled in [from, to), with the other filters, totals, the 400 for an
// empty range, and the calendar page's use of it (web/pages/calendar.tsx asks for the
// visible range only; its browser test is tests/api/calendar.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
let owner: Awaited<ReturnType<typeof signup>>;
let x: string;
let li: string;
const day = 86_400_000;
const base = Date.UTC(2031, 0, 5, 9, 0, 0);
const at = (d: number) => new Date(base + d * day).toISOString();
const ids: Record<string, string> = {};

beforeAll(async () => {
  server = await startTestServer('content_range');
  api = client(server);
  owner = await signup(api);
  const add = async (platform: string) =>
    (await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name: platform }, { token: owner.token })).body.data.id as string;
  x = await add('x');
  li = await add('linkedin');
  for (const [name, d, ch] of [['d0', 0, x], ['d1', 1, x], ['d2', 2, li], ['d6', 6, x], ['d7', 7, li]] as const) {
    const r = await api.post(`/v1/workspaces/${owner.workspaceId}/content`, { intent: 'schedule', scheduledAt: at(d), caption: name, channels: [{ integrationId: ch }] }, { token: owner.token });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    ids[name] = r.body.data.editions[0].id;
  }
  // a draft without a time is never in a range
  await api.post(`/v1/workspaces/${owner.workspaceId}/content`, { caption: 'no time', channels: [{ integrationId: x }] }, { token: owner.token });
});
afterAll(async () => server?.close());

const list = (q: Record<string, string>) => api.get(`/v1/workspaces/${owner.workspaceId}/content?${new URLSearchParams({ limit: '100', ...q })}`, { token: owner.token });
const names = (r: any) => r.body.data.map((e: any) => e.caption);

describe('content list by time range', () => {
  it('from is inclusive, to exclusive; ordered and counted', async () => {
    const r = await list({ scheduledFrom: at(1), scheduledTo: at(7), sortBy: 'scheduledAt', sortDirection: 'asc' });
    expect(r.status).toBe(200);
    expect(names(r)).toEqual(['d1', 'd2', 'd6']);
    expect(r.body.meta).toMatchObject({ total: 3, hasMore: false });
    expect(names(await list({ scheduledFrom: at(6), sortBy: 'scheduledAt', sortDirection: 'asc' }))).toEqual(['d6', 'd7']);
    expect(names(await list({ scheduledTo: at(1), sortBy: 'scheduledAt' }))).toEqual(['d0']);
  });

  it('combines with status, channel and paging', async () => {
    expect(names(await list({ scheduledFrom: at(0), scheduledTo: at(8), integrationId: li, sortBy: 'scheduledAt', sortDirection: 'asc' }))).toEqual(['d2', 'd7']);
    expect(names(await list({ scheduledFrom: at(0), scheduledTo: at(8), status: 'draft' }))).toEqual([]);
    const page = await list({ scheduledFrom: at(0), scheduledTo: at(8), status: 'scheduled', sortBy: 'scheduledAt', sortDirection: 'asc', limit: '2', offset: '2' });
    expect(names(page)).toEqual(['d2', 'd6']);
    expect(page.body.meta).toMatchObject({ total: 5, hasMore: true });
  });

  it('an empty or reversed range, or a bad instant, is a 400', async () => {
    const r = await list({ scheduledFrom: at(2), scheduledTo: at(2) });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('VALIDATION_FAILED');
    expect(r.body.error.details.fields[0]).toMatchObject({ field: 'scheduledTo', code: 'before_start' });
    expect((await list({ scheduledFrom: 'next tuesday' })).status).toBe(400);
  });

  it('another workspace sees nothing of the range', async () => {
    const other = await signup(api);
    const r = await api.get(`/v1/workspaces/${other.workspaceId}/content?scheduledFrom=${encodeURIComponent(at(-1))}&scheduledTo=${encodeURIComponent(at(9))}`, { token: other.token });
    expect(r.body.data).toEqual([]);
    expect(r.body.meta.total).toBe(0);
  });
});
