// The inbox: threads and messages folded from the platforms' webhooks
// (server/routes/hooks.ts, server/jobs/inbox.ts), replies, notes,
// moderation, read state per member, and the hook secrets. Every rule is in
// the api.* functions (db/migrations/committed/000013-inbox.sql).
import { sql } from '../db/pool.ts';
import type { HandlerContext, RouteTable } from '../http/pipeline.ts';
import type { Schema } from '../http/types.ts';
import { encryptHookSecret, PLATFORM_TOKEN_BINDING, verifyTokenHash } from '../inbox/secrets.ts';
import { decodeCursor, encodeCursor, type CursorScope } from '../storage/cursor.ts';

type Page<T> = { items: T[]; hasMore: boolean; last: unknown[] | null };

/** A keyset page: the signed cursor in, the api function's last key out as the next one. */
async function page<T>(ctx: HandlerContext<'listInboxThreads_v1'> | HandlerContext<'listInboxMessages_v1'>, scope: CursorScope, run: (after: Record<string, unknown> | null) => ReturnType<typeof sql.fragment>) {
  const cursor = ctx.query.cursor;
  const after = cursor ? { k: await decodeCursor(ctx.storage, scope, cursor) } : null;
  const r = await ctx.call<Page<T>>(run(after));
  const nextCursor = r.hasMore && r.last ? await encodeCursor(ctx.storage, scope, r.last) : null;
  return { data: r.items, meta: { nextCursor, hasMore: Boolean(r.hasMore) } };
}

const jsonb = (v: Record<string, unknown> | null) => (v === null ? null : sql.jsonb(v as Parameters<typeof sql.jsonb>[0]));

export const inboxRoutes = {
  listInboxThreads_v1: {
    handle: async (ctx) => {
      const q = ctx.query;
      const filters = {
        integrationId: q.integrationId,
        platform: q.platform,
        kind: q.kind,
        status: q.status,
        unread: q.unread,
        assigneeId: q.assigneeId,
        unassigned: q.unassigned,
        search: q.search,
      };
      const scope: CursorScope = { list: 'inbox-threads', workspaceId: ctx.workspaceId!, filters };
      const clean = Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined));
      return page<Schema<'InboxThread'>>(ctx, scope, (after) => sql.fragment`api.list_inbox_threads(${sql.jsonb(clean)}, ${jsonb(after)}, ${q.limit})`);
    },
  },
  getInboxUnreadCounts_v1: {
    handle: async ({ call }) => ({ data: await call(sql.fragment`api.inbox_unread_counts()`) }),
  },
  getInboxThread_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_inbox_thread(${params.threadId})`) }),
  },
  updateInboxThread_v1: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_inbox_thread(${params.threadId}, ${sql.jsonb(body)})`) }),
  },
  listInboxMessages_v1: {
    handle: async (ctx) => {
      const scope: CursorScope = { list: 'inbox-messages', workspaceId: ctx.workspaceId!, filters: { threadId: ctx.params.threadId } };
      return page<Schema<'InboxMessage'>>(ctx, scope, (after) => sql.fragment`api.list_inbox_messages(${ctx.params.threadId}, ${jsonb(after)}, ${ctx.query.limit})`);
    },
  },
  replyInboxThread_v1: {
    handle: async ({ call, params, body }) => ({
      status: 202,
      data: await call(sql.fragment`api.reply_inbox_thread(${params.threadId}, ${body.text}, ${body.inReplyToId ?? null})`),
    }),
  },
  addInboxNote_v1: {
    handle: async ({ call, params, body }) => ({ status: 201, data: await call(sql.fragment`api.add_inbox_note(${params.threadId}, ${body.text})`) }),
  },
  markInboxThreadRead_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.mark_inbox_thread(${params.threadId}, true)`) }),
  },
  markInboxThreadUnread_v1: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.mark_inbox_thread(${params.threadId}, false)`) }),
  },
  moderateInboxMessage_v1: {
    handle: async ({ call, params, body }) => ({
      status: 202,
      data: await call(sql.fragment`api.moderate_inbox_message(${params.threadId}, ${params.messageId}, ${body.action})`),
    }),
  },
  retryInboxMessage_v1: {
    handle: async ({ call, params }) => ({ status: 202, data: await call(sql.fragment`api.retry_inbox_message(${params.threadId}, ${params.messageId})`) }),
  },
  setInboxHookSecret_v1: {
    // The secret is encrypted here (the key never reaches SQL); SQL checks its
    // shape, the source and the role, and keeps only the ciphertext.
    handle: async ({ call, params, body, storage }) => {
      const ciphertext = await encryptHookSecret(storage.secrets, params.id, params.source, body.secret);
      const tokenHash = body.verifyToken !== undefined ? verifyTokenHash(body.verifyToken) : null;
      return {
        data: await call(sql.fragment`api.set_inbox_hook_secret(${params.id}, ${params.source}, ${body.secret},
          ${sql.binary(ciphertext)}, ${tokenHash ? sql.binary(tokenHash) : null})`),
      };
    },
  },
  setInboxPlatformToken_v1: {
    // Encrypted here like a hook secret (bound to the integration); SQL checks
    // the role, the platform and the length, and keeps only the ciphertext.
    handle: async ({ call, params, body, storage }) => {
      const ciphertext = await encryptHookSecret(storage.secrets, params.id, PLATFORM_TOKEN_BINDING, body.accessToken);
      return { data: await call(sql.fragment`api.set_inbox_platform_token(${params.id}, ${body.accessToken.length}, ${sql.binary(ciphertext)})`) };
    },
  },
  deleteInboxPlatformToken_v1: {
    handle: async ({ call, params }) => {
      await call(sql.fragment`api.delete_inbox_platform_token(${params.id})`);
      return { status: 204, data: null };
    },
  },
} satisfies Partial<RouteTable>;
