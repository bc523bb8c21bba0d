--! Previous: sha1:95538a7448fabb33d0822cb6154bd1bc46bd064c
--! Hash: sha1:42731499052c835e639fe794930e529e6b19def4
--! Message: the engine by workspace on one postgresql

--! split: 01-current.sql
-- The publish engine on one PostgreSQL, after 000065 named the workspace in its statements.
--
-- The publishing bench (shape "at once, 1 worker", 5,000 editions) fell from 1,000-1,080 to
-- 160-310 editions per second, and PostgreSQL's CPU per edition rose from 1.2-1.3 to 3.6-8.5 ms
-- (bench/README.md). auto_explain: with `workspace_id = <the workspace>` beside the key, the
-- generic plans of the engine's batch functions (made while the tables were nearly empty) took
-- the single-column index publish_attempts_workspace_id_idx: each look-up of an edition's
-- attempts walked every attempt of the workspace filtering on the edition, and the record's
-- UPDATE of the attempts scanned them all as its outer side (200 rows, then 800, 2,100, 2,400
-- rows per batch during the burst). The same trap as the grid's tiles (000063).
--
-- * publish_attempts is indexed by (workspace_id, content_item_id) instead of workspace_id
--   alone: a look-up of an edition's attempts in its workspace matches it on both columns.
--   (With no index led by workspace_id, the generic plans walked the primary key (id,
--   workspace_id) on its second column instead.)
-- * The record finds the workspace's attempts by their ids as an array (= any) beside the
--   workspace, never one lateral look-up per outcome: the primary key is then the one index
--   whose leading columns both match (one look-up per outcome matched the new index on the
--   workspace alone and filtered on the id); the editions of the attempts come from that read.
-- * The record's three UPDATEs name their rows by the arrays of ids read first (= any), beside
--   the workspace, so the key's index is the one that fits.
-- With these, the same bench gives 736 and 936 editions per second at 1.94 and 1.51 ms (before
-- 000065: 997 to 1,121 at 1.19 to 1.27 ms), and the webhook shape is back within the spread
-- (bench/README.md, "The engine by workspace").

drop index app.publish_attempts_workspace_id_idx;
create index publish_attempts_workspace_item_idx on app.publish_attempts (workspace_id, content_item_id);

