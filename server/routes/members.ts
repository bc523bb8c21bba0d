import { sql } from '../db/pool.ts';
import type { RouteTable } from '../http/pipeline.ts';

export const memberRoutes = {
  listMembers_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.list_members()`) }),
  },
  addMember_v1: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.add_member(${body.email}, ${body.role})`) }),
  },
  updateMember_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_member(${params.userId}, ${body.role})`) }),
  },
  removeMember_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.remove_member(${params.userId})`) }),
  },
} satisfies Partial<RouteTable>;
