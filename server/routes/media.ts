// Media library: uploads, items, bin, bulk actions, folders, labels and
// label groups. The rules live in SQL (the api.*media* functions of db/schema.sql);
// what happens here is what SQL cannot do: talk to storage (signed URLs,
// verifying the uploaded bytes) and sign the list cursors.
import type { SerializableValue } from 'slonik';
import { sql } from '../db/pool.ts';
import { ApiError, toApiError } from '../http/errors.ts';
import type { HandlerContext, PhasedRoute, RouteTable } from '../http/pipeline.ts';
import type { Schema } from '../http/types.ts';
import { decodeCursor, encodeCursor, type CursorScope } from '../storage/cursor.ts';
import type { MediaType } from '../storage/inspect.ts';

const SUPPORTED = ['image/png', 'image/jpeg', 'image/webp', 'image/gif', 'video/mp4', 'video/quicktime', 'video/webm'];

const call = <T>(ctx: HandlerContext, fragment: ReturnType<typeof sql.fragment>) => ctx.call<T>(fragment);
const uuids = (ids: string[]) => sql.array(ids, 'uuid');
const jsonb = (value: SerializableValue) => sql.jsonb(value);
type SqlValue = ReturnType<typeof jsonb>;

/** Copies the keys present in `body` (so null, "clear it", differs from absent). */
function present<B extends object, K extends keyof B>(body: B | undefined, keys: K[]): Partial<Pick<B, K>> {
  const out: Partial<Pick<B, K>> = {};
  for (const k of keys) if (body && Object.hasOwn(body, k)) out[k] = body[k];
  return out;
}

/** The operations answered by `page`. */
type CursorListContext = HandlerContext<'listMedia_v1'> | HandlerContext<'listMediaFolders_v1'> | HandlerContext<'listMediaUsageHistory_v1'>;

/** A cursor-paginated answer from an api.* list function returning {items, hasMore, last}. */
async function page<T>(ctx: CursorListContext, scope: CursorScope, run: (after: SqlValue | null) => ReturnType<typeof sql.fragment>) {
  const storage = ctx.storage;
  const cursor = ctx.query.cursor;
  const after = cursor ? { k: await decodeCursor(storage, scope, cursor) } : null;
  const r = await ctx.call<{ items: T[]; hasMore: boolean; last: unknown[] | null }>(run(after ? jsonb(after) : null));
  const nextCursor = r.hasMore && r.last ? await encodeCursor(storage, scope, r.last) : null;
  return { data: r.items, meta: { nextCursor, hasMore: Boolean(r.hasMore) } };
}

/** An upload session as the api.* functions answer it: with its storage key, without where to send the bytes. */
type DbUploadSession = Omit<Schema<'MediaUploadSession'>, 'uploadUrl' | 'method' | 'headers'> & { storageKey: string; canUpload?: boolean };

/** What api.begin_media_upload_completion answers (api.claim_media_upload_completion adds the claim to a pending one). */
type UploadCompletionBegin =
  | { state: 'completed'; media: Schema<'MediaItem'> }
  | { state: 'pending'; sessionId: string; uploadKey: string; finalKey: string; declaredSize: number; contentType: string; filename: string; folderId: string | null };

/** The session as the API shows it: the SQL record plus where and how to send the bytes. */
async function uploadSession(ctx: HandlerContext, s: DbUploadSession): Promise<Schema<'MediaUploadSession'>> {
  const { storageKey, canUpload, ...rest } = s;
  const base = { ...rest, uploadUrl: null as string | null, method: 'PUT' as const, headers: { 'Content-Type': s.contentType } as Record<string, string> };
  if (s.state !== 'pending' || canUpload === false) return base;
  const target = await ctx.storage.driver.uploadTarget({
    sessionId: s.sessionId, key: storageKey, contentType: s.contentType, size: Number(s.size), expiresAt: new Date(s.expiresAt),
  });
  return { ...base, uploadUrl: target.url, method: target.method, headers: target.headers };
}

