--! Previous: sha1:37cfe3c1c19e4614b2dc7a02a0cd1b1e14740384
--! Hash: sha1:95538a7448fabb33d0822cb6154bd1bc46bd064c
--! Message: the content lifecycle on the cluster

--! split: 01-current.sql
-- The content lifecycle on the cluster: what the content test found there after 000067.
--
-- * app.schedule_editions gathers the editions it locks row by row: Citus cannot send a whole
--   row of a subquery back as an anonymous record (`input of anonymous composite types is not
--   implemented`); its UPDATE names the workspace.
-- * api.revert_content_to_draft locks the root by workspace.
-- * app.content_snapshot reads the row first, then the media helpers on its values: called from
--   a request (restoring a version), a statement Citus sends to the shard cannot call a helper
--   that reads tables (`cannot execute a distributed query from a query on a shard`).
-- * The campaign trigger on content roots reads the campaign and the phase by workspace.
-- * app.grid_in_time_order looks each tile's edition up in the workspace it was given, not in
--   the tile's (correlated through a lateral that cannot be flattened, Citus could not tell the
--   look-up stays on the trigger's shard: `the backend has already been assigned a transaction
--   id` at commit, from the deferred grid trigger).
-- * app.defer_content_checks also sets pressroom.content_checks_deferred with SET LOCAL, and the
--   publishable check triggers skip while it is on: SET CONSTRAINTS ... DEFERRED does not reach
--   a Citus worker, where they fired at once with the wrong field names; the caller checks its
--   editions itself (every caller does), and on one PostgreSQL they still run at its undefer.
-- * Triggers that chose their rule by TG_TABLE_NAME compare app.trigger_table(tg_table_name)
--   (below): on a shard the name is the shard's.
-- * A request has a transaction key, the same on every node (app.xact_key(), below); the
--   rules that meant "this transaction" use it.
-- * app.analytics_move_root takes the workspace first (the taxonomy and campaign triggers pass
--   their row's): it read a root's editions by the root's id alone, from a trigger on a shard.
-- * api.update_content_notes computes the notes first (Citus refuses a CASE over functions that
--   are not immutable in an UPDATE); it and api.update_content_metadata write the root by
--   workspace.

------------------------------------------------------------------------------
-- The transaction's key, the same on every node
------------------------------------------------------------------------------
-- Three rules say "in this transaction": one version per edition per transaction
-- (app.record_content_version), a version changes only in its own transaction
-- (content_versions_10_append_only), and an attach and a detach of the same media in one
-- transaction cancel out (app.media_usage_record). Each compared pg_current_xact_id(), which on a
-- Citus cluster is each node's own transaction: the version a trigger wrote on the shard and the
-- one a request then wrote on the coordinator were two (the content test's restore made version
-- 5 where 4 was right). A request now has a key of its own, set with its context (SET LOCAL,
-- so every node has it); outside a request the key is the local transaction, as before.
create function app.xact_key()
 RETURNS text
 LANGUAGE sql
 VOLATILE
AS $function$ select coalesce(nullif(current_setting('pressroom.xact_key', true), ''), pg_current_xact_id()::text) $function$;
comment on function app.xact_key() is 'This transaction''s key, the same on every node of a Citus cluster: the request''s (pressroom.xact_key, a fresh uuid set by app.set_request_context with SET LOCAL), or the local transaction id outside a request.';
grant execute on function app.xact_key() to pressroom_api, pressroom_definer, pressroom_worker;
revoke all on function app.xact_key() from public;

alter table app.content_versions add column xact_key text;
alter table app.content_versions alter column xact_key set default app.xact_key();
comment on column app.content_versions.xact_key is 'The transaction that wrote the version (app.xact_key()): the request''s key, the same on every node, or the local transaction id outside a request; null for versions written before migration 000068. A version is changed only in this transaction. (xact is the node''s own transaction id.)';
grant insert (xact_key) on app.content_versions to pressroom_api;
alter table app.media_usage_events add column xact_key text;
alter table app.media_usage_events alter column xact_key set default app.xact_key();
comment on column app.media_usage_events.xact_key is 'The transaction that recorded the event (app.xact_key()): an attach and a detach of the same media in one transaction cancel out. (xact_id is the node''s own transaction id.)';

------------------------------------------------------------------------------
-- A trigger's table by its own name, on a shard too
------------------------------------------------------------------------------
-- On a Citus worker a trigger fires on the shard, and TG_TABLE_NAME is the shard's name
-- (content_root_tags_102345): the triggers that chose their rule by the table's name chose none
-- there (the publishable check did nothing; the taxonomy check took every tag for a format and
-- refused it). They now compare app.trigger_table(tg_table_name), the name without a shard's
-- suffix; no table of app has a name ending in _<digits> (tests/db/10-distributable.test.sql).
create function app.trigger_table(p_name text)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ select regexp_replace(p_name, '_[0-9]+$', '') $function$;
comment on function app.trigger_table(text) is 'The table a trigger fires for, from TG_TABLE_NAME: on a Citus worker that is the shard''s name (<table>_<shard id>), whose suffix is taken off.';
grant execute on function app.trigger_table(text) to pressroom_api, pressroom_definer, pressroom_worker;
revoke all on function app.trigger_table(text) from public;

drop function app.analytics_move_root(uuid, text, uuid, integer);
create function app.analytics_move_root(p_workspace_id uuid, p_root uuid, p_dimension text, p_key uuid, p_sign integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  if p_key is null then
    return;
  end if;
  perform app.analytics_lock_root(p_root);
  insert into app.analytics_daily as a (organization_id, workspace_id, integration_id, dimension, key, day,
    impressions, reach, likes, comments, shares, saves, clicks, video_views)
  select d.organization_id, d.workspace_id, d.integration_id, p_dimension, p_key, d.day,
         p_sign * sum(d.impressions), p_sign * sum(d.reach), p_sign * sum(d.likes), p_sign * sum(d.comments),
         p_sign * sum(d.shares), p_sign * sum(d.saves), p_sign * sum(d.clicks), p_sign * sum(d.video_views)
  from app.post_metrics_daily d join app.content_items i on i.id = d.content_item_id and i.workspace_id = d.workspace_id
  where d.workspace_id = p_workspace_id and i.root_id = p_root
  group by d.organization_id, d.workspace_id, d.integration_id, d.day
  on conflict (workspace_id, dimension, key, integration_id, day) do update set
    impressions = a.impressions + excluded.impressions, reach = a.reach + excluded.reach,
    likes = a.likes + excluded.likes, comments = a.comments + excluded.comments,
    shares = a.shares + excluded.shares, saves = a.saves + excluded.saves,
    clicks = a.clicks + excluded.clicks, video_views = a.video_views + excluded.video_views;
end
$function$;
alter function app.analytics_move_root(uuid, uuid, text, uuid, integer) owner to pressroom_definer;
comment on function app.analytics_move_root(uuid, uuid, text, uuid, integer) is 'Moves a root''s daily metrics of the workspace into (p_sign 1) or out of (-1) a dimension''s totals (tag, pillar, campaign): called by the taxonomy and campaign triggers.';
revoke all on function app.analytics_move_root(uuid, uuid, text, uuid, integer) from public;

CREATE OR REPLACE FUNCTION app.tg_check_publishable()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_ws uuid := case when tg_op = 'DELETE' then old.workspace_id else new.workspace_id end;
  v_ids uuid[];
  v_id uuid;
  v_problems jsonb;
begin
  -- Deferred by the caller, which checks its editions itself (app.defer_content_checks): on one
  -- PostgreSQL this trigger then runs at the caller's undefer; on a Citus shard, where SET
  -- CONSTRAINTS does not reach, it fires at once and skips.
  if current_setting('pressroom.content_checks_deferred', true) = 'on' then
    return null;
  end if;
  if app.trigger_table(tg_table_name) = 'content_items' then
    -- app.schedule_editions checks these editions itself right after its update
    -- (same state: nothing writes them in between).
    if strpos(coalesce(current_setting('pressroom.publishable_checked', true), ''), new.id::text) > 0 then
      return null;
    end if;
    v_ids := array[new.id];
  elsif app.trigger_table(tg_table_name) = 'content_item_media' then
    v_ids := array[case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end];
  elsif app.trigger_table(tg_table_name) = 'content_roots' then
    v_ids := array(select id from app.content_items
                   where workspace_id = new.workspace_id and root_id = new.id and caption is null and status = 'scheduled' and deleted_at is null);
  elsif app.trigger_table(tg_table_name) = 'content_root_media' then
    v_ids := array(select id from app.content_items
                   where workspace_id = v_ws and root_id = case when tg_op = 'DELETE' then old.root_id else new.root_id end
                     and not own_media and status = 'scheduled' and deleted_at is null);
  end if;
  foreach v_id in array coalesce(v_ids, '{}') loop
    if exists (select 1 from app.content_items where workspace_id = v_ws and id = v_id and status = 'scheduled' and deleted_at is null) then
      v_problems := app.content_item_problems(v_ws, v_id, '');
      if jsonb_array_length(v_problems) > 0 then
        perform app.raise_field_problems(v_problems, 'Scheduled content must satisfy its platform''s rules; see details.fields.',
          jsonb_build_object('contentIds', jsonb_build_array(v_id)));
      end if;
    end if;
  end loop;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_root_taxonomy_same_workspace()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_ref uuid;
  v_found boolean;
begin
  v_ref := case app.trigger_table(tg_table_name) when 'content_root_tags' then (to_jsonb(new) ->> 'tag_id')::uuid
                              when 'content_root_pillars' then (to_jsonb(new) ->> 'pillar_id')::uuid
                              else (to_jsonb(new) ->> 'format_id')::uuid end;
  v_found := case app.trigger_table(tg_table_name)
    when 'content_root_tags' then exists (select 1 from app.tags t where t.id = v_ref and t.workspace_id = new.workspace_id)
    when 'content_root_pillars' then exists (select 1 from app.pillars t where t.id = v_ref and t.workspace_id = new.workspace_id)
    else exists (select 1 from app.formats t where t.id = v_ref and t.workspace_id = new.workspace_id) end;
  if not v_found or not exists (select 1 from app.content_roots r where r.id = new.root_id and r.workspace_id = new.workspace_id
                                and r.organization_id = new.organization_id) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem(
      case app.trigger_table(tg_table_name) when 'content_root_tags' then 'tagIds' when 'content_root_pillars' then 'pillarIds' else 'formatIds' end,
      'not_found', 'no such item in this workspace')));
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_recurring_cancel_is_final()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if app.trigger_table(tg_table_name) = 'recurring_series' then
    -- A completed series (every occurrence made) may still be cancelled;
    -- a cancelled one is final.
    if (old.status = 'cancelled' and new.status <> 'cancelled') or (old.status = 'completed' and new.status = 'active') then
      perform app.raise(409, 'SERIES_ALREADY_CANCELLED', format('This series is %s for good.', old.status),
        jsonb_build_object('seriesId', old.id, 'status', old.status));
    end if;
    if new.rule <> old.rule or new.timezone <> old.timezone or new.anchor_at <> old.anchor_at
       or new.workspace_id <> old.workspace_id or new.version < old.version then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'A series'' rule, time zone, first time and workspace cannot change.',
        jsonb_build_object('seriesId', old.id));
    end if;
  else
    if old.status = 'cancelled' and new.status <> 'cancelled' then
      perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is cancelled for good.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
    if new.series_id <> old.series_id or new.occurrence_index <> old.occurrence_index or new.starts_at <> old.starts_at then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'An occurrence''s series, position and time cannot change.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.defer_content_checks()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  -- Also said with SET LOCAL, which reaches a Citus worker (SET CONSTRAINTS does not): the check
  -- triggers on a shard skip while it is on; the caller checks its editions itself.
  execute 'set local pressroom.content_checks_deferred = on';
  set constraints app.content_items_50_check_publishable_insert, app.content_items_50_check_publishable_update,
    app.content_item_media_50_check_publishable, app.content_roots_50_check_publishable,
    app.content_root_media_50_check_publishable deferred;
end
$function$;

CREATE OR REPLACE FUNCTION app.undefer_content_checks()
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  execute 'set local pressroom.content_checks_deferred = off';
  set constraints app.content_items_50_check_publishable_insert, app.content_items_50_check_publishable_update,
    app.content_item_media_50_check_publishable, app.content_roots_50_check_publishable,
    app.content_root_media_50_check_publishable immediate;
end
$function$;

CREATE OR REPLACE FUNCTION app.record_content_version(p_workspace_id uuid, p_item_id uuid, p_source text, p_restored_from integer DEFAULT NULL::integer, p_force boolean DEFAULT false)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
declare
  v_item record;
  v_snap jsonb;
  v_last app.content_versions;
  v_next int;
  v_ctx_user uuid := app.current_user_id();  -- the request context, read once (docs/citus.md)
begin
  select id, workspace_id, organization_id, version, deleted_at into v_item
  from app.content_items where workspace_id = p_workspace_id and id = p_item_id for update;
  if v_item.id is null or v_item.deleted_at is not null then
    return null;
  end if;
  select app.content_snapshot(p_workspace_id, p_item_id) into v_snap;
  select * into v_last from app.content_versions
  where workspace_id = p_workspace_id and content_item_id = p_item_id order by version desc limit 1;
  if v_last.id is not null and v_last.xact_key = app.xact_key() then
    update app.content_versions
    set snapshot = v_snap,
        restored_from = coalesce(p_restored_from, restored_from),
        source = case when p_restored_from is not null then 'restore' else source end
    where workspace_id = p_workspace_id and id = v_last.id;
    return v_last.version;
  end if;
  if v_last.id is not null and not p_force
     and app.snapshot_effective(v_last.snapshot) = app.snapshot_effective(v_snap) then
    return v_last.version;
  end if;
  v_next := coalesce(v_last.version, 0) + 1;
  insert into app.content_versions (organization_id, workspace_id, content_item_id, version, snapshot, source,
    restored_from, created_by)
  values (v_item.organization_id, v_item.workspace_id, p_item_id, v_next, v_snap,
    case when v_last.id is null then 'create' else p_source end, p_restored_from, v_ctx_user);
  if v_item.version <> v_next then
    update app.content_items set version = v_next where workspace_id = p_workspace_id and id = p_item_id;
  end if;
  return v_next;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_versions_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if old.xact_key is distinct from app.xact_key() or new.content_item_id <> old.content_item_id
     or new.version <> old.version then
    perform app.raise(409, 'VERSION_IMMUTABLE', 'A recorded content version cannot be changed.',
      jsonb_build_object('contentId', old.content_item_id, 'version', old.version));
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.media_usage_record(p_workspace_id uuid, p_media_id uuid, p_event text, p_via text, p_content_item_id uuid, p_root_id uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_media record;
  v_status text;
  v_scheduled_at timestamptz;
  v_root uuid := p_root_id;
  v_opposite text := case p_event when 'attached' then 'detached' when 'detached' then 'attached' end;
  v_xact text := app.xact_key();  -- a value: Citus refuses the call in a DELETE on its tables
begin
  -- Nothing to record while the media item, or its workspace, is being deleted.
  select m.workspace_id, m.organization_id into v_media from app.media_items m
  join app.workspaces w on w.id = m.workspace_id
  where m.workspace_id = p_workspace_id and m.id = p_media_id;
  if not found then
    return;
  end if;
  if p_content_item_id is not null then
    select ci.status, ci.scheduled_at, coalesce(v_root, ci.root_id) into v_status, v_scheduled_at, v_root
    from app.content_items ci where ci.workspace_id = p_workspace_id and ci.id = p_content_item_id;
  end if;
  if v_opposite is not null then
    delete from app.media_usage_events
    where workspace_id = p_workspace_id and media_id = p_media_id and event = v_opposite and via = p_via and xact_key = v_xact
      and content_item_id is not distinct from p_content_item_id and root_id is not distinct from v_root;
    if found then
      return;
    end if;
  end if;
  insert into app.media_usage_events (organization_id, workspace_id, media_id, event, via, content_item_id, root_id,
    content_status, scheduled_at)
  values (v_media.organization_id, v_media.workspace_id, p_media_id, p_event, p_via, p_content_item_id,
    v_root, v_status, v_scheduled_at);
end
$function$;

CREATE OR REPLACE FUNCTION app.set_request_context(p_actor_kind text, p_user uuid, p_session uuid, p_api_key uuid, p_review_link uuid, p_organization uuid, p_workspace uuid, p_role text, p_request_id text)
 RETURNS void
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
begin
  -- Citus hands the transaction's SET LOCALs to its workers only with propagate_set_commands;
  -- without Citus it is a placeholder setting that nothing reads. The lists the
  -- organization-level policies read are remembered per context, on first use (app.recall_ids):
  -- a new context starts without them.
  execute format('set local citus.propagate_set_commands = local; '
    'set local pressroom.actor_kind = %L; set local pressroom.user_id = %L; set local pressroom.session_id = %L; '
    'set local pressroom.api_key_id = %L; set local pressroom.review_link_id = %L; set local pressroom.organization_id = %L; '
    'set local pressroom.workspace_id = %L; set local pressroom.workspace_role = %L; set local pressroom.request_id = %L; '
    'set local pressroom.accessible_workspaces = ''''; set local pressroom.managed_workspaces = ''''; '
    'set local pressroom.administrable_api_keys = ''''; set local pressroom.now = %L; set local pressroom.xact_key = %L',
    coalesce(p_actor_kind, ''), coalesce(p_user::text, ''), coalesce(p_session::text, ''), coalesce(p_api_key::text, ''),
    coalesce(p_review_link::text, ''), coalesce(p_organization::text, ''), coalesce(p_workspace::text, ''),
    coalesce(p_role, ''), coalesce(p_request_id, ''), to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), gen_random_uuid());
  -- The accessibility of the workspace, computed once here (as pressroom_app, before the role
  -- switch), for app.current_accessible_workspace_id on every node: the context's key when the
  -- principal may act in it, '!' and the key when it may not.
  execute format('set local pressroom.accessible_workspace = %L',
    case when p_workspace is null then ''
         when app.current_workspace_accessible() then app.context_key()
         else '!' || app.context_key() end);
  -- Last, and not with SET LOCAL (committed/000040-request-context-with-set-local.sql says why).
  perform set_config('role', 'pressroom_request', true);
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_root_pillars_analytics()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    perform app.analytics_move_root(old.workspace_id, old.root_id, 'pillar', old.pillar_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform app.analytics_move_root(new.workspace_id, new.root_id, 'pillar', new.pillar_id, 1);
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_root_tags_analytics()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    perform app.analytics_move_root(old.workspace_id, old.root_id, 'tag', old.tag_id, -1);
  end if;
  if tg_op in ('INSERT', 'UPDATE') then
    perform app.analytics_move_root(new.workspace_id, new.root_id, 'tag', new.tag_id, 1);
  end if;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_roots_analytics()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
begin
  perform app.analytics_move_root(new.workspace_id, new.id, 'campaign', old.campaign_id, -1);
  perform app.analytics_move_root(new.workspace_id, new.id, 'campaign', new.campaign_id, 1);
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_in_time_order(p_workspace_id uuid, p_tile_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v record;
begin
  select me.workspace_id, me.integration_id, me.position_key, mi.scheduled_at into v
  from app.grid_tiles me
  join app.content_items mi on mi.id = me.content_item_id and mi.workspace_id = me.workspace_id
  where me.workspace_id = p_workspace_id and me.id = p_tile_id;
  if not found then
    return true;
  end if;
  -- Each tile's edition is looked up by its key, one lateral look-up each (offset 0): given the
  -- workspace as a value, the planner otherwise reads the workspace's editions for every tile.
  return not exists (
    select 1
    from app.grid_tiles t
    cross join lateral (select i.scheduled_at from app.content_items i
                        where i.id = t.content_item_id and i.workspace_id = v.workspace_id
                          and i.status = 'scheduled' and i.deleted_at is null
                        offset 0) i
    where t.workspace_id = v.workspace_id and t.integration_id = v.integration_id
      and t.id <> p_tile_id and t.position_key is not null
      and ((t.position_key < v.position_key and i.scheduled_at > v.scheduled_at)
        or (t.position_key > v.position_key and i.scheduled_at < v.scheduled_at)));
end
$function$;

CREATE OR REPLACE FUNCTION app.schedule_editions(p_ids uuid[], p_at timestamp with time zone[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
  v_rows app.content_items[];
  v_ids uuid[];
  v_at timestamptz[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  -- The editions (distinct, each with its time), locked in id order.
  select array_agg(x.id order by x.id), array_agg(x.at order by x.id) into v_ids, v_at
  from (select distinct on (id) id, at from unnest(p_ids, p_at) u (id, at) order by id) x;
  -- (Row by row: Citus cannot send a whole row of a subquery back as an anonymous record.)
  v_rows := '{}';
  for v in select * from app.content_items
           where id = any (v_ids) and workspace_id = v_ctx_workspace and deleted_at is null
           order by id for update loop
    v_rows := v_rows || v;
  end loop;
  if coalesce(cardinality(v_rows), 0) < cardinality(v_ids) then
    -- The first one missing, in the caller's order.
    perform app.raise_not_found('content', (select u.id from unnest(p_ids) with ordinality u (id, n)
                                            where not (u.id = any (coalesce(array(select (r).id from unnest(v_rows) r), '{}')))
                                            order by u.n limit 1));
  end if;
  -- The rules of each, in the caller's order, as app.schedule_edition raises them for one.
  for v in select r.* from unnest(v_rows) r join unnest(p_ids) with ordinality u (id, n) on u.id = r.id order by u.n loop
    perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
    perform app.require_content_status(v, array['draft', 'scheduled']);
    if v_at[array_position(v_ids, v.id)] < now() then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
        'A time in the past cannot be scheduled.');
    end if;
  end loop;
  -- The platform rules are checked once per edition, after the update's other triggers
  -- (review, media in the bin, publish job): the update's own check trigger skips these
  -- editions (pressroom.publishable_checked), app.assert_publishable checks them.
  perform set_config('pressroom.publishable_checked', array_to_string(v_ids, ','), true);
  update app.content_items i set status = 'scheduled', scheduled_at = x.at
  from unnest(v_ids, v_at) x (id, at) where i.workspace_id = v_ctx_workspace and i.id = x.id;
  perform set_config('pressroom.publishable_checked', '', true);
  perform app.assert_publishable(v_ids, array[]::text[]);
end
$function$;

CREATE OR REPLACE FUNCTION api.revert_content_to_draft(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  v_scope uuid[];
  v_expected uuid[];
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  if (p_body ? 'expectedRootPostId') <> (p_body ? 'expectedRootEditionIds') then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem(
      case when p_body ? 'expectedRootPostId' then 'expectedRootEditionIds' else 'expectedRootPostId' end,
      'required', 'expectedRootPostId and expectedRootEditionIds go together')),
      'expectedRootPostId and expectedRootEditionIds must be supplied together.');
  end if;
  -- Lock order: the root, then its editions (two reverts of sibling
  -- editions queue instead of deadlocking).
  perform 1 from app.content_roots r
  where r.workspace_id = v_ctx_workspace and r.id = (select i.root_id from app.content_items i where i.id = p_id and i.workspace_id = v_ctx_workspace)
  for update;
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['scheduled']);
  -- The scope: every scheduled edition of the root, locked.
  perform 1 from app.content_items where workspace_id = v.workspace_id and root_id = v.root_id and deleted_at is null for update;
  v_scope := array(select id from app.content_items
                   where workspace_id = v.workspace_id and root_id = v.root_id and status = 'scheduled' and deleted_at is null order by id);
  if p_body ? 'expectedRootPostId' then
    v_expected := array(select distinct x from unnest(app.jsonb_uuids(p_body -> 'expectedRootEditionIds')) x order by x);
    if (p_body ->> 'expectedRootPostId')::uuid <> v.root_id or v_expected <> v_scope then
      perform app.raise(409, 'REVERT_SCOPE_STALE',
        'The root or its scheduled editions changed since you looked; reload and retry with the current scope.',
        jsonb_build_object('expectedRootPostId', p_body -> 'expectedRootPostId', 'rootPostId', v.root_id,
                           'expectedRootEditionIds', to_jsonb(v_expected), 'rootEditionIds', to_jsonb(v_scope)));
    end if;
  end if;
  update app.content_items
  set status = 'draft', intended_publish_at = coalesce(intended_publish_at, scheduled_at), scheduled_at = null
  where workspace_id = v.workspace_id and id = any (v_scope);
  return (select app.content_mutation_json(v.root_id, v_scope));
end
$function$;

CREATE OR REPLACE FUNCTION app.content_snapshot(p_workspace_id uuid, p_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v record;
begin
  -- The row first, then the media helpers on its values: called from a request on the
  -- coordinator, a statement Citus sends to the workspace's shard cannot call a helper that
  -- reads tables (in a trigger on the shard it could: its reads are local there).
  select i.id, i.root_id, i.own_media, jsonb_build_object(
      'caption', i.caption,
      'effectiveCaption', coalesce(i.caption, r.caption),
      'thread', i.thread,
      'settings', i.settings,
      'ownMedia', i.own_media) as snapshot
  into v
  from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = p_workspace_id
  where i.workspace_id = p_workspace_id and i.id = p_item_id;
  if v.id is null then
    return null;
  end if;
  return v.snapshot || jsonb_build_object(
    'mediaIds', to_jsonb(app.content_item_own_media_ids(p_workspace_id, v.id)),
    'effectiveMediaIds', to_jsonb(app.content_item_media_ids(p_workspace_id, v.id, v.root_id, v.own_media)));
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_roots_check_campaign()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_ws uuid;
  v_phase_campaign uuid;
begin
  if new.campaign_id is null then
    if new.phase_id is not null then
      if tg_op = 'UPDATE' and old.campaign_id is not null then
        new.phase_id := null;
      else
        perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'A phase needs its campaign: set campaignId too.',
          jsonb_build_object('phaseId', new.phase_id));
      end if;
    end if;
    return new;
  end if;
  if tg_op = 'UPDATE' and new.campaign_id is not distinct from old.campaign_id
     and new.phase_id is not distinct from old.phase_id and new.workspace_id = old.workspace_id then
    return new;
  end if;
  select c.workspace_id into v_ws from app.campaigns c where c.workspace_id = new.workspace_id and c.id = new.campaign_id;
  if v_ws is null or v_ws <> new.workspace_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if new.phase_id is not null then
    select p.campaign_id into v_phase_campaign from app.campaign_phases p where p.workspace_id = new.workspace_id and p.id = new.phase_id;
    if v_phase_campaign is distinct from new.campaign_id then
      perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'This phase is not a phase of the campaign.',
        jsonb_build_object('phaseId', new.phase_id, 'campaignId', new.campaign_id));
    end if;
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION api.update_content_notes(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  v_root app.content_roots;
  v_notes jsonb := case when p_body ->> 'notes' is null then null else to_jsonb(p_body ->> 'notes') end;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  -- (The value first: Citus refuses a CASE over functions that are not immutable in an UPDATE.)
  update app.content_roots set notes = v_notes
  where workspace_id = v.workspace_id and id = v.root_id returning * into v_root;
  return jsonb_build_object('contentId', v.id, 'rootId', v_root.id, 'notes', v_root.notes #>> '{}',
                            'updatedAt', v_root.updated_at);
end
$function$;

CREATE OR REPLACE FUNCTION api.update_content_metadata(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  v_root app.content_roots;
  v_campaign uuid;
  v_phase uuid;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['draft', 'scheduled', 'sent']);
  select * into v_root from app.content_roots where workspace_id = v.workspace_id and id = v.root_id for update;
  perform app.raise_field_problems(app.planning_problems(p_body, v_root.campaign_id), 'The request is not valid; see details.fields.');
  v_campaign := case when p_body ? 'campaignId' then (p_body ->> 'campaignId')::uuid else v_root.campaign_id end;
  v_phase := case when p_body ? 'phaseId' then (p_body ->> 'phaseId')::uuid
                  when p_body ? 'campaignId' and v_campaign is distinct from v_root.campaign_id then null
                  else v_root.phase_id end;
  if v_phase is not null and v_campaign is null then
    v_campaign := (select campaign_id from app.campaign_phases where workspace_id = v.workspace_id and id = v_phase);
  end if;
  update app.content_roots set
    organizational_title = case when p_body ? 'title' then p_body ->> 'title' else organizational_title end,
    campaign_id = v_campaign,
    phase_id = v_phase,
    updated_at = now()
  where workspace_id = v.workspace_id and id = v_root.id returning * into v_root;
  perform app.apply_root_taxonomy(v_root, p_body);
  return jsonb_build_object('contentId', v.id, 'rootId', v_root.id) || app.content_root_metadata_json(v_root.id)
    || jsonb_build_object('updatedAt', v_root.updated_at);
end
$function$;
