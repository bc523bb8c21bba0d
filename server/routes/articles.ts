import { prepareArticleBody } from '../articles/html.ts';
import { articleMediaRefs, presentArticle } from '../articles/present.ts';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { HandlerContext, RouteTable } from '../http/pipeline.ts';
import type { RequestBody, ResponseData, Schema } from '../http/types.ts';
import { ConnectorError, connectorsFor, type IntegrationRef } from '../platforms/index.ts';

// Articles (spec "Article", "Articles"): each handler sanitizes the body (the
// HTML allowlist, server/articles/html.ts), calls one SQL function
// (db/migrations/current/80-articles.sql, which holds the rules), and signs
// the media URLs of the answer.

/**
 * An article as app.article_json builds it: its media carry storage facts
 * that presentArticle (server/articles/present.ts) turns into signed URLs.
 */
type DbArticle = Record<string, unknown>;

/** What api.begin_article_platform_draft answers. */
interface DraftBegin {
  fingerprint: string;
  /** The draft already made from this very article, if any. */
  existing: { articleId: string; draftUrl: string | null } | null;
  article: DbArticle & { title: string };
  integration: Omit<IntegrationRef, 'settings'> & { settings: Record<string, unknown> | null; status: string; deleted: boolean };
}

/** The request body with bodyHtml sanitized and the server's findings on it. */
function prepared(body: RequestBody<'createArticle_v1'> | RequestBody<'updateArticle_v1'>) {
  const out: Record<string, unknown> = { ...body };
  if (typeof body.bodyHtml === 'string') {
    const b = prepareArticleBody(body.bodyHtml);
    out.bodyHtml = b.bodyHtml;
    out.characterCount = b.characterCount;
    out.problems = b.problems;
  }
  return out;
}

function connectorError(e: ConnectorError): ApiError {
  if (e.code === 'NOT_SUPPORTED') {
    return new ApiError(400, 'ARTICLES_NOT_SUPPORTED', e.message, { reason: e.code });
  }
  return new ApiError(502, 'PLATFORM_DRAFT_FAILED', `The platform did not take the draft: ${e.message}`, { reason: e.code, ...(e.details ?? {}) });
}

async function platformDraft(ctx: HandlerContext<'createArticlePlatformDraft_v1'>) {
  const id = ctx.params.contentId;
  const begin = await ctx.call<DraftBegin>(sql.fragment`api.begin_article_platform_draft(${id}::uuid)`);
  if (begin.existing) {
    return { data: { contentId: id, articleId: begin.existing.articleId, draftUrl: begin.existing.draftUrl ?? null } };
  }
  const g = begin.integration;
  if (g.deleted || g.status !== 'active') {
    throw new ApiError(409, 'INTEGRATION_UNAVAILABLE', 'The article\'s channel is disconnected or deleted; reconnect it first.', { integrationId: g.id });
  }
  const integration: IntegrationRef = {
    id: g.id,
    connector: g.connector,
    platform: g.platform,
    name: g.name,
    username: g.username,
    settings: g.settings ?? {},
    capabilities: g.capabilities,
    webhookUrl: g.webhookUrl,
    webhookSecret: g.webhookSecret,
  };
  const article = begin.article;
  const media = await articleMediaRefs(ctx.config, ctx.workspaceId!, article);
  const shown = await presentArticle(ctx.config, ctx.workspaceId!, article);
  let result;
  try {
    result = await connectorsFor(ctx.config)
      .get(integration.connector)
      .createDraft(integration, { contentId: id, title: article.title, bodyHtml: shown.bodyHtml, cover: media.cover, images: media.images });
  } catch (e) {
    if (e instanceof ConnectorError) throw connectorError(e);
    throw e;
  }
  const data = await ctx.call<ResponseData<'createArticlePlatformDraft_v1'>>(
    sql.fragment`api.record_article_platform_draft(${id}::uuid, ${result.articleId}, ${result.draftUrl ?? null}, ${begin.fingerprint})`,
  );
  return { data };
}

export const articlesRoutes = {
  listArticles_v1: {
    handle: async ({ call, query, config, workspaceId }) => {
      type Page = { articles: DbArticle[]; pagination: Schema<'ArticlePagination'> };
      const page = await call<Page>(sql.fragment`api.list_articles(${query.limit}::int, ${query.offset}::bigint)`);
      const articles: Schema<'Article'>[] = await Promise.all(page.articles.map((a) => presentArticle(config, workspaceId!, a)));
      return { data: { articles, pagination: page.pagination }, meta: null };
    },
  },
  createArticle_v1: {
    handle: async ({ call, body, config, workspaceId, idempotencyKey }) => {
      const key = idempotencyKey;
      const article = await call<DbArticle>(sql.fragment`api.create_article(${sql.jsonb(prepared(body))})`);
      return {
        status: 201,
        data: { article: await presentArticle(config, workspaceId!, article), idempotency: { key, replayed: false } },
      };
    },
  },
  getArticle_v1: {
    handle: async ({ call, params, config, workspaceId }) => {
      const r = await call<{ article: DbArticle }>(sql.fragment`api.get_article(${params.contentId}::uuid)`);
      return { data: { article: await presentArticle(config, workspaceId!, r.article) } };
    },
  },
  updateArticle_v1: {
    handle: async ({ call, params, body, config, workspaceId }) => {
      const r = await call<{ article: DbArticle }>(sql.fragment`api.update_article(${params.contentId}::uuid, ${sql.jsonb(prepared(body))})`);
      return { data: { article: await presentArticle(config, workspaceId!, r.article) } };
    },
  },
  createArticlePlatformDraft_v1: { handle: platformDraft },
} satisfies Partial<RouteTable>;
