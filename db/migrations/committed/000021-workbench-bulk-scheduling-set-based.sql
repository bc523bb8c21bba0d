--! Previous: sha1:5759f812017b4fbd2286433b7d9e7cbb83f3ad22
--! Hash: sha1:056fe5cfff726e939ad136192819c121f0e8637c
--! Message: workbench bulk scheduling set-based

--! split: 20-workbench-bulk-schedule.sql
-- Bulk scheduling at scale (Workbench v2: 1,000 rows x 2 channels in one call).
--
-- Profile of api.schedule_workbench_rows before this file (bench/README.md,
-- scenario workbench): per edition the platform rules ran twice
-- (app.assert_publishable, then content_items_50_check_publishable_update
-- when app.undefer_content_checks made it immediate), each run of
-- app.content_item_problems made about six statements under the tenant
-- policies (app.current_workspace_accessible: 27,000 calls for 2,000
-- editions), every row and every edition had a subtransaction of its own, the
-- row's editions were found by a cached plan that had become a sequential
-- scan in the server's long-lived sessions (the HTTP side: 1.4 million buffer
-- reads for 1,000 rows), and at commit the deferred grid trigger placed the
-- 1,000 x editions one by one, each with statements that read the whole grid
-- (the in-time-order check, the key by time, the check for long keys):
-- quadratic in the grid.
--
-- 1. The rules of scheduling move to app.schedule_editions (a set of
--    editions, one lock statement, one update); app.schedule_edition is it
--    for one edition. The platform rules are checked once: the update's own
--    constraint trigger skips the editions it is about to check
--    (pressroom.publishable_checked, set around the update only), then
--    app.assert_publishable checks them, as before, after the update's other
--    triggers (so the errors come in the same order).
-- 2. app.content_item_problems and app.assert_publishable run as
--    pressroom_definer: they read editions their caller already holds, and
--    their statements no longer evaluate the tenant policies.
-- 3. api.schedule_workbench_rows reads the rows and their editions in one
--    statement, schedules the rows that can succeed in chunks of 50 without a
--    subtransaction per row or edition (one app.schedule_editions per chunk),
--    and takes the careful path (a
--    subtransaction per row and per edition, one result each) only for rows
--    that fail their own checks and for a chunk in which something failed.
--    Its statements plan with enable_seqscan off.
-- 4. Grid: the committed schedule places the scheduled x tiles of each
--    channel in one pass (app.grid_place_editions: by time among the
--    channel's scheduled tiles, keys spread evenly in each gap); the deferred
--    trigger then finds those tiles in order with a check of their
--    neighbours (the full check, app.grid_in_time_order, compares the tile
--    with every scheduled tile of the channel: 0.2 s a call on a grid of
--    2,000 tiles in time order). The check for keys past 48 characters reads
--    a partial index.

-- 1. One platform check per scheduled edition ----------------------------------

create or replace function app.tg_check_publishable()
 returns trigger
 language plpgsql
as $function$
declare
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
                   where root_id = new.id and caption is null and status = 'scheduled' and deleted_at is null);
  elsif tg_table_name = 'content_root_media' then
    v_ids := array(select id from app.content_items
                   where root_id = case when tg_op = 'DELETE' then old.root_id else new.root_id end
                     and not own_media and status = 'scheduled' and deleted_at is null);
  end if;
  foreach v_id in array coalesce(v_ids, '{}') loop
    if exists (select 1 from app.content_items where id = v_id and status = 'scheduled' and deleted_at is null) then
      v_problems := app.content_item_problems(v_id, '');
      if jsonb_array_length(v_problems) > 0 then
        perform app.raise_field_problems(v_problems, 'Scheduled content must satisfy its platform''s rules; see details.fields.',
          jsonb_build_object('contentIds', jsonb_build_array(v_id)));
      end if;
    end if;
  end loop;
  return null;
