// The MCP tools (docs/mcp.md): each tool is one operation of the contract,
// openapi.yaml, and its input schema is derived from that operation: its path,
// query and header parameters as top-level properties, its JSON request body
// as `body`. OpenAPI 3.0 schemas are turned into plain JSON Schema (references
// inlined, `nullable` as an `anyOf` with a `{"type": "null"}` branch, `example`
// and `x-*` dropped), which is what an MCP client shows a model. Every `type`
// is a single string: the array form (`["string", "null"]`) is legal JSON
// Schema, but clients that read `type` as one string reject the tool or drop
// the constraint (the MCP Inspector flags it), and a null is not an absence
// for the API (a PATCH's null clears a field), so nullability stays, as a
// branch of its own.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { OPENAPI_PATH } from '../http/openapi.ts';

export type JsonSchema = Record<string, unknown>;

export interface ParamSpec {
  name: string;
  in: 'path' | 'query' | 'header';
}

export interface OperationTool {
  kind: 'operation';
  name: string;
  title: string;
  operationId: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  params: ParamSpec[];
  hasBody: boolean;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
  readOnly: boolean;
}

/** name → operationId; a short title for the client's list; readOnly for a POST that writes nothing. */
export const OPERATION_TOOLS: { name: string; operationId: string; title: string; readOnly?: true }[] = [
  { name: 'list_workspaces', operationId: 'listWorkspaces_v1', title: 'List workspaces' },
  { name: 'list_integrations', operationId: 'listIntegrations_v1', title: 'List connected channels' },
  { name: 'get_integration', operationId: 'getIntegration_v1', title: "A channel and its platform's rules" },
  { name: 'list_content', operationId: 'listContent_v1', title: 'List content' },
  { name: 'get_content', operationId: 'getContent_v1', title: 'Get content' },
  { name: 'create_content', operationId: 'createContent_v1', title: 'Create content' },
  { name: 'update_content', operationId: 'updateContent_v1', title: 'Update content' },
  { name: 'schedule_content', operationId: 'scheduleContent_v1', title: 'Schedule content' },
  { name: 'publish_content', operationId: 'publishContent_v1', title: 'Publish content now' },
  { name: 'revert_content_to_draft', operationId: 'revertContentToDraft_v1', title: 'Revert content to draft' },
  { name: 'check_content', operationId: 'checkContent_v1', title: "Check a draft against its channels' rules (nothing written)", readOnly: true },
  { name: 'check_schedule', operationId: 'validateWorkbenchSchedule_v2', title: 'Dry run of scheduling workbench rows' },
  { name: 'list_workbench_pages', operationId: 'listWorkbenchPages_v2', title: 'List workbench pages' },
  { name: 'list_workbench_rows', operationId: 'listWorkbenchRows_v2', title: 'List workbench rows' },
  { name: 'pull_content_into_workbench', operationId: 'pullContentIntoWorkbench_v2', title: 'Pull content into a workbench section' },
  { name: 'list_media', operationId: 'listMedia_v1', title: 'List media' },
  { name: 'get_media', operationId: 'getMedia_v1', title: 'Get a media item' },
  { name: 'review_inbox', operationId: 'reviewInbox_v1', title: 'Review inbox' },
  { name: 'get_review', operationId: 'getReview_v1', title: 'Get a review' },
  { name: 'decide_review_item', operationId: 'decideReviewItem_v1', title: 'Decide a review item' },
  { name: 'decide_review_items', operationId: 'decideReviewItems_v1', title: 'Decide several review items' },
  { name: 'list_inbox_threads', operationId: 'listInboxThreads_v1', title: 'List inbox threads' },
  { name: 'get_inbox_thread', operationId: 'getInboxThread_v1', title: 'Get an inbox thread' },
  { name: 'list_inbox_messages', operationId: 'listInboxMessages_v1', title: 'List messages of a thread' },
  { name: 'reply_inbox_thread', operationId: 'replyInboxThread_v1', title: 'Reply in a thread' },
  { name: 'analytics_summary', operationId: 'getAnalyticsSummary_v1', title: 'Analytics summary' },
];

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Turns an OpenAPI 3.0 schema (with `#/` references into `doc`) into self-contained JSON Schema. */
export function toJsonSchema(doc: any, schema: any, seen: string[] = []): JsonSchema {
  if (schema === null || typeof schema !== 'object') return schema;
  if (typeof schema.$ref === 'string') {
    const ref: string = schema.$ref;
    if (seen.includes(ref)) return {}; // a recursive schema: left open below this depth
    const target = ref
      .slice(2)
      .split('/')
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    if (target === undefined) throw new Error(`Unresolvable reference ${ref}`);
    return toJsonSchema(doc, target, [...seen, ref]);
  }
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'nullable' || k === 'example' || k === 'discriminator' || k === 'xml' || k === 'externalDocs' || k.startsWith('x-')) continue;
    if (k === 'properties' || k === 'patternProperties') {
      out[k] = Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, toJsonSchema(doc, s, seen)]));
    } else if (typeof v === 'object' && v !== null && k !== 'enum' && k !== 'required' && k !== 'default') {
      // allOf, anyOf, oneOf and tuple items are arrays of schemas
      out[k] = Array.isArray(v) ? v.map((s) => toJsonSchema(doc, s, seen)) : toJsonSchema(doc, v, seen);
    } else {
      out[k] = v;
    }
  }
  return schema.nullable === true ? orNull(out) : out;
}

