// Analytics routes: one api.* function each (db/migrations/committed/000008-analytics-metrics-rollups-reports.sql, split 14-analytics.sql).
// The report's download URL is signed here, from the storage key the SQL
// function returns (which never leaves the server).
import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';
import type { ResponseData, ResponseMeta, Schema } from '../http/types.ts';

/** `integrationIds` (comma-separated UUIDs, checked by the contract) as a uuid[] parameter, or null. */
function ids(value: string | undefined) {
  if (!value) return null;
  return sql.array([...new Set(value.split(',').map((s) => s.trim().toLowerCase()))], 'uuid');
}

const day = (value: string | undefined) => value ?? null;

type StoredReport = Omit<Schema<'AnalyticsReport'>, 'downloadUrl' | 'downloadUrlExpiresAt'> & { storageKey: string | null };

export const analyticsRoutes = {
  getAnalyticsSummary_v1: {
    handle: async ({ call, query }) => ({
      data: await call(sql.fragment`api.analytics_summary(${day(query.from)}::date, ${day(query.to)}::date, ${ids(query.integrationIds)})`),
    }),
  },
  getAnalyticsAggregates_v1: {
    handle: async ({ call, query }) => ({
      data: await call(sql.fragment`api.analytics_aggregates(${day(query.from)}::date, ${day(query.to)}::date,
        ${query.interval}, ${query.groupBy}, ${ids(query.integrationIds)})`),
    }),
  },
  listAnalyticsPosts_v1: {
    handle: async ({ call, query }) => {
      const filter = {
        from: query.from ?? null,
        to: query.to ?? null,
        integrationIds: query.integrationIds ? [...new Set(query.integrationIds.split(',').map((s) => s.trim().toLowerCase()))] : null,
        platform: query.platform ?? null,
        tagId: query.tagId ?? null,
        pillarId: query.pillarId ?? null,
        campaignId: query.campaignId ?? null,
      };
      const page = await call<{ data: ResponseData<'listAnalyticsPosts_v1'>; meta: ResponseMeta<'listAnalyticsPosts_v1'> }>(
        sql.fragment`api.analytics_posts(${sql.jsonb(filter)}, ${query.sortBy}, ${query.order}, ${query.limit}, ${query.offset})`,
      );
      return { data: page.data, meta: page.meta };
    },
  },
  getAnalyticsPost_v1: {
    handle: async ({ call, params, query }) => ({
      data: await call(sql.fragment`api.analytics_post(${params.contentId}, ${day(query.from)}::date, ${day(query.to)}::date)`),
    }),
  },
  getAnalyticsDemographics_v1: {
    handle: async ({ call, query }) => ({
      data: await call(sql.fragment`api.analytics_demographics(${ids(query.integrationIds)}, ${day(query.on)}::date)`),
    }),
  },
  getAnalyticsHealth_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.analytics_health()`) }),
  },
  createAnalyticsReport_v1: {
    handle: async ({ call, body }) => {
      const report = await call<StoredReport>(sql.fragment`api.create_analytics_report(${day(body?.from)}::date, ${day(body?.to)}::date,
        ${body?.integrationIds?.length ? sql.array([...new Set(body.integrationIds.map((s) => s.toLowerCase()))], 'uuid') : null})`);
      return { status: 202, data: { ...report, downloadUrl: null, downloadUrlExpiresAt: null } };
    },
  },
  getAnalyticsReport_v1: {
    handle: async ({ call, params, storage, config }) => {
      const { storageKey, ...report } = await call<StoredReport>(sql.fragment`api.get_analytics_report(${params.id})`);
      if (report.status !== 'ready' || !storageKey) return { data: { ...report, downloadUrl: null, downloadUrlExpiresAt: null } };
      const expiresAt = new Date((Math.floor(Date.now() / 1000) + config.SIGNED_URL_TTL_SECONDS) * 1000);
      const downloadUrl = await storage.driver.objectUrl({
        mediaId: report.id,
        key: storageKey,
        contentType: 'application/pdf',
        filename: `analytics-${report.from}-${report.to}.pdf`,
        disposition: 'attachment',
        expiresAt,
      });
      return { data: { ...report, downloadUrl, downloadUrlExpiresAt: expiresAt.toISOString() } };
    },
  },
  ingestIntegrationMetrics_v1: {
    handle: async ({ call, params, body }) => ({
      data: await call(sql.fragment`api.ingest_metrics(${params.id}, ${sql.jsonb(body)})`),
    }),
  },
} satisfies Partial<RouteTable>;