end
$function$;
comment on function app.tg_check_publishable() is 'Triggers *_50_check_publishable: a scheduled edition satisfies its platform''s rules (app.content_item_problems) after any change of it, its media, its root''s caption or media. The editions that app.schedule_editions is updating (pressroom.publishable_checked, set around that update only) are skipped: that function checks them right after (app.assert_publishable).';

create or replace function app.schedule_editions(p_ids uuid[], p_at timestamp with time zone[])
 returns void
 language plpgsql
as $function$
declare
  v app.content_items;
  v_rows app.content_items[];
  v_ids uuid[];
  v_at timestamptz[];
begin
  -- The editions (distinct, each with its time), locked in id order.
  select array_agg(x.id order by x.id), array_agg(x.at order by x.id) into v_ids, v_at
  from (select distinct on (id) id, at from unnest(p_ids, p_at) u (id, at) order by id) x;
  select array_agg(i order by i.id) into v_rows from (
    select * from app.content_items
    where id = any (v_ids) and workspace_id = app.current_workspace_id() and deleted_at is null
    order by id for update) i;
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
  from unnest(v_ids, v_at) x (id, at) where i.id = x.id;
  perform set_config('pressroom.publishable_checked', '', true);
  perform app.assert_publishable(v_ids, array[]::text[]);
end
$function$;
comment on function app.schedule_editions(uuid[],timestamp with time zone[]) is 'Schedules or reschedules draft or scheduled editions, each at its time, in one update: each edition of the workspace, not deleted, locked (id order), not in review (409 REVIEW_IN_PROGRESS), draft or scheduled (400 INVALID_CONTENT_STATUS), its time ahead (400 VALIDATION_FAILED); the update''s triggers (review policy, media in the bin, publish job, grid at commit); then the platform rules once per edition (app.assert_publishable). Raises the first failure (in the caller''s order), so one edition fails as app.schedule_edition does. The caller checks the role. Called by app.schedule_edition and by api.schedule_workbench_rows for a chunk of rows.';
grant execute on function app.schedule_editions(uuid[],timestamp with time zone[]) to pressroom_api, pressroom_definer;
revoke all on function app.schedule_editions(uuid[],timestamp with time zone[]) from public;

create or replace function app.schedule_edition(p_id uuid, p_scheduled_at timestamp with time zone)
 returns app.content_items
 language plpgsql
as $function$
declare
  v app.content_items;
begin
  perform app.schedule_editions(array[p_id], array[p_scheduled_at]);
  select * into v from app.content_items where id = p_id;
  return v;
end
$function$;
comment on function app.schedule_edition(uuid,timestamp with time zone) is 'Schedules or reschedules a draft or scheduled edition at a future time (app.schedule_editions for one: status, time, review, publish job by trigger, platform rules checked once); the caller checks the role. Called by api.schedule_content and, per edition on the careful path, by app.workbench_schedule_row.';

-- 2. The platform rules read without the tenant policies ------------------------

create or replace function app.content_item_problems(p_item_id uuid, p_prefix text DEFAULT ''::text)
 returns jsonb
 language plpgsql
 stable
 security definer
 set search_path to 'pg_catalog', 'app'
as $function$
declare
  v record;
  v_platform app.platforms;
  v_out jsonb := '[]';
  v_caption text;
  v_media uuid[];
  v_msg jsonb;
  v_i int := 0;
begin
  select i.id, i.workspace_id, i.root_id, i.kind, i.caption, i.thread, i.settings, i.own_media,
         r.caption as root_caption, g.platform, g.status as integration_status, g.deleted_at as integration_deleted_at
  into v
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = p_item_id;
  if v.id is null then
    return '[]';
  end if;
  select * into v_platform from app.platforms where code = v.platform;
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
  select app.content_item_media_ids(v.id, v.root_id, v.own_media) into v_media;
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
alter function app.content_item_problems(uuid,text) owner to pressroom_definer;
revoke all on function app.content_item_problems(uuid,text) from public;
grant execute on function app.content_item_problems(uuid,text) to pressroom_api, pressroom_worker;
comment on function app.content_item_problems(uuid,text) is 'The platform-rule problems of one edition (caption length, empty, media rules, threads, channel available, required settings) as field problems under p_prefix. Security definer (pressroom_definer): it reads the one edition its caller (a trigger, app.assert_publishable) already holds, without evaluating the tenant policies in each of its statements.';