/** `schema` or null, as `anyOf` branches of one `type` each; the annotations stay on the outside. */
function orNull(schema: JsonSchema): JsonSchema {
  const { description, title, default: fallback, ...rest } = schema;
  const outside: JsonSchema = {};
  if (description !== undefined) outside.description = description;
  if (title !== undefined) outside.title = title;
  if (fallback !== undefined) outside.default = fallback;
  if (Array.isArray(rest.enum)) rest.enum = rest.enum.filter((v: unknown) => v !== null);
  const keys = Object.keys(rest);
  // A lone allOf (a nullable reference) is the schema it wraps.
  const inner = keys.length === 1 && Array.isArray(rest.allOf) && rest.allOf.length === 1 ? (rest.allOf[0] as JsonSchema) : rest;
  const branches = keys.length === 1 && Array.isArray(rest.anyOf) ? (rest.anyOf as JsonSchema[]) : [inner];
  return { ...outside, anyOf: [...branches.filter((b) => b.type !== 'null'), { type: 'null' }] };
}

let cachedDoc: any = null;
export function loadContract(): any {
  cachedDoc ??= parse(readFileSync(OPENAPI_PATH, 'utf8'));
  return cachedDoc;
}

/** Every operation tool, its schema derived from the contract. Throws when an operation is missing. */
export function operationTools(doc: any = loadContract()): OperationTool[] {
  const byId = new Map<string, { path: string; method: string; item: any; op: any }>();
  for (const [p, item] of Object.entries<any>(doc.paths ?? {})) {
    for (const m of METHODS) if (item[m]?.operationId) byId.set(item[m].operationId, { path: p, method: m, item, op: item[m] });
  }
  const deref = (x: any) => (x?.$ref ? toJsonSchema(doc, x) : x);
  return OPERATION_TOOLS.map(({ name, operationId, title, readOnly }) => {
    const found = byId.get(operationId);
    if (!found) throw new Error(`MCP tool ${name}: no operation ${operationId} in openapi.yaml`);
    const { path, method, item, op } = found;
    const properties: Record<string, JsonSchema> = {};
    const required: string[] = [];
    const params: ParamSpec[] = [];
    for (const raw of [...(item.parameters ?? []), ...(op.parameters ?? [])]) {
      const p = deref(raw);
      if (p.in === 'cookie') continue;
      params.push({ name: p.name, in: p.in });
      const s = toJsonSchema(doc, p.schema ?? {});
      properties[p.name] = p.description ? { ...s, description: String(p.description).trim() } : s;
      if (p.required) required.push(p.name);
    }
    const body = op.requestBody ? deref(op.requestBody) : null;
    const jsonBody = body?.content?.['application/json']?.schema;
    if (jsonBody) {
      properties.body = { ...toJsonSchema(doc, jsonBody), description: 'The JSON request body' };
      if (body.required) required.push('body');
    }
    const description = [op.summary, op.description].filter(Boolean).map((s: string) => s.trim()).join('\n\n') + `\n\n(${method.toUpperCase()} ${path}, operation ${operationId})`;
    return {
      kind: 'operation' as const,
      name,
      title,
      operationId,
      method: method.toUpperCase() as OperationTool['method'],
      path,
      params,
      hasBody: Boolean(jsonBody),
      description,
      inputSchema: { type: 'object' as const, properties, required, additionalProperties: false },
      readOnly: method === 'get' || readOnly === true,
    };
  });
}

/** The media upload tool: the three steps of the signed upload flow in one call. */
export function uploadToolSchema(doc: any = loadContract(), allowLocalFiles: boolean): JsonSchema & { type: 'object' } {
  const init = toJsonSchema(doc, { $ref: '#/components/schemas/InitUploadDto' }) as { properties: Record<string, JsonSchema> };
  const source: Record<string, JsonSchema> = {
    url: { type: 'string', format: 'uri', maxLength: 2048, description: 'An http(s) URL to fetch the file from (public addresses only)' },
  };
  if (allowLocalFiles) source.path = { type: 'string', minLength: 1, description: 'A local file to upload (stdio transport only)' };
  return {
    type: 'object',
    properties: {
      workspaceId: { type: 'string', format: 'uuid' },
      ...source,
      filename: { ...init.properties.filename, description: 'Shown in the library; defaults to the name in the path or URL' },
      contentType: { ...init.properties.contentType, description: 'Defaults to the type detected from the bytes' },
      folderId: init.properties.folderId,
      altText: init.properties.altText,
    },
    required: ['workspaceId'],
    additionalProperties: false,
  };
}
