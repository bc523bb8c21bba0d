// Reviews and approval workflows: one api.* function per operation (SQL in
// db/migrations/committed/000010-reviews-and-approval-workflows.sql, splits 10-reviews.sql, 10a-reviews-api.sql, 10b-review-links.sql).
import type { SerializableValue } from 'slonik';
import { z } from 'zod';
import { sql } from '../db/pool.ts';
import { vaultOf } from '../platforms/credentials.ts';
import { ApiError } from '../http/errors.ts';
import type { HandlerContext, PhasedRoute, RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta, Schema } from '../http/types.ts';

/** Where a completed attachment's bytes are; SQL answers it, the routes turn it into a signed view URL. */
interface StoredFile {
  id: string;
  filename: string;
  contentType: string;
  storageKey: string;
}
type DbLink = Omit<Schema<'ReviewLinkToken'>, 'url'>;

/** The review page's address of a client link: the token in the fragment, which browsers never send to a server. */
export function reviewPageUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/review#token=${encodeURIComponent(token)}`;
}

/** Links as SQL answers them, with the review page's URL beside each token. */
function withUrls(ctx: Pick<HandlerContext, 'storage'>, links: DbLink[] | undefined): Schema<'ReviewLinkToken'>[] | undefined {
  if (!links) return links;
  const base = ctx.storage.baseUrl();
  return links.map((l) => ({ ...l, url: reviewPageUrl(base, l.token) }));
}

type DbActivity = Omit<Schema<'ReviewActivity'>, 'attachments'> & { attachments?: (StoredFile & { fileSize: number })[] };
type DbAttachment = Omit<Schema<'ReviewAttachment'>, 'uploadUrl' | 'method' | 'headers' | 'viewUrl'> & { storageKey: string };

/** A signed, expiring view URL of a stored file (as GET media/{id}/view-url signs one). */
async function viewUrl(ctx: Pick<HandlerContext, 'storage' | 'config'>, f: StoredFile): Promise<string> {
  const expiresAt = new Date((Math.floor(Date.now() / 1000) + ctx.config.SIGNED_URL_TTL_SECONDS) * 1000);
  return ctx.storage.driver.objectUrl({ mediaId: f.id, key: f.storageKey, contentType: f.contentType, filename: f.filename, disposition: 'inline', expiresAt });
}

/** Activity entries with their attachments' view URLs (the storage keys stay here). */
async function signActivity(ctx: Pick<HandlerContext, 'storage' | 'config'>, entries: DbActivity[]): Promise<Schema<'ReviewActivity'>[]> {
  return Promise.all(
    entries.map(async (a) => ({
      ...a,
      attachments: await Promise.all(
        (a.attachments ?? []).map(async ({ storageKey, ...f }) => ({ ...f, viewUrl: await viewUrl(ctx, { ...f, storageKey }) })),
      ),
    })),
  );
}

/** An attachment as the API shows it: the upload URL while pending, the view URL once completed. */
async function attachmentOf(ctx: Pick<HandlerContext, 'storage' | 'config'>, a: DbAttachment): Promise<Schema<'ReviewAttachment'>> {
  const { storageKey, ...rest } = a;
  const out: Schema<'ReviewAttachment'> = { ...rest, uploadUrl: null, method: 'PUT', headers: { 'Content-Type': a.contentType }, viewUrl: null };
  if (a.state === 'pending') {
    const target = await ctx.storage.driver.uploadTarget({ sessionId: a.id, key: storageKey, contentType: a.contentType, size: a.declaredSize, expiresAt: new Date(a.expiresAt) });
    return { ...out, uploadUrl: target.url, method: target.method, headers: target.headers };
  }
  if (a.state === 'completed') return { ...out, viewUrl: await viewUrl(ctx, { ...a, storageKey }) };
  return out;
}

type AttachmentBegin = { state: 'completed'; attachment: DbAttachment } | { state: 'pending'; uploadKey: string; finalKey: string; declaredSize: number; contentType: string };
type VerifiedFile = { fileSize: number; checksumSha256: string; contentType: string };
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];

/**
 * Completing an attachment: the bytes move to the final key (a reused upload
 * URL can only write to the upload key), are inspected outside any
 * transaction (size as declared; an image of the declared format, or a PDF as
 * file-type recognizes it from its bytes), then SQL records them.
 */
