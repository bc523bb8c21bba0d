import type { DatabaseTransactionConnection, SerializableValue } from 'slonik';
import type { Config } from '../config.ts';
import { sql } from '../db/pool.ts';
import type { RouteTable, TransactionalRoute } from '../http/pipeline.ts';
import type { ItemsPage, ResponseData, ResponseMeta } from '../http/types.ts';
import { csvFilename, parseCsv, writeCsv, type ParsedCsv } from '../workbench/csv.ts';

// The Workbench (/v2): each handler calls one SQL function (api.*_workbench_*
// in db/migrations/committed/000012-workbench-v2.sql, splits 13b-workbench-api.sql and 13c-workbench-bulk.sql),
// which enforces roles, ordering, the content rules (through the content
// functions) and the dry runs. CSV text is parsed and written here
// (server/workbench/csv.ts), outside the transaction.
const json = (value: SerializableValue | undefined) => sql.jsonb(value ?? {});

/**
 * The bulk calls (1,000 rows, 10,000 CSV lines) run one statement that may
 * take longer than the pool's 30 s: their own bound, transaction-local.
 */
async function bulkTimeout(ctx: { tx: DatabaseTransactionConnection; config: Config }) {
  await ctx.tx.query(sql.unsafe`select set_config('statement_timeout', ${String(ctx.config.WORKBENCH_BULK_TIMEOUT_MS)}, true)`);
}

type ExportRecords = { pageId: string; pageName: string; timeZone: string; header: string[]; records: unknown[][] };

/** The lines of a parsed file and the options, as api.import_workbench_csv takes them. */
const importBody = (parsed: ParsedCsv, dryRun: boolean, allowPartial: boolean | undefined) =>
  json({ header: parsed.header, lines: parsed.lines as unknown as SerializableValue, dryRun, allowPartial: allowPartial ?? false });

// Both import operations parse the file before the transaction opens.
const validateImport: TransactionalRoute<'validateWorkbenchCsvImport_v2', ParsedCsv> = {
  prepare: async ({ body }) => parseCsv(body.csv),
  handle: async (ctx) => {
    await bulkTimeout(ctx);
    return { data: await ctx.call(sql.fragment`api.import_workbench_csv(${ctx.params.pageId}::uuid, ${importBody(ctx.prepared, true, ctx.body.allowPartial)})`) };
  },
};
const commitImport: TransactionalRoute<'importWorkbenchCsv_v2', ParsedCsv> = {
  prepare: async ({ body }) => parseCsv(body.csv),
  handle: async (ctx) => {
    await bulkTimeout(ctx);
    return {
      status: 201,
      data: await ctx.call(sql.fragment`api.import_workbench_csv(${ctx.params.pageId}::uuid, ${importBody(ctx.prepared, false, ctx.body.allowPartial)})`),
    };
  },
};

