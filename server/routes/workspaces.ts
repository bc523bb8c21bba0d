import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';

export const workspaceRoutes = {
  listWorkspaces_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_workspaces()`) }),
  },
  createWorkspace_v1: {
    handle: async ({ call, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_workspace(${body.name}, ${body.timezone})`),
    }),
  },
} satisfies Partial<RouteTable>;
