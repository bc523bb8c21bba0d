--! Previous: sha1:7e0f828ac1f9894ea10ed65f4b0f5d9f21ee5ed2
--! Hash: sha1:90507abb1f30995e0d3f6feab5d41afaa4057f31
--! Message: content versions and checks by workspace

--! split: 01-current.sql
-- Versions of content by workspace (docs/citus.md, "Triggers").
--
-- A trigger runs where its row is: on a Citus cluster, on the workspace's shard, where Citus runs
-- the trigger's queries that stay on this node and refuses the others (local tasks only, in
-- triggers: Citus's multi_executor.c, IsTaskExecutionAllowed). The tables are colocated, so a
-- query on any workspace table with the row's workspace_id stays on this node; a lookup by id
-- alone asks every shard and is refused ("could not run distributed query with FOR UPDATE/SHARE
-- commands" from app.record_content_version, when a draft was created on the cluster).
--
-- So the version record and what it reads take the workspace: app.record_content_version,
-- app.content_snapshot, app.content_item_media_ids, app.content_item_own_media_ids and
-- app.content_root_media_ids now take it first, and every query in them carries it. Their
-- callers pass the row's workspace; the triggers that record versions for several editions
-- read the ids into an array before the loop.

drop function app.record_content_version(uuid, text, integer, boolean);
drop function app.content_snapshot(uuid);
drop function app.content_item_media_ids(uuid, uuid, boolean);
drop function app.content_item_own_media_ids(uuid);
drop function app.content_root_media_ids(uuid);

CREATE OR REPLACE FUNCTION app.content_item_own_media_ids(p_workspace_id uuid, p_item_id uuid)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(media_id order by position), '{}') from app.content_item_media
    where workspace_id = p_workspace_id and content_item_id = p_item_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_root_media_ids(p_workspace_id uuid, p_root_id uuid)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select coalesce(array_agg(media_id order by position), '{}') from app.content_root_media
    where workspace_id = p_workspace_id and root_id = p_root_id
  );
end
$function$;

CREATE OR REPLACE FUNCTION app.content_item_media_ids(p_workspace_id uuid, p_item_id uuid, p_root_id uuid, p_own boolean)
 RETURNS uuid[]
 LANGUAGE sql
 STABLE
AS $function$
  select case when p_own then app.content_item_own_media_ids(p_workspace_id, p_item_id)
         else app.content_root_media_ids(p_workspace_id, p_root_id) end
$function$;

CREATE OR REPLACE FUNCTION app.content_snapshot(p_workspace_id uuid, p_item_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'caption', i.caption,
      'effectiveCaption', coalesce(i.caption, r.caption),
      'thread', i.thread,
      'settings', i.settings,
      'ownMedia', i.own_media,
      'mediaIds', to_jsonb(app.content_item_own_media_ids(i.workspace_id, i.id)),
      'effectiveMediaIds', to_jsonb(app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media)))
    from app.content_items i join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    where i.workspace_id = p_workspace_id and i.id = p_item_id
  );
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
begin
  select id, workspace_id, organization_id, version, deleted_at into v_item
  from app.content_items where workspace_id = p_workspace_id and id = p_item_id for update;
  if v_item.id is null or v_item.deleted_at is not null then
    return null;
  end if;
  select app.content_snapshot(p_workspace_id, p_item_id) into v_snap;
  select * into v_last from app.content_versions
  where workspace_id = p_workspace_id and content_item_id = p_item_id order by version desc limit 1;
  if v_last.id is not null and v_last.xact = pg_current_xact_id() then
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
    case when v_last.id is null then 'create' else p_source end, p_restored_from, app.current_user_id());
  if v_item.version <> v_next then
    update app.content_items set version = v_next where workspace_id = p_workspace_id and id = p_item_id;
  end if;
  return v_next;
end
$function$;

revoke all on function app.content_item_own_media_ids(uuid, uuid) from public;
revoke all on function app.content_root_media_ids(uuid, uuid) from public;
revoke all on function app.content_item_media_ids(uuid, uuid, uuid, boolean) from public;
revoke all on function app.content_snapshot(uuid, uuid) from public;
revoke all on function app.record_content_version(uuid, uuid, text, integer, boolean) from public;
grant execute on function app.content_item_own_media_ids(uuid, uuid), app.content_root_media_ids(uuid, uuid),
  app.content_item_media_ids(uuid, uuid, uuid, boolean), app.content_snapshot(uuid, uuid),
  app.record_content_version(uuid, uuid, text, integer, boolean)
  to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.record_content_version(uuid, uuid, text, integer, boolean) is 'Records a version of edition p_item_id of workspace p_workspace_id when its effective content changed (or always, p_force), or folds it into the version this transaction already wrote; sets the edition''s version. Every query carries the workspace, so it runs from a trigger on a Citus shard (000056).';