create or replace function app.assert_publishable(p_item_ids uuid[], p_prefixes text[])
 returns void
 language plpgsql
 stable
 security definer
 set search_path to 'pg_catalog', 'app'
as $function$
declare
  v_out jsonb := '[]';
  v_ids uuid[] := '{}';
  v_problems jsonb;
begin
  for i in 1 .. coalesce(cardinality(p_item_ids), 0) loop
    if exists (select 1 from app.content_items where id = p_item_ids[i] and status = 'scheduled' and deleted_at is null) then
      v_problems := app.content_item_problems(p_item_ids[i], coalesce(p_prefixes[i], ''));
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
alter function app.assert_publishable(uuid[],text[]) owner to pressroom_definer;
revoke all on function app.assert_publishable(uuid[],text[]) from public;
grant execute on function app.assert_publishable(uuid[],text[]) to pressroom_api, pressroom_worker;
comment on function app.assert_publishable(uuid[],text[]) is 'Raises 400 VALIDATION_FAILED with the platform-rule problems (app.content_item_problems, field names under each edition''s prefix) of those of the editions that are scheduled, and details.contentIds. Security definer (pressroom_definer), like app.content_item_problems: its callers hold the editions.';

-- 4. Grid ------------------------------------------------------------------------

create index grid_tiles_long_key_idx on app.grid_tiles (integration_id) where length(position_key) > 48;
comment on index app.grid_tiles_long_key_idx is 'The rare tiles whose key grew past 48 characters: app.grid_rebalance''s check reads it instead of the whole grid.';

create or replace function app.grid_neighbours_in_time_order(p_tile_id uuid)
 returns boolean
 language plpgsql
 stable
 set enable_seqscan to 'off'
as $function$
declare
  me record;
  v_item uuid;
  v_any boolean;
  v_before timestamptz;
  v_after timestamptz;
begin
  select t.integration_id, t.position_key, i.scheduled_at into me
  from app.grid_tiles t join app.content_items i on i.id = t.content_item_id where t.id = p_tile_id;
  if me.position_key is null or me.scheduled_at is null then
    return true;
  end if;
  -- The tile next to this one each way (one probe of the grid's key index); when it is not a
  -- scheduled edition's, walk on to the first one that is (a loop: one statement joining the
  -- editions was planned as a scan of every scheduled edition).
  select t.content_item_id into v_item from app.grid_tiles t
  where t.integration_id = me.integration_id and t.position_key < me.position_key
  order by t.position_key desc limit 1;
  v_any := found;
  select i.scheduled_at into v_before from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_before is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.integration_id = me.integration_id and t.position_key < me.position_key and t.content_item_id is not null
                  order by t.position_key desc loop
      select i.scheduled_at into v_before from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_before is not null;
    end loop;
  end if;
  select t.content_item_id into v_item from app.grid_tiles t
  where t.integration_id = me.integration_id and t.position_key > me.position_key
  order by t.position_key limit 1;
  v_any := found;
  select i.scheduled_at into v_after from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_after is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.integration_id = me.integration_id and t.position_key > me.position_key and t.content_item_id is not null
                  order by t.position_key loop
      select i.scheduled_at into v_after from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_after is not null;
    end loop;
  end if;
  return (v_before is null or v_before <= me.scheduled_at) and (v_after is null or v_after >= me.scheduled_at);
end
$function$;
comment on function app.grid_neighbours_in_time_order(uuid) is 'Whether the scheduled tiles next to this one (by key, either side) are not on the wrong side of its time: app.grid_in_time_order for a tile placed with the other scheduled tiles of its channel in one pass (app.grid_place_editions), which left them in time order.';
grant execute on function app.grid_neighbours_in_time_order(uuid) to pressroom_api, pressroom_definer, pressroom_worker;
revoke all on function app.grid_neighbours_in_time_order(uuid) from public;

