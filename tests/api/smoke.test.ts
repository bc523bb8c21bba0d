import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, signup } from '../support/http.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer('smoke');
});
afterAll(async () => server?.close());

describe('smoke', () => {
  it('signs up and lists workspaces', async () => {
    const api = client(server);
    const owner = await signup(api);
    const res = await api.get('/v1/workspaces', { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.meta).toBeNull();
  });
});
