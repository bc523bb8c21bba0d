import type { SerializableValue } from 'slonik';
import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ItemsPage } from '../http/types.ts';

// Content editions, versions and recurring series: each handler calls one
// SQL function (api.create_content, api.list_content, ... in db/schema.sql),
// which enforces roles, statuses, platform rules and the publish job.
/** A body as jsonb; an optional body left out is `{}`. */
const json = (value: SerializableValue | undefined) => sql.jsonb(value ?? {});

export const contentRoutes = {
  createContent_v1: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.create_content(${json(body)})`) }),
  },
  // Nothing written: create as a draft in a rolled-back subtransaction, then each channel's rules.
  checkContent_v1: {
    handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.check_content(${json(body)})`) }),
  },
  listContent_v1: {
    handle: async ({ call, query }) => {
      const page = await call<ItemsPage<'listContent_v1'>>(sql.fragment`api.list_content(${json(query)})`);
      return { data: page.items, meta: page.meta };
    },
  },
  getContentFailedCount_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.content_failed_count()`) }),
  },
  getContentPendingApprovalCount_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.content_pending_approval_count()`) }),
  },
  listContentVersions_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.list_content_versions(${params.contentId}::uuid)`) }),
  },
  restoreContentVersion_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.restore_content_version(${params.contentId}::uuid, ${params.version}::int, ${json(body)})`),
    }),
  },
  getContent_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_content(${params.id}::uuid)`) }),
  },
  updateContent_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_content(${params.id}::uuid, ${json(body)})`) }),
  },
  deleteContent_v1: {
    handle: async ({ call, params }) => {
      await call(sql.fragment`api.delete_content(${params.id}::uuid)`);
      return { status: 204, data: null };
    },
  },
  scheduleContent_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.schedule_content(${params.id}::uuid, ${body.scheduledAt}::timestamptz)`),
    }),
  },
  revertContentToDraft_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.revert_content_to_draft(${params.id}::uuid, ${json(body)})`),
    }),
  },
  setContentIntendedPublishTime_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.set_content_intended_publish_time(${params.id}::uuid, ${body.scheduledAt}::timestamptz)`),
    }),
  },
  updateContentMetadata_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_content_metadata(${params.id}::uuid, ${json(body)})`) }),
  },
  updateContentNotes_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_content_notes(${params.id}::uuid, ${json(body)})`) }),
  },
  cancelRecurringOccurrence_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.cancel_recurring_occurrence(${params.occurrenceId}::uuid, ${json(body)})`),
    }),
  },
  cancelRecurringSeries_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.cancel_recurring_series(${params.seriesId}::uuid, ${json(body)})`),
    }),
  },
} satisfies Partial<RouteTable>;
