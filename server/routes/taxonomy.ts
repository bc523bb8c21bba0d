import { sql } from '../db/pool.ts';
import type { RouteDefinition } from '../http/pipeline.ts';

/** Tags, pillars and formats share one shape ({name, color}) and one set of SQL functions. */
function termRoutes(kind: 'tags' | 'pillars' | 'formats', singular: string, plural: string): Record<string, RouteDefinition> {
  return {
    [`list${plural}_v1`]: {
      handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_taxonomy_terms(${kind})`) }),
    },
    [`create${singular}_v1`]: {
      handle: async ({ call, body }) => ({
        status: 201,
        data: await call(sql.fragment`api.create_taxonomy_term(${kind}, ${body.name}, ${body.color ?? null})`),
      }),
    },
    [`update${singular}_v1`]: {
      handle: async ({ call, params, body }) => ({
        data: await call(sql.fragment`api.update_taxonomy_term(${kind}, ${params.id}, ${sql.jsonb(body)})`),
      }),
    },
    [`delete${singular}_v1`]: {
      handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_taxonomy_term(${kind}, ${params.id})`) }),
    },
  };
}

export const taxonomyRoutes: Record<string, RouteDefinition> = {
  listHashtagGroups_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_hashtag_groups()`) }),
  },
  createHashtagGroup_v1: {
    handle: async ({ call, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_hashtag_group(${body.name}, ${sql.array(body.hashtags, 'text')})`),
    }),
  },
  updateHashtagGroup_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_hashtag_group(${params.id}, ${sql.jsonb(body)})`) }),
  },
  deleteHashtagGroup_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_hashtag_group(${params.id})`) }),
  },
  ...termRoutes('tags', 'Tag', 'Tags'),
  ...termRoutes('pillars', 'Pillar', 'Pillars'),
  ...termRoutes('formats', 'Format', 'Formats'),
};
