import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta } from '../http/types.ts';

export const campaignsRoutes = {
  listCampaigns_v1: {
    handle: async ({ call, query }) => ({
      data: await call(sql.fragment`api.list_campaigns(${query.search ?? null}, ${query.includePhases})`),
    }),
  },
  createCampaign_v1: {
    handle: async ({ call, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_campaign(${body.name}, ${body.description ?? null}, ${body.color ?? null},
        ${body.startsOn ?? null}, ${body.endsOn ?? null}, ${body.phases ? sql.jsonb(body.phases) : null})`),
    }),
  },
  getCampaign_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_campaign(${params.id})`) }),
  },
  updateCampaign_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_campaign(${params.id}, ${sql.jsonb(body)})`) }),
  },
  deleteCampaign_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_campaign(${params.id})`) }),
  },
  listCampaignPhases_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.list_campaign_phases(${params.id})`) }),
  },
  createCampaignPhase_v1: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_campaign_phase(${params.id}, ${body.name}, ${body.color ?? null},
        ${body.startsOn ?? null}, ${body.endsOn ?? null}, ${body.position ?? null})`),
    }),
  },
  saveCampaignPhases_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.save_campaign_phases(${params.id}, ${sql.jsonb(body.phases)})`) }),
  },
  updateCampaignPhase_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.update_campaign_phase(${params.id}, ${params.phaseId}, ${sql.jsonb(body)})`),
    }),
  },
  deleteCampaignPhase_v1: {
    handle: async ({ call, params }) => {
      await call(sql.fragment`api.delete_campaign_phase(${params.id}, ${params.phaseId})`);
      return { status: 204, data: null };
    },
  },
  listCampaignContent_v1: {
    handle: async ({ call, params, query }) => {
      const page = await call<{ data: ResponseData<'listCampaignContent_v1'>; meta: ResponseMeta<'listCampaignContent_v1'> }>(
        sql.fragment`api.list_campaign_content(${params.id}, ${query.limit}, ${query.offset},
          ${query.phase ?? null}, ${query.status ?? null}, ${query.platform ?? null}, ${query.sortDirection})`,
      );
      return { data: page.data, meta: page.meta };
    },
  },
} satisfies Partial<RouteTable>;
