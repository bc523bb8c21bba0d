--! Previous: sha1:7f8add5ccb231208ea891dede49f4f3ab3b6e0c9
--! Hash: sha1:cd3d2f1eec4698fbf2b3e64092354a309887a286
--! Message: grid planner

--! split: 12-grid.sql
-- Grid planner: the feed of one channel (integration) as it will look.
--
-- A tile is a row of app.grid_tiles: an edition of the channel (kind
-- published, scheduled or draft) or a placeholder (library media, not yet a
-- post; its media in app.grid_tile_media). Published tiles come first, newest
-- first (by sent_at, position_key null); every other tile is ordered by its
-- fractional position key (base-62 midpoint keys, app.grid_key_between), so a
-- move writes one key and never renumbers the grid.
--
-- Rules, all here:
-- - Feed order equals publish order for scheduled editions: an edition that is
--   scheduled or rescheduled by any writer is placed by its time (trigger
--   content_items_70_grid_tile, app.grid_place_edition); moving a scheduled
--   tile exchanges publish times among the scheduled tiles so the order holds
--   (app.grid_retime, one UPDATE in the move's transaction; the publish job
--   follows by trigger content_items_30_publish_job).
-- - Published tiles never move, nor does anything move above them.
-- - Grid writes of one workspace are serialized by a row lock on the
--   workspace (app.grid_lock: one lock, so no two writers take locks of
--   several channels in opposite orders), taken after the content rows a
--   write may change, in the same order the content writers take them
--   (content row, then the grid), so two concurrent moves never give
--   duplicate or lost positions; the unique constraint
--   grid_tiles_position_key is the backstop.
-- - Keys stay short: a key longer than 48 characters (thousands of
--   insertions at one spot) renumbers that grid once (app.grid_rebalance).
-- - Promoting a placeholder and changing an edition's media go through
--   api.create_content and api.update_content, so platform rules, versions and
--   every content rule apply as on the content routes.

------------------------------------------------------------------------------
-- Which platforms have a feed grid (data, like the rest of the platform rules).
------------------------------------------------------------------------------
alter table app.platforms add column feed_grid boolean not null default false;
comment on column app.platforms.feed_grid is 'Whether the platform shows posts as a feed grid that the grid planner mocks up (instagram, facebook, tiktok, threads, pinterest, bluesky, x).';
update app.platforms set feed_grid = true
where code in ('instagram', 'facebook', 'tiktok', 'threads', 'pinterest', 'bluesky', 'x');

------------------------------------------------------------------------------
-- Fractional keys: strings over the 62 digits 0-9A-Za-z compared bytewise
-- (collation "C"), never ending in 0, so there is always a key between two.
------------------------------------------------------------------------------
create function app.grid_key_midpoint(p_a text, p_b text) returns text
language plpgsql immutable as $$
declare
  d constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  n int := 0;
  da int;
  db int;
begin
  -- p_a < p_b; p_a may be '' (the bottom), p_b null (the top).
  if p_b is not null then
    while n < length(p_b) and coalesce(nullif(substr(p_a, n + 1, 1), ''), '0') = substr(p_b, n + 1, 1) loop
      n := n + 1;
    end loop;
    if n > 0 then
      return substr(p_b, 1, n) || app.grid_key_midpoint(substr(p_a, n + 1), substr(p_b, n + 1));
    end if;
  end if;
  da := case when p_a = '' then 0 else strpos(d, substr(p_a, 1, 1)) - 1 end;
  db := case when p_b is null then 62 else strpos(d, substr(p_b, 1, 1)) - 1 end;
  if db - da > 1 then
    return substr(d, round((da + db) / 2.0)::int + 1, 1);
  end if;
  if p_b is not null and length(p_b) > 1 then
    return substr(p_b, 1, 1);
  end if;
  return substr(d, da + 1, 1) || app.grid_key_midpoint(substr(p_a, 2), null);
end
$$;
comment on function app.grid_key_midpoint(text, text) is 'The base-62 key midway between p_a (or the bottom when empty) and p_b (or the top when null), as in fractional indexing (D. Greenspan); never ends in 0.';

create function app.grid_key_between(p_a text, p_b text) returns text
language plpgsql immutable as $$
declare
  d constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  v_a text := coalesce(p_a, '');
  v_i int;
begin
  if p_b is not null and v_a collate "C" >= p_b collate "C" then
    raise exception 'grid_key_between: % is not below %', v_a, p_b;
  end if;
  if v_a <> '' and p_b is null then
    -- Appending: bump the first digit below z (keys grow by one character per ~30 appends).
    v_i := strpos(d, substr(v_a, 1, 1));
    if v_i < 62 then
      return substr(d, v_i + 1, 1);
    end if;
    return 'z' || app.grid_key_between(substr(v_a, 2), null);
  end if;
  if v_a = '' and p_b is not null then
    -- Prepending: the digit below the first one, or 0 and a key below the rest.
    v_i := strpos(d, substr(p_b, 1, 1));
    if v_i > 2 then
      return substr(d, v_i - 1, 1);
    end if;
    if v_i = 2 then
      return '0V';
    end if;
    return '0' || app.grid_key_between('', substr(p_b, 2));
  end if;
  return app.grid_key_midpoint(v_a, p_b);
end
$$;
comment on function app.grid_key_between(text, text) is 'A position key strictly between p_a and p_b (null or empty p_a: before p_b; null p_b: after p_a; both null: the first key). Raises when p_a is not below p_b.';