/** What api.media_object answers: where the item's bytes are. */
interface MediaObject {
  id: string;
  storageKey: string;
  contentType: string;
  filename: string;
  fileSize: number;
  state: string;
  checksumSha256: string | null;
}

async function objectUrl(ctx: HandlerContext<'getMediaViewUrl_v1'> | HandlerContext<'getMediaDownloadUrl_v1'>, disposition: 'inline' | 'attachment') {
  const o = await ctx.call<MediaObject>(sql.fragment`api.media_object(${ctx.params.id})`);
  const expiresAt = new Date((Math.floor(Date.now() / 1000) + ctx.config.SIGNED_URL_TTL_SECONDS) * 1000);
  const url = await ctx.storage.driver.objectUrl({
    mediaId: o.id, key: o.storageKey, contentType: o.contentType, filename: o.filename, disposition, expiresAt,
  });
  return { data: { url, method: 'GET' as const, disposition, expiresAt: expiresAt.toISOString(), contentType: o.contentType, fileSize: o.fileSize } };
}

/**
 * How long a completion may verify the bytes before another request may take
 * the session over (a process that died mid-completion leaves its claim to
 * lapse). Streaming and hashing 512 MB takes seconds on disk, longer from S3.
 */
const COMPLETION_CLAIM_SECONDS = 600;

/** The pending answer of api.claim_media_upload_completion: what verifying the bytes needs, and the claim. */
type CompletionClaim = Extract<UploadCompletionBegin, { state: 'pending' }> & { claim: string };

/** What the bytes turned out to be: p_facts of api.finish_media_upload_completion. */
type VerifiedUpload = {
  type: MediaType;
  contentType: string | null;
  fileSize: number;
  width: number | null;
  height: number | null;
  durationMs: number | null;
  checksumSha256: string;
  storageKey: string;
};

/**
 * POST .../complete, in three steps (server/http/pipeline.ts, phased routes):
 * claim the session in a short transaction, move and verify the bytes with
 * no transaction open, make the item in another short transaction. A
 * concurrent completion meanwhile answers 409 UPLOAD_COMPLETION_IN_PROGRESS;
 * a refused or failed verification gives the claim up, so the client can PUT
 * the bytes again and retry.
 */
