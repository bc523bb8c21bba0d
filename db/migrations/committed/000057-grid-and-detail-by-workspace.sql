--! Previous: sha1:90507abb1f30995e0d3f6feab5d41afaa4057f31
--! Hash: sha1:b84d85dcb39c859cd2c136b1b1bcabe0631ef74c
--! Message: grid and detail by workspace

--! split: 01-current.sql
-- The grid by workspace (docs/citus.md, "Triggers").
--
-- An edition's grid tile is placed by a trigger deferred to commit (content_items_70_grid_tile),
-- which on a Citus cluster runs on the workspace's shard: every query of the placement now carries
-- the workspace (a lookup by id or by channel alone asks every shard, which a trigger there may
-- not), and the helpers take it.
--
-- The grid writes of a workspace ran one at a time under a lock on its row of app.workspaces (one
-- lock, so content written to several feed channels in any order cannot deadlock). That table is
-- a reference table on the cluster, copied to every node, whose row a trigger on a shard cannot
-- lock. The lock is now the workspace's row of app.grid_locks, a workspace table (on the
-- workspace's shard), made on first use: app.grid_lock_workspace, which replaces app.grid_lock
-- (by channel) and runs as its caller (one role per shard in a transaction, 000055), so the
-- requests' role may make and lock its workspace's row.

create table app.grid_locks (
  workspace_id uuid not null,
  organization_id uuid not null,
  created_at timestamptz not null default now(),
  constraint grid_locks_pkey primary key (workspace_id),
  constraint grid_locks_workspace_id_fkey foreign key (workspace_id) references app.workspaces (id) on delete cascade,
  constraint grid_locks_organization_id_fkey foreign key (organization_id) references app.organizations (id) on delete cascade
);
create index grid_locks_organization_id_idx on app.grid_locks (organization_id);
comment on table app.grid_locks is 'One row per workspace that has placed a grid tile: what the grid writes of the workspace lock (for no key update), one at a time, in every function and trigger that places, moves or promotes tiles (app.grid_lock_workspace). A workspace table, so on a Citus cluster the lock is on the workspace''s shard, where the grid trigger runs. Tenant policies of app.apply_tenant_policies (select, insert, update; writes need editor).';
select app.apply_tenant_policies('app.grid_locks', '{select,insert,update}', 'editor');
grant select (workspace_id, organization_id), insert (workspace_id, organization_id, created_at), update (organization_id)
  on app.grid_locks to pressroom_api;

drop function app.grid_lock(uuid);
drop function app.grid_in_time_order(uuid);
drop function app.grid_neighbours_in_time_order(uuid);
drop function app.grid_rebalance(uuid);

CREATE OR REPLACE FUNCTION app.grid_lock_workspace(p_workspace_id uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_org uuid;
begin
  select w.organization_id into v_org from app.workspaces w where w.id = p_workspace_id;
  insert into app.grid_locks (workspace_id, organization_id) values (p_workspace_id, v_org)
  on conflict (workspace_id) do nothing;
  perform 1 from app.grid_locks where workspace_id = p_workspace_id for no key update;
end
$function$;
comment on function app.grid_lock_workspace(uuid) is 'Serializes the grid writes of a workspace (placements, moves, placeholders): locks the workspace''s row of app.grid_locks (for no key update), made on first use. Taken after the content rows a write changes. Runs as its caller (000057).';

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
                        where i.id = t.content_item_id and i.workspace_id = t.workspace_id
                          and i.status = 'scheduled' and i.deleted_at is null
                        offset 0) i
    where t.workspace_id = v.workspace_id and t.integration_id = v.integration_id
      and t.id <> p_tile_id and t.position_key is not null
      and ((t.position_key < v.position_key and i.scheduled_at > v.scheduled_at)
        or (t.position_key > v.position_key and i.scheduled_at < v.scheduled_at)));
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_neighbours_in_time_order(p_workspace_id uuid, p_tile_id uuid)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET enable_seqscan TO 'off'
AS $function$
declare
  me record;
  v_item uuid;
  v_any boolean;
  v_before timestamptz;
  v_after timestamptz;