const completeAttachment: PhasedRoute<'completeReviewAttachment_v1', never, Extract<AttachmentBegin, { state: 'pending' }>, VerifiedFile> = {
  phases: {
    begin: async (ctx) => {
      const b = await ctx.call<AttachmentBegin>(
        sql.fragment`api.begin_review_attachment_completion(${ctx.params.reviewId}, ${ctx.params.itemId}, ${ctx.params.attachmentId})`,
      );
      return b.state === 'completed' ? { answer: { status: 201, data: await attachmentOf(ctx, b.attachment) } } : { claim: b };
    },
    work: async (ctx, b) => {
      const driver = ctx.storage.driver;
      const attachmentId = ctx.params.attachmentId;
      await driver.move(b.uploadKey, b.finalKey);
      const facts = await driver.inspect(b.finalKey);
      if (!facts) throw new ApiError(409, 'UPLOAD_NOT_RECEIVED', 'No bytes have arrived for this upload; PUT them to the uploadUrl first.', { attachmentId });
      const refuse = async (e: ApiError): Promise<never> => {
        await driver.delete(b.finalKey);
        throw e;
      };
      const declared = Number(b.declaredSize);
      if (facts.size !== declared) {
        await refuse(new ApiError(409, 'UPLOAD_INCOMPLETE', `The upload was declared as ${declared} bytes; ${facts.size} arrived. PUT the bytes again.`,
          { attachmentId, declaredSize: declared, size: facts.size }));
      }
      // An image is media (facts.type); a PDF is a document file-type recognised (facts.document).
      const found = IMAGE_TYPES.includes(b.contentType)
        ? (facts.type === 'image' || facts.type === 'gif' ? facts.contentType : null)
        : facts.document;
      if (found !== b.contentType) {
        await refuse(new ApiError(415, 'UNSUPPORTED_MEDIA_FORMAT', `The bytes are not the declared ${b.contentType}${facts.reason ? ` (${facts.reason})` : ''}.`,
          { attachmentId, declared: b.contentType, found: facts.contentType ?? facts.document }));
      }
      return { fileSize: facts.size, checksumSha256: facts.sha256, contentType: b.contentType };
    },
    finish: async (ctx, _b, facts) => ({
      status: 201,
      data: await attachmentOf(ctx, await ctx.call<DbAttachment>(
        sql.fragment`api.finish_review_attachment_completion(${ctx.params.reviewId}, ${ctx.params.itemId}, ${ctx.params.attachmentId}, ${sql.jsonb(facts)})`,
      )),
    }),
    abandon: async () => {},
  },
};

/** What the paginated api functions return: the page's items and its meta. */
type Page<K extends 'reviewHistory_v1' | 'listNotifications_v1' | 'listReviewLinkNotifications_v1'> = { items: ResponseData<K>; meta: ResponseMeta<K> };