create function app.grid_key_at(p_n bigint) returns text
language sql immutable as $$
  select string_agg(substr('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
           ((p_n / (62::bigint ^ (4 - k))::bigint) % 62)::int + 1, 1), '' order by k) || 'V'
  from generate_series(1, 4) k
$$;
comment on function app.grid_key_at(bigint) is 'The n-th key of an evenly spaced sequence (4 base-62 digits and V), for numbering a whole grid at once (the backfill and bulk fixtures); n below 62^4.';

------------------------------------------------------------------------------
-- Tables.
------------------------------------------------------------------------------
create table app.grid_tiles (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  content_item_id uuid unique references app.content_items (id) on delete cascade,
  position_key text collate "C"
    check (position_key ~ '^[0-9A-Za-z]*[1-9A-Za-z]$' and length(position_key) <= 1024),
  note text check (note is null or length(note) <= 5000),
  cover_media_id uuid references app.media_items (id) on delete set null,
  cover_frame_ms integer check (cover_frame_ms is null or cover_frame_ms >= 0),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint grid_tiles_placeholder_has_key check (content_item_id is not null or position_key is not null),
  constraint grid_tiles_frame_needs_cover check (cover_frame_ms is null or cover_media_id is not null)
);
comment on table app.grid_tiles is 'A tile of a channel''s feed grid: an edition of the channel (content_item_id) or a placeholder of library media (content_item_id null, media in app.grid_tile_media). Published tiles have no position_key and sort by sent_at, newest first; the others sort by their fractional position_key, unique per channel (constraint grid_tiles_position_key). Edition tiles are kept by trigger content_items_70_grid_tile (app.grid_place_edition). Note, cover media and video frame are the planner''s own. Tenant policies of app.apply_tenant_policies (writes need editor).';
-- Deferrable so that app.grid_rebalance can renumber a grid in one statement.
alter table app.grid_tiles add constraint grid_tiles_position_key unique (integration_id, position_key)
  deferrable initially immediate;
create index grid_tiles_workspace_id_idx on app.grid_tiles (workspace_id);
create index grid_tiles_organization_id_idx on app.grid_tiles (organization_id);
create index grid_tiles_cover_media_id_idx on app.grid_tiles (cover_media_id);
create trigger grid_tiles_10_set_updated_at before update on app.grid_tiles
  for each row execute function app.tg_set_updated_at();

create table app.grid_tile_media (
  tile_id uuid not null references app.grid_tiles (id) on delete cascade,
  position integer not null check (position >= 0),
  media_id uuid not null,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  primary key (tile_id, position),
  foreign key (media_id, workspace_id) references app.media_items (id, workspace_id) on delete cascade
);
comment on table app.grid_tile_media is 'The media of a placeholder tile, in order; media of the tile''s workspace (foreign key on media id and workspace). Tenant policies of app.apply_tenant_policies (writes need editor).';
create index grid_tile_media_media_id_idx on app.grid_tile_media (media_id);
create index grid_tile_media_workspace_id_idx on app.grid_tile_media (workspace_id);
create index grid_tile_media_organization_id_idx on app.grid_tile_media (organization_id);

alter table app.grid_tiles enable row level security;
alter table app.grid_tiles force row level security;
alter table app.grid_tile_media enable row level security;
alter table app.grid_tile_media force row level security;
select app.apply_tenant_policies('app.grid_tiles');
select app.apply_tenant_policies('app.grid_tile_media');
grant select, delete on app.grid_tiles, app.grid_tile_media to pressroom_api;
select app.grant_api_columns('app.grid_tiles', array['insert', 'update']);
select app.grant_api_columns('app.grid_tile_media', array['insert', 'update']);
grant select, insert, update, delete on app.grid_tiles, app.grid_tile_media to pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- Helpers.
------------------------------------------------------------------------------

-- The grid lock: the row of the channel's workspace, for no key update (the
-- foreign-key checks of inserts only key-share it, so they are not blocked).
-- One lock per workspace, not per channel: content written to several feed
-- channels at once (one edition per channel, in the order the request lists
-- them) takes one lock, so two such requests cannot lock channels in opposite
-- orders and deadlock. A security definer: the request role may not lock
-- workspace rows itself.
create function app.grid_lock(p_integration_id uuid) returns void
language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  perform 1 from app.workspaces w
  where w.id = (select g.workspace_id from app.integrations g where g.id = p_integration_id)
  for no key update;
end
$$;
comment on function app.grid_lock(uuid) is 'Serializes the grid writes of a workspace (placements, moves, placeholders): locks the workspace row of the channel (for no key update). Taken after the content rows a write changes.';

-- Locks the given editions (content rows) in id order, before the grid lock.
create function app.grid_lock_editions(p_ids uuid[]) returns void
language plpgsql as $$
begin
  perform 1 from app.content_items where id = any (p_ids) order by id for no key update;
end
$$;
comment on function app.grid_lock_editions(uuid[]) is 'Locks editions in id order (the order content writers never contradict), before app.grid_lock.';

-- Locks every scheduled edition of the channel (a move may retime any of them).
create function app.grid_lock_scheduled(p_integration_id uuid) returns void
language plpgsql as $$
begin
  perform 1 from app.content_items
  where integration_id = p_integration_id and status = 'scheduled' and deleted_at is null
  order by id for no key update;
end
$$;
comment on function app.grid_lock_scheduled(uuid) is 'Locks the scheduled editions of a channel in id order, before app.grid_lock, so a move can exchange their times.';