begin
  select t.integration_id, t.position_key, i.scheduled_at into me
  from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
  where t.workspace_id = p_workspace_id and t.id = p_tile_id;
  if me.position_key is null or me.scheduled_at is null then
    return true;
  end if;
  -- The tile next to this one each way (one probe of the grid's key index); when it is not a
  -- scheduled edition's, walk on to the first one that is (a loop: one statement joining the
  -- editions was planned as a scan of every scheduled edition).
  select t.content_item_id into v_item from app.grid_tiles t
  where t.workspace_id = p_workspace_id and t.integration_id = me.integration_id and t.position_key < me.position_key
  order by t.position_key desc limit 1;
  v_any := found;
  select i.scheduled_at into v_before from app.content_items i where i.workspace_id = p_workspace_id and i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_before is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.workspace_id = p_workspace_id and t.integration_id = me.integration_id and t.position_key < me.position_key and t.content_item_id is not null
                  order by t.position_key desc loop
      select i.scheduled_at into v_before from app.content_items i where i.workspace_id = p_workspace_id and i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_before is not null;
    end loop;
  end if;
  select t.content_item_id into v_item from app.grid_tiles t
  where t.workspace_id = p_workspace_id and t.integration_id = me.integration_id and t.position_key > me.position_key
  order by t.position_key limit 1;
  v_any := found;
  select i.scheduled_at into v_after from app.content_items i where i.workspace_id = p_workspace_id and i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
  if v_any and v_after is null then
    for v_item in select t.content_item_id from app.grid_tiles t
                  where t.workspace_id = p_workspace_id and t.integration_id = me.integration_id and t.position_key > me.position_key and t.content_item_id is not null
                  order by t.position_key loop
      select i.scheduled_at into v_after from app.content_items i where i.workspace_id = p_workspace_id and i.id = v_item and i.status = 'scheduled' and i.deleted_at is null;
      exit when v_after is not null;
    end loop;
  end if;
  return (v_before is null or v_before <= me.scheduled_at) and (v_after is null or v_after >= me.scheduled_at);
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_rebalance(p_workspace_id uuid, p_integration_id uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
begin
  -- length(position_key) > 48: the partial index grid_tiles_long_key_idx.
  if not exists (select 1 from app.grid_tiles where workspace_id = p_workspace_id and integration_id = p_integration_id and length(position_key) > 48) then
    return;
  end if;
  set constraints app.grid_tiles_position_key deferred;
  update app.grid_tiles t set position_key = app.grid_key_at(r.rn * 16)
  from (select id, row_number() over (order by position_key) rn
        from app.grid_tiles where workspace_id = p_workspace_id and integration_id = p_integration_id and position_key is not null) r
  where t.workspace_id = p_workspace_id and t.id = r.id;
  set constraints app.grid_tiles_position_key immediate;
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_edition_key(p_item app.content_items, p_exclude uuid)
 RETURNS text
 LANGUAGE plpgsql
 STABLE
AS $function$
declare
  v_prev text;
  v_next text;
begin
  if p_item.status = 'scheduled' then
    select t.position_key into v_prev
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
    where t.workspace_id = p_item.workspace_id and t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
      and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id and i.scheduled_at <= p_item.scheduled_at
    order by i.scheduled_at desc, t.position_key desc limit 1;
    if v_prev is null then
      select t.position_key into v_next
      from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
      where t.workspace_id = p_item.workspace_id and t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
        and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id
      order by t.position_key limit 1;
      if v_next is null then
        select min(position_key) into v_next from app.grid_tiles
        where workspace_id = p_item.workspace_id and integration_id = p_item.integration_id and position_key is not null and id is distinct from p_exclude;
      end if;
      select max(position_key) into v_prev from app.grid_tiles
      where workspace_id = p_item.workspace_id and integration_id = p_item.integration_id and position_key < v_next and id is distinct from p_exclude;
      return app.grid_key_between(v_prev, v_next);
    end if;
  else
    select max(t.position_key) into v_prev from app.grid_tiles t
    where t.workspace_id = p_item.workspace_id and t.integration_id = p_item.integration_id and t.content_item_id is not null and t.id is distinct from p_exclude;
  end if;
  select min(position_key) into v_next from app.grid_tiles
  where workspace_id = p_item.workspace_id and integration_id = p_item.integration_id and position_key > coalesce(v_prev, '') and id is distinct from p_exclude;
  return app.grid_key_between(v_prev, v_next);
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_place_edition(p_item app.content_items)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v_tile app.grid_tiles;
  v_eligible boolean;
  v_key text;
begin
  select * into v_tile from app.grid_tiles where workspace_id = p_item.workspace_id and content_item_id = p_item.id;
  v_eligible := p_item.deleted_at is null and p_item.kind = 'post'
    and p_item.status in ('draft', 'pending_approval', 'scheduled', 'sent')
    and exists (select 1 from app.integrations g join app.platforms p on p.code = g.platform
                where g.workspace_id = p_item.workspace_id and g.id = p_item.integration_id and p.feed_grid);
  if v_tile.id is not null and (not v_eligible or v_tile.integration_id <> p_item.integration_id) then
    delete from app.grid_tiles where workspace_id = p_item.workspace_id and id = v_tile.id;
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
      update app.grid_tiles set position_key = null where workspace_id = p_item.workspace_id and id = v_tile.id;
    end if;
    return;
  end if;
  perform app.grid_lock_workspace(p_item.workspace_id);
  if v_tile.id is not null and v_tile.position_key is not null
     and (p_item.status <> 'scheduled'
          or case when current_setting('pressroom.grid_placed', true) like txid_current()::text || ':%'
                       and strpos(current_setting('pressroom.grid_placed', true), p_item.id::text) > 0
                  then app.grid_neighbours_in_time_order(p_item.workspace_id, v_tile.id)
                  else app.grid_in_time_order(p_item.workspace_id, v_tile.id) end) then
    return;
  end if;
  if v_tile.id is null then
    v_key := app.grid_edition_key(p_item, null);
    insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key, created_by)
    values (p_item.organization_id, p_item.workspace_id, p_item.integration_id, p_item.id, v_key, p_item.created_by);
  else
    v_key := app.grid_edition_key(p_item, v_tile.id);
    update app.grid_tiles set position_key = v_key where workspace_id = p_item.workspace_id and id = v_tile.id;
  end if;
  perform app.grid_rebalance(p_item.workspace_id, p_item.integration_id);
