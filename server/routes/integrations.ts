import type { RouteDefinition } from '../http/pipeline.ts';

export const integrationsRoutes: Record<string, RouteDefinition> = {};