-- Is this scheduled edition's tile where its time puts it among the scheduled tiles?
create function app.grid_in_time_order(p_tile_id uuid) returns boolean
language sql stable as $$
  select not exists (
    select 1
    from app.grid_tiles me
    join app.content_items mi on mi.id = me.content_item_id
    join app.grid_tiles t on t.integration_id = me.integration_id and t.id <> me.id and t.position_key is not null
    join app.content_items i on i.id = t.content_item_id and i.status = 'scheduled' and i.deleted_at is null
    where me.id = p_tile_id
      and ((t.position_key < me.position_key and i.scheduled_at > mi.scheduled_at)
        or (t.position_key > me.position_key and i.scheduled_at < mi.scheduled_at)))
$$;
comment on function app.grid_in_time_order(uuid) is 'Whether no scheduled tile of the channel sorts on the other side of this one than its time says.';

-- The key an edition takes (under the grid lock): a scheduled one after the
-- last scheduled tile at or before its time (else before the first
-- scheduled tile, else first of the planned tiles); any other after the last
-- edition tile (so before the placeholders).
create function app.grid_edition_key(p_item app.content_items, p_exclude uuid) returns text
language plpgsql stable as $$
declare
  v_prev text;
  v_next text;
begin
  if p_item.status = 'scheduled' then
    select t.position_key into v_prev
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
    where t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
      and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id and i.scheduled_at <= p_item.scheduled_at
    order by i.scheduled_at desc, t.position_key desc limit 1;
    if v_prev is null then
      select t.position_key into v_next
      from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
      where t.integration_id = p_item.integration_id and t.position_key is not null and t.id is distinct from p_exclude
        and i.status = 'scheduled' and i.deleted_at is null and i.id <> p_item.id
      order by t.position_key limit 1;
      if v_next is null then
        select min(position_key) into v_next from app.grid_tiles
        where integration_id = p_item.integration_id and position_key is not null and id is distinct from p_exclude;
      end if;
      select max(position_key) into v_prev from app.grid_tiles
      where integration_id = p_item.integration_id and position_key < v_next and id is distinct from p_exclude;
      return app.grid_key_between(v_prev, v_next);
    end if;
  else
    select max(t.position_key) into v_prev from app.grid_tiles t
    where t.integration_id = p_item.integration_id and t.content_item_id is not null and t.id is distinct from p_exclude;
  end if;
  select min(position_key) into v_next from app.grid_tiles
  where integration_id = p_item.integration_id and position_key > coalesce(v_prev, '') and id is distinct from p_exclude;
  return app.grid_key_between(v_prev, v_next);
end
$$;
comment on function app.grid_edition_key(app.content_items, uuid) is 'The position key an edition''s tile takes in its channel''s grid (called under app.grid_lock): scheduled editions by time among the scheduled tiles, others after the last edition tile.';

-- Renumbers a grid's keys evenly when one has grown long (repeated insertion
-- at one spot adds a character every ~6 times); the order is kept. Called
-- under the grid lock after a key is written.
create function app.grid_rebalance(p_integration_id uuid) returns void
language plpgsql as $$
begin
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
$$;
comment on function app.grid_rebalance(uuid) is 'Renumbers a grid''s position keys evenly (order kept, one UPDATE under the deferred unique constraint) when one is longer than 48 characters; a no-op otherwise.';

-- Keeps an edition's tile: created, placed, marked published or removed.
create function app.grid_place_edition(p_item app.content_items) returns void
language plpgsql as $$
declare
  v_tile app.grid_tiles;
  v_eligible boolean;
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
     and (p_item.status <> 'scheduled' or app.grid_in_time_order(v_tile.id)) then
    return;
  end if;
  if v_tile.id is null then
    insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key, created_by)
    values (p_item.organization_id, p_item.workspace_id, p_item.integration_id, p_item.id,
            app.grid_edition_key(p_item, null), p_item.created_by);
  else
    update app.grid_tiles set position_key = app.grid_edition_key(p_item, v_tile.id) where id = v_tile.id;
  end if;
  perform app.grid_rebalance(p_item.integration_id);
end
$$;
comment on function app.grid_place_edition(app.content_items) is 'Keeps the grid tile of an edition on a feed-grid channel: made when the edition is, removed when it is deleted, cancelled, failed or rejected, unkeyed (published) when sent, and placed by time whenever a scheduled edition''s key no longer agrees with its time.';

create function app.tg_content_items_grid_tile() returns trigger
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v app.content_items;
begin
  -- Deferred to commit: the edition as the transaction leaves it.
  select * into v from app.content_items where id = new.id;
  if v.id is not null then
    perform app.grid_place_edition(v);
  end if;
  return null;
end
$$;
comment on function app.tg_content_items_grid_tile() is 'Constraint trigger content_items_70_grid_tile (deferred to commit): app.grid_place_edition for the edition as the transaction leaves it, whoever writes it (requests, jobs). Deferred so that the grid lock is held from commit time only, not for the rest of the content write.';
-- Deferred: the grid lock (app.grid_lock) is taken at commit, so content
-- writes of one workspace wait for each other only for the placement and the
-- commit, not for their whole transaction.
create constraint trigger content_items_70_grid_tile after insert or update of status, scheduled_at, deleted_at, integration_id, kind
  on app.content_items deferrable initially deferred for each row execute function app.tg_content_items_grid_tile();

-- The grid in order: position, and the sort values a cursor carries.
create function app.grid_ordered(p_integration_id uuid)
returns table (tile_id uuid, pos int, section int, sent_at timestamptz, position_key text)
language sql stable as $$
  select t.id, (row_number() over w - 1)::int, case when t.position_key is null then 0 else 1 end, i.sent_at, t.position_key
  from app.grid_tiles t left join app.content_items i on i.id = t.content_item_id
  where t.integration_id = p_integration_id
  window w as (order by t.position_key is not null, i.sent_at desc nulls last, t.position_key, t.id)