end
$function$;
CREATE OR REPLACE FUNCTION app.tg_content_items_grid_tile()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
AS $function$
declare
  v app.content_items;
begin
  -- Deferred to commit: the edition as the transaction leaves it.
  select * into v from app.content_items where workspace_id = new.workspace_id and id = new.id;
  if v.id is not null then
    perform app.grid_place_edition(v);
  end if;
  return null;
end
$function$;
CREATE OR REPLACE FUNCTION api.create_grid_placeholder(p_integration_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  t app.grid_tiles;
  v_key text;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.raise_field_problems(app.grid_media_problems(v, p_body -> 'mediaIds', 'mediaIds'), 'The placeholder is not valid; see details.fields.');
  perform app.grid_lock_workspace(v.workspace_id);
  if p_body ? 'position' and jsonb_typeof(p_body -> 'position') = 'number' then
    v_key := app.grid_key_for_position(v.id, (p_body ->> 'position')::int, null);
  else
    v_key := app.grid_key_between((select max(position_key) from app.grid_tiles where integration_id = v.id), null);
  end if;
  insert into app.grid_tiles (organization_id, workspace_id, integration_id, position_key, note, created_by)
  values (v.organization_id, v.workspace_id, v.id, v_key, p_body ->> 'note', app.current_user_id())
  returning * into t;
  perform app.grid_set_placeholder_media(t, app.jsonb_uuids(p_body -> 'mediaIds'));
  perform app.grid_rebalance(v.workspace_id, v.id);
  return app.grid_tile_answer(t.id);
end
$function$;
CREATE OR REPLACE FUNCTION api.move_grid_tile(p_integration_id uuid, p_tile_id uuid, p_position integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  t app.grid_tiles;
  v_status text;
  v_changes jsonb := '[]';
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  -- Lock order: the editions a move may retime, then the grid.
  perform app.grid_lock_scheduled(v.id);
  perform app.grid_lock_workspace(v.workspace_id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_movable(t);
  if app.grid_position(t) <> p_position then
    update app.grid_tiles set position_key = app.grid_key_for_position(v.id, p_position, t.id) where id = t.id;
    perform app.grid_rebalance(v.workspace_id, v.id);
    select status into v_status from app.content_items where id = t.content_item_id;
    if v_status = 'scheduled' then
      v_changes := app.grid_retime(v.id);
    end if;
  end if;
  return jsonb_build_object('tile', app.grid_tile_answer(t.id), 'rescheduled', v_changes);
end
$function$;
CREATE OR REPLACE FUNCTION api.promote_grid_tile(p_integration_id uuid, p_tile_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  v app.integrations;
  t app.grid_tiles;
  n app.grid_tiles;
  v_content jsonb;
  v_item uuid;
  v_row app.content_items;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.grid_lock_workspace(v.workspace_id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_placeholder(t);
  -- The content route's function: platform rules, versions, the publish job.
  v_content := api.create_content(jsonb_strip_nulls(jsonb_build_object(
    'intent', 'schedule',
    'scheduledAt', p_body -> 'scheduledAt',
    'title', p_body -> 'title',
    'caption', coalesce(p_body -> 'caption', to_jsonb(t.note)),
    'mediaIds', to_jsonb(app.grid_tile_media_ids(t))))
    || jsonb_build_object('channels', jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
         'integrationId', v.id, 'settings', p_body -> 'settings')))));
  v_item := (v_content -> 'editions' -> 0 ->> 'id')::uuid;
  -- The placeholder becomes the edition's tile, where its time puts it (placed
  -- now rather than by the deferred trigger, which then finds it in place).
  -- The edition read first, then placed (not a call per row inside a query on the table).
  select * into v_row from app.content_items i where i.workspace_id = v.workspace_id and i.id = v_item;
  perform app.grid_place_edition(v_row);
  select * into n from app.grid_tiles where workspace_id = v.workspace_id and content_item_id = v_item;
  delete from app.grid_tiles where workspace_id = v.workspace_id and id = n.id;
  update app.grid_tiles set content_item_id = v_item, position_key = coalesce(n.position_key, position_key)
  where id = t.id;
  delete from app.grid_tile_media where tile_id = t.id;
  return jsonb_build_object('tile', app.grid_tile_answer(t.id), 'content', v_content);
end
$function$;
CREATE OR REPLACE FUNCTION app.grid_place_editions(p_ids uuid[])
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
AS $function$
declare
  v_ws uuid;
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
  for v_ws, v_channel in
    select distinct c.workspace_id, c.integration_id from app.content_items c
    join app.integrations g on g.id = c.integration_id and g.workspace_id = c.workspace_id join app.platforms p on p.code = g.platform
    where c.id = any (p_ids) and c.status = 'scheduled' and c.deleted_at is null and c.kind = 'post' and p.feed_grid
    order by 1, 2
  loop
    perform app.grid_lock_workspace(v_ws);
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
        from app.grid_tiles t join app.content_items i on i.id = t.content_item_id and i.workspace_id = t.workspace_id
        where t.integration_id = v_channel and t.position_key is not null
          and i.status = 'scheduled' and i.deleted_at is null and not (i.id = any (p_ids))
        union all
        select 1, null, i.scheduled_at, t.id, i.id
        from app.content_items i join app.grid_tiles t on t.content_item_id = i.id and t.workspace_id = i.workspace_id
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
    perform app.grid_rebalance(v_ws, v_channel);
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

revoke all on function app.grid_lock_workspace(uuid) from public;
revoke all on function app.grid_in_time_order(uuid, uuid) from public;
revoke all on function app.grid_neighbours_in_time_order(uuid, uuid) from public;
revoke all on function app.grid_rebalance(uuid, uuid) from public;
comment on function app.grid_in_time_order(uuid, uuid) is 'Whether no scheduled tile of the channel sorts on the other side of this one (tile p_tile_id of workspace p_workspace_id) than its time says.';
comment on function app.grid_neighbours_in_time_order(uuid, uuid) is 'Whether the scheduled tiles next to this one (tile p_tile_id of workspace p_workspace_id; by key, either side) are not on the wrong side of its time: app.grid_in_time_order for a tile placed with the other scheduled tiles of its channel in one pass (app.grid_place_editions), which left them in time order.';
comment on function app.grid_rebalance(uuid, uuid) is 'Renumbers a grid''s position keys evenly (order kept, one UPDATE under the deferred unique constraint) when one is longer than 48 characters; a no-op otherwise. The channel p_integration_id of workspace p_workspace_id.';
grant execute on function app.grid_lock_workspace(uuid), app.grid_in_time_order(uuid, uuid),
  app.grid_neighbours_in_time_order(uuid, uuid), app.grid_rebalance(uuid, uuid)
  to pressroom_api, pressroom_definer, pressroom_worker;


-- An edition's detail (GET content/{id}) built its answer in one query over the edition, its root
-- and its channel, calling helpers that read other tables per row; on the cluster that query runs
-- on the shard, where the helpers' reads are refused. It reads the three rows first, then calls
-- the helpers on their values (the pattern of 000052).
CREATE OR REPLACE FUNCTION app.content_detail_json(p_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
declare
  v_i app.content_items;
  v_r app.content_roots;
  v_g record;
  v_media uuid[];
begin
  select * into v_i from app.content_items i where i.id = p_id;
  if not found then
    return null;
  end if;
  select * into v_r from app.content_roots r where r.workspace_id = v_i.workspace_id and r.id = v_i.root_id;
  -- Not g.*: the webhook secret is not readable.
  select g.id, g.platform, g.connector, g.name, g.username, g.status, g.deleted_at into v_g
  from app.integrations g where g.workspace_id = v_i.workspace_id and g.id = v_i.integration_id;
  v_media := app.content_item_media_ids(v_i.workspace_id, v_i.id, v_i.root_id, v_i.own_media);
  return app.content_list_item_json(v_i, v_r, v_g.platform, cardinality(v_media),
           app.content_recurring_metadata(v_i.root_id), true) || jsonb_build_object(
      'integration', jsonb_build_object('id', v_g.id, 'platform', v_g.platform, 'connector', v_g.connector, 'name', v_g.name,
                                        'username', v_g.username, 'status', case when v_g.deleted_at is not null then 'deleted' else v_g.status end),
      'captionOverride', v_i.caption,
      'rootCaption', v_r.caption,
      'ownMedia', v_i.own_media,
      'mediaIds', to_jsonb(v_media),
      'media', app.content_media_json(v_media),
      'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                   'mediaIds', coalesce(e -> 'mediaIds', '[]'),
                   'media', app.content_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
                 from jsonb_array_elements(v_i.thread) with ordinality t (e, n)),
      'settings', app.sanitize_settings(v_g.platform, v_i.settings),
      'metadata', app.content_root_metadata_json(v_r.id),
      'notes', v_r.notes #>> '{}',
      'platformPostId', v_i.platform_post_id);
end
$function$;

-- A root's planning metadata: its subqueries on the root's tags, pillars and formats pair the
-- workspace with the root's (Citus plans a subquery correlated with a distributed table only on
-- the distribution column: "complex joins are only supported when all distributed tables are
-- co-located and joined on their distribution columns", on GET content/{id}).
CREATE OR REPLACE FUNCTION app.content_root_metadata_json(p_root_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
#variable_conflict use_column
begin
  return (
    select jsonb_build_object(
      'title', r.organizational_title,
      'campaignId', r.campaign_id,
      'phaseId', r.phase_id,
      'tagIds', to_jsonb(array(select tag_id from app.content_root_tags where workspace_id = r.workspace_id and root_id = r.id order by tag_id)),
      'pillarIds', to_jsonb(array(select pillar_id from app.content_root_pillars where workspace_id = r.workspace_id and root_id = r.id order by pillar_id)),
      'formatIds', to_jsonb(array(select format_id from app.content_root_formats where workspace_id = r.workspace_id and root_id = r.id order by format_id)))
    from app.content_roots r where r.id = p_root_id
  );
end
$function$;