CREATE OR REPLACE FUNCTION app.tg_content_items_record_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  perform app.record_content_version(new.workspace_id, new.id, case when tg_op = 'INSERT' then 'create' else 'update' end);
  return null;
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_content_item_media_record_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  perform app.record_content_version(case when tg_op = 'DELETE' then old.workspace_id else new.workspace_id end,
    case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end, 'update');
  return null;
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_content_root_media_record_versions()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_ws uuid := case when tg_op = 'DELETE' then old.workspace_id else new.workspace_id end;
  v_ids uuid[];
  v_id uuid;
begin
  -- The ids first, then a version each (no query inside a loop over an open query).
  v_ids := array(select id from app.content_items
                 where workspace_id = v_ws and root_id = case when tg_op = 'DELETE' then old.root_id else new.root_id end
                   and not own_media and deleted_at is null order by id);
  foreach v_id in array v_ids loop
    perform app.record_content_version(v_ws, v_id, 'root');
  end loop;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_roots_propagate()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_ids uuid[];
  v_id uuid;
begin
  if new.caption is distinct from old.caption then
    -- The ids first, then a version each (no query inside a loop over an open query).
    v_ids := array(select id from app.content_items
                   where workspace_id = new.workspace_id and root_id = new.id and caption is null and deleted_at is null order by id);
    foreach v_id in array v_ids loop
      perform app.record_content_version(new.workspace_id, v_id, 'root');
    end loop;
  end if;
  update app.content_items set updated_at = now() where workspace_id = new.workspace_id and root_id = new.id and deleted_at is null;
  return null;
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_retime(p_integration_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_plan jsonb;
  v_ws uuid;
begin
  select workspace_id into v_ws from app.integrations where id = p_integration_id;
  with s as (
    select i.id, t.id tile_id, i.scheduled_at, row_number() over (order by t.position_key) rn
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
    where t.workspace_id = v_ws and t.integration_id = p_integration_id and t.position_key is not null
      and i.status = 'scheduled' and i.deleted_at is null),
  times as (select scheduled_at, row_number() over (order by scheduled_at) rn from s)
  select coalesce(jsonb_agg(jsonb_build_object('contentId', s.id, 'tileId', s.tile_id,
           'previousScheduledAt', s.scheduled_at, 'scheduledAt', times.scheduled_at) order by times.scheduled_at), '[]')
  into v_plan
  from s join times using (rn)
  where s.scheduled_at <> times.scheduled_at;
  if exists (select 1 from jsonb_array_elements(v_plan) p where (p ->> 'scheduledAt')::timestamptz <= now()
                                                              or (p ->> 'previousScheduledAt')::timestamptz <= now()) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('position', 'in_past',
        'the move would exchange a publish time that has already come; wait until that edition is published')),
      'The move would exchange a publish time that has already come.', jsonb_build_object('rescheduled', v_plan));
  end if;
  update app.content_items c set scheduled_at = (p ->> 'scheduledAt')::timestamptz
  from jsonb_array_elements(v_plan) p
  where c.workspace_id = v_ws and c.id = (p ->> 'contentId')::uuid;
  -- The move touched these editions: each gets a version (its history shows who moved it, when).
  perform app.record_content_version(v_ws, (p ->> 'contentId')::uuid, 'update', null, true)
  from jsonb_array_elements(v_plan) p;
  return v_plan;
