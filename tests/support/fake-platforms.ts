// Local fakes of the platform APIs the inbox replies and moderates through
// (server/platforms/inbox-platforms.ts), following their published formats:
//
// Meta Graph API, under /v21.0 (the version in META_GRAPH_BASE_URL):
//   POST /{comment-or-post-id}/comments    form message, access_token   -> {"id": ...}
//   POST /{ig-comment-id}/replies          form message, access_token   -> {"id": ...}
//   POST /{comment-id}                     form is_hidden | hide, access_token -> {"success": true}
//   DELETE /{comment-id}?access_token=                                    -> {"success": true}
//   POST /me/messages?access_token=        JSON {recipient: {id}, messaging_type, message: {text}}
//                                          -> {"recipient_id": ..., "message_id": ...}
//   Errors: {"error": {"message", "type": "OAuthException", "code", "fbtrace_id"}} (190: bad token, 100: bad parameter).
// X API v2 (Authorization: Bearer):
//   POST /2/tweets                         JSON {text, reply: {in_reply_to_tweet_id}} -> 201 {"data": {"id", "text", "edit_history_tweet_ids"}}
//   PUT /2/tweets/{id}/hidden              JSON {hidden}                -> {"data": {"hidden": ...}}
//   POST /2/dm_conversations/with/{participant_id}/messages  JSON {text} -> 201 {"data": {"dm_conversation_id", "dm_event_id"}}
//   Errors: problem JSON {"title", "type", "status", "detail"}.
//
// Every request is recorded; `failNext` makes the next answer an error.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCall {
  api: 'meta' | 'x';
  method: string;
  path: string;
  query: Record<string, string>;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface FakePlatforms {
  url: string;
  metaBaseUrl: string;
  calls: FakeCall[];
  /** The tokens each API accepts. */
  tokens: { meta: Set<string>; x: Set<string> };
  /** The next request is answered with this status and body instead. */
  failNext(status: number, body: unknown): void;
  close(): Promise<void>;
}

export async function startFakePlatforms(): Promise<FakePlatforms> {
  const calls: FakeCall[] = [];
  const tokens = { meta: new Set<string>(), x: new Set<string>() };
  let fail: { status: number; body: unknown } | null = null;
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const raw = Buffer.concat(chunks).toString('utf8');
      const type = String(req.headers['content-type'] ?? '');
      let body: Record<string, unknown> = {};
      try {
        if (type.startsWith('application/json')) body = raw ? JSON.parse(raw) : {};
        else if (type.startsWith('application/x-www-form-urlencoded')) body = Object.fromEntries(new URLSearchParams(raw));
      } catch {
        body = { __unparsable: raw };
      }
      const query = Object.fromEntries(url.searchParams);
      const api = url.pathname.startsWith('/v21.0/') ? 'meta' : 'x';
      calls.push({ api, method: req.method ?? '', path: url.pathname, query, headers: req.headers, body });
      const answer = (status: number, json: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(json));
      };
      if (fail) {
        const f = fail;
        fail = null;
        return answer(f.status, f.body);
      }
      n++;
      if (api === 'meta') {
        const graphError = (code: number, message: string) => answer(400, { error: { message, type: 'OAuthException', code, fbtrace_id: `Afake${n}` } });
        const token = String(body.access_token ?? query.access_token ?? '');
        if (!tokens.meta.has(token)) return graphError(190, 'Invalid OAuth access token - Cannot parse access token');
        const parts = url.pathname.slice('/v21.0/'.length).split('/').map(decodeURIComponent);
        if (req.method === 'POST' && parts.length === 2 && parts[0] === 'me' && parts[1] === 'messages') {
          const recipient = (body.recipient as { id?: unknown } | undefined)?.id;
          const text = (body.message as { text?: unknown } | undefined)?.text;
          if (typeof recipient !== 'string' || typeof text !== 'string' || !text) return graphError(100, '(#100) The parameter recipient and message are required');
          if (!['RESPONSE', 'UPDATE', 'MESSAGE_TAG'].includes(String(body.messaging_type))) return graphError(100, '(#100) messaging_type is invalid');
          return answer(200, { recipient_id: recipient, message_id: `m_fake${n}` });
        }
        if (req.method === 'POST' && parts.length === 2 && (parts[1] === 'comments' || parts[1] === 'replies')) {
          if (typeof body.message !== 'string' || !body.message) return graphError(100, '(#100) The parameter message is required');
          return answer(200, { id: `${parts[0]}_fake${n}` });
        }
        if (req.method === 'POST' && parts.length === 1) {
          const flag = body.is_hidden ?? body.hide;
          if (flag !== 'true' && flag !== 'false') return graphError(100, '(#100) is_hidden (Page comments) or hide (IG comments) is required');
          return answer(200, { success: true });
        }
        if (req.method === 'DELETE' && parts.length === 1) return answer(200, { success: true });
        return graphError(100, `(#100) Unsupported ${req.method} request.`);
      }
      const problem = (status: number, title: string, detail: string) => answer(status, { title, type: 'about:blank', status, detail });
      const auth = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''));
      if (!auth || !tokens.x.has(auth[1])) return problem(401, 'Unauthorized', 'Unauthorized');
      if (!type.startsWith('application/json')) return problem(400, 'Invalid Request', 'The Content-Type must be application/json.');
      if (req.method === 'POST' && url.pathname === '/2/tweets') {
        const reply = body.reply as { in_reply_to_tweet_id?: unknown } | undefined;
        if (typeof body.text !== 'string' || !body.text) return problem(400, 'Invalid Request', 'text is required.');
        if (reply !== undefined && typeof reply.in_reply_to_tweet_id !== 'string') return problem(400, 'Invalid Request', 'reply.in_reply_to_tweet_id must be a string.');
        const id = String(1_900_000_000_000_000_000n + BigInt(n));
        return answer(201, { data: { id, text: body.text, edit_history_tweet_ids: [id] } });
      }
      const hidden = /^\/2\/tweets\/([^/]+)\/hidden$/.exec(url.pathname);
      if (req.method === 'PUT' && hidden) {
        if (typeof body.hidden !== 'boolean') return problem(400, 'Invalid Request', 'hidden must be a boolean.');
        return answer(200, { data: { hidden: body.hidden } });
      }
      const dm = /^\/2\/dm_conversations\/with\/([^/]+)\/messages$/.exec(url.pathname);
      if (req.method === 'POST' && dm) {
        if (typeof body.text !== 'string' || !body.text) return problem(400, 'Invalid Request', 'text is required.');
        return answer(201, { data: { dm_conversation_id: `${dm[1]}-99`, dm_event_id: `dm-event-${n}` } });
      }
      return problem(404, 'Not Found Error', `No ${req.method} ${url.pathname}.`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    metaBaseUrl: `${url}/v21.0`,
    calls,
    tokens,
    failNext(status, body) {
      fail = { status, body };
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
