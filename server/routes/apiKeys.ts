import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { Schema } from '../http/types.ts';
import { newApiKey, sha256 } from '../security.ts';

export const apiKeyRoutes = {
  createApiKey_v1: {
    handle: async ({ call, body }) => {
      const { key, prefix } = newApiKey();
      // The SQL function stores the key's hash only; the key itself is added here, shown once.
      const data = await call<Omit<Schema<'ApiKeyCreated'>, 'key'>>(sql.fragment`api.create_api_key(${body.name}, ${sql.array(body.workspaceIds, 'uuid')},
        ${body.role}, ${body.expiresAt ?? null}, ${prefix}, ${sql.binary(sha256(key))})`);
      return { status: 201, data: { ...data, key } };
    },
  },
  listApiKeys_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_api_keys()`) }),
  },
  revokeApiKey_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.revoke_api_key(${params.id})`) }),
  },
} satisfies Partial<RouteTable>;
