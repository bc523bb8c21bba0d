// Inbound deliveries for tests, in each platform's documented format and
// signed as the platform signs them (computed here independently of
// server/inbox/signatures.ts), and a recorded Facebook stream for the
// convergence test.
import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import type { client, signup } from './http.ts';
import { openapi, type TestServer } from './server.ts';

export const META_APP_SECRET = 'meta-app-secret-0123456789abcdef';
export const META_VERIFY_TOKEN = 'meta-verify-token-2026';
export const X_CONSUMER_SECRET = 'x-consumer-secret-0123456789abcdef';
export const SANDBOX_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

type Api = ReturnType<typeof client>;
type Owner = Awaited<ReturnType<typeof signup>>;

/** A sandbox-connector integration of `platform`, with the hook secret of `source` set. */
export async function hookIntegration(api: Api, owner: Owner, platform: string, source: 'facebook' | 'instagram' | 'x' | 'sandbox', name = `${platform} inbox`) {
  const created = await api.post(`/v1/workspaces/${owner.workspaceId}/integrations`, { connector: 'sandbox', platform, name }, { token: owner.token });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.data.id as string;
  const body =
    source === 'facebook' || source === 'instagram'
      ? { secret: META_APP_SECRET, verifyToken: META_VERIFY_TOKEN }
      : { secret: source === 'x' ? X_CONSUMER_SECRET : SANDBOX_SECRET };
  const set = await api.put(`/v1/workspaces/${owner.workspaceId}/integrations/${id}/inbox-hooks/${source}`, body, { token: owner.token });
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  return id;
}

export interface Delivery {
  body: string;
  headers: Record<string, string>;
}