$$;
comment on function app.grid_ordered(uuid) is 'A channel''s tiles in grid order: published (newest first), then by position key; with each one''s 0-based position.';

-- The media of a tile: a placeholder's own, an edition's effective media.
create function app.grid_tile_media_ids(t app.grid_tiles) returns uuid[]
language sql stable as $$
  select case when t.content_item_id is null then
      (select coalesce(array_agg(m.media_id order by m.position), '{}') from app.grid_tile_media m where m.tile_id = t.id)
    else
      (select app.content_item_media_ids(i.id, i.root_id, i.own_media) from app.content_items i where i.id = t.content_item_id)
    end
$$;
comment on function app.grid_tile_media_ids(app.grid_tiles) is 'A tile''s media ids in order: a placeholder''s own, an edition''s effective media (its own or its root''s).';

-- Tiles as the API shows them, in the order given (set-based: one pass over
-- each table for a whole page); the cover carries the storage facts the
-- server turns into a signed view URL (server/routes/grid.ts).
create function app.grid_tiles_json(p_tiles jsonb) returns jsonb
language sql stable as $$
  with t as (
    select g.*, (e.x ->> 'pos')::int pos, e.n
    from jsonb_array_elements(p_tiles) with ordinality e (x, n)
    join app.grid_tiles g on g.id = (e.x ->> 'id')::uuid),
  i as (select t.id tile_id, c.id, c.root_id, c.own_media, c.status, c.scheduled_at, c.sent_at, c.permalink
        from t join app.content_items c on c.id = t.content_item_id),
  media as (
    select m.tile_id, array_agg(m.media_id order by m.position) ids
    from app.grid_tile_media m where m.tile_id in (select id from t where content_item_id is null) group by m.tile_id
    union all
    select i.tile_id, array_agg(cm.media_id order by cm.position)
    from i join app.content_item_media cm on cm.content_item_id = i.id where i.own_media group by i.tile_id
    union all
    select i.tile_id, array_agg(rm.media_id order by rm.position)
    from i join app.content_root_media rm on rm.root_id = i.root_id where not i.own_media group by i.tile_id),
  j as (
    select t.*, i.status, i.scheduled_at, i.sent_at, i.permalink, coalesce(m.ids, '{}') ids,
      case when t.cover_media_id = any (m.ids) then t.cover_media_id else m.ids[1] end cover_id
    from t left join i on i.tile_id = t.id left join media m on m.tile_id = t.id)
  select coalesce(jsonb_agg(jsonb_build_object(
    'id', j.id,
    'integrationId', j.integration_id,
    'kind', case when j.content_item_id is null then 'placeholder'
                 when j.status = 'sent' then 'published'
                 when j.status = 'scheduled' then 'scheduled'
                 else 'draft' end,
    'contentId', j.content_item_id,
    'status', j.status,
    'position', j.pos,
    'scheduledAt', j.scheduled_at,
    'publishedAt', j.sent_at,
    'permalink', j.permalink,
    'note', j.note,
    'mediaIds', to_jsonb(j.ids),
    'mediaCount', cardinality(j.ids),
    'cover', case when c.id is not null then jsonb_build_object('mediaId', c.id, 'type', c.type,
               'frameAtMs', case when c.id = j.cover_media_id and c.type = 'video' then j.cover_frame_ms end,
               'storageKey', c.storage_key, 'contentType', c.content_type, 'filename', c.filename) end,
    'createdAt', j.created_at,
    'updatedAt', j.updated_at) order by j.n), '[]')
  from j left join app.media_items c on c.id = j.cover_id
$$;
comment on function app.grid_tiles_json(jsonb) is 'Tiles ([{id, pos}], in that order) as the grid routes answer them, the cover with storage facts for signing; one set-based pass for a whole page.';

create function app.grid_position(p_tile app.grid_tiles) returns int
language sql stable as $$
  select pos from app.grid_ordered(p_tile.integration_id) where tile_id = p_tile.id
$$;
comment on function app.grid_position(app.grid_tiles) is 'A tile''s 0-based position in its grid.';

create function app.grid_tile_answer(p_tile_id uuid) returns jsonb
language sql stable as $$
  select app.grid_tiles_json(jsonb_build_array(jsonb_build_object('id', t.id, 'pos', app.grid_position(t)))) -> 0
  from app.grid_tiles t where t.id = p_tile_id
$$;
comment on function app.grid_tile_answer(uuid) is 'A tile by id, with its position, as the routes answer it.';

-- The channel of a grid route: visible, not deleted, with a feed grid.
create function app.grid_integration(p_id uuid) returns app.integrations
language plpgsql stable as $$
declare
  v app.integrations;
  v_grid boolean;
begin
  -- Not g.*: the webhook secret is not readable.
  select g.id, g.organization_id, g.workspace_id, g.platform into v.id, v.organization_id, v.workspace_id, v.platform
  from app.integrations g
  where g.id = p_id and g.workspace_id = app.current_workspace_id() and g.deleted_at is null;
  if v.id is null then
    perform app.raise_not_found('integration', p_id);
  end if;
  select feed_grid into v_grid from app.platforms where code = v.platform;
  if not v_grid then
    perform app.raise(400, 'GRID_NOT_SUPPORTED',
      format('The platform %s has no feed grid; the grid planner serves instagram, facebook, tiktok, threads, pinterest, bluesky and x.', v.platform),
      jsonb_build_object('integrationId', v.id, 'platform', v.platform,
        'platforms', (select jsonb_agg(code order by code) from app.platforms where feed_grid)));
  end if;
  return v;
