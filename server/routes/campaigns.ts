import type { RouteDefinition } from '../http/pipeline.ts';

export const campaignsRoutes: Record<string, RouteDefinition> = {};