const completeUpload: PhasedRoute<'completeMediaUpload_v1', never, CompletionClaim, VerifiedUpload> = {
  // A second completion waits for the first and answers its item, as it did
  // when it waited on the session's row lock.
  whileClaimed: { code: 'UPLOAD_COMPLETION_IN_PROGRESS', maxMs: () => 60_000 },
  phases: {
    begin: async (ctx) => {
      const begin = await ctx.call<Exclude<UploadCompletionBegin, { state: 'pending' }> | CompletionClaim>(
        sql.fragment`api.claim_media_upload_completion(${ctx.params.sessionId}, ${COMPLETION_CLAIM_SECONDS}::int)`,
      );
      return begin.state === 'completed' ? { answer: { data: begin.media } } : { claim: begin };
    },
    work: async (ctx, begin) => {
      const sessionId = ctx.params.sessionId;
      const driver = ctx.storage.driver;
      // The bytes move to the item's own key first: a URL that is used again
      // can only write to the upload key, never to what is verified here. On a
      // retry after a failed commit they are already there.
      await driver.move(begin.uploadKey, begin.finalKey);
      const facts = await driver.inspect(begin.finalKey);
      if (!facts) {
        throw new ApiError(409, 'UPLOAD_NOT_RECEIVED', 'No bytes have arrived for this upload; PUT them to the uploadUrl first.',
          { sessionId });
      }
      const refuse = async (e: ApiError): Promise<never> => {
        await driver.delete(begin.finalKey);
        throw e;
      };
      const declared = Number(begin.declaredSize);
      if (facts.size !== declared) {
        await refuse(new ApiError(409, 'UPLOAD_INCOMPLETE', `The upload was declared as ${declared} bytes; ${facts.size} arrived. PUT the bytes again.`,
          { sessionId, declaredSize: declared, size: facts.size }));
      }
      if (!facts.type || !facts.contentType) {
        await refuse(new ApiError(415, 'UNSUPPORTED_MEDIA_FORMAT', `Not a supported media file: ${facts.reason}.`,
          { sessionId, supported: SUPPORTED }));
      }
      const type = facts.type as MediaType;
      // The size limit of each type is SQL's to decide (app.media_max_bytes, in
      // api.finish_media_upload_completion); abandon removes refused bytes.
      const expected = ctx.body?.checksumSha256?.toLowerCase();
      if (expected && expected !== facts.sha256) {
        await refuse(new ApiError(400, 'CHECKSUM_MISMATCH', 'The SHA-256 of the bytes that arrived differs from checksumSha256; PUT the bytes again.',
          { sessionId, expected, actual: facts.sha256 }));
      }
      return {
        type, contentType: facts.contentType, fileSize: facts.size, width: facts.width, height: facts.height,
        durationMs: type === 'video' ? facts.durationMs : null, checksumSha256: facts.sha256, storageKey: begin.finalKey,
      };
    },
    finish: async (ctx, begin, facts) => ({
      data: await ctx.call<Schema<'MediaItem'>>(sql.fragment`api.finish_media_upload_completion(${ctx.params.sessionId}, ${begin.claim}::uuid,
        ${jsonb(facts)}, ${jsonb(present(ctx.body, ['altText', 'folderId']))})`),
    }),
    abandon: async (ctx, begin, error) => {
      // SQL refused the bytes for good (too large for their type): they go at
      // once. Other failures keep them under the final key for a retry.
      if (toApiError(error)?.code === 'MEDIA_TOO_LARGE') await ctx.storage.driver.delete(begin.finalKey);
      await ctx.call(sql.fragment`api.release_work_claim('media_upload_completion', ${ctx.params.sessionId}::uuid, ${begin.claim}::uuid)`);
    },
  },
};

const MEDIA_FILTERS = [
  'folderId', 'rootOnly', 'isUnlabeled', 'type', 'search', 'isFavorite', 'isUsed', 'isUnused', 'state', 'sortBy', 'order', 'source',
] as const satisfies (keyof HandlerContext<'listMedia_v1'>['query'])[];

/** One bulk action on the items `ids`: api.bulk_media answers a MediaBulkResult. */
async function bulk(ctx: HandlerContext, action: string, ids: string[], args: Record<string, SerializableValue> = {}) {
  return { data: await call<Schema<'MediaBulkResult'>>(ctx, sql.fragment`api.bulk_media(${action}, ${uuids(ids)}, ${jsonb(args)})`) };
}