end
$$;
comment on function app.grid_integration(uuid) is 'The integration of a grid route: 404 NOT_FOUND when not in the workspace (or deleted), 400 GRID_NOT_SUPPORTED when its platform has no feed grid.';

create function app.grid_tile(p_integration_id uuid, p_tile_id uuid, p_for_update boolean default false) returns app.grid_tiles
language plpgsql as $$
declare
  v app.grid_tiles;
begin
  if p_for_update then
    select * into v from app.grid_tiles where id = p_tile_id and integration_id = p_integration_id for update;
  else
    select * into v from app.grid_tiles where id = p_tile_id and integration_id = p_integration_id;
  end if;
  if v.id is null then
    perform app.raise_not_found('grid tile', p_tile_id);
  end if;
  return v;
end
$$;
comment on function app.grid_tile(uuid, uuid, boolean) is 'A tile of the channel''s grid, optionally locked; 404 NOT_FOUND otherwise.';

create function app.grid_require_movable(t app.grid_tiles) returns void
language plpgsql as $$
begin
  if t.position_key is null then
    perform app.raise(400, 'GRID_TILE_PUBLISHED', 'A published tile stays where it is and as it is.',
      jsonb_build_object('tileId', t.id, 'contentId', t.content_item_id));
  end if;
end
$$;
comment on function app.grid_require_movable(app.grid_tiles) is '400 GRID_TILE_PUBLISHED for a published tile.';

create function app.grid_require_placeholder(t app.grid_tiles) returns void
language plpgsql as $$
begin
  if t.content_item_id is not null then
    perform app.raise(400, 'GRID_TILE_NOT_PLACEHOLDER', 'This tile is an edition; only placeholder tiles can be deleted or promoted here (use the content routes for editions).',
      jsonb_build_object('tileId', t.id, 'contentId', t.content_item_id));
  end if;
end
$$;
comment on function app.grid_require_placeholder(app.grid_tiles) is '400 GRID_TILE_NOT_PLACEHOLDER for an edition tile.';

-- The key for putting a tile at a 0-based grid position (under the grid lock),
-- the tile itself left out of the count.
create function app.grid_key_for_position(p_integration_id uuid, p_position int, p_exclude uuid) returns text
language plpgsql stable as $$
declare
  v_published int;
  v_count int;
  v_prev text;
  v_next text;
begin
  select count(*) filter (where position_key is null), count(*) into v_published, v_count
  from app.grid_tiles where integration_id = p_integration_id and id is distinct from p_exclude;
  if p_position < v_published or p_position > v_count then
    perform app.raise(400, 'VALIDATION_FAILED',
      format('position must be between %s (after the published tiles) and %s (the end of the grid).', v_published, v_count),
      jsonb_build_object('min', v_published, 'max', v_count, 'fields', jsonb_build_array(
        app.field_problem('position', 'out_of_range', format('must be between %s and %s', v_published, v_count)))));
  end if;
  select o.position_key into v_prev from (
    select position_key from app.grid_tiles
    where integration_id = p_integration_id and id is distinct from p_exclude and position_key is not null
    order by position_key offset p_position - v_published - 1 limit 1) o
  where p_position > v_published;
  select o.position_key into v_next from (
    select position_key from app.grid_tiles
    where integration_id = p_integration_id and id is distinct from p_exclude and position_key is not null
    order by position_key offset p_position - v_published limit 1) o;
  return app.grid_key_between(v_prev, v_next);
end
$$;
comment on function app.grid_key_for_position(uuid, int, uuid) is 'The position key that puts a tile at a 0-based grid position: between the published tiles'' count and the end; 400 VALIDATION_FAILED (out_of_range, details min and max) otherwise.';

-- Gives the channel's scheduled editions their times in feed order: the i-th
-- scheduled tile takes the i-th earliest of their times, in one UPDATE (so the
-- placement trigger sees the final order). Answers what changed.
create function app.grid_retime(p_integration_id uuid) returns jsonb
language plpgsql as $$
declare
  v_plan jsonb;