export const approvalWorkflowRoutes = {
  getReviewPolicy_v1: { handle: async ({ call }) => ({ data: await call(sql.fragment`api.get_review_policy()`) }) },
  setReviewPolicy_v1: { handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.set_review_policy(${sql.jsonb(body)})`) }) },
  listApprovalWorkflows_v1: { handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_approval_workflows()`) }) },
  createApprovalWorkflow_v1: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.create_approval_workflow(${sql.jsonb(body)})`) }),
  },
  reorderApprovalWorkflows_v1: {
    handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.reorder_approval_workflows(${sql.jsonb(body)})`) }),
  },
  getApprovalWorkflow_v1: { handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_approval_workflow(${params.workflowId})`) }) },
  updateApprovalWorkflow_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.update_approval_workflow(${params.workflowId}, ${sql.jsonb(body)})`),
    }),
  },
  deleteApprovalWorkflow_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_approval_workflow(${params.workflowId})`) }),
  },
} satisfies Partial<RouteTable>;

export const reviewRoutes = {
  resolveReviews_v1: { handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.resolve_reviews(${sql.jsonb(body as SerializableValue)})`) }) },
  submitReviews_v1: {
    handle: async (ctx) => {
      type Result = Schema<'ReviewSubmitResult'>;
      type Stored = Omit<Result, 'results'> & { results: (Omit<Result['results'][number], 'links'> & { links?: (Omit<DbLink, 'token'> & { token?: string })[] })[] };
      const r = await ctx.call<Stored>(sql.fragment`api.submit_reviews(${sql.jsonb(ctx.body)})`);
      // The client links' tokens are stored only sealed (migration 000034): kept with a new
      // submission, opened for a replay.
      const vault = vaultOf(ctx.config);
      const binding = `review-submission:${ctx.workspaceId}:${r.requestId}`;
      let tokens: Record<string, string> = {};
      if (r.requestId !== null && r.replayed) {
        const sealed = await ctx.tx.oneFirst(sql.type(z.object({ s: z.instanceof(Buffer).nullable() }))`select api.review_submission_sealed_tokens(${r.requestId}) as s`);
        if (sealed) {
          try {
            tokens = vault.decryptJson<Record<string, string>>(binding, sealed);
          } catch {
            throw new ApiError(409, 'IDEMPOTENCY_REPLAY_UNREADABLE',
              "The client links kept for this requestId do not open with this server's credential keys (a key was removed from CREDENTIALS_KEYS); the review was made: find it with GET reviews.");
          }
        }
      } else {
        for (const x of r.results) for (const l of x.links ?? []) if (l.token) tokens[l.id] = l.token;
        if (r.requestId !== null && Object.keys(tokens).length) {
          await ctx.tx.query(sql.unsafe`select api.seal_review_submission(${r.requestId}, ${sql.binary(vault.encryptJson(binding, tokens))})`);
        }
      }
      const links = (ls: Stored['results'][number]['links']) => withUrls(ctx, ls?.map((l) => {
        const token = tokens[l.id] ?? l.token;
        if (!token) throw new Error(`review submission ${r.requestId}: the token of link ${l.id} was not kept`);
        return { ...l, token };
      }));
      return { data: { ...r, results: r.results.map((x) => ({ ...x, links: links(x.links) })) } };
    },
  },
  previewReview_v1: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.preview_review(${sql.jsonb(body)})`) }),
  },
  listReviews_v1: { handle: async ({ call, query }) => ({ data: await call(sql.fragment`api.list_reviews(${query.status ?? null})`) }) },
  createReview_v1: { handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.create_review(${sql.jsonb(body)})`) }) },
  reviewInbox_v1: {
    handle: async ({ call, query }) => ({ data: await call(sql.fragment`api.review_inbox(${query.platform}, ${query.urgency})`) }),
  },
  reviewSummary_v1: { handle: async ({ call }) => ({ data: await call(sql.fragment`api.review_summary()`) }) },
  reviewHistory_v1: {
    handle: async ({ call, query }) => {
      const page = await call<Page<'reviewHistory_v1'>>(sql.fragment`api.review_history(${query.limit}, ${query.offset})`);
      return { data: page.items, meta: page.meta };
    },
  },
  reviewHistoryContent_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.review_history_content(${params.contentId})`) }),
  },
  reviewHistoryReview_v1: {
    handle: async (ctx) => {
      const r = await ctx.call<Omit<Schema<'Review'>, 'activity'> & { activity: DbActivity[] }>(sql.fragment`api.review_history_review(${ctx.params.reviewId})`);
      return { data: { ...r, activity: await signActivity(ctx, r.activity) } };
    },
  },
  getReview_v1: { handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_review(${params.reviewId})`) }) },
  updateReview_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_review(${params.reviewId}, ${sql.jsonb(body)})`) }),
  },
  replaceReviewStages_v1: {
    handle: async (ctx) => {
      const r = await ctx.call<Omit<Schema<'ReviewStagesResult'>, 'links'> & { links: DbLink[] }>(
        sql.fragment`api.replace_review_stages(${ctx.params.reviewId}, ${sql.jsonb(ctx.body)})`,
      );
      return { data: { ...r, links: withUrls(ctx, r.links) ?? [] } };
    },
  },
  sendReview_v1: {
    handle: async (ctx) => {
      const r = await ctx.call<Omit<Schema<'ReviewSendResult'>, 'links'> & { links: DbLink[] }>(sql.fragment`api.send_review(${ctx.params.reviewId})`);
      return { status: 201, data: { ...r, links: withUrls(ctx, r.links) ?? [] } };
    },
  },
  remindReview_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.remind_review(${params.reviewId}, ${sql.jsonb(body)})`),
    }),
  },
  cancelReview_v1: { handle: async ({ call, params }) => ({ status: 201, data: await call(sql.fragment`api.cancel_review(${params.reviewId})`) }) },
  addReviewItem_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.add_review_item(${params.reviewId}, ${sql.jsonb(body)})`),
    }),
  },
  decideReviewItems_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.decide_review_items(${params.reviewId}, ${sql.jsonb(body)})`),
    }),
  },
  removeReviewItem_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.remove_review_item(${params.reviewId}, ${params.itemId})`) }),
  },
  decideReviewItem_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.decide_review_item(${params.reviewId}, ${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  overrideReviewItem_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.override_review_item(${params.reviewId}, ${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  revokeReviewDecision_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.revoke_review_decision(${params.reviewId}, ${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  commentReviewItem_v1: {
    handle: async (ctx) => {
      const a = await ctx.call<DbActivity>(sql.fragment`api.comment_review_item(${ctx.params.reviewId}, ${ctx.params.itemId}, ${sql.jsonb(ctx.body)})`);
      return { status: 201, data: (await signActivity(ctx, [a]))[0] };
    },
  },
  listReviewItemActivity_v1: {
    handle: async (ctx) => ({
      data: await signActivity(ctx, await ctx.call<DbActivity[]>(sql.fragment`api.list_review_item_activity(${ctx.params.reviewId}, ${ctx.params.itemId})`)),
    }),
  },
  initReviewAttachment_v1: {
    handle: async (ctx) => ({
      status: 201,
      data: await attachmentOf(ctx, await ctx.call<DbAttachment>(
        sql.fragment`api.init_review_attachment(${ctx.params.reviewId}, ${ctx.params.itemId}, ${sql.jsonb(ctx.body)})`,
      )),
    }),
  },
  completeReviewAttachment_v1: completeAttachment,
  abortReviewAttachment_v1: {
    handle: async ({ call, params }) => ({
      status: 201,
      data: await call(sql.fragment`api.abort_review_attachment(${params.reviewId}, ${params.itemId}, ${params.attachmentId})`),
    }),
  },
  addReviewReaction_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.add_review_reaction(${params.reviewId}, ${params.itemId}, ${params.activityId}, ${sql.jsonb(body)})`),
    }),
  },
  removeReviewReaction_v1: {
    handle: async ({ call, params }) => ({
      data: await call(sql.fragment`api.remove_review_reaction(${params.reviewId}, ${params.itemId}, ${params.activityId}, ${params.emoji})`),
    }),
  },
} satisfies Partial<RouteTable>;