create or replace function app.grid_keys_between(p_a text, p_b text, p_n integer)
 returns text[]
 language plpgsql
 immutable
as $function$
declare
  v_half int;
  v_mid text;
begin
  if p_n <= 0 then
    return '{}';
  end if;
  -- The middle one first, then each half: keys grow by about log2(n) / 6 characters, not n / 6.
  v_half := (p_n - 1) / 2;
  v_mid := app.grid_key_between(p_a, p_b);
  return app.grid_keys_between(p_a, v_mid, v_half) || v_mid || app.grid_keys_between(v_mid, p_b, p_n - 1 - v_half);
end
$function$;
comment on function app.grid_keys_between(text,text,integer) is 'p_n increasing position keys strictly between p_a and p_b (null: open end), spread by halving so that they stay short.';
grant execute on function app.grid_keys_between(text,text,integer) to pressroom_api, pressroom_definer, pressroom_worker;
revoke all on function app.grid_keys_between(text,text,integer) from public;

create or replace function app.grid_place_editions(p_ids uuid[])
 returns void
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'app'
 set enable_seqscan to 'off'
as $function$
declare
  v_channel uuid;
  v_tiles uuid[];
  v_items uuid[];
  v_anchors text[];
  v_keys text[] := '{}';
  v_key text;
  v_item uuid;
  v_first text;
  v_lo text;
  v_hi text;
  i int;
  j int;
begin
  -- The scheduled post editions among p_ids, by feed-grid channel; the caller holds their rows.
  for v_channel in
    select distinct c.integration_id from app.content_items c
    join app.integrations g on g.id = c.integration_id join app.platforms p on p.code = g.platform
    where c.id = any (p_ids) and c.status = 'scheduled' and c.deleted_at is null and c.kind = 'post' and p.feed_grid
    order by 1
  loop
    perform app.grid_lock(v_channel);
    -- Each tile of the set with its anchor: the greatest key among the channel's other
    -- scheduled tiles at or before its time (they are in time order), in time order.
    select array_agg(z.tile_id order by z.at, z.item_id), array_agg(z.item_id order by z.at, z.item_id),
           array_agg(z.anchor order by z.at, z.item_id)
    into v_tiles, v_items, v_anchors
    from (
      select m.src, m.tile_id, m.item_id, m.at,
             max(m.k collate "C") over (order by m.at, m.src, m.k collate "C", m.item_id rows between unbounded preceding and current row) as anchor
      from (
        select 0 as src, t.position_key as k, i.scheduled_at as at, null::uuid as tile_id, i.id as item_id
        from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
        where t.integration_id = v_channel and t.position_key is not null
          and i.status = 'scheduled' and i.deleted_at is null and not (i.id = any (p_ids))
        union all
        select 1, null, i.scheduled_at, t.id, i.id
        from app.content_items i join app.grid_tiles t on t.content_item_id = i.id
        where i.id = any (p_ids) and i.integration_id = v_channel and i.status = 'scheduled' and i.deleted_at is null
          and i.kind = 'post' and t.integration_id = v_channel
      ) m
    ) z
    where z.src = 1;
    if v_tiles is null then
      continue;
    end if;
    -- Before the first scheduled tile (or the first tile) when nothing scheduled comes earlier.
    v_first := null;
    for v_key, v_item in select t.position_key, t.content_item_id from app.grid_tiles t
                         where t.integration_id = v_channel and t.position_key is not null and t.content_item_id is not null
                           and not (t.content_item_id = any (p_ids))
                         order by t.position_key loop
      if exists (select 1 from app.content_items i where i.id = v_item and i.status = 'scheduled' and i.deleted_at is null) then
        v_first := v_key;
        exit;
      end if;
    end loop;
    if v_first is null then
      select min(position_key) into v_first from app.grid_tiles
      where integration_id = v_channel and position_key is not null and not (id = any (v_tiles));
    end if;
    v_keys := '{}';
    i := 1;
    while i <= cardinality(v_tiles) loop
      j := i;
      while j < cardinality(v_tiles) and v_anchors[j + 1] is not distinct from v_anchors[i] loop
        j := j + 1;
      end loop;
      -- Tiles i..j share a gap: right after their anchor, before whatever tile (not of the set) follows it.
      if v_anchors[i] is null then
        v_hi := v_first;
        select max(position_key) into v_lo from app.grid_tiles
        where integration_id = v_channel and position_key < v_hi and not (id = any (v_tiles));
      else
        v_lo := v_anchors[i];
        select min(position_key) into v_hi from app.grid_tiles
        where integration_id = v_channel and position_key > v_lo and not (id = any (v_tiles));
      end if;
      v_keys := v_keys || app.grid_keys_between(v_lo, v_hi, j - i + 1);
      i := j + 1;
    end loop;
    update app.grid_tiles t set position_key = x.k
    from unnest(v_tiles, v_keys) x (id, k)
    where t.id = x.id and t.position_key is distinct from x.k;
    perform app.grid_rebalance(v_channel);
    -- The deferred trigger of these editions checks them against their neighbours only.
    -- Session-level (a function's SET clause undoes a local setting at its exit; the trigger runs at
    -- commit), scoped by the transaction id: another transaction of the session reads nothing from it.
    perform set_config('pressroom.grid_placed',
      txid_current()::text || ':' || array_to_string(v_items, ',') || coalesce(',' || nullif(split_part(
        case when current_setting('pressroom.grid_placed', true) like txid_current()::text || ':%'
             then current_setting('pressroom.grid_placed', true) end, ':', 2), ''), ''), false);
  end loop;
