import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ItemsPage } from '../http/types.ts';

// The board: content roots (ideas) with their editions. SQL in
// db/schema.sql (api.list_content_roots, api.get_content_root, ...).
export const contentRootsRoutes = {
  listContentRoots_v1: {
    handle: async ({ call, query }) => {
      const page = await call<ItemsPage<'listContentRoots_v1'>>(sql.fragment`api.list_content_roots(${query.limit}::int, ${query.offset}::bigint)`);
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
} satisfies Partial<RouteTable>;
