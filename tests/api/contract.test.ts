// openapi.yaml as a product: the rules every operation must follow.
import { describe, expect, it } from 'vitest';
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
});
