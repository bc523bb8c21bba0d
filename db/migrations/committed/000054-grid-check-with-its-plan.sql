--! Previous: sha1:fe60d01abbdcff59aedc4d9ebde6cf9291655980
--! Hash: sha1:815f25d1883cf43ed291d805ed51054cd198a4b7
--! Message: grid check with its plan

--! split: 01-current.sql
-- A grid check with the plan it had (review of 000052-joins-pair-the-workspace.sql).
-- app.grid_in_time_order joined a tile, its edition, the channel's other tiles and their editions
-- in one query. With workspace_id paired on every join (000052), PostgreSQL underestimated the
-- join (each extra equality multiplies the estimated selectivity) and looked the tile's own
-- edition up by workspace_id alone, for every other tile of the channel: placing a burst of
-- editions became quadratic (tests/api/recurring.test.ts, cancelling a series onward after ten
-- years were materialized: 3 s before 000052, 24 s after, 23 s of it in one COMMIT's grid
-- triggers). The tile and its edition are now read first, by the tile's key; the other tiles are
-- read by channel (the key grid_tiles_position_key, which leads with integration_id), and each
-- one's edition by its key: the same answer, a plan that does not depend on the estimate.
create or replace function app.grid_in_time_order(p_tile_id uuid) returns boolean
  language plpgsql stable as $$
#variable_conflict use_column
declare
  v record;
begin
  select me.workspace_id, me.integration_id, me.position_key, mi.scheduled_at into v
  from app.grid_tiles me
  join app.content_items mi on mi.id = me.content_item_id and mi.workspace_id = me.workspace_id
  where me.id = p_tile_id;
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
$$;
