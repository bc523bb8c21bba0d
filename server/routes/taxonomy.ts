import type { RouteDefinition } from '../http/pipeline.ts';

export const taxonomyRoutes: Record<string, RouteDefinition> = {};
