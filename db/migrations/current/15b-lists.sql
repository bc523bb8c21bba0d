-- Scale, part b: lists that do not slow with size (db/README.md, "Scale").
--
-- * Content list totals from per-workspace counters kept by a trigger
--   (app.content_item_counts, app.content_list_total) instead of a count of
--   every edition on every page; filters the counters cannot answer (since,
--   anything added later) still count exactly.
-- * Indexes for the sorts and filters the content list allows.
-- * Trigram (pg_trgm) indexes for the substring searches: media file name and
--   alt text, campaign name, media label name (their ILIKE '%...%' uses them).

------------------------------------------------------------------------------
-- Content totals
------------------------------------------------------------------------------
create table if not exists app.content_item_counts (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null,
  status text not null,
  n bigint not null
);
comment on table app.content_item_counts is 'Live (not deleted) editions per workspace, integration and status, as deltas: the sum of n over the rows of a key is its count. Written only by triggers content_items_90_count and content_items_90_count_update (insert-only, so concurrent writers never wait on each other) and compacted by app.compact_content_item_counts; read by app.content_list_total.';
create index if not exists content_item_counts_key_idx on app.content_item_counts (workspace_id, integration_id, status) include (n);
create index if not exists content_item_counts_organization_id_idx on app.content_item_counts (organization_id);
select app.apply_tenant_policies('app.content_item_counts', array['select']);
grant select on app.content_item_counts to pressroom_api;
grant select, insert, delete on app.content_item_counts to pressroom_definer;

-- The counts of the editions already there.
insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
select organization_id, workspace_id, integration_id, status, count(*)
from app.content_items where deleted_at is null
group by 1, 2, 3, 4;

create or replace function app.compact_content_item_counts(p_workspace_id uuid) returns int
language plpgsql security definer set search_path = pg_catalog, app
as $$
declare
  v_rows int;
