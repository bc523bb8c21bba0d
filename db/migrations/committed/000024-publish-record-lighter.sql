--! Previous: sha1:8c5304028b9ef5704368d38a3d95d6bd11225b33
--! Hash: sha1:d72074f4a841c02c880108a6017d7c48a932beeb
--! Message: publish record lighter

--! split: 10-publish-record-lighter.sql
-- The publish engine writes less per sent edition.
--
-- Profile of the engine (bench/README.md, scenario `publishing`): recording a
-- published outcome cost about 0.6 ms of PostgreSQL time per edition, the
-- grid tile placed at commit another 0.1 ms, and the claim's foreign-key
-- checks about 0.13 ms. Three parts below.

------------------------------------------------------------------------------
-- 1. The freeze at send writes no version
------------------------------------------------------------------------------
-- The move to sent freezes what was published: the status machine copies the
-- root's caption into an edition without its own and sets own_media
-- (app.tg_content_items_status_machine), and content_items_40_freeze_media
-- copies the root's media. The effective content is the same before and
-- after, yet the changed caption and own_media fired
-- content_items_60_record_version_update, which built the edition's snapshot
-- and compared it with its last version to find nothing new. The trigger's
-- WHEN now leaves that freeze out; any other change of caption, thread,
-- settings or own media is versioned as before (and a sent edition's content
-- cannot change: the status machine refuses it).

