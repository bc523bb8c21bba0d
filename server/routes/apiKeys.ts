import { sql } from '../db/pool.ts';
import type { RouteDefinition } from '../http/pipeline.ts';
import { newApiKey, sha256 } from '../security.ts';

export const apiKeyRoutes: Record<string, RouteDefinition> = {
  createApiKey_v1: {
    handle: async ({ call, body }) => {
      const { key, prefix } = newApiKey();
      const data = await call(sql.fragment`api.create_api_key(${body.name}, ${sql.array(body.workspaceIds, 'uuid')},
        ${body.role ?? 'editor'}, ${body.expiresAt ?? null}, ${prefix}, ${sql.binary(sha256(key))})`);
      return { status: 201, data: { ...data, key } };
    },
  },
  listApiKeys_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_api_keys()`) }),
  },
  revokeApiKey_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.revoke_api_key(${params.id})`) }),
  },
};