begin
  -- One compactor per workspace at a time; writers only insert and never wait.
  if not pg_try_advisory_xact_lock(hashtext('app.content_item_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_item_counts where workspace_id = p_workspace_id returning *),
  s as (insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
        select organization_id, workspace_id, integration_id, status, sum(n) from d
        group by 1, 2, 3, 4 having sum(n) <> 0 returning 1)
  select (select count(*) from d) into v_rows;
  return v_rows;
end
$$;
alter function app.compact_content_item_counts(uuid) owner to pressroom_definer;
comment on function app.compact_content_item_counts(uuid) is 'Folds a workspace''s content count deltas into one row per integration and status (skipped when another transaction is compacting the same workspace); returns the rows folded.';
revoke all on function app.compact_content_item_counts(uuid) from public;
grant execute on function app.compact_content_item_counts(uuid) to pressroom_worker;

create or replace function app.tg_content_items_count() returns trigger
language plpgsql security definer set search_path = pg_catalog, app
as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (old.organization_id, old.workspace_id, old.integration_id, old.status, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') and new.deleted_at is null then
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (new.organization_id, new.workspace_id, new.integration_id, new.status, 1);
  end if;
  -- Now and then, fold the deltas (about one change in 500).
  if random() < 0.002 then
    perform app.compact_content_item_counts(coalesce(new.workspace_id, old.workspace_id));
  end if;
  return null;
end
$$;
alter function app.tg_content_items_count() owner to pressroom_definer;
comment on function app.tg_content_items_count() is 'Keeps app.content_item_counts: a -1 delta for the edition as it was, a +1 for it as it is (live editions only).';
revoke all on function app.tg_content_items_count() from public;

drop trigger if exists content_items_90_count on app.content_items;
create trigger content_items_90_count after insert or delete on app.content_items
for each row execute function app.tg_content_items_count();
drop trigger if exists content_items_90_count_update on app.content_items;
create trigger content_items_90_count_update after update of status, deleted_at, integration_id on app.content_items
for each row when (old.status is distinct from new.status or old.deleted_at is distinct from new.deleted_at
                   or old.integration_id is distinct from new.integration_id)
execute function app.tg_content_items_count();

create or replace function app.content_list_total(p_query jsonb) returns bigint
language plpgsql stable set search_path = pg_catalog, app
as $$
declare
  v_workflow text[];
  v_statuses text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_due bigint := 0;
  v_total bigint;
begin
  -- Only the filters the counters know; any other (since, or one added later) is counted exactly by the caller.
  if exists (select 1 from jsonb_object_keys(p_query) k
             where k not in ('limit', 'offset', 'sortBy', 'sortDirection', 'includeReviewLifecycle',
                             'status', 'integrationId', 'workflowStatus', 'workflowStatuses')) then
    return null;
  end if;
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  if p_query ->> 'status' is not null and v_workflow is not null then
    return null;
  elsif p_query ->> 'status' is not null then
    v_statuses := array[p_query ->> 'status'];
  elsif v_workflow is not null then
    v_statuses := array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                               when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
                        from unnest(v_workflow) w);
    -- "publishing" is a scheduled edition that is due, "scheduled" one that is not: the due
    -- ones are few (the engine is sending them), counted on the index.
    if ('scheduled' = any (v_workflow)) <> ('publishing' = any (v_workflow)) then
      select count(*) into v_due from app.content_items i
      where i.workspace_id = app.current_workspace_id() and i.status = 'scheduled' and i.deleted_at is null
        and i.scheduled_at <= now() and (v_integration is null or i.integration_id = v_integration);
    end if;
  else
    v_statuses := array['draft', 'scheduled', 'sent', 'failed'];
  end if;
  select coalesce(sum(c.n), 0) into v_total from app.content_item_counts c
  where c.workspace_id = app.current_workspace_id() and c.status = any (v_statuses)
    and (v_integration is null or c.integration_id = v_integration);
  if v_workflow is not null and 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
    v_total := v_total - v_due;
  elsif v_workflow is not null and 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
    v_total := v_total - (select coalesce(sum(c.n), 0) from app.content_item_counts c
                          where c.workspace_id = app.current_workspace_id() and c.status = 'scheduled'
                            and (v_integration is null or c.integration_id = v_integration)) + v_due;
  end if;
  return v_total;
end
$$;
comment on function app.content_list_total(jsonb) is 'The total of a content list query from the counters (app.content_item_counts): default statuses, a status, workflow statuses, an integration; null when the query has a filter the counters cannot answer (the list then counts exactly).';
revoke all on function app.content_list_total(jsonb) from public;
grant execute on function app.content_list_total(jsonb) to pressroom_api;

CREATE OR REPLACE FUNCTION api.list_content(p_query jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 20);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_since timestamptz := (p_query ->> 'since')::timestamptz;
  v_status text := p_query ->> 'status';
  v_workflow text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_review boolean := coalesce((p_query ->> 'includeReviewLifecycle')::boolean, false);
  v_sort text := coalesce(p_query ->> 'sortBy', 'updatedAt');
  v_dir text := coalesce(p_query ->> 'sortDirection', case when v_since is not null then 'asc' else 'desc' end);
  v_live text := 'i.deleted_at is null';
  v_where text := 'i.workspace_id = $1';
  v_join text := '';
  v_order text;
  v_total bigint;
  v_ids uuid[];
  -- reviews: the reviewLifecycle* filters (migration 000010, split 10c-content-review-filters.sql)
  v_lc jsonb := jsonb_strip_nulls(jsonb_build_object(
    'phase', p_query -> 'reviewLifecyclePhase', 'state', p_query -> 'reviewLifecycleState',
    'actor', p_query -> 'reviewLifecycleActor', 'nextAction', p_query -> 'reviewLifecycleNextAction',
    'blocker', p_query -> 'reviewLifecycleBlocker', 'blocksPublishing', p_query -> 'reviewLifecycleBlocksPublishing',
    'batchId', p_query -> 'reviewLifecycleBatchId', 'itemId', p_query -> 'reviewLifecycleItemId'));
begin
  perform app.require_role('viewer');
  if jsonb_typeof(p_query -> 'workflowStatuses') = 'array' then
    v_workflow := array(select distinct btrim(s) from jsonb_array_elements_text(p_query -> 'workflowStatuses') e,
                        regexp_split_to_table(e, ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatuses' is not null then
    v_workflow := array(select distinct btrim(s) from regexp_split_to_table(p_query ->> 'workflowStatuses', ',') s where btrim(s) <> '');
  elsif p_query ->> 'workflowStatus' is not null then
    v_workflow := array[p_query ->> 'workflowStatus'];
  end if;
  v_dir := case when lower(v_dir) = 'asc' then 'asc' else 'desc' end;
  -- Filters of live editions; without any, the default statuses.
  if v_status is not null then
    v_live := v_live || ' and i.status = $3';
  end if;
  if v_workflow is not null then
    -- The statuses the workflow statuses cover narrow the scan (an index
    -- serves them); only when exactly one of scheduled/publishing is asked
    -- does a plain comparison of scheduled_at split them (the same rule as
    -- app.content_workflow_status, written so the planner can use an index).
    v_live := v_live || format(' and i.status = any (%L::text[])',
      array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                   when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
            from unnest(v_workflow) w));
    if 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at > now() or i.scheduled_at is null)$w$;
    elsif 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at <= now())$w$;
    end if;
  end if;
  if v_status is null and v_workflow is null and v_lc = '{}' then
    v_live := v_live || $w$ and i.status in ('draft', 'scheduled', 'sent', 'failed')$w$;
  end if;
  -- reviews: any reviewLifecycle filter opts review-held content in and adds reviewLifecycle to items.
  if v_lc <> '{}' then
    v_review := true;
    v_live := v_live || ' and app.content_review_lifecycle_matches(i, $8)';
  end if;
  if v_integration is not null then
    v_where := v_where || ' and i.integration_id = $5';
  end if;
  if v_since is not null then
    v_where := v_where || format(' and ((%s and i.updated_at > $2) or (i.deleted_at is not null and i.deleted_at > $2))', v_live);
  else
    v_where := v_where || ' and ' || v_live;
  end if;
  v_order := case v_sort
    when 'createdAt' then format('i.created_at %s, i.id %s', v_dir, v_dir)
    when 'scheduledAt' then format('i.scheduled_at %s nulls last, i.id %s', v_dir, v_dir)
    when 'status' then format('i.status %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    when 'platform' then format('g.platform %s, i.updated_at desc, i.id %s', v_dir, v_dir)
    else format('i.updated_at %s, i.id %s', v_dir, v_dir)
  end;
  if v_sort = 'platform' then
    v_join := 'join app.integrations g on g.id = i.integration_id';
  end if;
  -- The total: from the per-workspace counters when the query allows it
  -- (app.content_list_total), else an exact count of the filtered set.
  v_total := app.content_list_total(p_query);
  if v_total is null then
    execute format('select count(*) from app.content_items i where %s', v_where)
    into v_total
    using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc;
  end if;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;

------------------------------------------------------------------------------
-- Indexes for the content list's sorts and filters (live editions)
------------------------------------------------------------------------------
-- sortBy=createdAt
create index if not exists content_items_workspace_created_idx on app.content_items (workspace_id, created_at desc, id desc)
  include (organization_id) where deleted_at is null;
-- status=..., default sort (updatedAt) and sortBy=status
create index if not exists content_items_workspace_status_updated_idx on app.content_items (workspace_id, status, updated_at desc, id desc)
  include (organization_id) where deleted_at is null;
-- status=..., sortBy=scheduledAt (desc nulls last, the list's default direction)
create index if not exists content_items_workspace_status_scheduled_idx on app.content_items (workspace_id, status, scheduled_at desc nulls last, id desc)
  include (organization_id) where deleted_at is null;
-- integrationId=..., default sort
create index if not exists content_items_workspace_channel_updated_idx on app.content_items (workspace_id, integration_id, updated_at desc, id desc)
  include (organization_id) where deleted_at is null;

------------------------------------------------------------------------------
-- Substring search: trigram indexes
------------------------------------------------------------------------------
create extension if not exists pg_trgm with schema public;
create index if not exists media_items_filename_trgm_idx on app.media_items using gin (filename public.gin_trgm_ops);
create index if not exists media_items_alt_text_trgm_idx on app.media_items using gin (alt_text public.gin_trgm_ops);
create index if not exists campaigns_name_trgm_idx on app.campaigns using gin (name public.gin_trgm_ops);
create index if not exists media_labels_name_trgm_idx on app.media_labels using gin (name public.gin_trgm_ops);

------------------------------------------------------------------------------
-- Content roots totals
------------------------------------------------------------------------------
create table if not exists app.content_root_counts (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  n bigint not null
);
comment on table app.content_root_counts is 'Live (not deleted) content roots per workspace, as deltas (sum of n = the count). Written only by triggers content_roots_90_count and content_roots_90_count_update (insert-only), folded by app.compact_content_root_counts; read by app.content_root_total.';
create index if not exists content_root_counts_workspace_idx on app.content_root_counts (workspace_id) include (n);
create index if not exists content_root_counts_organization_id_idx on app.content_root_counts (organization_id);
select app.apply_tenant_policies('app.content_root_counts', array['select']);
grant select on app.content_root_counts to pressroom_api;
grant select, insert, delete on app.content_root_counts to pressroom_definer;
insert into app.content_root_counts (organization_id, workspace_id, n)
select organization_id, workspace_id, count(*) from app.content_roots where deleted_at is null group by 1, 2;

create or replace function app.compact_content_root_counts(p_workspace_id uuid) returns int
language plpgsql security definer set search_path = pg_catalog, app
as $$
declare
  v_rows int;
begin
  if not pg_try_advisory_xact_lock(hashtext('app.content_root_counts'), hashtext(p_workspace_id::text)) then
    return 0;
  end if;
  with d as (delete from app.content_root_counts where workspace_id = p_workspace_id returning *),
  s as (insert into app.content_root_counts (organization_id, workspace_id, n)
        select organization_id, workspace_id, sum(n) from d group by 1, 2 having sum(n) <> 0 returning 1)
  select (select count(*) from d) into v_rows;
  return v_rows;
end
$$;
alter function app.compact_content_root_counts(uuid) owner to pressroom_definer;
comment on function app.compact_content_root_counts(uuid) is 'Folds a workspace''s content root count deltas into one row (skipped while another transaction folds them); returns the rows folded.';
revoke all on function app.compact_content_root_counts(uuid) from public;
grant execute on function app.compact_content_root_counts(uuid) to pressroom_worker;

create or replace function app.tg_content_roots_count() returns trigger
language plpgsql security definer set search_path = pg_catalog, app
as $$
begin
  if tg_op in ('UPDATE', 'DELETE') and old.deleted_at is null then
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
$$;
alter function app.tg_content_roots_count() owner to pressroom_definer;
comment on function app.tg_content_roots_count() is 'Keeps app.content_root_counts: -1 for the root as it was, +1 as it is (live roots only).';
revoke all on function app.tg_content_roots_count() from public;
drop trigger if exists content_roots_90_count on app.content_roots;
create trigger content_roots_90_count after insert or delete on app.content_roots
for each row execute function app.tg_content_roots_count();
drop trigger if exists content_roots_90_count_update on app.content_roots;
create trigger content_roots_90_count_update after update of deleted_at on app.content_roots
for each row when (old.deleted_at is distinct from new.deleted_at) execute function app.tg_content_roots_count();

create or replace function app.content_root_total() returns bigint
language sql stable set search_path = pg_catalog, app
as $$ select coalesce(sum(n), 0)::bigint from app.content_root_counts where workspace_id = app.current_workspace_id() $$;
comment on function app.content_root_total() is 'Live content roots of the current workspace, from app.content_root_counts.';
revoke all on function app.content_root_total() from public;
grant execute on function app.content_root_total() to pressroom_api;

------------------------------------------------------------------------------
-- Searches through the trigram indexes. Row-level security evaluates a
-- query's own conditions after its policies unless they are leakproof, and
-- ILIKE is not, so under the request's policies an ILIKE can never drive an
-- index scan. These helpers run the substring match alone, as pressroom_definer
-- and restricted to the current workspace, so the trigram index serves it; the
-- list keeps every other condition under its own policies and takes the ids as
-- one array (`id = any (array(...))`: a primary-key lookup of the matches,
-- rather than a walk of the whole workspace testing each row against them).
------------------------------------------------------------------------------
create or replace function app.media_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$
  select m.id from app.media_items m
  where m.workspace_id = app.current_workspace_id() and (m.filename ilike p_pattern or m.alt_text ilike p_pattern)
$$;
alter function app.media_search_ids(text) owner to pressroom_definer;
comment on function app.media_search_ids(text) is 'Ids of the current workspace''s media items whose file name or alt text matches an ILIKE pattern, through the trigram indexes; used by api.list_media.';
revoke all on function app.media_search_ids(text) from public;
grant execute on function app.media_search_ids(text) to pressroom_api;

create or replace function app.campaign_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$ select c.id from app.campaigns c where c.workspace_id = app.current_workspace_id() and c.name ilike p_pattern $$;
alter function app.campaign_search_ids(text) owner to pressroom_definer;
comment on function app.campaign_search_ids(text) is 'Ids of the current workspace''s campaigns whose name matches an ILIKE pattern, through the trigram index; used by api.list_campaigns.';
revoke all on function app.campaign_search_ids(text) from public;
grant execute on function app.campaign_search_ids(text) to pressroom_api;

create or replace function app.media_label_search_ids(p_pattern text) returns setof uuid
language sql stable security definer set search_path = pg_catalog, app
as $$ select l.id from app.media_labels l where l.workspace_id = app.current_workspace_id() and l.name ilike p_pattern $$;
alter function app.media_label_search_ids(text) owner to pressroom_definer;
comment on function app.media_label_search_ids(text) is 'Ids of the current workspace''s media labels whose name matches an ILIKE pattern, through the trigram index; used by api.list_media_labels.';
revoke all on function app.media_label_search_ids(text) from public;
grant execute on function app.media_label_search_ids(text) to pressroom_api;

CREATE OR REPLACE FUNCTION api.list_media(p_filters jsonb, p_after jsonb, p_limit integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_state text := coalesce(p_filters ->> 'state', 'active');
  v_sort text := coalesce(p_filters ->> 'sortBy', 'createdAt');
  v_desc boolean := coalesce(p_filters ->> 'order', 'desc') = 'desc';
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_expr text;
  v_cast text;
  v_where text := 'm.workspace_id = $1';
  v_labels uuid[];
  v_used_expr text := '(exists (select 1 from app.content_item_media cim join app.content_items ci on ci.id = cim.content_item_id
        where cim.media_id = m.id and ci.deleted_at is null)
     or exists (select 1 from app.content_root_media crm join app.content_roots cr on cr.id = crm.root_id
        where crm.media_id = m.id and cr.deleted_at is null))';
  v_rows app.media_items[];
  v_items jsonb;
  v_last app.media_items;
  v_has_more boolean;
  v_key jsonb;
begin
  perform app.require_role('viewer');
  if (p_filters ->> 'rootOnly')::boolean and p_filters ->> 'folderId' is not null then
    perform app.media_invalid('query.rootOnly', 'conflict', 'cannot be combined with folderId');
  end if;
  if (p_filters ->> 'isUnlabeled')::boolean and p_filters ? 'labelIds' then
    perform app.media_invalid('query.isUnlabeled', 'conflict', 'cannot be true together with labelIds');
  end if;
  if p_filters ? 'isUsed' and p_filters ? 'isUnused'
     and (p_filters ->> 'isUsed')::boolean = (p_filters ->> 'isUnused')::boolean then
    perform app.media_invalid('query.isUnused', 'conflict', 'contradicts isUsed');
  end if;
  case v_sort
    when 'createdAt' then v_expr := 'm.created_at'; v_cast := 'timestamptz';
    when 'filename' then v_expr := 'lower(m.filename)'; v_cast := 'text';
    when 'fileSize' then v_expr := 'm.file_size'; v_cast := 'bigint';
    else perform app.media_invalid('query.sortBy', 'enum', 'must be createdAt, filename or fileSize');
  end case;
  if v_state <> 'all' then
    v_where := v_where || ' and m.state = $2';
  end if;
  if p_filters ->> 'folderId' is not null then
    v_where := v_where || ' and m.folder_id = $3';
  end if;
  if (p_filters ->> 'rootOnly')::boolean then
    v_where := v_where || ' and m.folder_id is null';
  end if;
  if p_filters ? 'labelIds' then
    select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_filters -> 'labelIds') x;
    v_where := v_where || ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id and x.label_id = any ($4))';
  end if;
  if p_filters ? 'isUnlabeled' then
    v_where := v_where || case when (p_filters ->> 'isUnlabeled')::boolean
      then ' and not exists (select 1 from app.media_item_labels x where x.media_id = m.id)'
      else ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id)' end;
  end if;
  if p_filters ? 'type' then
    v_where := v_where || ' and m.type = $5';
  end if;
  if coalesce(p_filters ->> 'search', '') <> '' then
    -- Through the trigram indexes (app.media_search_ids).
    v_where := v_where || ' and m.id = any (array(select app.media_search_ids($6)))';
  end if;
  if p_filters ? 'isFavorite' then
    v_where := v_where || ' and m.is_favorite = $7';
  end if;
  if p_filters ? 'isUsed' then
    v_where := v_where || case when (p_filters ->> 'isUsed')::boolean then ' and ' else ' and not ' end || v_used_expr;
  elsif p_filters ? 'isUnused' then
    v_where := v_where || case when (p_filters ->> 'isUnused')::boolean then ' and not ' else ' and ' end || v_used_expr;
  end if;
  if p_filters ? 'source' then
    v_where := v_where || ' and m.source = $8';
  end if;
  if p_after is not null then
    v_where := v_where || format(' and (%s, m.id) %s ($9::%s, $10::uuid)', v_expr, case when v_desc then '<' else '>' end, v_cast);
  end if;
  execute format('select array(select m from app.media_items m where %s order by %s %s, m.id %s limit $11)',
                 v_where, v_expr, case when v_desc then 'desc' else 'asc' end, case when v_desc then 'desc' else 'asc' end)
    into v_rows
    using app.current_workspace_id(), v_state, (p_filters ->> 'folderId')::uuid, v_labels, p_filters ->> 'type',
          app.media_contains_pattern(coalesce(p_filters ->> 'search', '')), (p_filters ->> 'isFavorite')::boolean,
          p_filters ->> 'source', p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid, v_limit + 1;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
  end if;
  v_items := app.media_json_list(v_rows);
  if v_has_more then
    v_last := v_rows[v_limit];
    v_key := jsonb_build_array(case v_sort when 'createdAt' then to_jsonb(v_last.created_at)
                                           when 'filename' then to_jsonb(lower(v_last.filename))
                                           else to_jsonb(v_last.file_size) end, v_last.id);
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', v_has_more, 'last', v_key);
end
$function$;

