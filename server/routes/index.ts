import type { RouteDefinition } from '../http/pipeline.ts';
import { apiKeyRoutes } from './apiKeys.ts';
import { articlesRoutes } from './articles.ts';
import { authRoutes } from './auth.ts';
import { campaignsRoutes } from './campaigns.ts';
import { contentRoutes } from './content.ts';
import { contentRootsRoutes } from './contentRoots.ts';
import { integrationsRoutes } from './integrations.ts';
import { mediaRoutes } from './media.ts';
import { publishingRoutes } from './publishing.ts';
import { memberRoutes } from './members.ts';
import { taxonomyRoutes } from './taxonomy.ts';
import { workspaceRoutes } from './workspaces.ts';

/** Every operationId of openapi.yaml maps to exactly one handler here. */
export const routes: Record<string, RouteDefinition> = {
  ...authRoutes,
  ...workspaceRoutes,
  ...memberRoutes,
  ...apiKeyRoutes,
  ...integrationsRoutes,
  ...taxonomyRoutes,
  ...campaignsRoutes,
  ...contentRoutes,
  ...contentRootsRoutes,
  ...mediaRoutes,
  ...publishingRoutes,
  ...articlesRoutes,
};
