import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';
import { isHashtag, isStorableDate, isStorableDateTime, keyName, textProblems } from './guard.ts';

// ajv-formats ships CommonJS; its default export is the function.
type AddFormats = (ajv: Ajv) => Ajv;
const addFormats: AddFormats = (addFormatsModule as unknown as { default?: AddFormats }).default ?? (addFormatsModule as unknown as AddFormats);

export const OPENAPI_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../openapi.yaml');

export type Throttle = 'read' | 'write' | 'expensive';
export type Plan = 'basic' | 'standard' | 'premium';

export interface FieldProblem {
  field: string;
  code: string;
  message: string;
}

export interface Operation {
  operationId: string;
  method: string;
  path: string; // OpenAPI template, e.g. /v1/workspaces/{workspaceId}/members
  expressPath: string;
  throttle: Throttle;
  minPlan: Plan;
  anonymous: boolean;
  /** Reviews: a client-review route (security scheme reviewLink only), gated by api.gate_review_link. */
  reviewLink: boolean;
  hasBody: boolean;
  bodyRequired: boolean;
  idempotent: boolean;
  validate(input: { params: unknown; query: unknown; headers: Record<string, unknown>; body: unknown }): FieldProblem[];
  responseValidator(status: number): ValidateFunction | null;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function formatErrors(prefix: string, errors: ErrorObject[] | null | undefined): FieldProblem[] {
  const out: FieldProblem[] = [];
  for (const e of errors ?? []) {
    // A property name is part of the field: NUL and lone surrogates in it are written as escapes.
    let field = prefix + keyName(e.instancePath.replace(/\//g, '.'));
    let code = e.keyword;
    let message = e.message ?? 'is not valid';
    if (e.keyword === 'required') {
      field = `${field}.${(e.params as { missingProperty: string }).missingProperty}`;
      message = 'is required';
    } else if (e.keyword === 'additionalProperties') {
      field = `${field}.${keyName((e.params as { additionalProperty: string }).additionalProperty)}`;
      code = 'unknown_property';
      message = 'is not an allowed property';
    }
    out.push({ field, code, message });
  }
  return out;
}

/**
 * Reads the bundled contract, openapi.yaml: `npm run bundle` writes it from the
 * split tree under openapi/ (see openapi/README.md), and `npm test` fails when
 * it is stale.
 */
export function loadOpenApi(file = OPENAPI_PATH) {
  const doc = parse(readFileSync(file, 'utf8'));
  // Bodies and responses: exact types. Parameters arrive as strings: coerce.
  const strict = new Ajv({ allErrors: true, strict: false, validateSchema: false, coerceTypes: false, useDefaults: true });
  const coercing = new Ajv({ allErrors: true, strict: false, validateSchema: false, coerceTypes: 'array', useDefaults: true });
  for (const ajv of [strict, coercing]) {
    addFormats(ajv);
    // RFC 3339 as ajv-formats checks it, narrowed to what PostgreSQL stores
    // (offsets up to ±15:59, years 0001-9999), so such a value is refused
    // here with its field named instead of by SQL (server/http/guard.ts).
    ajv.addFormat('date-time', isStorableDateTime);
    ajv.addFormat('date', isStorableDate);
    // The contract's `pattern` on a hashtag is portable (no \p{...}), so looser
    // than the rule its description states; this format holds the rule.
    ajv.addFormat('hashtag', isHashtag);
    ajv.addSchema(doc, 'openapi.json');
  }
  const resolve = (obj: any): any => {
    if (obj && typeof obj.$ref === 'string' && obj.$ref.startsWith('#/')) {
      return obj.$ref
        .slice(2)
        .split('/')
        .reduce((o: any, k: string) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    }
    return obj;
  };
  const rewriteRefs = (schema: any): any =>
    JSON.parse(JSON.stringify(schema), (k, v) => (k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `openapi.json${v}` : v));

  const operations: Operation[] = [];
  // `x-raw-body: true`: served by their own router on the raw bytes (the
  // inbound hooks, server/routes/hooks.ts), not by the JSON pipeline; they are
  // throttled as failed credentials only (api.inbox_hook_guard), so their
  // `throttle` is never read.
  const rawOperations: Operation[] = [];
  // `x-browser-redirect: true`: a browser's landing (the OAuth callback,
  // server/routes/connections.ts), answered with a redirect by its own router.
  const redirectOperations: Operation[] = [];
  for (const [p, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map(resolve);
      const group = (where: string) => {
        const ps = params.filter((x: any) => x.in === where);
        const properties: Record<string, unknown> = {};
        const required: string[] = [];
        for (const x of ps) {
          const key = where === 'header' ? x.name.toLowerCase() : x.name;
          properties[key] = rewriteRefs(x.schema ?? {});
          if (x.required) required.push(key);
        }
        return { type: 'object', properties, required, additionalProperties: where === 'query' ? false : true };
      };
      const pathV = coercing.compile(group('path'));
      const queryV = coercing.compile(group('query'));
      const headerV = coercing.compile(group('header'));
      const rb = resolve(op.requestBody);
      const bodySchema = rb?.content?.['application/json']?.schema;
      const bodyV = bodySchema ? strict.compile(rewriteRefs(bodySchema)) : null;
      const security = op.security ?? doc.security ?? [];
      const rawBody = op['x-raw-body'] === true;
      const redirect = op['x-browser-redirect'] === true;
      const throttle = op['x-throttle'];
      if (!rawBody && !redirect && !['read', 'write', 'expensive'].includes(throttle)) {
        throw new Error(`openapi.yaml: ${method.toUpperCase()} ${p} needs x-throttle read|write|expensive`);
      }
      const responseCache = new Map<number, ValidateFunction | null>();
      (rawBody ? rawOperations : redirect ? redirectOperations : operations).push({
        operationId: op.operationId,
        method: method.toUpperCase(),
        path: p,
        expressPath: p.replace(/\{([^}]+)\}/g, ':$1'),
        throttle,
        minPlan: op['x-min-plan'] ?? 'basic',
        anonymous: Array.isArray(security) && security.length === 0,
        reviewLink: Array.isArray(security) && security.length > 0 && security.every((x: Record<string, unknown>) => Object.keys(x).join() === 'reviewLink'),
        hasBody: Boolean(bodyV),
        bodyRequired: Boolean(rb?.required),
        idempotent: params.some((x: any) => x.in === 'header' && x.name.toLowerCase() === 'idempotency-key'),
        validate({ params: pv, query, headers, body }) {
          // NUL and lone surrogates in any string or key, wherever they arrive (server/http/guard.ts).
          const problems: FieldProblem[] = [
            ...textProblems('path', pv),
            ...textProblems('query', query),
            ...textProblems('header', headers),
            ...textProblems('body', body),
          ];
          if (!pathV(pv)) problems.push(...formatErrors('path', pathV.errors));
          if (!queryV(query)) problems.push(...formatErrors('query', queryV.errors));
          if (!headerV(headers)) problems.push(...formatErrors('header', headerV.errors));
          if (bodyV) {
            if (body === undefined) {
              if (rb?.required) problems.push({ field: 'body', code: 'required', message: 'a JSON body is required' });
            } else if (!bodyV(body)) problems.push(...formatErrors('body', bodyV.errors));
          } else if (body !== undefined) {
            problems.push({ field: 'body', code: 'unexpected', message: 'this operation takes no body' });
          }
          // One entry per field: the first problem found for it, but a failed
          // format before the pattern that restates it for other validators
          // (the contract's date-time and hashtag patterns).
          const formatted = new Set(problems.filter((x) => x.code === 'format').map((x) => x.field));
          const seen = new Set<string>();
          return problems
            .filter((x) => !(x.code === 'pattern' && formatted.has(x.field)))
            .filter((x) => (seen.has(x.field) ? false : (seen.add(x.field), true)));
        },
        responseValidator(status) {
          if (!responseCache.has(status)) {
            const r = resolve(op.responses?.[String(status)]);
            const schema = r?.content?.['application/json']?.schema;
            responseCache.set(status, schema ? strict.compile(rewriteRefs(schema)) : null);
          }
          return responseCache.get(status) ?? null;
        },
      });
    }
  }
  return { doc, operations, rawOperations, redirectOperations };
}

export type OpenApi = ReturnType<typeof loadOpenApi>;
