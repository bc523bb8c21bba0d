--! Previous: sha1:fe03bc2607a3795d5d6a6461efaee2e27450c1a0
--! Hash: sha1:2f530be1188ec92d6e7e7d5d1651367291419e74
--! Message: counts on workspace delete

--! split: 10-counts-on-workspace-delete.sql
-- Deleting a workspace or an organization with content.
--
-- The list counters (app.content_item_counts, app.content_root_counts) are
-- kept by triggers that insert deltas, and their rows go with their workspace
-- and organization (on delete cascade). Deleting a workspace or organization
-- that had content failed: the cascade deleted its editions and roots, whose
-- triggers then inserted negative deltas for the workspace being deleted, a
-- foreign key violation. No route deletes them, but an operator or a DBA
-- does. The delete triggers now skip editions and roots whose workspace is
-- gone in the same statement (76-list-counts).

create or replace function app.tg_content_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_rows bigint;
  v_ws uuid;
begin
  -- old_rows / new_rows: the statement's transition tables (an insert has only new_rows, a delete only old_rows).
  if tg_op = 'INSERT' then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select x.organization_id, x.workspace_id, x.integration_id, x.status, count(*)
    from new_rows x where x.deleted_at is null group by 1, 2, 3, 4;
  elsif tg_op = 'DELETE' then
    -- Not for a workspace being deleted with its editions: its counts go with it.
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select o.organization_id, o.workspace_id, o.integration_id, o.status, -count(*)
    from old_rows o where o.deleted_at is null and exists (select 1 from app.workspaces w where w.id = o.workspace_id)
    group by 1, 2, 3, 4;
  else
    -- Only editions whose status, deletion or channel changed: -1 as they were, +1 as they are.
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    select d.organization_id, d.workspace_id, d.integration_id, d.status, sum(d.n)
    from old_rows o join new_rows x on x.id = o.id
    cross join lateral (
      select o.organization_id, o.workspace_id, o.integration_id, o.status, -1 as n where o.deleted_at is null
      union all
      select x.organization_id, x.workspace_id, x.integration_id, x.status, 1 where x.deleted_at is null) d
    where x.status is distinct from o.status or x.deleted_at is distinct from o.deleted_at
       or x.integration_id is distinct from o.integration_id
    group by 1, 2, 3, 4 having sum(d.n) <> 0;
  end if;
  get diagnostics v_rows = row_count;
  -- Now and then, fold the deltas (about one changed edition in 500).
  if v_rows > 0 and random() < 0.002 * v_rows then
    select workspace_id into v_ws from app.content_item_counts order by id desc limit 1;
    perform app.compact_content_item_counts(v_ws);
  end if;
  return null;
end
$function$;


create or replace function app.tg_content_roots_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  -- Not for a workspace being deleted with its roots: its counts go with it.
  if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null
     and (tg_op = 'UPDATE' or exists (select 1 from app.workspaces w where w.id = old.workspace_id)) then
    insert into app.content_root_counts (organization_id, workspace_id, n) values (old.organization_id, old.workspace_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
    insert into app.content_root_counts (organization_id, workspace_id, n) values (new.organization_id, new.workspace_id, 1);
  end if;
  if random() < 0.002 then
    perform app.compact_content_root_counts(coalesce(new.workspace_id, old.workspace_id));
  end if;
  return null;
end
$function$;
