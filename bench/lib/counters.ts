// The list counters (app.content_item_counts, app.content_root_counts) are kept
// by triggers; a fixture inserted with `session_replication_role = replica`
// skips them, so it rebuilds them afterwards exactly as the migration first
// built them (db/migrations/committed/000011-scale-batched-publishing-list-totals-search-metrics-reporting.sql, split 15b-lists.sql).
import type pg from 'pg';

export async function rebuildListCounters(owner: pg.Client): Promise<void> {
  await owner.query(`delete from app.content_item_counts`);
  await owner.query(
    `insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
     select organization_id, workspace_id, integration_id, status, count(*) from app.content_items where deleted_at is null group by 1, 2, 3, 4`,
  );
  await owner.query(`delete from app.content_root_counts`);
  await owner.query(
    `insert into app.content_root_counts (organization_id, workspace_id, n)
     select organization_id, workspace_id, count(*) from app.content_roots where deleted_at is null group by 1, 2`,
  );
}
