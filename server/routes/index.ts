import type { RouteDefinition } from '../http/pipeline.ts';
import { apiKeyRoutes } from './apiKeys.ts';
import { authRoutes } from './auth.ts';
import { memberRoutes } from './members.ts';
import { workspaceRoutes } from './workspaces.ts';

/** Every operationId of openapi.yaml maps to exactly one handler here. */
export const routes: Record<string, RouteDefinition> = {
  ...authRoutes,
  ...workspaceRoutes,
  ...memberRoutes,
  ...apiKeyRoutes,
};