end
$function$;
comment on function app.grid_place_editions(uuid[]) is 'Places the tiles of many scheduled editions in one pass, channel by channel under app.grid_lock: by time among the channel''s other scheduled tiles, each group falling in one gap given keys spread evenly (app.grid_keys_between); the same order app.grid_place_edition gives one by one. Records the editions in pressroom.grid_placed (prefixed by the transaction id) so that their deferred trigger checks only their neighbours (app.grid_neighbours_in_time_order). The caller holds the editions'' rows. Security definer (pressroom_definer), like the grid trigger. Used by api.schedule_workbench_rows.';
alter function app.grid_place_editions(uuid[]) owner to pressroom_definer;
revoke all on function app.grid_place_editions(uuid[]) from public;
grant execute on function app.grid_place_editions(uuid[]) to pressroom_api, pressroom_worker;

create or replace function app.grid_place_edition(p_item app.content_items)
 returns void
 language plpgsql
as $function$
declare
  v_tile app.grid_tiles;
  v_eligible boolean;
  v_key text;
begin
  select * into v_tile from app.grid_tiles where content_item_id = p_item.id;
  v_eligible := p_item.deleted_at is null and p_item.kind = 'post'
    and p_item.status in ('draft', 'pending_approval', 'scheduled', 'sent')
    and exists (select 1 from app.integrations g join app.platforms p on p.code = g.platform
                where g.id = p_item.integration_id and p.feed_grid);
  if v_tile.id is not null and (not v_eligible or v_tile.integration_id <> p_item.integration_id) then
    delete from app.grid_tiles where id = v_tile.id;
    v_tile := null;
  end if;
  if not v_eligible then
    return;
  end if;
  if p_item.status = 'sent' then
    if v_tile.id is null then
      insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
      values (p_item.organization_id, p_item.workspace_id, p_item.integration_id, p_item.id, p_item.created_by);
    elsif v_tile.position_key is not null then
      update app.grid_tiles set position_key = null where id = v_tile.id;
    end if;
    return;
  end if;
  perform app.grid_lock(p_item.integration_id);
  if v_tile.id is not null and v_tile.position_key is not null
     and (p_item.status <> 'scheduled'
          or case when current_setting('pressroom.grid_placed', true) like txid_current()::text || ':%'
                       and strpos(current_setting('pressroom.grid_placed', true), p_item.id::text) > 0
                  then app.grid_neighbours_in_time_order(v_tile.id)
                  else app.grid_in_time_order(v_tile.id) end) then
    return;
  end if;
  if v_tile.id is null then
    v_key := app.grid_edition_key(p_item, null);
    insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key, created_by)
    values (p_item.organization_id, p_item.workspace_id, p_item.integration_id, p_item.id, v_key, p_item.created_by);
  else
    v_key := app.grid_edition_key(p_item, v_tile.id);
    update app.grid_tiles set position_key = v_key where id = v_tile.id;
  end if;
  perform app.grid_rebalance(p_item.integration_id);