begin
  with s as (
    select i.id, t.id tile_id, i.scheduled_at, row_number() over (order by t.position_key) rn
    from app.grid_tiles t join app.content_items i on i.id = t.content_item_id
    where t.integration_id = p_integration_id and t.position_key is not null
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
  where c.id = (p ->> 'contentId')::uuid;
  -- The move touched these editions: each gets a version (its history shows who moved it, when).
  perform app.record_content_version((p ->> 'contentId')::uuid, 'update', null, true)
  from jsonb_array_elements(v_plan) p;
  return v_plan;
end
$$;
comment on function app.grid_retime(uuid) is 'Exchanges publish times among a channel''s scheduled editions so that feed order equals publish order (one UPDATE; publish jobs follow by trigger); refuses times already come (400 VALIDATION_FAILED in_past); records a version of each edition it retimes. Answers the editions whose scheduledAt changed.';

-- Validates a placeholder's media list: 1 to the platform's maxItems (at least 1), distinct, active media of the workspace.
create function app.grid_media_problems(p_integration app.integrations, p_ids jsonb, p_field text) returns jsonb
language plpgsql stable as $$
declare
  v_max int;
  v_ids uuid[];
begin
  select greatest(1, coalesce((media_rules ->> 'maxItems')::int, 10)) into v_max from app.platforms where code = p_integration.platform;
  if p_ids is null or jsonb_typeof(p_ids) <> 'array' or jsonb_array_length(p_ids) = 0 then
    return jsonb_build_array(app.field_problem(p_field, 'required', 'a placeholder needs at least one media item'));
  end if;
  if jsonb_array_length(p_ids) > v_max then
    return jsonb_build_array(app.field_problem(p_field, 'too_many_media',
      format('at most %s media items on %s', v_max, p_integration.platform)));
  end if;
  v_ids := app.jsonb_uuids(p_ids);
  if cardinality(v_ids) <> (select count(distinct x) from unnest(v_ids) x) then
    return jsonb_build_array(app.field_problem(p_field, 'duplicate_media', 'a media item is listed twice'));
  end if;
  return app.media_ref_problems(p_integration.workspace_id, v_ids, p_field);
end
$$;
comment on function app.grid_media_problems(app.integrations, jsonb, text) is 'Problems of a placeholder''s media list: required, at most the platform''s maxItems, distinct, active media of the workspace.';

create function app.grid_set_placeholder_media(t app.grid_tiles, p_ids uuid[]) returns void
language plpgsql as $$
begin
  delete from app.grid_tile_media where tile_id = t.id;
  insert into app.grid_tile_media (tile_id, position, media_id, workspace_id, organization_id)
  select t.id, (x.n - 1)::int, x.id, t.workspace_id, t.organization_id
  from unnest(p_ids) with ordinality x (id, n);
end
$$;
comment on function app.grid_set_placeholder_media(app.grid_tiles, uuid[]) is 'Replaces a placeholder''s media list.';

-- Backfill: tiles for the editions that exist, scheduled by time, then the others by creation.
insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, position_key, created_by)
select i.organization_id, i.workspace_id, i.integration_id, i.id,
       case when i.status = 'sent' then null
            else app.grid_key_at(row_number() over (partition by i.integration_id, i.status = 'sent'
                   order by (i.status = 'scheduled') desc, i.scheduled_at, i.created_at, i.id)) end,
       i.created_by
from app.content_items i
join app.integrations g on g.id = i.integration_id
join app.platforms p on p.code = g.platform and p.feed_grid
where i.deleted_at is null and i.kind = 'post' and i.status in ('draft', 'pending_approval', 'scheduled', 'sent');

------------------------------------------------------------------------------
-- api: the nine grid routes.
------------------------------------------------------------------------------
create function api.get_grid(p_integration_id uuid, p_limit int, p_cursor text) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  v_limit int := coalesce(p_limit, 60);
  c jsonb;
  v_rows jsonb;
  v_count int;
  v_last jsonb;
  v_next text;
begin
  perform app.require_role('viewer');
  v := app.grid_integration(p_integration_id);
  if v_limit < 1 or v_limit > 200 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('limit', 'out_of_range', 'must be between 1 and 200')),
      'limit must be between 1 and 200.');
  end if;
  if p_cursor is not null then
    begin
      c := convert_from(decode(rpad(translate(p_cursor, '-_', '+/'), ((length(p_cursor) + 3) / 4) * 4, '='), 'base64'), 'UTF8')::jsonb;
      if jsonb_typeof(c) <> 'object' or coalesce(c ->> 's', '') not in ('0', '1') or not coalesce(app.is_uuid(c ->> 'i'), false)
         or ((c ->> 's') = '1' and (c ->> 'k') is null) then
        raise exception 'bad cursor';
      end if;
      perform (c ->> 't')::timestamptz;
    exception when others then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('cursor', 'invalid_cursor',
        'not a cursor of this grid; use meta.nextCursor of the previous page')), 'The cursor is not valid.');
    end;
  end if;
  with o as (
    select o.*, row_number() over (order by o.pos) rn from app.grid_ordered(v.id) o
    where c is null
       or o.section > (c ->> 's')::int
       or (o.section = 0 and (c ->> 's') = '0'
           and (o.sent_at < (c ->> 't')::timestamptz
                or (o.sent_at is not distinct from (c ->> 't')::timestamptz and o.tile_id > (c ->> 'i')::uuid)
                or (o.sent_at is null and (c ->> 't') is not null)))
       or (o.section = 1 and (c ->> 's') = '1' and o.position_key collate "C" > (c ->> 'k'))
    order by o.pos limit v_limit + 1)
  select app.grid_tiles_json(coalesce(jsonb_agg(jsonb_build_object('id', o.tile_id, 'pos', o.pos) order by o.pos)
                                        filter (where o.rn <= v_limit), '[]')),
         count(*),
         (array_agg(jsonb_build_object('s', o.section, 't', o.sent_at, 'k', o.position_key, 'i', o.tile_id) order by o.pos))[v_limit]
  into v_rows, v_count, v_last
  from o;
  if v_count > v_limit then
    v_next := rtrim(translate(encode(convert_to(v_last::text, 'UTF8'), 'base64'), E'+/\n', '-_'), '=');
  end if;
  return jsonb_build_object('data', v_rows, 'meta', jsonb_build_object(
    'limit', v_limit, 'nextCursor', v_next,
    'total', (select count(*) from app.grid_tiles where integration_id = v.id),
    'counts', (select jsonb_build_object(
        'published', count(*) filter (where t.position_key is null),
        'scheduled', count(*) filter (where i.status = 'scheduled'),
        'draft', count(*) filter (where t.content_item_id is not null and t.position_key is not null and i.status <> 'scheduled'),
        'placeholder', count(*) filter (where t.content_item_id is null))
      from app.grid_tiles t left join app.content_items i on i.id = t.content_item_id
      where t.integration_id = v.id)));
