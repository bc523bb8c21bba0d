import type { RouteDefinition } from '../http/pipeline.ts';

export const contentRoutes: Record<string, RouteDefinition> = {};
