import type { SerializableValue } from 'slonik';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ItemsPage } from '../http/types.ts';
import { createConnectorRegistry } from '../platforms/index.ts';
import { ConnectorError, type IntegrationRef } from '../platforms/types.ts';

// Publishing routes: each calls one SQL function of
// db/migrations/current/70-publishing.sql; the published-caption route also
// calls the channel's connector between its check and its record.

/** A body as jsonb; an optional body left out is `{}`. */
const json = (value: SerializableValue | undefined) => sql.jsonb(value ?? {});

/** What api.published_caption_target answers: the published post and the channel that edits it. */
interface CaptionTarget extends Omit<IntegrationRef, 'id' | 'settings' | 'webhookSecret' | 'capabilities'> {
  contentId: string;
  integrationId: string;
  settings: Record<string, unknown> | null;
  platformPostId: string | null;
  caption: string | null;
  attempt: number;
}

export const publishingRoutes = {
  publishContent_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.publish_content(${params.id}::uuid)`) }),
  },
  retryContent_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.retry_content(${params.id}::uuid)`) }),
  },
  resolvePublishingResult_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.resolve_publishing_result(${params.id}::uuid, ${json(body)})`),
    }),
  },
  updatePublishedCaption_v1: {
    handle: async ({ call, params, body, config }) => {
      const t = await call<CaptionTarget>(sql.fragment`api.published_caption_target(${params.id}::uuid)`);
      const secret = t.connector === 'webhook' ? await call<string | null>(sql.fragment`to_jsonb(app.published_caption_secret(${params.id}::uuid))`) : null;
      const integration: IntegrationRef = {
        id: t.integrationId,
        connector: t.connector,
        platform: t.platform,
        name: t.name,
        username: t.username,
        settings: t.settings ?? {},
        webhookUrl: t.webhookUrl,
        webhookSecret: secret,
      };
      // The sandbox platform's memory is written in the request's transaction.
      const registry = createConnectorRegistry({
        timeoutMs: config.PUBLISH_TIMEOUT_MS,
        allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        sandboxStore: {
          receive: async () => {
            throw new Error('not used by caption edits');
          },
          editCaption: async (p) =>
            (await call<boolean>(sql.fragment`to_jsonb(app.sandbox_edit_caption_for_request(${p.integrationId}::uuid, ${p.platformPostId}, ${p.caption}))`)) === true,
        },
      });
      let r;
      try {
        r = await registry.get(t.connector).editPublishedCaption(integration, {
          platformPostId: t.platformPostId ?? '',
          caption: body.caption,
          attempt: t.attempt,
        });
      } catch (e) {
        if (e instanceof ConnectorError) throw new ApiError(409, 'CAPTION_EDIT_NOT_SUPPORTED', e.message, { contentId: params.id });
        throw e;
      }
      if (r.state === 'failed') throw new ApiError(502, 'PLATFORM_REFUSED', r.error, { contentId: params.id, permanent: r.permanent });
      if (r.state === 'unknown') throw new ApiError(504, 'PLATFORM_UNAVAILABLE', r.error, { contentId: params.id });
      return { data: await call(sql.fragment`api.record_published_caption(${params.id}::uuid, ${body.caption})`) };
    },
  },
  listSandboxPosts_v1: {
    handle: async ({ call, params, query }) => {
      const page = await call<ItemsPage<'listSandboxPosts_v1'>>(
        sql.fragment`api.list_sandbox_posts(${params.id}::uuid, ${query.limit}::int, ${query.offset}::bigint)`,
      );
      return { data: page.items, meta: page.meta };
    },
  },
} satisfies Partial<RouteTable>;