CREATE OR REPLACE FUNCTION api.list_campaigns(p_search text, p_include_phases boolean)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
begin
  perform app.require_role('viewer');
  if nullif(p_search, '') is null then
    return (
      select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                                order by c.starts_on nulls last, lower(c.name), c.id), '[]')
      from app.campaigns c
      where c.workspace_id = app.current_workspace_id());
  end if;
  -- A search goes through the trigram index (app.campaign_search_ids), in a
  -- statement of its own: no plan shared with the unfiltered list walks the workspace.
  return (
    select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = app.current_workspace_id()
      and c.id = any (array(select app.campaign_search_ids('%' || app.like_escape(p_search) || '%'))));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_media_labels(p_group text, p_include_merged boolean, p_search text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_group uuid;
begin
  perform app.require_role('viewer');
  if nullif(p_group, '') is not null then
    v_group := (app.media_label_group(p_group::uuid, 'groupId')).id;
  end if;
  return (
    select coalesce(jsonb_agg(app.media_label_json(l) order by lower(l.name), l.id), '[]')
    from app.media_labels l
    where l.workspace_id = app.current_workspace_id()
      and (coalesce(p_include_merged, false) or l.merged_into_id is null)
      and (p_group is null or (p_group = '' and l.group_id is null) or l.group_id = v_group)
      -- Through the trigram index (app.media_label_search_ids).
      and (coalesce(p_search, '') = '' or l.id = any (array(select app.media_label_search_ids(app.media_contains_pattern(p_search))))));
end
$function$;

CREATE OR REPLACE FUNCTION api.list_content_roots(p_limit integer, p_offset bigint)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_total bigint;
  v_ids uuid[];
begin
  perform app.require_role('viewer');
  -- From the counter kept by trigger (app.content_root_counts).
  v_total := app.content_root_total();
  v_ids := array(select r.id from app.content_roots r
                 where r.workspace_id = app.current_workspace_id() and r.deleted_at is null
                 order by r.updated_at desc, r.id desc
                 limit p_limit offset p_offset);
  return jsonb_build_object('items', (select app.content_roots_json(v_ids)),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
                               'hasMore', p_offset + cardinality(v_ids) < v_total));
end
$function$;

select app.harden_api_functions();