end
$function$;
comment on function app.grid_place_edition(app.content_items) is 'Keeps the grid tile of an edition on a feed-grid channel: made when the edition is, removed when it is deleted, cancelled, failed or rejected, unkeyed (published) when sent, and placed by time whenever a scheduled edition''s key no longer agrees with its time (an edition placed by app.grid_place_editions in this transaction is checked against its neighbours only).';

create or replace function app.grid_rebalance(p_integration_id uuid)
 returns void
 language plpgsql
as $function$
begin
  -- length(position_key) > 48: the partial index grid_tiles_long_key_idx.
  if not exists (select 1 from app.grid_tiles where integration_id = p_integration_id and length(position_key) > 48) then
    return;
  end if;
  set constraints app.grid_tiles_position_key deferred;
  update app.grid_tiles t set position_key = app.grid_key_at(r.rn * 16)
  from (select id, row_number() over (order by position_key) rn
        from app.grid_tiles where integration_id = p_integration_id and position_key is not null) r
  where t.id = r.id;
  set constraints app.grid_tiles_position_key immediate;
end
$function$;

-- 3. Bulk scheduling ------------------------------------------------------------------

create or replace function app.workbench_schedule_row(p_row_id uuid, p_dry_run boolean)
 returns jsonb
 language plpgsql
