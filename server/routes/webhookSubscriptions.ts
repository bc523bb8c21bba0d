// Lifecycle webhook subscriptions (docs/webhooks.md): the rules (manager
// role, event types, limits, pausing) are in SQL
// (db/migrations/committed/000018-lifecycle-webhooks.sql); here the URL's host is
// checked by the SSRF guard and the signing secret generated and encrypted
// (server/webhooks/secret.ts) between two short transactions (PhasedRoute:
// no DNS lookup and no key load inside a transaction); the secret is shown once.
import { randomUUID } from 'node:crypto';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta } from '../http/types.ts';
import type { Config } from '../config.ts';
import { checkWebhookUrl, WebhookUrlError } from '../net/ssrf.ts';
import { encryptSubscriptionSecret, newSubscriptionSecret } from '../webhooks/secret.ts';

async function guardUrl(url: unknown, config: Config): Promise<null> {
  if (typeof url !== 'string') return null;
  try {
    await checkWebhookUrl(url, { allowPrivateNetworks: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS });
  } catch (e) {
    if (e instanceof WebhookUrlError) throw new ApiError(400, e.code, e.message, e.details);
    throw e;
  }
  return null;
}

export const webhookSubscriptionRoutes = {
  listWebhookSubscriptions_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_webhook_subscriptions()`) }),
  },
  // Phased: the role is checked first (a viewer gets 403, not a DNS answer),
  // the host is resolved and the secret encrypted outside any transaction,
  // then the row is written.
  createWebhookSubscription_v1: {
    phases: {
      begin: async ({ call }) => {
        await call(sql.fragment`api.list_webhook_subscriptions()`);
        return { claim: null };
      },
      work: async ({ body, config, storage }) => {
        await guardUrl(body.url, config);
        const id = randomUUID();
        const secret = newSubscriptionSecret();
        return { id, secret, ciphertext: await encryptSubscriptionSecret(storage.secrets, id, secret) };
      },
      finish: async ({ call, body }, _claim, { id, secret, ciphertext }) => {
        const data = await call<ResponseData<'listWebhookSubscriptions_v1'>[number]>(sql.fragment`api.create_webhook_subscription(${body.url},
          ${sql.array(body.events, 'text')}, ${body.description ?? null}, ${body.active ?? true}, ${sql.binary(ciphertext)}, ${id})`);
        return { status: 201, data: { ...data, secret } };
      },
      abandon: async () => {},
    },
  },
  getWebhookSubscription_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_webhook_subscription(${params.webhookId})`) }),
  },
  updateWebhookSubscription_v1: {
    phases: {
      begin: async ({ call, params }) => {
        await call(sql.fragment`api.get_webhook_subscription(${params.webhookId})`);
        return { claim: null };
      },
      work: async ({ body, config }) => guardUrl(body.url, config),
      finish: async ({ call, params, body }) => ({
        data: await call(sql.fragment`api.update_webhook_subscription(${params.webhookId}, ${sql.jsonb(body)})`),
      }),
      abandon: async () => {},
    },
  },
  deleteWebhookSubscription_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_webhook_subscription(${params.webhookId})`) }),
  },
  rotateWebhookSecret_v1: {
    phases: {
      begin: async ({ call, params }) => {
        await call(sql.fragment`api.get_webhook_subscription(${params.webhookId})`);
        return { claim: null };
      },
      work: async ({ params, storage }) => {
        const secret = newSubscriptionSecret();
        return { secret, ciphertext: await encryptSubscriptionSecret(storage.secrets, params.webhookId, secret) };
      },
      finish: async ({ call, params }, _claim, { secret, ciphertext }) => {
        const data = await call<ResponseData<'getWebhookSubscription_v1'>>(sql.fragment`api.rotate_webhook_secret(${params.webhookId}, ${sql.binary(ciphertext)})`);
        return { data: { ...data, secret } };
      },
      abandon: async () => {},
    },
  },
  sendWebhookTest_v1: {
    handle: async ({ call, params }) => ({ status: 202, data: await call(sql.fragment`api.send_webhook_test(${params.webhookId})`) }),
  },
  listWebhookDeliveries_v1: {
    handle: async ({ call, params, query }) => {
      const page = await call<{ data: ResponseData<'listWebhookDeliveries_v1'>; meta: ResponseMeta<'listWebhookDeliveries_v1'> }>(
        sql.fragment`api.list_webhook_deliveries(${params.webhookId}, ${query.limit}, ${query.offset}, ${query.state ?? null})`,
      );
      return { data: page.data, meta: page.meta };
    },
  },
  redeliverWebhook_v1: {
    handle: async ({ call, params }) => ({
      status: 202,
      data: await call(sql.fragment`api.redeliver_webhook(${params.webhookId}, ${params.deliveryId})`),
    }),
  },
  listWebhookLog_v1: {
    handle: async ({ call, params, query }) => {
      const page = await call<{ data: ResponseData<'listWebhookLog_v1'>; meta: ResponseMeta<'listWebhookLog_v1'> }>(
        sql.fragment`api.list_webhook_log(${params.webhookId}, ${query.limit}, ${query.offset})`,
      );
      return { data: page.data, meta: page.meta };
    },
  },
} satisfies Partial<RouteTable>;
