import { prepareArticleBody } from '../articles/html.ts';
import { articleMediaRefs, presentArticle } from '../articles/present.ts';
import { sql } from '../db/pool.ts';
import { ApiError } from '../http/errors.ts';
import type { PhasedRoute, RouteDefinition } from '../http/pipeline.ts';
import { ConnectorError, type ArticleDraftResult, type IntegrationRef } from '../platforms/index.ts';

// Articles (openapi.yaml: tag Articles, schema Article): each handler
// sanitizes the body (the HTML allowlist, server/articles/html.ts), calls one
// SQL function (api.create_article, api.update_article, ... in db/schema.sql,
// which hold the rules), and signs the media URLs of the answer.

const json = (value: unknown) => sql.jsonb((value ?? {}) as Parameters<typeof sql.jsonb>[0]);

/** The request body with bodyHtml sanitized and the server's findings on it. */
function prepared(body: Record<string, unknown>) {
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

/** What api.claim_article_platform_draft returns when there is a draft to make. */
interface DraftClaim {
  claim: string;
  fingerprint: string;
  article: any;
  integration: any;
}

/**
 * POST articles/{id}/platform-draft: claim (checks; the draft already made
 * for unchanged content answers at once; a concurrent send waits for the
 * first and answers its draft, or 409 PLATFORM_DRAFT_IN_PROGRESS), call the connector with no transaction open,
 * record the draft. A failure gives the claim up, so a retry sends again.
 */
const platformDraft: PhasedRoute<unknown, DraftClaim, ArticleDraftResult> = {
  // A concurrent send waits and answers the draft the first one made.
  whileClaimed: { code: 'PLATFORM_DRAFT_IN_PROGRESS', maxMs: (config) => config.PUBLISH_TIMEOUT_MS + 5000 },
  phases: {
    begin: async ({ call, params, config }) => {
      const id = params.contentId as string;
      const seconds = Math.ceil(config.PUBLISH_TIMEOUT_MS / 1000) + 60;
      const begin = await call(sql.fragment`api.claim_article_platform_draft(${id}::uuid, ${seconds}::int)`);
      if (begin.existing) {
        return { answer: { data: { contentId: id, articleId: begin.existing.articleId, draftUrl: begin.existing.draftUrl ?? null } } };
      }
      return { claim: begin };
    },
    work: async (ctx, begin) => {
      const id = ctx.params.contentId as string;
      const g = begin.integration;
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
      data: await call(
        sql.fragment`api.finish_article_platform_draft(${params.contentId}::uuid, ${begin.claim}::uuid, ${result.articleId},
          ${result.draftUrl ?? null}, ${begin.fingerprint})`,
      ),
    }),
    abandon: async ({ call, params }, begin) => {
      await call(sql.fragment`api.release_work_claim('article_platform_draft', ${params.contentId}::uuid, ${begin.claim}::uuid)`);
    },
  },
};

export const articlesRoutes: Record<string, RouteDefinition> = {
  listArticles_v1: {
    handle: async ({ call, query, storage, workspaceId }) => {
      const page = await call(sql.fragment`api.list_articles(${query.limit ?? 25}::int, ${query.offset ?? 0}::bigint)`);
      const articles = await Promise.all((page.articles as unknown[]).map((a) => presentArticle(storage, workspaceId!, a)));
      return { data: { articles, pagination: page.pagination }, meta: null };
    },
  },
  createArticle_v1: {
    handle: async ({ call, body, storage, workspaceId, idempotencyKey }) => {
      const key = idempotencyKey;
      const article = await call(sql.fragment`api.create_article(${json(prepared(body))})`);
      return {
        status: 201,
        data: { article: await presentArticle(storage, workspaceId!, article), idempotency: { key, replayed: false } },
      };
    },
  },
  getArticle_v1: {
    handle: async ({ call, params, storage, workspaceId }) => {
      const r = await call(sql.fragment`api.get_article(${params.contentId}::uuid)`);
      return { data: { article: await presentArticle(storage, workspaceId!, r.article) } };
    },
  },
  updateArticle_v1: {
    handle: async ({ call, params, body, storage, workspaceId }) => {
      const r = await call(sql.fragment`api.update_article(${params.contentId}::uuid, ${json(prepared(body))})`);
      return { data: { article: await presentArticle(storage, workspaceId!, r.article) } };
    },
  },
  createArticlePlatformDraft_v1: platformDraft,
};
