// Secrets shown once are never stored in the clear, not even in what a retry
// replays: an Idempotency-Key's kept answer is sealed with the credential
// vault (server/http/sealed-replay.ts), and POST reviews/submit keeps its
// client links' tokens sealed beside results that hold none
// (db/migrations/committed/000034-sealed-replays.sql, server/routes/reviews.ts).
// Replays still answer the secret; a sealed answer copied onto another key
// does not open there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
let api: ReturnType<typeof client>;
beforeAll(async () => {
  server = await startTestServer('sealed_secrets', { WEBHOOK_ALLOW_PRIVATE_NETWORKS: true });
  api = client(server);
});
afterAll(async () => server?.close());

/** Every stored idempotent answer of a workspace, as text. */
async function keptAnswers(workspaceId: string): Promise<{ key: string; body: string }[]> {
  return (await server.owner.query(`select key, response_body::text as body from app.idempotency_keys where workspace_id = $1 order by key`, [workspaceId])).rows;
}

describe('Idempotency-Key replays', () => {
  it('a webhook subscription\'s secret: sealed where it is kept, the same secret on the replay', async () => {
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const body = { url: 'http://127.0.0.1:9/hooks', events: ['content.published'] };
    const first = await api.post(`${ws}/webhooks`, body, { token: o.token, headers: { 'Idempotency-Key': 'hook-1' } });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const secret = first.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const kept = await keptAnswers(o.workspaceId);
    expect(kept).toHaveLength(1);
    expect(Object.keys(JSON.parse(kept[0].body))).toEqual(['sealed']);
    expect(kept[0].body).not.toContain(secret);
    expect(kept[0].body).not.toContain(secret.slice(6, 26));
    const again = await api.post(`${ws}/webhooks`, body, { token: o.token, headers: { 'Idempotency-Key': 'hook-1' } });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect((await api.get(`${ws}/webhooks`, { token: o.token })).body.data).toHaveLength(1);
  });

  it('a webhook channel\'s issued secret likewise; a sealed answer copied onto another key does not open there', async () => {
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const body = { connector: 'webhook', platform: 'x', name: 'Intranet', url: 'http://127.0.0.1:9/post' };
    const first = await api.post(`${ws}/integrations`, body, { token: o.token, headers: { 'Idempotency-Key': 'ch-1' } });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const secret = first.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const second = await api.post(`${ws}/integrations`, { ...body, name: 'Extranet' }, { token: o.token, headers: { 'Idempotency-Key': 'ch-2' } });
    expect(second.status).toBe(201);
    const kept = await keptAnswers(o.workspaceId);
    expect(kept.map((k) => k.key)).toEqual(['ch-1', 'ch-2']);
    for (const k of kept) {
      expect(Object.keys(JSON.parse(k.body))).toEqual(['sealed']);
      expect(k.body).not.toContain(secret);
      expect(k.body).not.toContain(second.body.data.secret);
    }
    const again = await api.post(`${ws}/integrations`, body, { token: o.token, headers: { 'Idempotency-Key': 'ch-1' } });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.secret).toBe(secret);

    // ch-1's sealed answer copied onto ch-2's row: bound to its key, it does not open there; nothing leaks.
    await server.owner.query(
      `update app.idempotency_keys set response_body = (select response_body from app.idempotency_keys where workspace_id = $1 and key = 'ch-1')
       where workspace_id = $1 and key = 'ch-2'`, [o.workspaceId]);
    const copied = await api.post(`${ws}/integrations`, { ...body, name: 'Extranet' }, { token: o.token, headers: { 'Idempotency-Key': 'ch-2' } });
    expect(copied.status).toBe(409);
    expect(copied.body.error.code).toBe('IDEMPOTENCY_REPLAY_UNREADABLE');
    expect(JSON.stringify(copied.body)).not.toContain(secret);
  });
});

describe('POST reviews/submit replays by requestId', () => {
  it('keeps no client link token in the clear; the replay answers the same links, which work', async () => {
    const o = await signup(api);
    const ws = `/v1/workspaces/${o.workspaceId}`;
    const t = { token: o.token };
    const ch = await api.post(`${ws}/integrations`, { connector: 'sandbox', platform: 'x', name: 'Sandbox X' }, t);
    const draft = await api.post(`${ws}/content`, { intent: 'draft', caption: 'For Cleo', channels: [{ integrationId: ch.body.data.id }] }, t);
    const contentId = draft.body.data.editions[0].id as string;
    const body = {
      requestId: 'week-48', title: 'Week 48',
      items: [{ contentId, choice: { type: 'custom', stages: [{ name: 'Client', rule: 'all', approvers: [{ type: 'client', email: 'cleo@client.example', name: 'Cleo' }] }] } }],
    };
    const first = await api.post(`${ws}/reviews/submit`, body, t);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const [link] = first.body.data.results[0].links;
    expect(link.token).toMatch(/^prr_[0-9a-f]{64}$/);
    const row = (await server.owner.query(`select results::text as results, sealed_tokens from app.review_submissions where workspace_id = $1`, [o.workspaceId])).rows[0];
    expect(row.results).not.toContain(link.token);
    expect(row.results).not.toContain('prr_');
    expect(JSON.parse(row.results).results[0].links[0]).toEqual({ id: link.id, email: 'cleo@client.example', name: 'Cleo', expiresAt: null });
    expect(row.sealed_tokens).toBeInstanceOf(Buffer);
    expect(row.sealed_tokens.toString('latin1')).not.toContain(link.token);

    const again = await api.post(`${ws}/reviews/submit`, body, t);
    expect(again.status).toBe(200);
    expect(again.body.data.replayed).toBe(true);
    expect(again.body.data.results).toEqual(first.body.data.results);
    expect((await api.get('/v1/review-link', { token: link.token })).status).toBe(200);

    // Requests never read the sealed tokens (column grants), only the definer functions do.
    const asRequest = await server.owner.query(`
      select has_column_privilege('pressroom_api', 'app.review_submissions', 'sealed_tokens', 'select') as sealed,
             has_column_privilege('pressroom_api', 'app.review_submissions', 'results', 'select') as results`);
    expect(asRequest.rows[0]).toEqual({ sealed: false, results: true });
  });
});
