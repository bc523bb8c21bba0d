import { sql } from '../db/pool.ts';
import type { RouteDefinition } from '../http/pipeline.ts';

// The board: content roots (ideas) with their editions. SQL in
// db/schema.sql (api.list_content_roots, api.get_content_root, ...).
export const contentRootsRoutes: Record<string, RouteDefinition> = {
  listContentRoots_v1: {
    handle: async ({ call, query }) => {
      const page = await call(sql.fragment`api.list_content_roots(${query.limit ?? 250}::int, ${query.offset ?? 0}::bigint)`);
      return { data: page.items, meta: page.meta };
    },
  },
  getContentRoot_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_content_root(${params.id}::uuid)`) }),
  },
  updateContentRoot_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.update_content_root(${params.id}::uuid, ${sql.jsonb(body)})`),
    }),
  },
};
