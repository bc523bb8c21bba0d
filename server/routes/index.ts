import type { RouteDefinition, RouteTable } from '../http/pipeline.ts';
import { analyticsRoutes } from './analytics.ts';
import { apiKeyRoutes } from './apiKeys.ts';
import { articlesRoutes } from './articles.ts';
import { authRoutes } from './auth.ts';
import { campaignsRoutes } from './campaigns.ts';
import { contentRoutes } from './content.ts';
import { contentRootsRoutes } from './contentRoots.ts';
import { inboxRoutes } from './inbox.ts';
import { integrationsRoutes } from './integrations.ts';
import { connectionRoutes } from './connections.ts';
import { mediaRoutes } from './media.ts';
import { publishingRoutes } from './publishing.ts';
import { memberRoutes } from './members.ts';
import { taxonomyRoutes } from './taxonomy.ts';
import { workspaceRoutes } from './workspaces.ts';
// Grid planner
import { gridRoutes } from './grid.ts';
// Reviews and approval workflows
import { approvalWorkflowRoutes, notificationRoutes, reviewLinkRoutes, reviewRoutes } from './reviews.ts';
import { workbenchRoutes } from './workbench.ts';
// Lifecycle webhooks
import { webhookSubscriptionRoutes } from './webhookSubscriptions.ts';

/**
 * One handler for every operationId of server/generated/api.d.ts, typed by it:
 * a missing or misspelled one fails `tsc`.
 */
const table = {
  ...authRoutes,
  ...workspaceRoutes,
  ...memberRoutes,
  ...apiKeyRoutes,
  ...integrationsRoutes,
  ...connectionRoutes,
  ...taxonomyRoutes,
  ...campaignsRoutes,
  ...contentRoutes,
  ...contentRootsRoutes,
  ...mediaRoutes,
  ...publishingRoutes,
  ...articlesRoutes,
  ...analyticsRoutes,
  // Grid planner
  ...gridRoutes,
  // Reviews and approval workflows
  ...approvalWorkflowRoutes,
  ...reviewRoutes,
  ...notificationRoutes,
  ...reviewLinkRoutes,
  ...workbenchRoutes,
  ...inboxRoutes,
  // Lifecycle webhooks
  ...webhookSubscriptionRoutes,
} satisfies RouteTable;

/**
 * The table by operationId, with the types erased, as server/app.ts looks
 * each operation of the served contract up. That contract is openapi.yaml
 * plus any openapi/parts/*.yaml (server/http/openapi.ts), which api.d.ts does
 * not see, so app.ts still checks at boot that both name the same operations.
 */
export const routes: Readonly<Record<string, RouteDefinition>> = table;
