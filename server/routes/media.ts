import type { RouteDefinition } from '../http/pipeline.ts';

export const mediaRoutes: Record<string, RouteDefinition> = {};