export const mediaRoutes = {
  // Uploads ------------------------------------------------------------------
  initMediaUpload_v1: {
    handle: async (ctx) => {
      const b = ctx.body;
      const s = await ctx.call<DbUploadSession>(sql.fragment`api.init_media_upload(${b.filename}, ${b.contentType}, ${b.size}, ${b.folderId ?? null},
        ${b.altText ?? null})`);
      return { status: 201, data: await uploadSession(ctx, s) };
    },
  },
  getMediaUpload_v1: {
    handle: async (ctx) => ({ data: await uploadSession(ctx, await ctx.call<DbUploadSession>(sql.fragment`api.get_media_upload(${ctx.params.sessionId})`)) }),
  },
  completeMediaUpload_v1: completeUpload,
  abortMediaUpload_v1: {
    handle: async (ctx) => {
      const s = await ctx.call<DbUploadSession>(sql.fragment`api.abort_media_upload(${ctx.params.sessionId})`);
      // Also queued for the purge job; removed now when possible.
      const driver = ctx.storage.driver;
      await Promise.allSettled([driver.delete(s.storageKey), driver.delete(`media/${ctx.workspaceId}/${s.sessionId}`)]);
      return { data: await uploadSession(ctx, s) };
    },
  },

  // Items ----------------------------------------------------------------------
  listMedia_v1: {
    handle: async (ctx) => {
      const q = ctx.query;
      const filters: Record<string, unknown> = {};
      for (const k of MEDIA_FILTERS) if (q[k] !== undefined) filters[k] = q[k];
      if (typeof q.labelIds === 'string') filters.labelIds = [...new Set(q.labelIds.split(',').map((s: string) => s.trim().toLowerCase()))].sort();
      if (typeof filters.folderId === 'string') filters.folderId = filters.folderId.toLowerCase();
      const scope: CursorScope = { list: 'media', workspaceId: ctx.workspaceId!, filters };
      return page(ctx, scope, (after) => sql.fragment`api.list_media(${jsonb(filters)}, ${after}, ${q.limit})`);
    },
  },
  getMedia_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.get_media(${ctx.params.id})`) }) },
  updateMedia_v1: {
    handle: async (ctx) => ({
      data: await call(ctx, sql.fragment`api.update_media(${ctx.params.id}, ${jsonb(present(ctx.body, ['filename', 'altText', 'isFavorite', 'folderId']))})`),
    }),
  },
  deleteMedia_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.delete_media(${ctx.params.id})`) }),
  },
  getMediaViewUrl_v1: { handle: (ctx) => objectUrl(ctx, 'inline') },
  getMediaDownloadUrl_v1: { handle: (ctx) => objectUrl(ctx, 'attachment') },
  restoreMedia_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.restore_media(${ctx.params.id})`) }) },
  deleteMediaPermanently_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.delete_media_permanently(${ctx.params.id})`) }) },
  emptyMediaBin_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.empty_media_bin()`) }) },
  attachMediaLabels_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.attach_media_labels(${ctx.params.id}, ${uuids(ctx.body.labelIds)})`) }),
  },
  replaceMediaLabels_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.replace_media_labels(${ctx.params.id}, ${uuids(ctx.body.labelIds)})`) }),
  },
  detachMediaLabel_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.detach_media_label(${ctx.params.id}, ${ctx.params.labelId})`) }),
  },
  listMediaUsageHistory_v1: {
    handle: (ctx) =>
      page(ctx, { list: 'usage-history', workspaceId: ctx.workspaceId!, filters: { mediaId: ctx.params.id.toLowerCase() } },
        (after) => sql.fragment`api.list_media_usage_history(${ctx.params.id}, ${after}, ${ctx.query.limit})`),
  },

  // Bulk -----------------------------------------------------------------------
  bulkDeleteMedia_v1: { handle: (ctx) => bulk(ctx, 'delete', ctx.body.ids, {}) },
  bulkRestoreMedia_v1: { handle: (ctx) => bulk(ctx, 'restore', ctx.body.ids) },
  bulkDeleteMediaForever_v1: { handle: (ctx) => bulk(ctx, 'delete_forever', ctx.body.ids) },
  bulkMoveMedia_v1: { handle: (ctx) => bulk(ctx, 'move', ctx.body.ids, { folderId: ctx.body.folderId }) },
  bulkLabelMedia_v1: { handle: (ctx) => bulk(ctx, 'label', ctx.body.ids, { labelIds: ctx.body.labelIds }) },
  bulkUnlabelMedia_v1: { handle: (ctx) => bulk(ctx, 'unlabel', ctx.body.ids, { labelIds: ctx.body.labelIds }) },

  // Folders --------------------------------------------------------------------
  createMediaFolder_v1: {
    handle: async (ctx) => ({ status: 201, data: await call(ctx, sql.fragment`api.create_media_folder(${ctx.body.name}, ${ctx.body.parentId ?? null})`) }),
  },
  listMediaFolders_v1: {
    handle: (ctx) => {
      const parent = typeof ctx.query.parentId === 'string' ? ctx.query.parentId.toLowerCase() : null;
      return page(ctx, { list: 'folders', workspaceId: ctx.workspaceId!, filters: { parentId: parent } },
        (after) => sql.fragment`api.list_media_folders(${parent}, ${after}, ${ctx.query.limit})`);
    },
  },
  getMediaFolder_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.get_media_folder(${ctx.params.id})`) }) },
  updateMediaFolder_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.update_media_folder(${ctx.params.id}, ${ctx.body.name})`) }),
  },
  deleteMediaFolder_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.delete_media_folder(${ctx.params.id})`) }) },
  getMediaFolderPath_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.media_folder_path(${ctx.params.id})`) }) },
  moveMediaFolder_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.move_media_folder(${ctx.params.id}, ${ctx.body.parentId})`) }),
  },

  // Labels ---------------------------------------------------------------------
  createMediaLabel_v1: {
    handle: async (ctx) => ({
      status: 201,
      data: await call(ctx, sql.fragment`api.create_media_label(${ctx.body.name}, ${ctx.body.color ?? null}, ${ctx.body.groupId ?? null})`),
    }),
  },
  listMediaLabels_v1: {
    handle: async (ctx) => ({
      data: await call(ctx, sql.fragment`api.list_media_labels(${ctx.query.groupId ?? null}, ${ctx.query.includeMerged}, ${ctx.query.search ?? null})`),
    }),
  },
  getMediaLabelUsage_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.media_label_usage()`) }) },
  getMediaLabelHealth_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.media_label_health()`) }) },
  getMediaLabel_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.get_media_label(${ctx.params.id})`) }) },
  updateMediaLabel_v1: {
    handle: async (ctx) => ({
      data: await call(ctx, sql.fragment`api.update_media_label(${ctx.params.id}, ${jsonb(present(ctx.body, ['name', 'color', 'groupId']))})`),
    }),
  },
  deleteMediaLabel_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.delete_media_label(${ctx.params.id})`) }) },
  mergeMediaLabels_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.merge_media_labels(${ctx.params.id}, ${ctx.body.targetLabelId})`) }),
  },

  // Label groups -----------------------------------------------------------------
  createMediaLabelGroup_v1: {
    handle: async (ctx) => ({ status: 201, data: await call(ctx, sql.fragment`api.create_media_label_group(${ctx.body.name})`) }),
  },
  listMediaLabelGroups_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.list_media_label_groups()`) }) },
  reorderMediaLabelGroups_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.reorder_media_label_groups(${uuids(ctx.body.groupIds)})`) }),
  },
  ungroupMediaLabels_v1: {
    handle: async (ctx) => ({ status: 201, data: await call(ctx, sql.fragment`api.move_media_labels_to_group(${null}, ${uuids(ctx.body.labelIds)})`) }),
  },
  moveMediaLabelsToGroup_v1: {
    handle: async (ctx) => ({
      status: 201,
      data: await call(ctx, sql.fragment`api.move_media_labels_to_group(${ctx.params.id}, ${uuids(ctx.body.labelIds)})`),
    }),
  },
  getMediaLabelGroup_v1: { handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.get_media_label_group(${ctx.params.id})`) }) },
  updateMediaLabelGroup_v1: {
    handle: async (ctx) => ({ data: await call(ctx, sql.fragment`api.update_media_label_group(${ctx.params.id}, ${ctx.body.name})`) }),
  },
  deleteMediaLabelGroup_v1: {
    handle: async (ctx) => ({
      // The validator fills in `labels` of a body; `ungroup` here is for a request without one.
      data: await call(ctx, sql.fragment`api.delete_media_label_group(${ctx.params.id}, ${ctx.body?.labels ?? 'ungroup'})`),
    }),
  },
} satisfies Partial<RouteTable>;
