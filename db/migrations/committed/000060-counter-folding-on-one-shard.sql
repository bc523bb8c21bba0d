--! Previous: sha1:8eb9dcc641cb3e2d5b47d8d4e68219b3a34baa55
--! Hash: sha1:c16edcd7f5a274fa6419121e02bace99eeb12c10
--! Message: counter folding on one shard

--! split: 01-current.sql
-- The list counters' compaction in statements a shard runs alone (docs/citus.md, "Triggers").
--
-- Now and then the counters' triggers fold a workspace's delta rows into one per group
-- (app.compact_content_item_counts, app.compact_content_root_counts). They did it in one
-- statement, a DELETE ... RETURNING feeding an INSERT ... SELECT; on a Citus cluster the trigger
-- runs on the workspace's shard, and Citus plans such an INSERT ... SELECT through the
-- coordinator, which a trigger there may not reach (measured under load: "connection to the
-- remote node pressroom_definer@<coordinator> failed", from a draft whose root's counter folded).
-- The deleted rows are now read back into a value by the DELETE itself (one statement on one
-- shard: no row another writer adds meanwhile is lost), summed from that value, and each sum
-- inserted by its workspace.
CREATE OR REPLACE FUNCTION app.compact_content_item_counts(p_workspace_id uuid)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_deleted jsonb;
  v record;
begin
  -- One compactor per workspace at a time; writers only insert and never wait.
  if not pg_try_advisory_xact_lock(hashtext('app.content_item_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_item_counts where workspace_id = p_workspace_id
             returning organization_id, integration_id, status, n)
  select coalesce(jsonb_agg(jsonb_build_array(organization_id, integration_id, status, n)), '[]') into v_deleted from d;
  for v in select (e ->> 0)::uuid as organization_id, (e ->> 1)::uuid as integration_id, e ->> 2 as status,
                  sum((e ->> 3)::bigint) as n
           from jsonb_array_elements(v_deleted) e group by 1, 2, 3 having sum((e ->> 3)::bigint) <> 0 loop
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (v.organization_id, p_workspace_id, v.integration_id, v.status, v.n);
  end loop;
  return jsonb_array_length(v_deleted);
end
$function$;

CREATE OR REPLACE FUNCTION app.compact_content_root_counts(p_workspace_id uuid)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_deleted jsonb;
  v record;
begin
  if not pg_try_advisory_xact_lock(hashtext('app.content_root_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_root_counts where workspace_id = p_workspace_id returning organization_id, n)
  select coalesce(jsonb_agg(jsonb_build_array(organization_id, n)), '[]') into v_deleted from d;
  for v in select (e ->> 0)::uuid as organization_id, sum((e ->> 1)::bigint) as n
           from jsonb_array_elements(v_deleted) e group by 1 having sum((e ->> 1)::bigint) <> 0 loop
    insert into app.content_root_counts (organization_id, workspace_id, n) values (v.organization_id, p_workspace_id, v.n);
  end loop;
  return jsonb_array_length(v_deleted);
end
$function$;