end
$function$;
CREATE OR REPLACE FUNCTION api.restore_content_version(p_id uuid, p_version integer, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.content_items;
  v_snap jsonb;
  v_missing jsonb;
  v_new int;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  select snapshot into v_snap from app.content_versions where content_item_id = v.id and version = p_version;
  if v_snap is null then
    perform app.raise(404, 'NOT_FOUND', format('Content %s has no version %s.', v.id, p_version),
      jsonb_build_object('contentId', v.id, 'version', p_version));
  end if;
  perform app.require_content_status(v, array['draft', 'scheduled']);
  if p_body ? 'expectedCurrentVersion' and (p_body ->> 'expectedCurrentVersion')::int <> v.version then
    perform app.raise(409, 'VERSION_CONFLICT',
      format('The content is at version %s, not %s; reload and retry.', v.version, p_body ->> 'expectedCurrentVersion'),
      jsonb_build_object('contentId', v.id, 'version', v.version, 'expectedCurrentVersion', p_body -> 'expectedCurrentVersion'));
  end if;
  select jsonb_agg(x) into v_missing
  from jsonb_array_elements_text(coalesce(v_snap -> 'mediaIds', '[]')) x
  where not exists (select 1 from app.media_items m where m.id = x::uuid and m.workspace_id = v.workspace_id);
  if v_missing is not null then
    perform app.raise(409, 'VERSION_MEDIA_UNAVAILABLE',
      'This version uses media that is no longer in the library; it cannot be restored.',
      jsonb_build_object('contentId', v.id, 'version', p_version, 'mediaIds', v_missing));
  end if;
  perform app.defer_content_checks();
  update app.content_items set
    caption = v_snap ->> 'caption',
    thread = coalesce(v_snap -> 'thread', '[]'),
    settings = coalesce(v_snap -> 'settings', '{}'),
    own_media = coalesce((v_snap ->> 'ownMedia')::boolean, false)
  where id = v.id returning * into v;
  perform app.replace_item_media(v, app.jsonb_uuids(coalesce(v_snap -> 'mediaIds', '[]')));
  v_new := app.record_content_version(v.workspace_id, v.id, 'restore', p_version, true);
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]))
    || jsonb_build_object('contentId', v.id, 'restoredFromVersion', p_version, 'version', v_new);
end
$function$;
CREATE OR REPLACE FUNCTION app.content_detail_json(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select app.content_list_item_json(row(i.*)::app.content_items, row(r.*)::app.content_roots, g.platform, cardinality(app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media)),
             app.content_recurring_metadata(i.root_id), true) || jsonb_build_object(
      'integration', jsonb_build_object('id', g.id, 'platform', g.platform, 'connector', g.connector, 'name', g.name,
                                        'username', g.username, 'status', case when g.deleted_at is not null then 'deleted' else g.status end),
      'captionOverride', i.caption,
      'rootCaption', r.caption,
      'ownMedia', i.own_media,
      'mediaIds', to_jsonb(app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media)),
      'media', app.content_media_json(app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media)),
      'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                   'mediaIds', coalesce(e -> 'mediaIds', '[]'),
                   'media', app.content_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                 from jsonb_array_elements(i.thread) with ordinality t (e, n)),
      'settings', app.sanitize_settings(g.platform, i.settings),
      'metadata', app.content_root_metadata_json(r.id),
      'notes', r.notes #>> '{}',
      'platformPostId', i.platform_post_id)
    from app.content_items i
    join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
    join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
    where i.id = p_id
  );
end
$function$;
CREATE OR REPLACE FUNCTION api.review_link_get()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return jsonb_build_object(
    'review', jsonb_build_object('id', r.id, 'title', r.title, 'message', r.message, 'status', r.status, 'dueAt', r.due_at),
    'reviewer', jsonb_build_object('email', l.email, 'name', l.name, 'expiresAt', l.expires_at),
    'items', coalesce((select jsonb_agg(jsonb_build_object('id', it.id, 'contentId', it.content_id, 'state', it.state,
        'currentStage', it.current_stage, 'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
        'awaitingYou', ('client:' || l.email) = any (it.waiting_on),
        'platform', g.platform, 'channelName', g.name,
        'caption', coalesce(i.caption, cr.caption),
        'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                     'media', app.review_link_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                   from jsonb_array_elements(i.thread) with ordinality t (e, n)),
        'scheduledAt', coalesce(i.scheduled_at, i.intended_publish_at),
        'media', app.review_link_media_json(app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media))) order by it.created_at, it.id)
      from app.review_items it
      join app.content_items i on i.id = it.content_id and i.workspace_id = it.workspace_id
      join app.content_roots cr on cr.id = i.root_id and cr.workspace_id = i.workspace_id
      join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
      where it.review_id = r.id and it.state <> 'removed'), '[]'));
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_tile_media_ids(t app.grid_tiles)
 RETURNS uuid[]
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select case when t.content_item_id is null then
        (select coalesce(array_agg(m.media_id order by m.position), '{}') from app.grid_tile_media m where m.workspace_id = t.workspace_id and m.tile_id = t.id)
      else
        (select app.content_item_media_ids(i.workspace_id, i.id, i.root_id, i.own_media) from app.content_items i
         where i.workspace_id = t.workspace_id and i.id = t.content_item_id)
      end
  );
