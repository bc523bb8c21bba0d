import { prepareArticleBody } from '../articles/html.ts';
import { articleMediaRefs, presentArticle } from '../articles/present.ts';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { PhasedRoute, RouteTable } from '../http/pipeline.ts';
import type { RequestBody, ResponseData, Schema } from '../http/types.ts';
import { ConnectorError, integrationRef, type ArticleDraftResult, type IntegrationRef } from '../platforms/index.ts';
import { vaultOf } from '../platforms/credentials.ts';

// Articles (openapi.yaml: tag Articles, schema Article): each handler
// sanitizes the body (the HTML allowlist, server/articles/html.ts), calls one
// SQL function (api.create_article, api.update_article, ... in db/schema.sql,
// which hold the rules), and signs the media URLs of the answer.

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

/** What api.claim_article_platform_draft answers when there is a draft to make: api.begin_article_platform_draft's answer and the claim. */
type DraftClaim = DraftBegin & { claim: string };

/**
 * POST articles/{id}/platform-draft: claim (checks; the draft already made
 * for unchanged content answers at once; a concurrent send waits for the
 * first and answers its draft, or 409 PLATFORM_DRAFT_IN_PROGRESS), call the connector with no transaction open,
 * record the draft. A failure gives the claim up, so a retry sends again.
 */
const platformDraft: PhasedRoute<'createArticlePlatformDraft_v1', never, DraftClaim, ArticleDraftResult> = {
  // A concurrent send waits and answers the draft the first one made.
  whileClaimed: { code: 'PLATFORM_DRAFT_IN_PROGRESS', maxMs: (config) => config.PUBLISH_TIMEOUT_MS + 5000 },
  phases: {
    begin: async ({ call, params, config }) => {
      const id = params.contentId;
      const seconds = Math.ceil(config.PUBLISH_TIMEOUT_MS / 1000) + 60;
      const begin = await call<DraftClaim>(sql.fragment`api.claim_article_platform_draft(${id}::uuid, ${seconds}::int)`);
      if (begin.existing) {
        return { answer: { data: { contentId: id, articleId: begin.existing.articleId, draftUrl: begin.existing.draftUrl ?? null } } };
      }
      return { claim: begin };
    },
    work: async (ctx, begin) => {
      const id = ctx.params.contentId;
      const g = begin.integration;
      const integration = integrationRef(g, vaultOf(ctx.config));

      const article = begin.article;
      const media = await articleMediaRefs(ctx.storage, ctx.workspaceId!, article);
      const shown = await presentArticle(ctx.storage, ctx.workspaceId!, article);
      try {
        return await ctx.connectors
          .get(integration.connector)
          .createDraft(integration, { contentId: id, title: article.title, bodyHtml: shown.bodyHtml, cover: media.cover, images: media.images });
      } catch (e) {
        if (e instanceof ConnectorError) throw connectorError(e);
        throw e;
      }
    },
    finish: async ({ call, params }, begin, result) => ({
      data: await call<ResponseData<'createArticlePlatformDraft_v1'>>(
        sql.fragment`api.finish_article_platform_draft(${params.contentId}::uuid, ${begin.claim}::uuid, ${result.articleId},
          ${result.draftUrl ?? null}, ${begin.fingerprint})`,
      ),
    }),
    abandon: async ({ call, params }, begin) => {
      await call(sql.fragment`api.release_work_claim('article_platform_draft', ${params.contentId}::uuid, ${begin.claim}::uuid)`);
    },
  },
};

export const articlesRoutes = {
  listArticles_v1: {
    handle: async ({ call, query, storage, workspaceId }) => {
      type Page = { articles: DbArticle[]; pagination: Schema<'ArticlePagination'> };
      const page = await call<Page>(sql.fragment`api.list_articles(${query.limit}::int, ${query.offset}::bigint)`);
      const articles: Schema<'Article'>[] = await Promise.all(page.articles.map((a) => presentArticle(storage, workspaceId!, a)));
      return { data: { articles, pagination: page.pagination }, meta: null };
    },
  },
  createArticle_v1: {
    handle: async ({ call, body, storage, workspaceId, idempotencyKey }) => {
      const key = idempotencyKey;
      const article = await call<DbArticle>(sql.fragment`api.create_article(${sql.jsonb(prepared(body))})`);
      return {
        status: 201,
        data: { article: await presentArticle(storage, workspaceId!, article), idempotency: { key, replayed: false } },
      };
    },
  },
  getArticle_v1: {
    handle: async ({ call, params, storage, workspaceId }) => {
      const r = await call<{ article: DbArticle }>(sql.fragment`api.get_article(${params.contentId}::uuid)`);
      return { data: { article: await presentArticle(storage, workspaceId!, r.article) } };
    },
  },
  updateArticle_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const r = await call<{ article: DbArticle }>(sql.fragment`api.update_article(${params.contentId}::uuid, ${sql.jsonb(prepared(body))})`);
      return { data: { article: await presentArticle(storage, workspaceId!, r.article) } };
    },
  },
  createArticlePlatformDraft_v1: platformDraft,
} satisfies Partial<RouteTable>;