export const notificationRoutes = {
  listNotifications_v1: {
    handle: async ({ call, query }) => {
      const page = await call<Page<'listNotifications_v1'>>(
        sql.fragment`api.list_notifications(${query.limit}, ${query.cursor ?? null}, ${query.unread})`,
      );
      return { data: page.items, meta: page.meta };
    },
  },
  markNotificationsRead_v1: {
    handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.mark_notifications_read(${sql.jsonb(body as SerializableValue)})`) }),
  },
} satisfies Partial<RouteTable>;

/** A review link's media as api.review_link_get answers it: the contract's fields less the view URL, plus the storage key. */
type LinkMedia = Omit<Schema<'ReviewLinkMedia'>, 'viewUrl' | 'viewUrlExpiresAt'> & { filename: string; storageKey: string };
type LinkItem = ResponseData<'getReviewLink_v1'>['items'][number];
type LinkView = Omit<ResponseData<'getReviewLink_v1'>, 'items'> & {
  items: (Omit<LinkItem, 'media' | 'thread'> & { media: LinkMedia[]; thread: { caption: string; media: LinkMedia[] }[] })[];
};

/** Client reviewer routes: the link token is the credential (api.gate_review_link); SQL scopes each call to the link's review. */
export const reviewLinkRoutes = {
  getReviewLink_v1: {
    handle: async ({ call, storage, config }) => {
      const view = await call<LinkView>(sql.fragment`api.review_link_get()`);
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + config.SIGNED_URL_TTL_SECONDS) * 1000);
      // The edition's media and every thread message's: a signed view URL each, the storage key dropped.
      const sign = (list: LinkMedia[]): Promise<Schema<'ReviewLinkMedia'>[]> =>
        Promise.all(list.map(async ({ storageKey, ...m }) => ({
          ...m,
          viewUrl: await storage.driver.objectUrl({ mediaId: m.id, key: storageKey, contentType: m.contentType, filename: m.filename, disposition: 'inline', expiresAt }),
          viewUrlExpiresAt: expiresAt.toISOString(),
        })));
      const items = await Promise.all(
        view.items.map(async (item) => ({
          ...item,
          media: await sign(item.media),
          thread: await Promise.all(item.thread.map(async (t) => ({ caption: t.caption, media: await sign(t.media) }))),
        })),
      );
      return { data: { ...view, items } };
    },
  },
  listReviewLinkNotifications_v1: {
    handle: async ({ call, query }) => {
      const page = await call<Page<'listReviewLinkNotifications_v1'>>(
        sql.fragment`api.review_link_notifications(${query.limit}, ${query.cursor ?? null}, ${query.unread})`,
      );
      return { data: page.items, meta: page.meta };
    },
  },
  decideReviewLinkItem_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.review_link_decide(${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  commentReviewLinkItem_v1: {
    handle: async (ctx) => {
      const a = await ctx.call<DbActivity>(sql.fragment`api.review_link_comment(${ctx.params.itemId}, ${sql.jsonb(ctx.body)})`);
      return { status: 201, data: (await signActivity(ctx, [a]))[0] };
    },
  },
  listReviewLinkItemActivity_v1: {
    handle: async (ctx) => ({ data: await signActivity(ctx, await ctx.call<DbActivity[]>(sql.fragment`api.review_link_activity(${ctx.params.itemId})`)) }),
  },
  addReviewLinkReaction_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.review_link_react(${params.itemId}, ${params.activityId}, ${body.emoji}, true)`),
    }),
  },
  removeReviewLinkReaction_v1: {
    handle: async ({ call, params }) => ({
      data: await call(sql.fragment`api.review_link_react(${params.itemId}, ${params.activityId}, ${params.emoji}, false)`),
    }),
  },
} satisfies Partial<RouteTable>;