end
$function$;
CREATE OR REPLACE FUNCTION api.duplicate_workbench_row(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.workbench_rows;
  s app.workbench_sections;
  v_new app.workbench_rows;
  v_root app.content_roots;
  v_body jsonb;
begin
  perform app.require_role('editor');
  select * into v from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  perform app.workbench_lock(v.section_id);
  s := app.workbench_section_for_update(v.section_id);
  select * into v_root from app.content_roots where id = v.content_root_id and deleted_at is null;
  v_body := jsonb_build_object('title', v.title, 'notes', v.notes,
    'scheduledAt', coalesce(to_jsonb(v.planned_at), to_jsonb(v.planned_on::text)));
  if v_root.id is not null then
    v_body := v_body || jsonb_build_object('caption', v_root.caption,
      'mediaIds', to_jsonb(app.content_root_media_ids(v_root.workspace_id, v_root.id)),
      'channels', coalesce((select jsonb_agg(i.integration_id order by g.created_at, g.id) from app.content_items i
                            join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
                            where i.root_id = v_root.id and i.deleted_at is null), '[]'),
      'tagIds', coalesce((select jsonb_agg(t.tag_id) from app.content_root_tags t where t.root_id = v_root.id), '[]'),
      'pillarId', (select p.pillar_id from app.content_root_pillars p where p.root_id = v_root.id order by p.created_at, p.pillar_id limit 1),
      'formatId', (select f.format_id from app.content_root_formats f where f.root_id = v_root.id order by f.created_at, f.format_id limit 1),
      'campaignId', v_root.campaign_id);
  end if;
  v_new := app.workbench_insert_row(s, app.workbench_slot('rows', s.id, v.id, null, null), v_body);
  return app.workbench_row_json(v_new);
end
$function$;

-- The list counters' statement trigger on app.content_items. On a shard Citus cannot plan an
-- INSERT into a distributed table that selects from a transition table ("executor could not find
-- named tuplestore"), nor a query that joins one with a table (app.workspaces on delete). The
-- deltas are computed from the transition tables alone, into a value; the workspaces that still
-- exist are read on their own; each delta row is then inserted by its workspace. The counts
-- folded now and then are those of a workspace this statement changed, not of the newest delta
-- row of any workspace (a query without the workspace, which a shard refuses).
CREATE OR REPLACE FUNCTION app.tg_content_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_deltas jsonb;
  v_gone uuid[];
  v_d record;
  v_rows bigint := 0;
  v_ws uuid;
begin
  -- old_rows / new_rows: the statement's transition tables (an insert has only new_rows, a delete only old_rows).
  if tg_op = 'INSERT' then
    select jsonb_agg(jsonb_build_array(organization_id, workspace_id, integration_id, status, n)) into v_deltas
    from (select x.organization_id, x.workspace_id, x.integration_id, x.status, count(*) as n
          from new_rows x where x.deleted_at is null group by 1, 2, 3, 4) d;
  elsif tg_op = 'DELETE' then
    -- Not for a workspace being deleted with its editions: its counts go with it.
    v_gone := array(select distinct o.workspace_id from old_rows o);
    v_gone := array(select g from unnest(v_gone) g
                    where not exists (select 1 from app.workspaces w where w.id = g));
    select jsonb_agg(jsonb_build_array(organization_id, workspace_id, integration_id, status, n)) into v_deltas
    from (select o.organization_id, o.workspace_id, o.integration_id, o.status, -count(*) as n
          from old_rows o where o.deleted_at is null and o.workspace_id <> all (v_gone) group by 1, 2, 3, 4) d;
  else
    -- Only editions whose status, deletion or channel changed: -1 as they were, +1 as they are.
    select jsonb_agg(jsonb_build_array(organization_id, workspace_id, integration_id, status, n)) into v_deltas
    from (select d.organization_id, d.workspace_id, d.integration_id, d.status, sum(d.n) as n
          from old_rows o join new_rows x on x.id = o.id
          cross join lateral (
            select o.organization_id, o.workspace_id, o.integration_id, o.status, -1 as n where o.deleted_at is null
            union all
            select x.organization_id, x.workspace_id, x.integration_id, x.status, 1 where x.deleted_at is null) d
          where x.status is distinct from o.status or x.deleted_at is distinct from o.deleted_at
             or x.integration_id is distinct from o.integration_id
          group by 1, 2, 3, 4 having sum(d.n) <> 0) d;
  end if;
  for v_d in select (e ->> 0)::uuid as organization_id, (e ->> 1)::uuid as workspace_id, (e ->> 2)::uuid as integration_id,
                    e ->> 3 as status, (e ->> 4)::bigint as n
             from jsonb_array_elements(coalesce(v_deltas, '[]')) e loop
    insert into app.content_item_counts (organization_id, workspace_id, integration_id, status, n)
    values (v_d.organization_id, v_d.workspace_id, v_d.integration_id, v_d.status, v_d.n);
    v_rows := v_rows + 1;
    v_ws := v_d.workspace_id;
  end loop;
  -- Now and then, fold the deltas (about one changed edition in 500).
  if v_rows > 0 and random() < 0.002 * v_rows then
    perform app.compact_content_item_counts(v_ws);
  end if;
  return null;
end
$function$;

-- The platform-rule check of an edition, as its caller. app.assert_publishable and
-- app.content_item_problems were definers (pressroom_definer) that read the edition its caller
-- had just written as pressroom_api; on the cluster that is refused (one role per shard in a
-- transaction, 000055). They run as their caller now: requests as pressroom_api under the tenant
-- policies (the request's own workspace, where the edition is), the worker and the triggers'
-- definers as themselves. A channel's own limits (app.integration_limits, no secret) are read
-- by pressroom_api in the request's workspace for that (app.integration_platform_rules, now as
-- its caller too). Each takes the edition's workspace, so the trigger that checks scheduled
-- content on a shard reads only that shard.
select app.apply_tenant_policies('app.integration_limits', '{select}');
-- apply_tenant_policies gives the worker every command; it reads the limits only (as in 000031).
revoke all on app.integration_limits from pressroom_worker;
grant select on app.integration_limits to pressroom_worker;
grant select on app.integration_limits to pressroom_api;
comment on table app.integration_limits is 'A connected account''s own limits, as its platform states them (PlatformModule.readLimits): {captionMaxLength, maxMedia, imageMaxBytes, videoMaxBytes}, each a positive integer when present (app.account_limits_clean). Written only by pressroom_definer functions (app.connection_save at connect and reconnect, app.integration_limits_store after a refresh); read by app.integration_platform_rules, which app.content_item_problems applies over app.platforms, as its caller: pressroom_api reads them in the request''s workspace (000056). No row: the platform''s defaults.';

drop function app.integration_platform_rules(text, uuid);
drop function app.content_item_problems(uuid, text);

CREATE OR REPLACE FUNCTION app.integration_platform_rules(p_platform text, p_workspace_id uuid, p_integration uuid)
 RETURNS app.platforms
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v app.platforms;
  l jsonb;
  r jsonb;
begin
  select * into v from app.platforms where code = p_platform;
  select limits into l from app.integration_limits where workspace_id = p_workspace_id and integration_id = p_integration;
  if v.code is null or l is null then
    return v;
  end if;
  if l ? 'captionMaxLength' then
    v.caption_max_length := (l ->> 'captionMaxLength')::int;
  end if;
  r := v.media_rules;
  if l ? 'maxMedia' then
    r := r || jsonb_build_object('maxItems', (l ->> 'maxMedia')::int);
    -- Per-kind counts stay the platform's, never above the account's total.
    if r ? 'maxImages' then r := r || jsonb_build_object('maxImages', least((r ->> 'maxImages')::int, (l ->> 'maxMedia')::int)); end if;
    if r ? 'maxVideos' then r := r || jsonb_build_object('maxVideos', least((r ->> 'maxVideos')::int, (l ->> 'maxMedia')::int)); end if;
    if r ? 'maxGifs' then r := r || jsonb_build_object('maxGifs', least((r ->> 'maxGifs')::int, (l ->> 'maxMedia')::int)); end if;
  end if;
  -- A platform that takes no images (imageMaxBytes 0: YouTube) keeps taking none.
  if l ? 'imageMaxBytes' and coalesce((r ->> 'imageMaxBytes')::bigint, 1) <> 0 then
    r := r || jsonb_build_object('imageMaxBytes', (l ->> 'imageMaxBytes')::bigint);
  end if;
  if l ? 'videoMaxBytes' and coalesce((r ->> 'videoMaxBytes')::bigint, 1) <> 0 then
    r := r || jsonb_build_object('videoMaxBytes', (l ->> 'videoMaxBytes')::bigint);
  end if;
  v.media_rules := r;
  return v;
end
$function$;
CREATE OR REPLACE FUNCTION app.content_item_problems(p_workspace_id uuid, p_item_id uuid, p_prefix text DEFAULT ''::text)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v record;
  v_platform app.platforms;
  v_out jsonb := '[]';
  v_caption text;
  v_media uuid[];
  v_msg jsonb;
  v_i int := 0;
begin
  select i.id, i.workspace_id, i.root_id, i.kind, i.caption, i.thread, i.settings, i.own_media, i.integration_id,
         r.caption as root_caption, g.platform, g.status as integration_status, g.deleted_at as integration_deleted_at
  into v
  from app.content_items i
  join app.content_roots r on r.id = i.root_id and r.workspace_id = i.workspace_id
  join app.integrations g on g.id = i.integration_id and g.workspace_id = i.workspace_id
  where i.workspace_id = p_workspace_id and i.id = p_item_id;
  if v.id is null then
    return '[]';
  end if;
  v_platform := app.integration_platform_rules(v.platform, v.workspace_id, v.integration_id);
  if v.integration_deleted_at is not null or v.integration_status <> 'active' then
    v_out := v_out || app.field_problem(p_prefix || 'integrationId', 'integration_unavailable',
      'The channel is disconnected or deleted; reconnect it or choose another channel.');
  end if;
  -- Articles carry a body of their own; their rules belong to the articles
  -- engine. Only the channel is checked here.
  if v.kind = 'article' then
    return v_out;
  end if;
  v_caption := coalesce(v.caption, v.root_caption, '');
  select app.content_item_media_ids(v.workspace_id, v.id, v.root_id, v.own_media) into v_media;
  if length(v_caption) > v_platform.caption_max_length then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'caption_too_long',
      format('%s captions have at most %s characters; this one has %s.', v_platform.name,
             v_platform.caption_max_length, length(v_caption)));
  end if;
  if btrim(v_caption) = '' and cardinality(v_media) = 0 then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'content_empty', 'A post needs a caption or media.');
  end if;
  v_out := v_out || app.media_rule_problems(v_platform, v.workspace_id, v_media, p_prefix || 'mediaIds');
  if jsonb_array_length(v.thread) > 0 and not coalesce((v_platform.capabilities ->> 'threads')::boolean, false) then
    v_out := v_out || app.field_problem(p_prefix || 'thread', 'threads_not_supported',
      format('%s does not publish threads.', v_platform.name));
  end if;
  for v_msg in select e from jsonb_array_elements(v.thread) e loop
    if length(coalesce(v_msg ->> 'caption', '')) > v_platform.caption_max_length then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i || '.caption', 'caption_too_long',
        format('%s captions have at most %s characters.', v_platform.name, v_platform.caption_max_length));
    end if;
    if btrim(coalesce(v_msg ->> 'caption', '')) = '' and coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) = 0 then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i, 'content_empty', 'A thread message needs a caption or media.');
    end if;
    if coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) > 0 then
      -- Thread messages follow the same media rules, except that media is optional.
      v_out := v_out || (
        select coalesce(jsonb_agg(p), '[]') from jsonb_array_elements(
          app.media_rule_problems(v_platform, v.workspace_id, app.jsonb_uuids(v_msg -> 'mediaIds'),
                                  p_prefix || 'thread.' || v_i || '.mediaIds')) p
        where p ->> 'code' not in ('media_required', 'too_few_media'));
    end if;
    v_i := v_i + 1;
  end loop;
  v_out := v_out || app.settings_problems(v.platform, v.settings, p_prefix, true);
  return v_out;