as $function$
declare
  v app.workbench_rows;
  v_item app.content_items;
  v_results jsonb[] := '{}';
  v_failed boolean := false;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  begin
    select * into v from app.workbench_rows where id = p_row_id and workspace_id = app.current_workspace_id();
    if v.id is null then
      perform app.raise_not_found('workbench row', p_row_id);
    end if;
    if v.content_root_id is null or not exists (select 1 from app.content_roots where id = v.content_root_id and deleted_at is null) then
      perform app.raise(400, 'ROW_HAS_NO_CONTENT', 'This row has no content to schedule; give it a caption or media and channels.',
        jsonb_build_object('rowId', v.id));
    end if;
    if v.planned_at is null then
      perform app.raise(400, 'ROW_TIME_REQUIRED', 'This row has no date and time to schedule at (a date alone is a plan, not a time).',
        jsonb_build_object('rowId', v.id, 'scheduledAt', v.planned_on));
    end if;
    if not exists (select 1 from app.content_items where root_id = v.content_root_id and deleted_at is null) then
      perform app.raise(400, 'ROW_HAS_NO_CHANNELS', 'This row has no channel to schedule on.', jsonb_build_object('rowId', v.id));
    end if;
    for v_item in select i.* from app.content_items i join app.integrations g on g.id = i.integration_id
                  where i.root_id = v.content_root_id and i.deleted_at is null order by g.created_at, g.id loop
      begin
        perform app.schedule_edition(v_item.id, v.planned_at);
        v_results := v_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
          'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null);
      exception when others then
        get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        v_results := v_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
          'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint));
        v_failed := true;
      end;
    end loop;
    if v_failed or p_dry_run then
      raise exception using errcode = 'ZW001', message = 'workbench dry run or failed row: roll back';
    end if;
  exception
    when sqlstate 'ZW001' then
      null;
    when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array[jsonb_build_object('rowId', p_row_id, 'contentId', null, 'integrationId', null,
        'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint))];
      v_failed := true;
  end;
  if v_failed then
    -- The row's other channels were rolled back with it: a row is scheduled whole or not at all.
    v_results := array(select case when r ->> 'outcome' = 'scheduled' then r || '{"outcome": "not_scheduled"}' else r end
                       from unnest(v_results) r);
  end if;
  return jsonb_build_object('ok', not v_failed, 'results', to_jsonb(v_results));
end
$function$;
comment on function app.workbench_schedule_row(uuid,boolean) is 'One row of bulk scheduling, the careful way: a subtransaction for the row and one per edition (app.schedule_edition), so that each channel answers its own error and a failed row is rolled back whole; the dry run rolls back every row. Returns {ok, results} (one result per channel, or one for the row''s own error: 404 NOT_FOUND, 400 ROW_HAS_NO_CONTENT, ROW_TIME_REQUIRED, ROW_HAS_NO_CHANNELS). Used by api.schedule_workbench_rows for the rows that can fail.';
grant execute on function app.workbench_schedule_row(uuid,boolean) to pressroom_api;
revoke all on function app.workbench_schedule_row(uuid,boolean) from public;

create or replace function api.schedule_workbench_rows(p_body jsonb, p_dry_run boolean)
 returns jsonb
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'public', 'pg_temp'
 set enable_seqscan to 'off'
as $function$
declare
  c_chunk constant int := 50;
  v_n int;
  v_row_ids uuid[];
  v_ok boolean[];          -- the row passed its own checks: it goes in a chunk
  v_at timestamptz[];
  v_eds jsonb[];           -- per row: [[contentId, integrationId], ...] in channel order
  v_out jsonb[];           -- per row: its results (a jsonb array)
  v_good boolean[];        -- per row: scheduled (or valid)
  v_scheduled uuid[] := '{}';
  v_from int;
  v_to int;
  v_e jsonb;
  v_r jsonb;
  v_fallback boolean;
  v_results jsonb[] := '{}';
  v_rows_ok int := 0;
  v_channels_ok int := 0;
  v_channels_failed int := 0;
begin
  perform app.require_role('editor');
  -- The rows and their live editions (in channel order), in one statement.
  with x as (
    select (e #>> '{}')::uuid as id, n from jsonb_array_elements(p_body -> 'rowIds') with ordinality e (e, n)
  ), w as (
    select x.n, x.id, r.id as found, r.content_root_id, r.planned_at
    from x left join app.workbench_rows r on r.id = x.id and r.workspace_id = app.current_workspace_id()
  ), ed as (
    select i.root_id, jsonb_agg(jsonb_build_array(i.id, i.integration_id) order by g.created_at, g.id) as eds
    from app.content_items i join app.integrations g on g.id = i.integration_id
    where i.root_id in (select content_root_id from w where content_root_id is not null) and i.deleted_at is null
    group by i.root_id
  ), live as (
    select c.id from app.content_roots c
    where c.id in (select content_root_id from w where content_root_id is not null) and c.deleted_at is null
  )
  select count(*)::int, array_agg(w.id order by w.n),
         array_agg(w.found is not null and w.planned_at is not null and l.id is not null and ed.eds is not null order by w.n),
         array_agg(w.planned_at order by w.n), array_agg(ed.eds order by w.n)
  into v_n, v_row_ids, v_ok, v_at, v_eds
  from w left join live l on l.id = w.content_root_id left join ed on ed.root_id = w.content_root_id;
  v_out := array_fill(null::jsonb, array[v_n]);
  v_good := array_fill(false, array[v_n]);
  -- The rows that fail their own checks take the careful path (their own error).
  for k in 1 .. v_n loop
    if not v_ok[k] then
      v_r := app.workbench_schedule_row(v_row_ids[k], p_dry_run);
      v_out[k] := v_r -> 'results';
      v_good[k] := (v_r ->> 'ok')::boolean;
    end if;
  end loop;
  -- The others in chunks: no subtransaction per row or edition while nothing fails; a chunk in
  -- which something failed is rolled back and its rows take the careful path, one by one.
  v_from := 1;
  while v_from <= v_n loop
    v_to := least(v_n, v_from + c_chunk - 1);
    v_fallback := false;
    begin
      -- The chunk's editions in one app.schedule_editions: one lock, one update, the rules of each.
      perform app.schedule_editions(array_agg((e ->> 0)::uuid), array_agg(v_at[k]))
      from generate_series(v_from, v_to) k, jsonb_array_elements(v_eds[k]) e
      where v_ok[k]
      having count(*) > 0;
      if p_dry_run then
        raise exception using errcode = 'ZW001', message = 'workbench dry run: roll back';
      end if;
    exception
      when sqlstate 'ZW001' then
        null;
      when others then
        v_fallback := true;
    end;
    for k in v_from .. v_to loop
      if v_ok[k] then
        if v_fallback then
          v_r := app.workbench_schedule_row(v_row_ids[k], p_dry_run);
          v_out[k] := v_r -> 'results';
          v_good[k] := (v_r ->> 'ok')::boolean;
        else
          v_out[k] := (select jsonb_agg(jsonb_build_object('rowId', v_row_ids[k], 'contentId', e ->> 0, 'integrationId', e ->> 1,
                         'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null))
                       from jsonb_array_elements(v_eds[k]) e);
          v_good[k] := true;
        end if;
      end if;
    end loop;
    v_from := v_to + 1;
  end loop;
  for k in 1 .. v_n loop
    if v_good[k] then
      v_rows_ok := v_rows_ok + 1;
    end if;
    for v_r in select jsonb_array_elements(v_out[k]) loop
      v_results := v_results || v_r;
      if v_r ->> 'outcome' in ('scheduled', 'valid') then
        v_channels_ok := v_channels_ok + 1;
      elsif v_r ->> 'outcome' = 'failed' then
        v_channels_failed := v_channels_failed + 1;
      end if;
      if v_r ->> 'outcome' = 'scheduled' then
        v_scheduled := v_scheduled || (v_r ->> 'contentId')::uuid;
      end if;
    end loop;
  end loop;
  -- The scheduled feed-grid tiles of each channel placed in one pass (the deferred trigger then
  -- finds them in order).
  if not p_dry_run and cardinality(v_scheduled) > 0 then
    perform app.grid_place_editions(v_scheduled);
  end if;
  return jsonb_build_object('dryRun', p_dry_run, 'rows', v_n, 'rowsOk', v_rows_ok, 'rowsFailed', v_n - v_rows_ok,
    'channelsOk', v_channels_ok, 'channelsFailed', v_channels_failed, 'results', to_jsonb(v_results));
end
$function$;
comment on function api.schedule_workbench_rows(jsonb,boolean) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/schedule and /schedule/validate (scheduleWorkbenchRows_v2, validateWorkbenchSchedule_v2). For up to 1,000 rows, schedules each edition of the row''s root at the row''s date and time through app.schedule_edition (the rules of api.schedule_content), one result per row and channel; a row is scheduled whole or not at all (its own error: 404 NOT_FOUND, 400 ROW_HAS_NO_CONTENT, ROW_TIME_REQUIRED, ROW_HAS_NO_CHANNELS, or each channel''s error from the content rules). Rows are scheduled in chunks of 50 without a subtransaction each; a chunk in which something fails, and a row failing its own checks, take the careful path (app.workbench_schedule_row). The dry run runs the same path rolled back, so it answers what scheduling would, writing nothing. The committed schedule places the feed-grid tiles of each channel in one pass (app.grid_place_editions). Requires the editor role.';

select app.harden_api_functions();