export function metaDelivery(payload: unknown, secret = META_APP_SECRET): Delivery {
  const body = JSON.stringify(payload);
  return { body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}` } };
}

export function xDelivery(payload: unknown, secret = X_CONSUMER_SECRET): Delivery {
  const body = JSON.stringify(payload);
  return { body, headers: { 'content-type': 'application/json', 'x-twitter-webhooks-signature': `sha256=${createHmac('sha256', secret).update(body).digest('base64')}` } };
}

export function sandboxDelivery(id: string, payload: unknown, opts: { secret?: string; timestamp?: number } = {}): Delivery {
  const body = JSON.stringify(payload);
  const ts = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const key = Buffer.from((opts.secret ?? SANDBOX_SECRET).slice(6), 'base64');
  const sig = createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64');
  return { body, headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': `v1,${sig}` } };
}

/**
 * Holds an answer of the hook routes against their `x-raw-body` operation in
 * openapi.yaml: the status is documented, a JSON body matches its schema, a
 * text answer is documented as text/plain.
 */
export function checkHookAnswer(method: 'GET' | 'POST', status: number, contentType: string | null, text: string) {
  const op = openapi.rawOperations.find((o) => o.method === method && o.path === '/v1/hooks/{source}/{integrationId}');
  expect(op, `openapi.yaml has ${method} /v1/hooks/{source}/{integrationId}`).toBeTruthy();
  const documented = openapi.doc.paths[op!.path][method.toLowerCase()].responses[String(status)];
  expect(documented, `${method} /v1/hooks/... documents status ${status}`).toBeTruthy();
  if ((contentType ?? '').startsWith('text/plain')) {
    expect(documented.content?.['text/plain'], `${method} /v1/hooks/... documents text/plain for ${status}`).toBeTruthy();
    return;
  }
  const validate = op!.responseValidator(status);
  expect(validate, `${method} /v1/hooks/... documents a JSON body for ${status}`).not.toBeNull();
  const body = JSON.parse(text);
  if (!validate!(body)) throw new Error(`${method} /v1/hooks/... -> ${status}: body does not match openapi.yaml: ${JSON.stringify(validate!.errors)}\n${text}`);
}

export async function deliver(server: TestServer, source: string, integrationId: string, d: Delivery) {
  const res = await fetch(`${server.baseUrl}/v1/hooks/${source}/${integrationId}`, { method: 'POST', headers: d.headers, body: d.body });
  const text = await res.text();
  checkHookAnswer('POST', res.status, res.headers.get('content-type'), text);
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** A platform's GET (subscription check) of a hook route, its answer held against openapi.yaml. */
export async function hookCheck(server: TestServer, path: string) {
  const res = await fetch(`${server.baseUrl}${path}`);
  const text = await res.text();
  checkHookAnswer('GET', res.status, res.headers.get('content-type'), text);
  return new Response(text, { status: res.status, headers: res.headers });
}

// A recorded Facebook Page stream: one post's comments (add, edit, reply,
// reactions, removal, hide) and one Messenger conversation (message, edit,
// reaction), one change per delivery as Meta sends them.
const PAGE = '101010101010';
const POST = `${PAGE}_555`;
const t0 = 1_790_000_000;
const from = (id: string, name: string) => ({ id, name });
const feed = (value: Record<string, unknown>, time: number) => ({ object: 'page', entry: [{ id: PAGE, time, changes: [{ field: 'feed', value }] }] });
const messaging = (m: Record<string, unknown>) => ({ object: 'page', entry: [{ id: PAGE, time: Math.floor(Number(m.timestamp) / 1000), messaging: [m] }] });

export const RECORDED_FACEBOOK_STREAM: unknown[] = [
  feed({ item: 'comment', verb: 'add', comment_id: `${POST}_c1`, post_id: POST, parent_id: POST, from: from('u1', 'Ada'), message: 'Love it', created_time: t0 + 100 }, t0 + 100),
  feed({ item: 'comment', verb: 'add', comment_id: `${POST}_c2`, post_id: POST, parent_id: `${POST}_c1`, from: from('u2', 'Bo'), message: 'Same here', created_time: t0 + 110 }, t0 + 110),
  feed({ item: 'comment', verb: 'edited', comment_id: `${POST}_c1`, post_id: POST, parent_id: POST, from: from('u1', 'Ada'), message: 'Love it!!', created_time: t0 + 120 }, t0 + 120),
  feed({ item: 'reaction', verb: 'add', reaction_type: 'like', comment_id: `${POST}_c1`, post_id: POST, from: from('u2', 'Bo'), created_time: t0 + 130 }, t0 + 130),
  feed({ item: 'reaction', verb: 'add', reaction_type: 'love', comment_id: `${POST}_c1`, post_id: POST, from: from('u3', 'Cy'), created_time: t0 + 131 }, t0 + 131),
  feed({ item: 'reaction', verb: 'remove', reaction_type: 'like', comment_id: `${POST}_c1`, post_id: POST, from: from('u2', 'Bo'), created_time: t0 + 140 }, t0 + 140),
  feed({ item: 'comment', verb: 'add', comment_id: `${POST}_c3`, post_id: POST, parent_id: POST, from: from('u3', 'Cy'), message: 'spam spam', created_time: t0 + 150 }, t0 + 150),
  feed({ item: 'comment', verb: 'remove', comment_id: `${POST}_c3`, post_id: POST, parent_id: POST, from: from('u3', 'Cy'), created_time: t0 + 160 }, t0 + 160),
  feed({ item: 'comment', verb: 'hide', comment_id: `${POST}_c2`, post_id: POST, parent_id: `${POST}_c1`, from: from('u2', 'Bo'), created_time: t0 + 170 }, t0 + 170),
  feed({ item: 'reaction', verb: 'add', reaction_type: 'wow', post_id: POST, from: from('u5', 'Ed'), created_time: t0 + 175 }, t0 + 175),
  messaging({ sender: { id: 'psid-4' }, recipient: { id: PAGE }, timestamp: (t0 + 200) * 1000, message: { mid: 'm_1', text: 'Do you ship to Canada?' } }),
  messaging({ sender: { id: 'psid-4' }, recipient: { id: PAGE }, timestamp: (t0 + 210) * 1000, message_edit: { mid: 'm_1', text: 'Do you ship to Canada and Mexico?', num_edit: 1 } }),
  messaging({ sender: { id: 'psid-4' }, recipient: { id: PAGE }, timestamp: (t0 + 220) * 1000, reaction: { mid: 'm_1', action: 'react', reaction: 'love', emoji: '❤' } }),
];
export const RECORDED_POST_ID = POST;

/** Deterministic shuffle (mulberry32), so a failing order can be replayed. */
export function shuffled<T>(items: T[], seed: number): T[] {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