end
$function$;

CREATE OR REPLACE FUNCTION app.assert_publishable(p_item_ids uuid[], p_prefixes text[])
 RETURNS void
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_out jsonb := '[]';
  v_ids uuid[] := '{}';
  v_problems jsonb;
  v_scheduled jsonb;
begin
  -- The scheduled ones of the editions, with their workspaces, in one query; then each is checked
  -- by its workspace.
  select coalesce(jsonb_object_agg(i.id::text, i.workspace_id), '{}') into v_scheduled
  from app.content_items i where i.id = any (p_item_ids) and i.status = 'scheduled' and i.deleted_at is null;
  for i in 1 .. coalesce(cardinality(p_item_ids), 0) loop
    if v_scheduled ? p_item_ids[i]::text then
      v_problems := app.content_item_problems((v_scheduled ->> p_item_ids[i]::text)::uuid, p_item_ids[i], coalesce(p_prefixes[i], ''));
      if jsonb_array_length(v_problems) > 0 then
        v_out := v_out || v_problems;
        v_ids := v_ids || p_item_ids[i];
      end if;
    end if;
  end loop;
  perform app.raise_field_problems(v_out, 'The content breaks its platform''s rules; see details.fields.',
    jsonb_build_object('contentIds', to_jsonb(v_ids)));