CREATE OR REPLACE FUNCTION app.publish_record_batch(p_outcomes jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET enable_hashjoin TO 'off'
 SET enable_mergejoin TO 'off'
AS $function$
declare
  v_ws uuid;
  v_sent uuid[];
  v_sent_items uuid[];  -- the editions of v_sent
  v_items uuid[];
  v_answers jsonb := '{}';  -- by the outcome's place in p_outcomes
  v_contents jsonb;
  v_ids uuid[];         -- the workspace's attempts
  v_pub uuid[];         -- ... with a published outcome
  v_item_of jsonb;      -- the edition of each, by attempt id
  v_clock timestamptz;
begin
  -- p_outcomes: [{"attemptId", "workspaceId", "outcome", "error", "platformPostId", "permalink"}].
  if exists (select 1 from jsonb_array_elements(p_outcomes) e where e ->> 'workspaceId' is null) then
    raise exception 'publish_record_batch: every outcome names its workspace (workspaceId)' using errcode = '22023';
  end if;
  -- Workspace by workspace (each statement stays in one workspace).
  for v_ws in select distinct (e ->> 'workspaceId')::uuid from jsonb_array_elements(p_outcomes) e order by 1 loop
    -- Published outcomes: their editions locked by id (as the claim locks them), then their attempts.
    -- (Each statement starts from the outcomes and looks rows up by key, one lateral look-up
    -- each: a generic plan cannot walk a whole index of a table that grows during a burst.)
    -- (Attempts are found by their ids as an array, = any, beside the workspace: the primary key
    -- (id, workspace_id) is then the one index that fits, however few attempts the statistics saw.)
    v_ids := array(select (e ->> 'attemptId')::uuid from jsonb_array_elements(p_outcomes) e where (e ->> 'workspaceId')::uuid = v_ws);
    v_pub := array(select (e ->> 'attemptId')::uuid from jsonb_array_elements(p_outcomes) e
                   where (e ->> 'workspaceId')::uuid = v_ws and e ->> 'outcome' = 'published');
    select coalesce(jsonb_object_agg(a.id::text, a.content_item_id), '{}') into v_item_of
    from app.publish_attempts a where a.workspace_id = v_ws and a.id = any (v_ids);
    perform 1 from app.content_items i
    where i.workspace_id = v_ws
      and i.id = any (array(select (v_item_of ->> x::text)::uuid from unnest(v_pub) x where v_item_of ? x::text))
    order by i.id for update;
    -- The common case: an attempt in flight of an edition still scheduled (once per attempt).
    select coalesce(array_agg(a.id order by a.content_item_id), '{}'), coalesce(array_agg(a.content_item_id order by a.content_item_id), '{}')
    into v_sent, v_sent_items
    from app.publish_attempts a
    cross join lateral (select i.deleted_at, i.status from app.content_items i
                        where i.workspace_id = v_ws and i.id = a.content_item_id offset 0) i
    where a.workspace_id = v_ws and a.id = any (array(select x from unnest(v_pub) x group by x having count(*) = 1))
      and a.finished_at is null and i.deleted_at is null and i.status = 'scheduled';
    perform 1 from app.publish_attempts a where a.workspace_id = v_ws and a.id = any (v_sent) order by a.content_item_id for update;

    if cardinality(v_sent) > 0 then
      -- Read by the WHEN of the deferred grid trigger, for this UPDATE only.
      perform set_config('pressroom.grid_sent_batch', 'on', true);
      v_clock := clock_timestamp();
      with o as (
        select (e ->> 'attemptId')::uuid as id, e ->> 'error' as error, e ->> 'platformPostId' as post_id, e ->> 'permalink' as permalink
        from jsonb_array_elements(p_outcomes) e
        where (e ->> 'attemptId')::uuid = any (v_sent)
      ),
      a as (
        update app.publish_attempts a set finished_at = v_clock, outcome = 'published', error = o.error,
          platform_post_id = o.post_id, permalink = o.permalink
        from o where a.workspace_id = v_ws and a.id = any (v_sent) and a.id = o.id
        returning a.content_item_id, o.post_id, o.permalink
      ),
      i as (
        update app.content_items i set status = 'sent', sent_at = v_clock, permalink = a.permalink,
          platform_post_id = a.post_id, error = null
        from a where i.workspace_id = v_ws and i.id = any (v_sent_items) and i.id = a.content_item_id
        returning i.id
      ),
      s as (
        update app.publishing_states s set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
        from i where s.workspace_id = v_ws and s.content_item_id = any (v_sent_items) and s.content_item_id = i.id
      )
      -- (s, a data-modifying part, runs to completion whether read or not.)
      select coalesce(array_agg(i.id order by i.id), '{}') into v_items from i;
      perform set_config('pressroom.grid_sent_batch', 'off', true);
      -- Their grid tiles, in one pass (the deferred grid trigger skipped them).
      perform app.grid_mark_sent(v_ws, v_items);
    end if;

    -- The edition of each of the workspace's outcomes (by its place in p_outcomes).
    select coalesce(jsonb_object_agg(x.n::text, v_item_of -> (x.e ->> 'attemptId')), '{}') into v_contents
    from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
    where (x.e ->> 'workspaceId')::uuid = v_ws and v_item_of ? (x.e ->> 'attemptId');
    -- The workspace's answers; the others recorded one by one, by edition. (This statement reads
    -- no table: app.publish_record reads and writes in statements of its own.)
    v_answers := v_answers || (
      select coalesce(jsonb_object_agg(o.n::text, jsonb_build_object('attemptId', o.e ->> 'attemptId', 'contentId', v_contents -> o.n::text)
          || case when (o.e ->> 'attemptId')::uuid = any (v_sent) then jsonb_build_object('action', 'done', 'status', 'sent')
                  else app.publish_record(v_ws, (o.e ->> 'attemptId')::uuid, o.e ->> 'outcome', o.e ->> 'error', o.e ->> 'platformPostId',
                                          o.e ->> 'permalink') end), '{}')
      from (select x.e, x.n from jsonb_array_elements(p_outcomes) with ordinality x (e, n)
            where (x.e ->> 'workspaceId')::uuid = v_ws
            order by (v_contents ->> x.n::text)::uuid, x.n offset 0) o);
  end loop;
  -- Answers in the order of the outcomes.
  return (select coalesce(jsonb_agg(v_answers -> n::text order by n), '[]')
          from generate_series(1, jsonb_array_length(p_outcomes)) n);
end
$function$;
