// HTTP client for tests: real requests, and every answer checked against
// openapi.yaml (the status must be documented for the operation and the
// body must match its schema).
import { expect } from 'vitest';
import type { Operation } from '../../server/http/openapi.ts';
import { openapi, type TestServer } from './server.ts';

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

function findOperation(method: string, path: string): Operation | undefined {
  const pathname = path.split('?')[0];
  return openapi.operations.find((op) => {
    if (op.method !== method) return false;
    const re = new RegExp(`^${op.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    return re.test(pathname);
  });
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  /** Skip the contract check (for deliberately undocumented requests). */
  unchecked?: boolean;
}

/** A client of the server at `server.baseUrl`: a test server, or any real one (the Citus tests' server/main.ts). */
export function client(server: Pick<TestServer, 'baseUrl'>) {
  async function request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(server.baseUrl + path, { method, headers, body });
    const text = await res.text();
    const parsed = text ? JSON.parse(text) : undefined;
    expect(res.headers.get('x-request-id'), 'every response carries X-Request-Id').toBeTruthy();
    if (!opts.unchecked) {
      const op = findOperation(method, path);
      if (op && res.status === 204) {
        expect(openapi.doc.paths[op.path][op.method.toLowerCase()].responses['204'], `${method} ${op.path} documents 204`).toBeTruthy();
        expect(text).toBe('');
      } else if (op) {
        const validate = op.responseValidator(res.status);
        expect(validate, `${method} ${op.path} documents status ${res.status}`).not.toBeNull();
        if (validate && !validate(parsed)) {
          throw new Error(`${method} ${path} -> ${res.status}: body does not match openapi.yaml: ${JSON.stringify(validate.errors)}\n${text}`);
        }
      } else if (parsed !== undefined) {
        expect(parsed).toHaveProperty('error.code');
        expect(parsed).toHaveProperty('error.requestId');
      }
    }
    return { status: res.status, body: parsed as T, headers: res.headers };
  }
  return {
    request,
    get: <T = any>(path: string, opts?: RequestOptions) => request<T>('GET', path, opts),
    post: <T = any>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('POST', path, { ...opts, body }),
    patch: <T = any>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('PATCH', path, { ...opts, body }),
    put: <T = any>(path: string, body?: unknown, opts?: RequestOptions) => request<T>('PUT', path, { ...opts, body }),
    delete: <T = any>(path: string, opts?: RequestOptions) => request<T>('DELETE', path, opts),
  };
}

/** Signs up a fresh organization and returns its owner's session and first workspace. */
export async function signup(api: ReturnType<typeof client>, tag = Math.random().toString(36).slice(2, 8)) {
  const email = `owner-${tag}@example.com`;
  const password = 'correct horse battery staple';
  const res = await api.post('/v1/auth/signup', { email, password, organizationName: `Org ${tag}`, workspaceName: `WS ${tag}` });
  expect(res.status).toBe(201);
  return {
    email,
    password,
    token: res.body.data.session.token as string,
    userId: res.body.data.user.id as string,
    organizationId: res.body.data.organization.id as string,
    workspaceId: res.body.data.workspace.id as string,
  };
}

/** Creates an API key with the owner's session. */
export async function createKey(api: ReturnType<typeof client>, sessionToken: string, workspaceId: string, body: Record<string, unknown> = {}) {
  const res = await api.post(`/v1/workspaces/${workspaceId}/api-keys`, { name: 'test key', workspaceIds: [workspaceId], ...body }, { token: sessionToken });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; key: string; keyPrefix: string };
}
