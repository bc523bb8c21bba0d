import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { HandlerContext, RouteTable } from '../http/pipeline.ts';
import { ConnectorError, type IntegrationRef, type PlatformOption } from '../platforms/types.ts';
import type { ResponseData } from '../http/types.ts';
import { checkWebhookUrl, WebhookUrlError } from '../net/ssrf.ts';
import { vaultOf } from '../platforms/credentials.ts';
import { issueWebhookSecret } from '../platforms/webhook.ts';
import { sealWebhookSecret } from '../platforms/webhook-secret.ts';

/** What api.integration_for_listing answers: the integration a connector acts for. */
type ListingIntegration = Omit<IntegrationRef, 'settings'> & { settings: Record<string, unknown> | null };

/** Boards or video categories: SQL checks role, existence and the platform's capability; the connector lists. */
async function listOptions(
  ctx: HandlerContext<'listIntegrationBoards_v1'> | HandlerContext<'listIntegrationVideoCategories_v1'>,
  capability: 'boards' | 'videoCategories',
) {
  const info = await ctx.call<ListingIntegration>(sql.fragment`api.integration_for_listing(${ctx.params.id}, ${capability})`);
  const integration: IntegrationRef = {
    id: info.id,
    connector: info.connector,
    platform: info.platform,
    name: info.name,
    username: info.username,
    settings: info.settings ?? {},
    webhookUrl: info.webhookUrl,
  };
  try {
    const connector = ctx.connectors.get(integration.connector);
    const data: PlatformOption[] = capability === 'boards' ? await connector.listBoards(integration) : await connector.listVideoCategories(integration);
    return { data };
  } catch (e) {
    if (e instanceof ConnectorError) {
      if (e.code === 'NOT_SUPPORTED') throw new ApiError(404, 'NOT_SUPPORTED', e.message, e.details);
      throw new ApiError(502, 'CONNECTOR_ERROR', e.message, e.details);
    }
    throw e;
  }
}

export const integrationsRoutes = {
  listIntegrations_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_integrations()`) }),
  },
  getIntegration_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_integration(${params.id})`) }),
  },
  listIntegrationBoards_v1: {
    handle: (ctx) => listOptions(ctx, 'boards'),
  },
  listIntegrationVideoCategories_v1: {
    handle: (ctx) => listOptions(ctx, 'videoCategories'),
  },
  createIntegration_v1: {
    // Resolving the webhook host happens before the transaction opens.
    prepare: async ({ body, config }) => {
      if (body.connector !== 'webhook' || typeof body.url !== 'string') return null;
      try {
        await checkWebhookUrl(body.url, { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS });
      } catch (e) {
        if (e instanceof WebhookUrlError) throw new ApiError(400, e.code, e.message, e.details);
        throw e;
      }
      return null;
    },
    // A webhook without a secret gets a Standard Webhooks one, shown in this
    // answer only (api.create_integration checks its form).
    // The secret is stored only sealed with the credential vault (server/platforms/webhook-secret.ts).
    handle: async ({ call, body, config }) => {
      const issued = body.connector === 'webhook' && body.secret === undefined ? issueWebhookSecret() : null;
      const secret = issued ?? body.secret ?? null;
      const sealed = body.connector === 'webhook' && secret !== null ? sealWebhookSecret(vaultOf(config), secret) : null;
      const data = await call<ResponseData<'createIntegration_v1'>>(sql.fragment`api.create_integration(${body.connector}, ${body.platform}, ${body.name},
        ${body.username ?? null}, ${body.settings ? sql.jsonb(body.settings) : null}, ${body.url ?? null}, ${secret}, ${sealed})`);
      return { status: 201, data: issued ? { ...data, secret: issued } : data };
    },
  },
  deleteIntegration_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_integration(${params.id})`) }),
  },
} satisfies Partial<RouteTable>;