end
$function$;
comment on function app.assert_publishable(uuid[],text[]) is 'Raises 400 VALIDATION_FAILED with the platform-rule problems (app.content_item_problems, field names under each edition''s prefix; an integration''s own limits over its platform''s) of those of the editions that are scheduled, and details.contentIds. Runs as its caller (000056), who holds the editions.';

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
  if tg_table_name = 'content_items' then
    -- app.schedule_editions checks these editions itself right after its update
    -- (same state: nothing writes them in between).
    if strpos(coalesce(current_setting('pressroom.publishable_checked', true), ''), new.id::text) > 0 then
      return null;
    end if;
    v_ids := array[new.id];
  elsif tg_table_name = 'content_item_media' then
    v_ids := array[case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end];
  elsif tg_table_name = 'content_roots' then
    v_ids := array(select id from app.content_items
                   where workspace_id = new.workspace_id and root_id = new.id and caption is null and status = 'scheduled' and deleted_at is null);
  elsif tg_table_name = 'content_root_media' then
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
CREATE OR REPLACE FUNCTION app.create_occurrence_editions(s app.recurring_series, p_root app.content_roots, p_starts_at timestamp with time zone, p_lenient boolean)
 RETURNS uuid[]
 LANGUAGE plpgsql
AS $function$
declare
  v_channel jsonb;
  v_id uuid;
  v_ids uuid[] := '{}';
  v_msg text;
