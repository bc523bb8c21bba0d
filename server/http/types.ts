// Handler types derived from the contract: server/generated/api.d.ts is
// openapi-typescript's output for openapi.yaml (`npm run generate`, checked
// by `npm run check:types`), and its `operations` interface, keyed by
// operationId, types what each handler receives and returns.
import type { components, operations } from '../generated/api.d.ts';
import type { Operation } from './openapi.ts';

export type OperationId = keyof operations;
export type Schema<N extends keyof components['schemas']> = components['schemas'][N];

/** An operation without path or query parameters gets an empty object (`never` in api.d.ts). */
type OrEmpty<T> = [T] extends [never] ? Record<never, never> : [T] extends [undefined] ? Record<never, never> : NonNullable<T>;

/**
 * Query parameters whose `default:` in openapi.yaml the validator fills in
 * (ajv with `useDefaults`, server/http/openapi.ts): the handler finds them
 * present. api.d.ts keeps them optional (openapi-typescript marks defaulted
 * schema properties required, not defaulted parameters), so they are named
 * here; `checkQueryDefaults` refuses to boot when this list and the
 * contract differ.
 */
export const QUERY_DEFAULTS = {
  listArticles_v1: ['limit', 'offset'],
  listCampaigns_v1: ['includePhases'],
  listCampaignContent_v1: ['limit', 'offset', 'sortDirection'],
  listContentRoots_v1: ['limit', 'offset'],
  listContent_v1: ['includeReviewLifecycle', 'limit', 'offset'],
  listMediaFolders_v1: ['limit'],
  listMediaLabels_v1: ['includeMerged'],
  listMedia_v1: ['state', 'sortBy', 'order', 'limit'],
  listMediaUsageHistory_v1: ['limit'],
  listSandboxPosts_v1: ['limit', 'offset'],
  // Analytics
  getAnalyticsAggregates_v1: ['interval', 'groupBy'],
  listAnalyticsPosts_v1: ['sortBy', 'order', 'limit', 'offset'],
  // Grid planner
  getGrid_v1: ['limit'],
  // Reviews and approval workflows
  reviewHistory_v1: ['limit', 'offset'],
  listNotifications_v1: ['limit', 'unread'],
  listReviewLinkNotifications_v1: ['limit', 'unread'],
  // Inbox
  listInboxThreads_v1: ['limit'],
  listInboxMessages_v1: ['limit'],
  // Lifecycle webhooks
  listWebhookDeliveries_v1: ['limit', 'offset'],
  listWebhookLog_v1: ['limit', 'offset'],
} as const satisfies { [K in OperationId]?: readonly (keyof QueryOf<K>)[] };

type QueryOf<K extends OperationId> = OrEmpty<operations[K]['parameters']['query']>;
type Defaulted<K extends OperationId> = K extends keyof typeof QUERY_DEFAULTS ? (typeof QUERY_DEFAULTS)[K][number] : never;

/** `T` with the keys `D` present (their defaults applied). */
export type WithDefaults<T, D extends PropertyKey> = [D] extends [never] ? T : Omit<T, D> & { [P in D & keyof T]-?: Exclude<T[P], undefined> };

/** Path parameters, validated and coerced to their schema types. */
export type PathParams<K extends OperationId> = OrEmpty<operations[K]['parameters']['path']>;
/** Query parameters, validated, coerced to their schema types, defaults applied. */
export type QueryParams<K extends OperationId> = WithDefaults<QueryOf<K>, Defaulted<K>>;
/**
 * The validated JSON body, its schema defaults applied (api.d.ts already marks
 * defaulted properties present); `undefined` when the body is optional and
 * none was sent, or when the operation takes none.
 */
export type RequestBody<K extends OperationId> = BodyOf<operations[K]['requestBody']>;
type BodyOf<R> = R extends { content: { 'application/json': infer B } } ? B : undefined;

type HeaderParams<K extends OperationId> = NonNullable<operations[K]['parameters']['header']>;
/**
 * `ctx.idempotencyKey`: a string where openapi.yaml requires the
 * Idempotency-Key header (the validator refuses a request without it), null
 * where the operation has no such header.
 */
export type IdempotencyKey<K extends OperationId> = [HeaderParams<K>] extends [never]
  ? null
  : HeaderParams<K> extends { 'Idempotency-Key': string }
    ? string
    : string | null;

type Responses<K extends OperationId> = operations[K]['responses'];
/** The success status of the operation (each operation of openapi.yaml documents one). */
export type SuccessStatus<K extends OperationId> = Extract<keyof Responses<K>, 200 | 201 | 202 | 204>;
type SuccessBody<K extends OperationId> = Responses<K>[SuccessStatus<K>] extends { content: { 'application/json': infer C } } ? C : never;
/** `data` of the success envelope; null for 204. */
export type ResponseData<K extends OperationId> = [SuccessBody<K>] extends [never] ? null : SuccessBody<K> extends { data: infer D } ? D : never;
/** `meta` of the success envelope; null for 204. */
export type ResponseMeta<K extends OperationId> = [SuccessBody<K>] extends [never] ? null : SuccessBody<K> extends { meta: infer M } ? M : never;

/** The `{items, meta}` an api.list_* function answers for operation K's envelope. */
export type ItemsPage<K extends OperationId> = { items: ResponseData<K>; meta: ResponseMeta<K> };

/** A status other than 200 must be named; 200 is the default. */
type StatusField<K extends OperationId> = [SuccessStatus<K>] extends [200] ? { status?: 200 } : { status: SuccessStatus<K> };
/** A null meta may be left out (the pipeline sends null); any other must be given. */
type MetaField<K extends OperationId> = null extends ResponseMeta<K> ? { meta?: ResponseMeta<K> } : { meta: ResponseMeta<K> };

/** What a handler returns: the success envelope of its operation. */
export type TypedResult<K extends OperationId> = StatusField<K> &
  MetaField<K> & {
    data: ResponseData<K>;
    /** For anonymous routes that establish who the caller is (sign-up, sign-in): the audit row's actor. */
    actor?: { userId: string; organizationId: string };
  };

/**
 * Throws when QUERY_DEFAULTS and the contract disagree for `op`: the
 * validator is run on an empty query and what it fills in is compared.
 */
export function checkQueryDefaults(op: Operation): void {
  const filled: Record<string, unknown> = {};
  op.validate({ params: {}, query: filled, headers: {}, body: undefined });
  const actual = Object.keys(filled).sort();
  const listed = Object.hasOwn(QUERY_DEFAULTS, op.operationId) ? QUERY_DEFAULTS[op.operationId as keyof typeof QUERY_DEFAULTS] : [];
  const declared = [...listed].sort();
  if (actual.join() !== declared.join()) {
    throw new Error(
      `${op.operationId}: openapi.yaml gives defaults to the query parameters [${actual.join(', ')}], ` +
        `QUERY_DEFAULTS in server/http/types.ts names [${declared.join(', ')}]`,
    );
  }
}