export const workbenchRoutes = {
  // Pages
  listWorkbenchPages_v2: {
    handle: async ({ call, query }) => {
      const page = await call<ItemsPage<'listWorkbenchPages_v2'>>(sql.fragment`api.list_workbench_pages(${json(query)})`);
      return { data: page.items, meta: page.meta };
    },
  },
  createWorkbenchPage_v2: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.create_workbench_page(${json(body)})`) }),
  },
  getWorkbenchPage_v2: {
    handle: async ({ call, params, query }) => {
      const r = await call<{ page: ResponseData<'getWorkbenchPage_v2'>; meta: ResponseMeta<'getWorkbenchPage_v2'> }>(
        sql.fragment`api.get_workbench_page(${params.pageId}::uuid, ${json(query)})`,
      );
      return { data: r.page, meta: r.meta };
    },
  },
  updateWorkbenchPage_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_workbench_page(${params.pageId}::uuid, ${json(body)})`) }),
  },
  deleteWorkbenchPage_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_workbench_page(${params.pageId}::uuid)`) }),
  },
  archiveWorkbenchPage_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.set_workbench_page_archived(${params.pageId}::uuid, true)`) }),
  },
  unarchiveWorkbenchPage_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.set_workbench_page_archived(${params.pageId}::uuid, false)`) }),
  },
  duplicateWorkbenchPage_v2: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.duplicate_workbench_page(${params.pageId}::uuid, ${json(body)})`),
    }),
  },
  moveWorkbenchPage_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.move_workbench_page(${params.pageId}::uuid, ${json(body)})`) }),
  },
  rebalanceWorkbenchPage_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.rebalance_workbench_page(${params.pageId}::uuid)`) }),
  },
  exportWorkbenchPage_v2: {
    handle: async ({ call, params }) => {
      const r = await call<ExportRecords>(sql.fragment`api.export_workbench_page(${params.pageId}::uuid)`);
      return {
        data: {
          pageId: r.pageId,
          filename: csvFilename(r.pageName),
          contentType: 'text/csv; charset=utf-8' as const,
          rowCount: r.records.length,
          csv: writeCsv(r.header, r.records),
        },
      };
    },
  },
  validateWorkbenchCsvImport_v2: validateImport,
  importWorkbenchCsv_v2: commitImport,
  // Sections
  listWorkbenchSections_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.list_workbench_sections(${params.pageId}::uuid)`) }),
  },
  createWorkbenchSection_v2: {
    handle: async ({ call, params, body }) => ({
      status: 201,
      data: await call(sql.fragment`api.create_workbench_section(${params.pageId}::uuid, ${json(body)})`),
    }),
  },
  updateWorkbenchSection_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_workbench_section(${params.sectionId}::uuid, ${json(body)})`) }),
  },
  deleteWorkbenchSection_v2: {
    handle: async ({ call, params, query }) => ({ data: await call(sql.fragment`api.delete_workbench_section(${params.sectionId}::uuid, ${json(query)})`) }),
  },
  moveWorkbenchSection_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.move_workbench_section(${params.sectionId}::uuid, ${json(body)})`) }),
  },
  moveWorkbenchSectionToPage_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.move_workbench_section(${params.sectionId}::uuid, ${json(body)})`) }),
  },
  // Rows
  listWorkbenchRows_v2: {
    handle: async ({ call, query }) => {
      const page = await call<ItemsPage<'listWorkbenchRows_v2'>>(sql.fragment`api.list_workbench_rows(${json(query)})`);
      return { data: page.items, meta: page.meta };
    },
  },
  createWorkbenchRow_v2: {
    handle: async ({ call, body }) => ({ status: 201, data: await call(sql.fragment`api.create_workbench_row(${json(body)})`) }),
  },
  bulkCreateWorkbenchRows_v2: {
    handle: async (ctx) => {
      await bulkTimeout(ctx);
      return { data: await ctx.call(sql.fragment`api.bulk_create_workbench_rows(${json(ctx.body)})`) };
    },
  },
  bulkUpdateWorkbenchRows_v2: {
    handle: async (ctx) => {
      await bulkTimeout(ctx);
      return { data: await ctx.call(sql.fragment`api.bulk_update_workbench_rows(${json(ctx.body)})`) };
    },
  },
  bulkDeleteWorkbenchRows_v2: {
    handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.bulk_delete_workbench_rows(${json(body)})`) }),
  },
  pullContentIntoWorkbench_v2: {
    handle: async ({ call, body }) => ({ data: await call(sql.fragment`api.pull_content_into_workbench(${json(body)})`) }),
  },
  getWorkbenchRow_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.get_workbench_row(${params.rowId}::uuid)`) }),
  },
  updateWorkbenchRow_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.update_workbench_row(${params.rowId}::uuid, ${json(body)})`) }),
  },
  deleteWorkbenchRow_v2: {
    handle: async ({ call, params }) => ({ data: await call(sql.fragment`api.delete_workbench_row(${params.rowId}::uuid)`) }),
  },
  moveWorkbenchRow_v2: {
    handle: async ({ call, params, body }) => ({ data: await call(sql.fragment`api.move_workbench_row(${params.rowId}::uuid, ${json(body)})`) }),
  },
  duplicateWorkbenchRow_v2: {
    handle: async ({ call, params }) => ({ status: 201, data: await call(sql.fragment`api.duplicate_workbench_row(${params.rowId}::uuid)`) }),
  },
  // Bulk scheduling: one call of the expensive class, however many rows.
  validateWorkbenchSchedule_v2: {
    handle: async (ctx) => {
      await bulkTimeout(ctx);
      return { data: await ctx.call(sql.fragment`api.schedule_workbench_rows(${json(ctx.body)}, true)`) };
    },
  },
  scheduleWorkbenchRows_v2: {
    handle: async (ctx) => {
      await bulkTimeout(ctx);
      return { data: await ctx.call(sql.fragment`api.schedule_workbench_rows(${json(ctx.body)}, false)`) };
    },
  },
} satisfies Partial<RouteTable>;
