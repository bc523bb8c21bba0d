import type { SerializableValue } from 'slonik';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { PhasedRoute, RouteTable } from '../http/pipeline.ts';
import type { ItemsPage } from '../http/types.ts';
import { callAsAccount, vaultOf } from '../platforms/credentials.ts';
import { platformModule } from '../platforms/index.ts';
import { requestSandboxStore } from '../platforms/stores.ts';
import { ConnectorError, type CaptionEditResult, type IntegrationRef } from '../platforms/types.ts';
import { openWebhookSecret } from '../platforms/webhook-secret.ts';

// Publishing routes: each calls one api function; the published-caption
// route calls the channel's connector between its check and its record, with
// no transaction open (db/migrations/committed/000003-house-rulebook.sql, split 60-slow-work-outside-transactions.sql).

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

/** What api.claim_published_caption_edit answers: the target, the claim, and the webhook secret for a webhook channel. */
interface CaptionClaim extends CaptionTarget {
  claim: string;
  webhookSecret: string | null;
}

/**
 * PATCH content/{id}/published-caption: claim (checks, and a claim a
 * concurrent edit waits for; 409 CAPTION_EDIT_IN_PROGRESS if it lasts), call the connector with
 * no transaction open (up to PUBLISH_TIMEOUT_MS), record the caption; a
 * refusal or failure of the platform gives the claim up.
 */
const updatePublishedCaption: PhasedRoute<'updatePublishedCaption_v1', never, CaptionClaim, CaptionEditResult> = {
  // Edits of one caption take turns (each reaches the platform), as when the
  // second waited on the content's row lock.
  whileClaimed: { code: 'CAPTION_EDIT_IN_PROGRESS', maxMs: (config) => config.PUBLISH_TIMEOUT_MS + 5000 },
  phases: {
    begin: async ({ call, params, config }) => {
      const seconds = Math.ceil(config.PUBLISH_TIMEOUT_MS / 1000) + 60;
      return { claim: await call<CaptionClaim>(sql.fragment`api.claim_published_caption_edit(${params.id}::uuid, ${seconds}::int)`) };
    },
    work: async (ctx, t) => {
      const integration: IntegrationRef = {
        id: t.integrationId,
        connector: t.connector,
        platform: t.platform,
        name: t.name,
        username: t.username,
        settings: t.settings ?? {},
        webhookUrl: t.webhookUrl,
        webhookSecret: openWebhookSecret(vaultOf(ctx.config), t.webhookSecret),
      };
      let r: CaptionEditResult;
      const edit = (ref: IntegrationRef) =>
        ctx.connectors
          .get(t.connector)
          .editPublishedCaption(ref, { platformPostId: t.platformPostId ?? '', caption: ctx.body.caption, attempt: t.attempt }, { sandboxStore: requestSandboxStore(ctx.transaction) });
      try {
        if (platformModule(t.connector).connect === 'none') r = await edit(integration);
        else {
          // A connected account: its credentials for this one call (refreshed once if the platform refuses the token).
          const accounts = await ctx.credentials.forIntegrations([t.integrationId]);
          const called = await callAsAccount(ctx.credentials, integration, accounts.get(t.integrationId), edit, (v) => v.state === 'failed' && v.reauth === true);
          if (called.state === 'unusable') {
            throw new ApiError(409, 'RECONNECT_REQUIRED', `The account of this channel cannot be used now: ${called.account.reason}`, { contentId: ctx.params.id, integrationId: t.integrationId });
          }
          r = called.value;
        }
      } catch (e) {
        if (e instanceof ConnectorError) throw new ApiError(409, 'CAPTION_EDIT_NOT_SUPPORTED', e.message, { contentId: ctx.params.id });
        throw e;
      }
      if (r.state === 'failed') throw new ApiError(502, 'PLATFORM_REFUSED', r.error, { contentId: ctx.params.id, permanent: r.permanent });
      if (r.state === 'unknown') throw new ApiError(504, 'PLATFORM_UNAVAILABLE', r.error, { contentId: ctx.params.id });
      return r;
    },
    finish: async ({ call, params, body }, t) => ({
      data: await call(sql.fragment`api.finish_published_caption_edit(${params.id}::uuid, ${t.claim}::uuid, ${body.caption})`),
    }),
    abandon: async ({ call, params }, t) => {
      await call(sql.fragment`api.release_work_claim('published_caption_edit', ${params.id}::uuid, ${t.claim}::uuid)`);
    },
  },
};

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
  updatePublishedCaption_v1: updatePublishedCaption,
  listSandboxPosts_v1: {
    handle: async ({ call, params, query }) => {
      const page = await call<ItemsPage<'listSandboxPosts_v1'>>(
        sql.fragment`api.list_sandbox_posts(${params.id}::uuid, ${query.limit}::int, ${query.offset}::bigint)`,
      );
      return { data: page.items, meta: page.meta };
    },
  },
} satisfies Partial<RouteTable>;
