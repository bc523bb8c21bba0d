import type { RouteDefinition } from '../http/pipeline.ts';

export const contentRootsRoutes: Record<string, RouteDefinition> = {};
