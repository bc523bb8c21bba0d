// Reviews and approval workflows: one api.* function per operation (SQL in
// db/migrations/current/10-reviews.sql, 10a-reviews-api.sql, 10b-review-links.sql).
import type { SerializableValue } from 'slonik';
import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta } from '../http/types.ts';

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
  submitReviews_v1: { handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.submit_reviews(${sql.jsonb(body)})`) }) },
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
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.review_history_review(${params.reviewId})`) }),
  },
  getReview_v1: { handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_review(${params.reviewId})`) }) },
  updateReview_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_review(${params.reviewId}, ${sql.jsonb(body)})`) }),
  },
  replaceReviewStages_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.replace_review_stages(${params.reviewId}, ${sql.jsonb(body)})`),
    }),
  },
  sendReview_v1: { handle: async ({ call, params }) => ({ status: 201, data: await call(sql.fragment`api.send_review(${params.reviewId})`) }) },
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
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.comment_review_item(${params.reviewId}, ${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  listReviewItemActivity_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.list_review_item_activity(${params.reviewId}, ${params.itemId})`) }),
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

interface LinkMedia {
  id: string;
  type: string;
  contentType: string;
  filename: string;
  storageKey: string;
}
type LinkView = Omit<ResponseData<'getReviewLink_v1'>, 'items'> & {
  items: (Omit<ResponseData<'getReviewLink_v1'>['items'][number], 'media'> & { media: LinkMedia[] })[];
};

/** Client reviewer routes: the link token is the credential (api.gate_review_link); SQL scopes each call to the link's review. */
export const reviewLinkRoutes = {
  getReviewLink_v1: {
    handle: async ({ call, storage, config }) => {
      const view = await call<LinkView>(sql.fragment`api.review_link_get()`);
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + config.SIGNED_URL_TTL_SECONDS) * 1000);
      const items = await Promise.all(
        view.items.map(async (item) => ({
          ...item,
          media: await Promise.all(
            item.media.map(async (m) => ({
              id: m.id,
              type: m.type,
              contentType: m.contentType,
              filename: m.filename,
              viewUrl: await storage.driver.objectUrl({
                mediaId: m.id, key: m.storageKey, contentType: m.contentType, filename: m.filename, disposition: 'inline', expiresAt,
              }),
              viewUrlExpiresAt: expiresAt.toISOString(),
            })),
          ),
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
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.review_link_comment(${params.itemId}, ${sql.jsonb(body)})`),
    }),
  },
  listReviewLinkItemActivity_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.review_link_activity(${params.itemId})`) }),
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