begin
  for v_channel in select e from jsonb_array_elements(s.template -> 'channels') e loop
    if not p_lenient then
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
      if s.intent = 'schedule' then
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
      end if;
      v_ids := v_ids || v_id;
      continue;
    end if;
    begin
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
    exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
      -- The channel went away (deleted, or a rule of another area refuses it).
      continue;
    end;
    v_ids := v_ids || v_id;
    if s.intent = 'schedule' then
      begin
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
        if jsonb_array_length(app.content_item_problems(s.workspace_id, v_id, '')) > 0 then
          raise exception using errcode = 'PT400', message = 'The edition breaks its platform''s rules.',
            detail = 'VALIDATION_FAILED', hint = jsonb_build_object('fields', app.content_item_problems(s.workspace_id, v_id, ''))::text;
        end if;
      exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
        get stacked diagnostics v_msg = message_text;
        update app.content_items set error = left('Could not be scheduled: ' || v_msg || coalesce(
          ' ' || (select string_agg(p ->> 'field' || ': ' || (p ->> 'message'), '; ')
                  from jsonb_array_elements(app.content_item_problems(s.workspace_id, v_id, '')) p), ''), 2000)
        where id = v_id;
      end;
    end if;
  end loop;
  return v_ids;
end
$function$;
CREATE OR REPLACE FUNCTION api.check_content(p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_intent text;
  v_at timestamptz;
  v_channels jsonb;
  v_draft jsonb;
  v_created jsonb;
  v_general jsonb := '[]';
  v_fields jsonb := '[]';
  v_detail text;
  v_hint text;
  v_out jsonb := '[]';
  v_channel jsonb;
  v_i int := 0;
  v_mine jsonb;
  v_platform text;
begin
  perform app.require_role('editor');
  if jsonb_typeof(p_body) is distinct from 'object' then
    perform app.raise(400, 'VALIDATION_FAILED', 'The body is the body of content create, a JSON object.', '{}'::jsonb);
  end if;
  v_intent := coalesce(p_body ->> 'intent', 'draft');
  v_channels := case when jsonb_typeof(p_body -> 'channels') = 'array' then p_body -> 'channels' else '[]' end;
  -- The time, as create checks it for the intent asked for.
  if v_intent = 'schedule' then
    v_at := (p_body ->> 'scheduledAt')::timestamptz;
    if v_at is null then
      v_general := v_general || app.field_problem('scheduledAt', 'required', 'intent schedule needs scheduledAt');
    elsif v_at < now() then
      v_general := v_general || app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled');
    end if;
  end if;
  if v_intent <> 'draft' and jsonb_array_length(v_channels) = 0 then
    v_general := v_general || app.field_problem('channels', 'required', format('intent %s needs at least one channel', v_intent));
  end if;
  -- The rest through content create itself, as a draft (not held to the rules on create), in a
  -- subtransaction that is always rolled back; then every edition against its platform's rules.
  v_draft := (p_body - 'recurrence' - 'scheduledAt' - 'intendedPublishAt') || jsonb_build_object('intent', 'draft');
  begin
    v_created := api.create_content(v_draft);
    for v_i in 0 .. jsonb_array_length(coalesce(v_created -> 'editions', '[]')) - 1 loop
      v_fields := v_fields || app.content_item_problems(app.current_workspace_id(), (v_created -> 'editions' -> v_i ->> 'id')::uuid, 'channels.' || v_i || '.');
    end loop;
    raise exception using errcode = 'PRCHK', message = 'check_content: rolled back';
  exception
    when sqlstate 'PRCHK' then
      null;
    when sqlstate 'PT400' then
      get stacked diagnostics v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      if v_detail <> 'VALIDATION_FAILED' or coalesce(v_hint, '') = '' or (v_hint::jsonb -> 'fields') is null then
        raise;
      end if;
      v_fields := v_hint::jsonb -> 'fields';
  end;
  -- One result per channel: its problems (fields channels.N.*); the others apply to every channel.
  v_general := v_general || coalesce((select jsonb_agg(f) from jsonb_array_elements(v_fields) f
                                      where (f ->> 'field') !~ '^channels\.\d+\.'), '[]');
  v_i := 0;
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    select g.platform into v_platform from app.integrations g
    where (v_channel ->> 'integrationId') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      and g.id = (v_channel ->> 'integrationId')::uuid and g.workspace_id = app.current_workspace_id() and g.deleted_at is null;
    v_mine := coalesce((select jsonb_agg(f) from jsonb_array_elements(v_fields) f
                        where (f ->> 'field') like 'channels.' || v_i || '.%'), '[]');
    v_out := v_out || jsonb_build_object('index', v_i, 'integrationId', v_channel ->> 'integrationId', 'platform', v_platform,
      'valid', jsonb_array_length(v_mine) = 0, 'problems', v_mine);
    v_platform := null;
    v_i := v_i + 1;
  end loop;
  return jsonb_build_object('valid', jsonb_array_length(v_general) = 0 and not exists (
      select 1 from jsonb_array_elements(v_out) c where not (c ->> 'valid')::boolean),
    'problems', v_general, 'channels', v_out);
end
$function$;

revoke all on function app.integration_platform_rules(text, uuid, uuid) from public;
revoke all on function app.content_item_problems(uuid, uuid, text) from public;
grant execute on function app.integration_platform_rules(text, uuid, uuid), app.content_item_problems(uuid, uuid, text)
  to pressroom_api, pressroom_definer, pressroom_worker;
comment on function app.integration_platform_rules(text, uuid, uuid) is 'The rules app.content_item_problems checks an edition of this integration (of workspace p_workspace_id) against: the platform''s row of app.platforms, with the account''s own limits (app.integration_limits) over its caption_max_length and media_rules (maxItems, and maxImages/maxVideos/maxGifs never above it; imageMaxBytes, videoMaxBytes). Without limits, the platform''s row as it is. Runs as its caller (000056).';
comment on function app.content_item_problems(uuid, uuid, text) is 'The platform-rule problems of one edition of workspace p_workspace_id (caption length, empty, media rules, threads, channel available, required settings) as field problems under p_prefix, against its integration''s rules (app.integration_platform_rules: the account''s own limits over the platform''s defaults). Runs as its caller (000056): a request reads the edition under its tenant policies, in its own workspace.';
