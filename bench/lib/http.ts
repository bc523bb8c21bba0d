// The HTTP side's client: node:http over a keep-alive Agent with one socket
// per loop. Measured on this machine (trivial server in another process,
// 16 loops): node:http ~60 µs CPU per request, undici's Pool.request ~55 µs,
// global fetch ~240 µs (WHATWG streams and Response objects per request).
// undici is only a transitive dependency here, so node:http: built in and
// within a few µs of the cheapest. bench/README.md has the figures.
import http from 'node:http';
import type { Op } from './load.ts';

export class HttpClient {
  readonly agent: http.Agent;
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;

  constructor(baseUrl: string, sockets: number, timeoutMs: number) {
    const u = new URL(baseUrl);
    if (u.hostname !== '127.0.0.1') throw new Error(`the bench only targets 127.0.0.1, not ${u.hostname}`);
    this.host = u.hostname;
    this.port = Number(u.port);
    this.timeoutMs = timeoutMs;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets, scheduling: 'lifo' });
  }

  /** An op doing GET path with these headers; only a 200 is a success (the body is drained unread). */
  getOp(path: string, headers: Record<string, string>): Op {
    return this.requestOp('GET', path, 200, () => ({ headers }));
  }

  /** An op sending `body` as JSON with a bearer token; only `expect` is a success (the body is drained unread). */
  jsonOp(method: string, path: string, token: string, body: unknown, expect: number): Op {
    const payload = Buffer.from(JSON.stringify(body));
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': String(payload.length) };
    return this.requestOp(method, path, expect, () => ({ headers, body: payload }));
  }

  /**
   * An op whose headers and body `make` builds for each request (a signed
   * body, a new id); only `expect` is a success (the body is drained unread),
   * any other status fails with the start of the answer.
   */
  requestOp(method: string, path: string, expect: number, make: () => { headers: http.OutgoingHttpHeaders; body?: string | Buffer }): Op {
    const { host, port, agent, timeoutMs } = this;
    return () =>
      new Promise<void>((resolve, reject) => {
        const { headers, body } = make();
        const req = http.request({ host, port, path, method, agent, headers }, (res) => {
          if (res.statusCode === expect) {
            res.on('end', resolve);
            res.on('error', reject);
            res.resume();
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => reject(new Error(`${method} ${path} -> ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`)));
          res.on('error', reject);
        });
        req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
        req.on('error', reject);
        req.end(body);
      });
  }

  close() {
    this.agent.destroy();
  }
}

/** A JSON request for fixtures (not measured). Throws unless the status is `expect`. */
export async function jsonRequest<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; expect?: number } = {},
): Promise<T> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(baseUrl + path, {
    method,
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  const expect = opts.expect ?? 200;
  if (res.status !== expect) throw new Error(`${method} ${path} -> ${res.status} (expected ${expect}): ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : undefined) as T;
}