end
$$;
comment on function api.get_grid(uuid, int, text) is 'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/grid (getGrid_v1). The channel''s feed grid in order: published tiles (newest first), then scheduled and draft editions and placeholders by position; cursor-paginated (limit 1-200, default 60). Requires the viewer role; 404 NOT_FOUND, 400 GRID_NOT_SUPPORTED, 400 VALIDATION_FAILED (limit, cursor).';

create function api.get_grid_tile(p_integration_id uuid, p_tile_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
begin
  perform app.require_role('viewer');
  v := app.grid_integration(p_integration_id);
  t := app.grid_tile(v.id, p_tile_id);
  return app.grid_tile_answer(t.id);
end
$$;
comment on function api.get_grid_tile(uuid, uuid) is 'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId} (getGridTile_v1). One tile with its position. Requires the viewer role; 404 NOT_FOUND, 400 GRID_NOT_SUPPORTED.';

create function api.create_grid_placeholder(p_integration_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
  v_key text;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.raise_field_problems(app.grid_media_problems(v, p_body -> 'mediaIds', 'mediaIds'), 'The placeholder is not valid; see details.fields.');
  perform app.grid_lock(v.id);
  if p_body ? 'position' and jsonb_typeof(p_body -> 'position') = 'number' then
    v_key := app.grid_key_for_position(v.id, (p_body ->> 'position')::int, null);
  else
    v_key := app.grid_key_between((select max(position_key) from app.grid_tiles where integration_id = v.id), null);
  end if;
  insert into app.grid_tiles (organization_id, workspace_id, integration_id, position_key, note, created_by)
  values (v.organization_id, v.workspace_id, v.id, v_key, p_body ->> 'note', app.current_user_id())
  returning * into t;
  perform app.grid_set_placeholder_media(t, app.jsonb_uuids(p_body -> 'mediaIds'));
  perform app.grid_rebalance(v.id);
  return app.grid_tile_answer(t.id);
end
$$;
comment on function api.create_grid_placeholder(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles (createGridPlaceholder_v1). Adds a placeholder tile of library media (1 to the platform''s maxItems), at the end of the grid or at a position after the published tiles. Requires the editor role; 404 NOT_FOUND, 400 GRID_NOT_SUPPORTED, 400 VALIDATION_FAILED (mediaIds, position).';

create function api.update_grid_tile(p_integration_id uuid, p_tile_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  t := app.grid_tile(v.id, p_tile_id);
  if p_body ? 'mediaIds' then
    if t.content_item_id is not null then
      perform app.grid_lock_editions(array[t.content_item_id]);
    end if;
    t := app.grid_tile(v.id, p_tile_id, true);
    perform app.grid_require_movable(t);
    if t.content_item_id is null then
      perform app.raise_field_problems(app.grid_media_problems(v, p_body -> 'mediaIds', 'mediaIds'), 'The placeholder is not valid; see details.fields.');
      perform app.grid_set_placeholder_media(t, app.jsonb_uuids(p_body -> 'mediaIds'));
    else
      -- The content route's function: editable statuses, platform rules, versions.
      perform api.update_content(t.content_item_id, jsonb_build_object('mediaIds', p_body -> 'mediaIds'));
    end if;
  else
    t := app.grid_tile(v.id, p_tile_id, true);
  end if;
  -- One write of the tile (its updated_at moves with the media too).
  update app.grid_tiles set note = case when p_body ? 'note' then p_body ->> 'note' else note end where id = t.id;
  return app.grid_tile_answer(t.id);
end
$$;
comment on function api.update_grid_tile(uuid, uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId} (updateGridTile_v1). Changes a tile''s note and media: a placeholder''s own list, an edition''s own media through api.update_content (platform rules, versions). Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_PUBLISHED (media of a published tile), 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';

create function api.delete_grid_tile(p_integration_id uuid, p_tile_id uuid) returns void
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_placeholder(t);
  delete from app.grid_tiles where id = t.id;
end
$$;
comment on function api.delete_grid_tile(uuid, uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId} (deleteGridTile_v1). Deletes a placeholder tile (editions are deleted with the content routes). Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_NOT_PLACEHOLDER.';

create function api.move_grid_tile(p_integration_id uuid, p_tile_id uuid, p_position int) returns jsonb
language plpgsql as $$
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
  perform app.grid_lock(v.id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_movable(t);
  if app.grid_position(t) <> p_position then
    update app.grid_tiles set position_key = app.grid_key_for_position(v.id, p_position, t.id) where id = t.id;
    perform app.grid_rebalance(v.id);
    select status into v_status from app.content_items where id = t.content_item_id;
    if v_status = 'scheduled' then
      v_changes := app.grid_retime(v.id);
    end if;
  end if;
  return jsonb_build_object('tile', app.grid_tile_answer(t.id), 'rescheduled', v_changes);
end
$$;
comment on function api.move_grid_tile(uuid, uuid, int) is 'Serves POST /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId}/move (moveGridTile_v1). Moves a tile to a 0-based grid position (one new fractional key); moving a scheduled tile exchanges publish times among the scheduled tiles so feed order equals publish order, in the same transaction, and answers every edition whose scheduledAt changed. Serialized per workspace (app.grid_lock). Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_PUBLISHED, 400 VALIDATION_FAILED (position out_of_range, in_past), 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION.';

create function api.swap_grid_tile_media(p_integration_id uuid, p_tile_id uuid, p_other_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  a app.grid_tiles;
  b app.grid_tiles;
  v_a uuid[];
  v_b uuid[];
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  if p_tile_id = p_other_id then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('otherTileId', 'same_tile', 'name another tile')),
      'A tile cannot swap media with itself.');
  end if;
  a := app.grid_tile(v.id, p_tile_id);
  b := app.grid_tile(v.id, p_other_id);
  -- Lock order: the editions, then the tiles (in id order).
  perform app.grid_lock_editions(array_remove(array[a.content_item_id, b.content_item_id], null));
  perform 1 from app.grid_tiles where id in (a.id, b.id) order by id for update;
  a := app.grid_tile(v.id, p_tile_id);
  b := app.grid_tile(v.id, p_other_id);
  perform app.grid_require_movable(a);
  perform app.grid_require_movable(b);
  v_a := app.grid_tile_media_ids(a);
  v_b := app.grid_tile_media_ids(b);
  if (a.content_item_id is null and cardinality(v_b) = 0) or (b.content_item_id is null and cardinality(v_a) = 0) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('otherTileId', 'media_required',
      'a placeholder needs at least one media item; the other tile has none')), 'A placeholder cannot be left without media.');
  end if;
  if a.content_item_id is null then
    perform app.grid_set_placeholder_media(a, v_b);
  else
    perform api.update_content(a.content_item_id, jsonb_build_object('mediaIds', to_jsonb(v_b)));
  end if;
  if b.content_item_id is null then
    perform app.grid_set_placeholder_media(b, v_a);
  else
    perform api.update_content(b.content_item_id, jsonb_build_object('mediaIds', to_jsonb(v_a)));
  end if;
  -- The cover travels with its media.
  update app.grid_tiles x set cover_media_id = y.cover_media_id, cover_frame_ms = y.cover_frame_ms
  from (values (a.id, b.cover_media_id, b.cover_frame_ms), (b.id, a.cover_media_id, a.cover_frame_ms)) y (id, cover_media_id, cover_frame_ms)
  where x.id = y.id;
  return jsonb_build_object('tiles', jsonb_build_array(app.grid_tile_answer(a.id), app.grid_tile_answer(b.id)));
end
$$;
comment on function api.swap_grid_tile_media(uuid, uuid, uuid) is 'Serves POST /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId}/swap-media (swapGridTileMedia_v1). Exchanges the media (and covers) of two unpublished tiles of the grid; an edition''s media change goes through api.update_content (platform rules, versions). Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_PUBLISHED, 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';

create function api.set_grid_tile_cover(p_integration_id uuid, p_tile_id uuid, p_media_id uuid, p_frame_ms int) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
  m app.media_items;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  t := app.grid_tile(v.id, p_tile_id, true);
  perform app.grid_require_movable(t);
  if not (p_media_id = any (app.grid_tile_media_ids(t))) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('mediaId', 'not_in_tile', 'the cover is one of the tile''s media items')),
      'The cover must be one of the tile''s media items.');
  end if;
  select * into m from app.media_items where id = p_media_id;
  if p_frame_ms is not null and m.type <> 'video' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('frameAtMs', 'not_video', 'a frame time needs a video cover')),
      'A frame time needs a video cover.');
  end if;
  if p_frame_ms is not null and m.duration_ms is not null and p_frame_ms > m.duration_ms then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('frameAtMs', 'beyond_duration',
      format('the video lasts %s ms', m.duration_ms))), 'The frame time is after the end of the video.');
  end if;
  update app.grid_tiles set cover_media_id = p_media_id, cover_frame_ms = p_frame_ms where id = t.id;
  return app.grid_tile_answer(t.id);