drop trigger content_items_60_record_version_update on app.content_items;
create trigger content_items_60_record_version_update
  after update on app.content_items
  for each row
  when (new.deleted_at is null and (
    (old.caption is distinct from new.caption
      -- the freeze at send: null (the root's caption) becomes the root's caption
      and not (old.caption is null and new.status = 'sent' and old.status <> 'sent'))
    or old.thread <> new.thread
    or old.settings <> new.settings
    -- the freeze at send: the root's media become the edition's own
    or (old.own_media <> new.own_media and not (new.status = 'sent' and old.status <> 'sent'))))
  execute function app.tg_content_items_record_version();

------------------------------------------------------------------------------
-- 2. The grid tiles of a batch of sent editions in one pass
------------------------------------------------------------------------------
-- Each sent edition queued its own deferred grid trigger
-- (content_items_70_grid_tile), which at commit read the edition again and
-- took its tile's key off (or inserted a published tile) one by one.
-- app.publish_record_batch now does that for the whole batch in one pass
-- (app.grid_mark_sent), and the trigger's WHEN skips the rows of that one
-- UPDATE (pressroom.grid_sent_batch, set around it). Every other writer of a
-- sent edition (app.publish_record, a resolved confirmation) keeps the
-- deferred trigger.
create or replace function app.grid_mark_sent(p_ids uuid[])
 returns void
 language plpgsql
 security definer
 set search_path to 'pg_catalog', 'app'
as $function$
declare
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
  join app.content_items i on i.id = u.id
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
    insert into app.grid_tiles (organization_id, workspace_id, integration_id, content_item_id, created_by)
    select i.organization_id, i.workspace_id, i.integration_id, i.id, i.created_by
    from unnest(v_add) u (id) join app.content_items i on i.id = u.id
    order by i.id;
  end if;
end
$function$;
alter function app.grid_mark_sent(uuid[]) owner to pressroom_definer;
comment on function app.grid_mark_sent(uuid[]) is 'The grid tiles of sent editions, in one pass: what app.grid_place_edition does for each (a published tile, without a key, for a live post edition of a feed-grid channel; none otherwise). Used by app.publish_record_batch for the editions it marks sent, whose deferred grid trigger it skips.';
revoke all on function app.grid_mark_sent(uuid[]) from public;
grant execute on function app.grid_mark_sent(uuid[]) to pressroom_worker;

drop trigger content_items_70_grid_tile on app.content_items;
create constraint trigger content_items_70_grid_tile
  after insert or update of status, scheduled_at, deleted_at, integration_id, kind on app.content_items
  deferrable initially deferred
  for each row
  -- Rows that app.publish_record_batch marks sent get their tiles from app.grid_mark_sent.
  when (new.status <> 'sent' or current_setting('pressroom.grid_sent_batch', true) is distinct from 'on')
  execute function app.tg_content_items_grid_tile();

create or replace function app.publish_record_batch(p_outcomes jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
declare
  v_sent uuid[];
  v_items uuid[];
  v_out jsonb[];
begin
  -- p_outcomes: [{"attemptId", "outcome", "error", "platformPostId", "permalink"}].
  -- Published outcomes: their editions locked by id (as the claim locks them), then their attempts.
  perform 1 from app.content_items i
  where i.id in (select a.content_item_id from jsonb_array_elements(p_outcomes) e
                 join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
                 where e ->> 'outcome' = 'published')
  order by i.id for update;
  -- The common case: an attempt in flight of an edition still scheduled (once per attempt).
  select coalesce(array_agg(a.id order by a.content_item_id), '{}') into v_sent
  from app.publish_attempts a
  join app.content_items i on i.id = a.content_item_id
  where a.id in (select (e ->> 'attemptId')::uuid from jsonb_array_elements(p_outcomes) e where e ->> 'outcome' = 'published'
                 group by 1 having count(*) = 1)
    and a.finished_at is null and i.deleted_at is null and i.status = 'scheduled';
  perform 1 from app.publish_attempts a where a.id = any (v_sent) order by a.content_item_id for update;

  if cardinality(v_sent) > 0 then
    -- Read by the WHEN of the deferred grid trigger, for this UPDATE only.
    perform set_config('pressroom.grid_sent_batch', 'on', true);
    with o as (
      select (e ->> 'attemptId')::uuid as id, e ->> 'error' as error, e ->> 'platformPostId' as post_id, e ->> 'permalink' as permalink
      from jsonb_array_elements(p_outcomes) e
      where (e ->> 'attemptId')::uuid = any (v_sent)
    ),
    a as (
      update app.publish_attempts a set finished_at = clock_timestamp(), outcome = 'published', error = o.error,
        platform_post_id = o.post_id, permalink = o.permalink
      from o where a.id = o.id
      returning a.content_item_id, o.post_id, o.permalink
    ),
    i as (
      update app.content_items i set status = 'sent', sent_at = clock_timestamp(), permalink = a.permalink,
        platform_post_id = a.post_id, error = null
      from a where i.id = a.content_item_id
      returning i.id
    ),
    s as (
      update app.publishing_states s set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
      from i where s.content_item_id = i.id
    )
    -- (s, a data-modifying part, runs to completion whether read or not.)
    select coalesce(array_agg(i.id order by i.id), '{}') into v_items from i;
    perform set_config('pressroom.grid_sent_batch', 'off', true);
    -- Their grid tiles, in one pass (the deferred grid trigger skipped them).
    perform app.grid_mark_sent(v_items);
  end if;

  -- Answers in the order of the outcomes; the others recorded one by one, by edition.
  with o as (
    select e, n, a.content_item_id
    from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
    left join app.publish_attempts a on a.id = (e ->> 'attemptId')::uuid
  ),
  r as (
    select n, jsonb_build_object('attemptId', e ->> 'attemptId', 'contentId', content_item_id)
      || case when (e ->> 'attemptId')::uuid = any (v_sent) then jsonb_build_object('action', 'done', 'status', 'sent')
              else app.publish_record((e ->> 'attemptId')::uuid, e ->> 'outcome', e ->> 'error', e ->> 'platformPostId', e ->> 'permalink') end
      as answer
    from (select * from o order by content_item_id, n offset 0) o
  )
  select array_agg(answer order by n) into v_out from r;
  return coalesce(to_jsonb(v_out), '[]');
end
$function$;
comment on function app.publish_record_batch(jsonb) is 'Records a batch of publish outcomes in one statement: published outcomes of attempts in flight of editions still scheduled together (editions locked by id, then attempts; one UPDATE each of the attempts, the editions and their publishing states, then their grid tiles in one pass through app.grid_mark_sent, the deferred grid trigger skipping those rows), every other outcome through app.publish_record (failed, retries, awaiting confirmation, late or settled attempts); returns one result per outcome, in the order given.';

------------------------------------------------------------------------------
-- 3. The engine's own rows check one parent, not three
------------------------------------------------------------------------------
-- Every claim inserts an attempt and a publishing state per edition, and the
-- sandbox platform a post: each row checked its organization, its workspace
-- and its edition (or channel) by foreign key, about 20 microseconds each. The
-- organization and workspace columns are copied by the engine from the edition
-- (or the channel) in the same statement, only the engine writes these tables
-- (pressroom_worker, pressroom_definer), and deleting an organization or a
-- workspace deletes them through their edition or channel (on delete cascade).
-- Their own checks of the organization and the workspace are dropped; the
-- pgTAP file 77-publish-record-sent shows the columns match and the cascade.
alter table app.publish_attempts
  drop constraint publish_attempts_organization_id_fkey,
  drop constraint publish_attempts_workspace_id_fkey;
alter table app.publishing_states
  drop constraint publishing_states_organization_id_fkey,
  drop constraint publishing_states_workspace_id_fkey;
alter table app.sandbox_posts
  drop constraint sandbox_posts_organization_id_fkey,
  drop constraint sandbox_posts_workspace_id_fkey;


------------------------------------------------------------------------------
-- 4. The engine's batch statements keep their plans as the tables fill
------------------------------------------------------------------------------
-- Their statements start from a batch's ids and find every row by key. A
-- generic plan made while the tables held a few thousand rows (or after
-- autovacuum analyzed them in the middle of a burst) could instead merge or
-- hash against a whole index of app.content_items or app.grid_tiles, a cost
-- that grows with the table: in the publishing bench the claim's grouping
-- statement took 0.17 ms per edition instead of 0.015, and the grid tiles'
-- update 0.53 ms instead of 0.05, in some runs. Merge and hash joins are off
-- for these functions and what they call (function settings hold for nested
-- calls and triggers), as sequential scans already are.
alter function app.publish_claim_batch(jsonb, text[]) set enable_hashjoin = off;
alter function app.publish_claim_batch(jsonb, text[]) set enable_mergejoin = off;
alter function app.publish_record_batch(jsonb) set enable_hashjoin = off;
alter function app.publish_record_batch(jsonb) set enable_mergejoin = off;
alter function app.sandbox_receive_posts(jsonb) set enable_hashjoin = off;
alter function app.sandbox_receive_posts(jsonb) set enable_mergejoin = off;
alter function app.grid_mark_sent(uuid[]) set enable_seqscan = off;
alter function app.grid_mark_sent(uuid[]) set enable_hashjoin = off;
alter function app.grid_mark_sent(uuid[]) set enable_mergejoin = off;
