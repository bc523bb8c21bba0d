// openapi.yaml as a product: the rules every operation must follow.
import { describe, expect, it } from 'vitest';
import type { AppDeps } from '../../server/deps.ts';
import { HOOK_SOURCES, X_CRC_TOKEN, X_CRC_TOKEN_MAX_LENGTH } from '../../server/inbox/signatures.ts';
import { createHooksRouter, HOOK_BODY_LIMIT_BYTES, HOOK_CHALLENGE_MAX_LENGTH, servedRoutes } from '../../server/routes/hooks.ts';
import { routes } from '../../server/routes/index.ts';
import { openapi } from '../support/server.ts';

const ops = openapi.operations;
const raw = (op: (typeof ops)[number]) => openapi.doc.paths[op.path][op.method.toLowerCase()];

describe('openapi.yaml', () => {
  it('is OpenAPI 3.0 and every operation has a handler, and every handler an operation', () => {
    expect(openapi.doc.openapi).toMatch(/^3\.0\./);
    expect(ops.map((o) => o.operationId).sort()).toEqual(Object.keys(routes).sort());
  });

  it.each(ops.map((o) => [`${o.method} ${o.path}`, o] as const))('%s follows the conventions', (_name, op) => {
    const spec = raw(op);
    if (op.path.startsWith('/v1/')) expect(op.operationId).toMatch(/_v1$/);
    // The Workbench lives under /v2 (openapi.yaml, Versioning): its operation ids end in _v2.
    if (op.path.startsWith('/v2/')) expect(op.operationId).toMatch(/_v2$/);
    expect(op.path).toMatch(/^\/v[12]\//);
    expect(['read', 'write', 'expensive']).toContain(spec['x-throttle']);
    if (op.method === 'GET') expect(spec['x-throttle']).toBe('read');
    expect(spec.summary, 'summary').toBeTruthy();
    // Every operation documents its error answers with the shared envelope.
    for (const status of ['400', '500']) expect(Object.keys(spec.responses)).toContain(status);
    if (!op.anonymous) expect(Object.keys(spec.responses)).toEqual(expect.arrayContaining(['401', '429']));
    if (op.hasBody) {
      expect(spec.requestBody.content['application/json'].example, 'request example').toBeTruthy();
      expect(Object.keys(spec.responses)).toEqual(expect.arrayContaining(['413', '415']));
    }
    // Success bodies are envelopes with both keys.
    const success = Object.entries<any>(spec.responses).filter(([s]) => s.startsWith('2') && s !== '204');
    expect(success.length + (spec.responses['204'] ? 1 : 0)).toBeGreaterThan(0);
    for (const [, ref] of success) {
      const r = ref.$ref ? ref.$ref.slice(2).split('/').reduce((o: any, k: string) => o[k], openapi.doc) : ref;
      const schema = r.content['application/json'].schema;
      expect(schema.required).toEqual(['data', 'meta']);
    }
  });

  describe('x-raw-body operations (the inbound hooks, served by server/routes/hooks.ts)', () => {
    const rawOps = openapi.rawOperations;
    const spec = (op: (typeof rawOps)[number]) => openapi.doc.paths[op.path][op.method.toLowerCase()];
    // The router is only inspected, never called: it needs no database.
    const served = servedRoutes(createHooksRouter({} as AppDeps));

    it('are exactly what the hooks router serves, and have no pipeline handler', () => {
      expect(rawOps.map((o) => `${o.method} ${o.path}`).sort()).toEqual(['GET /v1/hooks/{source}/{integrationId}', 'POST /v1/hooks/{source}/{integrationId}']);
      for (const op of rawOps) {
        expect(served, `${op.method} ${op.path} is served by the hooks router`).toContain(`${op.method} ${op.expressPath}`);
        expect(routes).not.toHaveProperty(op.operationId);
      }
      expect(served.sort()).toEqual(rawOps.map((o) => `${o.method} ${o.expressPath}`).sort());
    });

    it.each(rawOps.map((o) => [`${o.method} ${o.path}`, o] as const))('%s follows the conventions of a public raw-body route', (_name, op) => {
      const s = spec(op);
      expect(op.operationId).toMatch(/_v1$/);
      expect(s.summary).toBeTruthy();
      expect(s.security).toEqual([]);
      expect(op.anonymous).toBe(true);
      // Throttled as failed credentials (api.inbox_hook_guard): 429 AUTH_THROTTLED with Retry-After.
      expect(s['x-throttle']).toBe(op.method === 'GET' ? 'read' : 'write');
      const statuses = Object.keys(s.responses);
      expect(statuses).toEqual(expect.arrayContaining(['200', '400', '404', '429', '500', '503']));
      expect(Object.keys(s.responses['429'].headers ?? {})).toContain('Retry-After');
      expect(s.responses['429'].content['application/json'].example.error.code).toBe('AUTH_THROTTLED');
      if (op.method === 'POST') {
        expect(statuses).toEqual(expect.arrayContaining(['401', '413']));
        expect(s.requestBody.content['application/json'].example).toBeTruthy();
        expect(s.requestBody['x-body-limit-bytes']).toBe(HOOK_BODY_LIMIT_BYTES);
        expect(s.responses['200'].content['application/json'].schema.required).toEqual(['data', 'meta']);
        const headers = s.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name.toLowerCase());
        expect(headers).toEqual(expect.arrayContaining(['x-hub-signature-256', 'x-twitter-webhooks-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']));
      } else {
        expect(statuses).toEqual(expect.arrayContaining(['403', '405']));
        expect(Object.keys(s.responses['200'].content).sort()).toEqual(['application/json', 'text/plain']);
        const query = Object.fromEntries(s.parameters.map((p: any) => [p.name, p.schema]));
        expect(Object.keys(query).sort()).toEqual(['crc_token', 'hub.challenge', 'hub.mode', 'hub.verify_token']);
        expect(query['hub.challenge'].maxLength).toBe(HOOK_CHALLENGE_MAX_LENGTH);
        expect(query.crc_token.maxLength).toBe(X_CRC_TOKEN_MAX_LENGTH);
        expect(query.crc_token.pattern).toBe(X_CRC_TOKEN.source);
      }
      const source = openapi.doc.paths[op.path].parameters.find((p: any) => p.name === 'source');
      expect(source.schema.enum).toEqual([...HOOK_SOURCES]);
    });
  });
});