end
$$;
comment on function api.set_grid_tile_cover(uuid, uuid, uuid, int) is 'Serves PUT /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId}/cover (setGridTileCover_v1). Chooses which of the tile''s media represents it, and for a video the frame time. Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_PUBLISHED, 400 VALIDATION_FAILED (not_in_tile, not_video, beyond_duration).';

create function api.promote_grid_tile(p_integration_id uuid, p_tile_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.integrations;
  t app.grid_tiles;
  n app.grid_tiles;
  v_content jsonb;
  v_item uuid;
begin
  perform app.require_role('editor');
  v := app.grid_integration(p_integration_id);
  perform app.grid_lock(v.id);
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
  perform app.grid_place_edition(i) from app.content_items i where i.id = v_item;
  select * into n from app.grid_tiles where content_item_id = v_item;
  delete from app.grid_tiles where id = n.id;
  update app.grid_tiles set content_item_id = v_item, position_key = coalesce(n.position_key, position_key)
  where id = t.id;
  delete from app.grid_tile_media where tile_id = t.id;
  return jsonb_build_object('tile', app.grid_tile_answer(t.id), 'content', v_content);
end
$$;
comment on function api.promote_grid_tile(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/integrations/{id}/grid/tiles/{tileId}/promote (promoteGridTile_v1). Turns a placeholder into a scheduled post of the channel through api.create_content (intent schedule: platform rules, versions, publish job, review rules); the placeholder becomes the edition''s tile, placed by its time. Requires the editor role; 404 NOT_FOUND, 400 GRID_TILE_NOT_PLACEHOLDER, 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';

-- App helpers are granted to the roles that call them.
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_proc p
           where p.pronamespace = 'app'::regnamespace and p.proname like 'grid\_%' loop
    execute format('grant execute on function %s to pressroom_api, pressroom_definer, pressroom_worker', f);
  end loop;
end
$$;
alter function app.tg_content_items_grid_tile() owner to pressroom_definer;
alter function app.grid_lock(uuid) owner to pressroom_definer;
grant execute on function app.tg_content_items_grid_tile() to pressroom_api, pressroom_worker;

select app.harden_api_functions();
