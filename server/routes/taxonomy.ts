import { sql } from '../db/pool.ts';
import type { RouteDefinition, RouteTable } from '../http/pipeline.ts';

/**
 * Tags, pillars and formats share one shape ({name, color}) and one set of SQL
 * functions. The routes are typed by the tag operations; the pillar and format
 * operations take them only while openapi.yaml gives them the same types.
 */
function termRoutes(kind: 'tags' | 'pillars' | 'formats') {
  const list: RouteDefinition<'listTags_v1'> = {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_taxonomy_terms(${kind})`) }),
  };
  const create: RouteDefinition<'createTag_v1'> = {
    handle: async ({ call, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_taxonomy_term(${kind}, ${body.name}, ${body.color ?? null})`),
    }),
  };
  const update: RouteDefinition<'updateTag_v1'> = {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.update_taxonomy_term(${kind}, ${params.id}, ${sql.jsonb(body)})`),
    }),
  };
  const remove: RouteDefinition<'deleteTag_v1'> = {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_taxonomy_term(${kind}, ${params.id})`) }),
  };
  return { list, create, update, remove };
}

const tags = termRoutes('tags');
const pillars = termRoutes('pillars');
const formats = termRoutes('formats');

export const taxonomyRoutes = {
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
  listTags_v1: tags.list,
  createTag_v1: tags.create,
  updateTag_v1: tags.update,
  deleteTag_v1: tags.remove,
  listPillars_v1: pillars.list,
  createPillar_v1: pillars.create,
  updatePillar_v1: pillars.update,
  deletePillar_v1: pillars.remove,
  listFormats_v1: formats.list,
  createFormat_v1: formats.create,
  updateFormat_v1: formats.update,
  deleteFormat_v1: formats.remove,
} satisfies Partial<RouteTable>;
