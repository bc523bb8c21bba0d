--! Previous: sha1:b7e82cb92a9d20a434a28c72cfb06498e2cdb300
--! Hash: sha1:fe7669ccc11273fee49dc902ef740107f91c08c8
--! Message: insert select returns its rows

--! split: 01-current.sql
-- INSERT ... SELECT that Citus runs with row-level security (docs/citus.md, "Functions"). When
-- an INSERT ... SELECT's rows do not come from the same shard as its target (rows from unnest(),
-- from another workspace's shard, or a workspace id given as a value), Citus computes them on
-- the coordinator and writes them into the target's shards with COPY, which PostgreSQL refuses
-- on a table with row-level security for a role subject to it:
--   COPY FROM not supported with row-level security (HINT: Use INSERT statements instead.)
-- (Citus's multi_copy.c: "TODO: Perform RLS checks once supported".) With a RETURNING clause (or
-- ON CONFLICT) Citus takes its other way: the rows go into intermediate results, and each shard
-- runs INSERT ... SELECT from them, an INSERT the policies check as usual. So each such
-- statement of the functions below returns its rows, counted into v_inserted:
--   with inserted as (insert into ... select ... returning 1)
--   select count(*) into v_inserted from inserted;
-- Same rows, same errors, same policies on a single PostgreSQL. Trigger functions are left to
-- the triggers' own rewrite (a trigger runs on the shard). tests/db/10-distributable.test.sql
-- fails on an INSERT ... SELECT written the old way.
CREATE OR REPLACE FUNCTION app.analytics_rebuild(p_workspace_id uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_count bigint;
begin
  perform pg_advisory_xact_lock(hashtextextended('pressroom.analytics-rebuild:' || p_workspace_id::text, 0));
  delete from app.analytics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_daily where workspace_id = p_workspace_id;
  delete from app.post_metrics_latest where workspace_id = p_workspace_id;
  select count(*) into v_count from app.post_metric_snapshots where workspace_id = p_workspace_id;
  with inserted as (
    insert into app.post_metrics_daily (organization_id, workspace_id, content_item_id, integration_id, day,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    select organization_id, workspace_id, content_item_id, integration_id, day,
           sum(impressions), sum(reach), sum(likes), sum(comments), sum(shares), sum(saves), sum(clicks), sum(video_views)
    from (
      select s.organization_id, s.workspace_id, s.content_item_id, s.integration_id, s.day,
        s.impressions - coalesce(lag(s.impressions) over w, 0) as impressions, s.reach - coalesce(lag(s.reach) over w, 0) as reach,
        s.likes - coalesce(lag(s.likes) over w, 0) as likes, s.comments - coalesce(lag(s.comments) over w, 0) as comments,
        s.shares - coalesce(lag(s.shares) over w, 0) as shares, s.saves - coalesce(lag(s.saves) over w, 0) as saves,
        s.clicks - coalesce(lag(s.clicks) over w, 0) as clicks, s.video_views - coalesce(lag(s.video_views) over w, 0) as video_views
      from app.post_metric_snapshots s
      where s.workspace_id = p_workspace_id
      window w as (partition by s.content_item_id order by s.captured_at, s.id)
    ) g
    group by organization_id, workspace_id, content_item_id, integration_id, day
    returning 1)
  select count(*) into v_inserted from inserted;
  with inserted as (
    insert into app.post_metrics_latest (content_item_id, organization_id, workspace_id, integration_id, captured_at,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    select distinct on (s.content_item_id) s.content_item_id, s.organization_id, s.workspace_id, s.integration_id, s.captured_at,
           s.impressions, s.reach, s.likes, s.comments, s.shares, s.saves, s.clicks, s.video_views
    from app.post_metric_snapshots s where s.workspace_id = p_workspace_id
    order by s.content_item_id, s.captured_at desc, s.id desc
    returning 1)
  select count(*) into v_inserted from inserted;
  with inserted as (
    insert into app.analytics_daily (organization_id, workspace_id, integration_id, dimension, key, day,
      impressions, reach, likes, comments, shares, saves, clicks, video_views)
    select d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day,
           sum(d.impressions), sum(d.reach), sum(d.likes), sum(d.comments), sum(d.shares), sum(d.saves), sum(d.clicks), sum(d.video_views)
    from app.post_metrics_daily d
    join app.content_items i on i.id = d.content_item_id
    join app.content_roots r on r.id = i.root_id
    cross join lateral (
      select 'total'::text, d.integration_id
      union all select 'tag', t.tag_id from app.content_root_tags t where t.root_id = r.id
      union all select 'pillar', p.pillar_id from app.content_root_pillars p where p.root_id = r.id
      union all select 'campaign', r.campaign_id where r.campaign_id is not null) k (dimension, key)
    where d.workspace_id = p_workspace_id
    group by d.organization_id, d.workspace_id, d.integration_id, k.dimension, k.key, d.day
    returning 1)
  select count(*) into v_inserted from inserted;
  return v_count;
end
$function$;

CREATE OR REPLACE FUNCTION app.analytics_record_sync(p_results jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v jsonb;
  v_item app.content_items;
  v_m jsonb;
  v_at timestamptz;
  v_snapshots int := 0;
  v_accounts int := 0;
  v_now timestamptz := now();
begin
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'posts', '[]'::jsonb)) loop
    select * into v_item from app.content_items where id = (v ->> 'contentId')::uuid;
    continue when v_item.id is null;
    insert into app.analytics_post_sync as s (content_item_id, organization_id, workspace_id, last_attempt_at, last_success_at, last_error)
    values (v_item.id, v_item.organization_id, v_item.workspace_id, now(),
      case when v ->> 'outcome' = 'ok' then now() end, case when v ->> 'outcome' <> 'ok' then left(v ->> 'error', 1000) end)
    on conflict (content_item_id, workspace_id) do update set last_attempt_at = v_now,
      last_success_at = case when v ->> 'outcome' = 'ok' then v_now else s.last_success_at end,
      last_error = case when v ->> 'outcome' = 'ok' then null else left(v ->> 'error', 1000) end;
    if v ->> 'outcome' = 'ok' and v ? 'metrics' then
      v_m := v -> 'metrics';
      v_at := coalesce((v ->> 'capturedAt')::timestamptz, now());
      insert into app.post_metric_snapshots (organization_id, workspace_id, content_item_id, integration_id, captured_at, source,
        impressions, reach, likes, comments, shares, saves, clicks, video_views)
      values (v_item.organization_id, v_item.workspace_id, v_item.id, v_item.integration_id, v_at, 'sync',
        coalesce(app.analytics_count(v_m -> 'impressions'), 0), coalesce(app.analytics_count(v_m -> 'reach'), 0),
        coalesce(app.analytics_count(v_m -> 'likes'), 0), coalesce(app.analytics_count(v_m -> 'comments'), 0),
        coalesce(app.analytics_count(v_m -> 'shares'), 0), coalesce(app.analytics_count(v_m -> 'saves'), 0),
        coalesce(app.analytics_count(v_m -> 'clicks'), 0), coalesce(app.analytics_count(v_m -> 'videoViews'), 0))
      on conflict (content_item_id, captured_at, workspace_id) do nothing;
      v_snapshots := v_snapshots + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync(v_item.integration_id, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  for v in select * from jsonb_array_elements(coalesce(p_results -> 'accounts', '[]'::jsonb)) loop
    continue when not exists (select 1 from app.integrations where id = (v ->> 'integrationId')::uuid);
    update app.integration_sync_state set account_attempt_at = now() where integration_id = (v ->> 'integrationId')::uuid;
    if not found then
      with inserted as (
        insert into app.integration_sync_state (integration_id, organization_id, workspace_id, account_attempt_at)
        select g.id, g.organization_id, g.workspace_id, now() from app.integrations g where g.id = (v ->> 'integrationId')::uuid
        returning 1)
      select count(*) into v_inserted from inserted;
    end if;
    if v ->> 'outcome' = 'ok' and jsonb_typeof(v -> 'account') = 'object' then
      perform app.analytics_record_account((v ->> 'integrationId')::uuid, coalesce((v ->> 'capturedAt')::timestamptz, now()),
        'sync', v -> 'account');
      v_accounts := v_accounts + 1;
    end if;
    if v ->> 'outcome' in ('ok', 'failed', 'rate_limited') then
      perform app.analytics_note_sync((v ->> 'integrationId')::uuid, v ->> 'outcome', v ->> 'error');
    end if;
  end loop;
  return jsonb_build_object('snapshots', v_snapshots, 'accounts', v_accounts);
end
$function$;

CREATE OR REPLACE FUNCTION app.apply_root_taxonomy(p_root app.content_roots, p_body jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
begin
  if p_body ? 'tagIds' then
    delete from app.content_root_tags where root_id = p_root.id;
    with inserted as (
      insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id)
      select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
      from unnest(coalesce(app.jsonb_uuids(p_body -> 'tagIds'), '{}')) x
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
  if p_body ? 'pillarIds' then
    delete from app.content_root_pillars where root_id = p_root.id;
    with inserted as (
      insert into app.content_root_pillars (root_id, pillar_id, workspace_id, organization_id)
      select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
      from unnest(coalesce(app.jsonb_uuids(p_body -> 'pillarIds'), '{}')) x
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
  if p_body ? 'formatIds' then
    delete from app.content_root_formats where root_id = p_root.id;
    with inserted as (
      insert into app.content_root_formats (root_id, format_id, workspace_id, organization_id)
      select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
      from unnest(coalesce(app.jsonb_uuids(p_body -> 'formatIds'), '{}')) x
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_mark_sent(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_keep uuid[];   -- tiles that stay, published (their key taken off)
  v_drop uuid[];   -- tiles that go (not a live post of a feed-grid channel, or of another channel)
  v_add uuid[];    -- editions that get a published tile
begin
  -- What app.grid_place_edition does for a sent edition, for many at once: a published
  -- tile (no key) on a feed-grid channel's live post edition, no tile otherwise. One
  -- look-up by key per edition decides; each change is one statement by id, usually
  -- only the first.
  select array_agg(t.id) filter (where x.eligible and t.integration_id = i.integration_id and t.position_key is not null),
         array_agg(t.id) filter (where t.id is not null and not (x.eligible and t.integration_id = i.integration_id)),
         array_agg(i.id order by i.id) filter (where x.eligible and (t.id is null or t.integration_id <> i.integration_id))
  into v_keep, v_drop, v_add
  from unnest(p_ids) u (id)
  -- Looked up by id alone (offset 0 keeps the status test out of the look-up): a plan may
  -- otherwise walk the partial index of sent editions, filtering on the id.
  cross join lateral (select * from app.content_items i where i.id = u.id offset 0) i
  join app.integrations g on g.id = i.integration_id
  left join app.platforms p on p.code = g.platform
  left join app.grid_tiles t on t.content_item_id = i.id
  cross join lateral (select i.deleted_at is null and i.kind = 'post' and coalesce(p.feed_grid, false) as eligible) x
  where i.status = 'sent';
  if v_drop is not null then
    delete from app.grid_tiles where id = any (v_drop);
  end if;
  if v_keep is not null then
    update app.grid_tiles set position_key = null where id = any (v_keep);
  end if;
  if v_add is not null then
    with inserted as (
      insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
      select i.organization_id, i.workspace_id, i.integration_id, i.id, i.created_by
      from unnest(v_add) u (id) join app.content_items i on i.id = u.id
      order by i.id
      returning 1)
    select count(*) into v_inserted from inserted;
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.grid_set_placeholder_media(t app.grid_tiles, p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
begin
  delete from app.grid_tile_media where tile_id = t.id;
  with inserted as (
    insert into app.grid_tile_media (tile_id, position, media_id, workspace_id, organization_id)
    select t.id, (x.n - 1)::int, x.id, t.workspace_id, t.organization_id
    from unnest(p_ids) with ordinality x (id, n)
    returning 1)
  select count(*) into v_inserted from inserted;
end
$function$;

CREATE OR REPLACE FUNCTION app.replace_item_media(p_item app.content_items, p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
begin
  delete from app.content_item_media where content_item_id = p_item.id;
  with inserted as (
    insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
    select p_item.id, x.id, p_item.workspace_id, p_item.organization_id, (x.n - 1)::int
    from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n)
    returning 1)
  select count(*) into v_inserted from inserted;
end
$function$;

CREATE OR REPLACE FUNCTION app.replace_root_media(p_root_id uuid, p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
begin
  delete from app.content_root_media where root_id = p_root_id;
  with inserted as (
    insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
    select p_root_id, x.id, r.workspace_id, r.organization_id, (x.n - 1)::int
    from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n)
    cross join app.content_roots r where r.id = p_root_id
    returning 1)
  select count(*) into v_inserted from inserted;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_comment(r app.reviews, it app.review_items, p_body text, p_mentions uuid[])
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_id uuid;
  v_bad uuid[];
  a app.review_activity;
begin
  if btrim(coalesce(p_body, '')) = '' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('body', 'required', 'a comment needs text')), 'A comment needs text.');
  end if;
  v_bad := array(select m from unnest(coalesce(p_mentions, '{}')) m
                 where not exists (select 1 from app.user_workspace_roles(m) x where x.workspace_id = r.workspace_id));
  if cardinality(v_bad) > 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('mentions', 'not_a_member',
      'every mentioned user must be a member of this workspace')), 'A mentioned user is not a member of this workspace.',
      jsonb_build_object('userIds', to_jsonb(v_bad)));
  end if;
  v_id := app.review_activity_add(r, it.id, 'comment', 'comment', p_body, '{}',
    array(select distinct m from unnest(coalesce(p_mentions, '{}')) m));
  with inserted as (
    insert into app.notifications (organization_id, workspace_id, user_id, kind, review_id, item_id, data)
    select r.organization_id, r.workspace_id, m, 'mention', r.id, it.id,
           jsonb_build_object('title', r.title, 'activityId', v_id, 'excerpt', left(p_body, 200))
    from (select distinct m from unnest(coalesce(p_mentions, '{}')) m) x
    returning 1)
  select count(*) into v_inserted from inserted;
  select * into a from app.review_activity where id = v_id;
  return app.review_activity_json(a);
end
$function$;

CREATE OR REPLACE FUNCTION api.create_api_key(p_name text, p_workspace_ids uuid[], p_role text, p_expires_at timestamp with time zone, p_key_prefix text, p_key_hash bytea)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v_key_id uuid;
  v_missing uuid[];
  v_managed uuid[] := app.managed_workspace_ids();
begin
  perform app.require_session();
  perform app.require_role('manager');
  if p_expires_at is not null and p_expires_at <= now() then
    perform app.raise(400, 'VALIDATION_FAILED', 'expiresAt must be in the future.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'expiresAt',
        'code', 'in_past', 'message', 'must be in the future'))));
  end if;
  select coalesce(array_agg(x), '{}') into v_missing
  from unnest(p_workspace_ids) x where not (x = any (v_managed));
  if cardinality(v_missing) > 0 then
    perform app.raise(403, 'WORKSPACE_FORBIDDEN',
      'Every workspace granted to a key must be one you manage.',
      jsonb_build_object('workspaceIds', to_jsonb(v_missing)));
  end if;
  -- The key's role cannot exceed the creator's role in any granted
  -- workspace; managing them all, the creator is manager in each.
  insert into app.api_keys (organization_id, created_by, name, key_prefix, key_hash, role, expires_at)
  values (app.current_organization_id(), app.current_user_id(), p_name, p_key_prefix, p_key_hash,
          coalesce(p_role, 'editor'), p_expires_at)
  returning id into v_key_id;
  with inserted as (
    insert into app.api_key_workspaces (api_key_id, workspace_id, organization_id)
    select v_key_id, x, app.current_organization_id() from (select distinct unnest(p_workspace_ids) x) s
    returning 1)
  select count(*) into v_inserted from inserted;
  return app.api_key_json(v_key_id, false);
end
$function$;

CREATE OR REPLACE FUNCTION api.duplicate_workbench_page(p_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v_inserted bigint; -- rows of the INSERT ... SELECTs below (see this migration)
  v app.workbench_pages;
  v_new app.workbench_pages;
  s app.workbench_sections;
  v_section uuid;
begin
  perform app.require_role('editor');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  perform app.workbench_lock(app.current_workspace_id());
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (v.organization_id, v.workspace_id, coalesce(btrim(p_body ->> 'name'), left(v.name, 153) || ' (copy)'), v.description,
          app.workbench_slot('pages', v.workspace_id, v.id, null, null), app.current_user_id())
  returning * into v_new;
  for s in select * from app.workbench_sections where page_id = v.id order by position loop
    insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
    values (s.organization_id, s.workspace_id, v_new.id, s.name, s.color, s.collapsed, s.position)
    returning id into v_section;
    with inserted as (
      insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, notes, planned_at, planned_on, created_by)
      select w.organization_id, w.workspace_id, v_new.id, v_section, w.position, w.title, w.notes, w.planned_at, w.planned_on, app.current_user_id()
      from app.workbench_rows w where w.section_id = s.id
      returning 1)
    select count(*) into v_inserted from inserted;
  end loop;
  return app.workbench_page_json(v_new);
end
$function$;
