-- Reviews, part 4: the review lifecycle of content and the content list's
-- review filters. Re-creates three functions of the content area with the
-- lines marked "reviews" added (the lead re-applies them on top of any other
-- version at merge):
--   app.content_list_item_json  reviewLifecycle from app.content_review_lifecycle_of (was: from the status only)
--   api.list_content            the reviewLifecycle* filters ($8, app.content_review_lifecycle_matches)

-- The review lifecycle of an edition, from its status and its latest review item:
--   phase       none | review | decided
--   state       not_requested | pending | approved | changes_requested
--   actor       who it waits on: none | team | client | mixed
--   nextAction  none | decide | edit | submit | schedule
--   blocker     none | review_pending | changes_requested | review_required
--   clientReview {batchId: the review, itemId: the item} when its review has client reviewers
create function app.content_review_lifecycle_of(i app.content_items) returns jsonb
language sql stable as $$
  with it as (
    select ri.*, exists (select 1 from app.review_links l where l.review_id = ri.review_id) as has_clients
    from app.review_items ri where ri.content_id = i.id and ri.state <> 'removed'
    order by ri.created_at desc, ri.id desc limit 1
  ), x as (
    select it.*, case
        when i.status = 'pending_approval' then 'pending'
        when i.status = 'rejected' then 'changes_requested'
        when it.state = 'approved' and it.approved_version = i.version then 'approved'
        else 'not_requested' end as lc_state,
      app.review_policy(i.workspace_id) = 'required' as required
    from (select 1) one left join it on true
  ), y as (
    select x.*, case
        when lc_state = 'pending' then 'review_pending'
        when lc_state = 'changes_requested' then 'changes_requested'
        when lc_state <> 'approved' and required and i.status = 'draft' then 'review_required'
        else 'none' end as blocker
    from x
  )
  select jsonb_build_object(
    'phase', case lc_state when 'pending' then 'review' when 'not_requested' then 'none' else 'decided' end,
    'state', lc_state,
    'blocksPublishing', blocker <> 'none',
    'actor', case when lc_state <> 'pending' or cardinality(coalesce(waiting_on, '{}')) = 0 then 'none'
                  when not exists (select 1 from unnest(waiting_on) k where k like 'client:%') then 'team'
                  when not exists (select 1 from unnest(waiting_on) k where k like 'user:%') then 'client'
                  else 'mixed' end,
    'nextAction', case blocker when 'review_pending' then 'decide' when 'changes_requested' then 'edit'
                    when 'review_required' then 'submit'
                    else case when lc_state = 'approved' and i.status = 'draft' then 'schedule' else 'none' end end,
    'blocker', blocker,
    'clientReview', case when has_clients then jsonb_build_object('batchId', review_id, 'itemId', id) end)
  from y
$$;
comment on function app.content_review_lifecycle_of(app.content_items) is 'The reviewLifecycle of an edition (content list and detail): phase, state, blocksPublishing, actor, nextAction, blocker and clientReview (batchId = review, itemId = item, when the review has client reviewers), from its status, its latest review item and the workspace''s review policy.';
grant execute on function app.content_review_lifecycle_of(app.content_items) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.content_review_lifecycle_matches(i app.content_items, p_filters jsonb) returns boolean
language sql stable as $$
  select coalesce(bool_and(case f.key
      when 'batchId' then lc -> 'clientReview' ->> 'batchId' = f.value #>> '{}'
      when 'itemId' then lc -> 'clientReview' ->> 'itemId' = f.value #>> '{}'
      else lc -> f.key = f.value end), true)
  from (select app.content_review_lifecycle_of(i) as lc) l, jsonb_each(p_filters) f
$$;
comment on function app.content_review_lifecycle_matches(app.content_items, jsonb) is 'Whether an edition''s review lifecycle matches every given filter (phase, state, actor, nextAction, blocker, blocksPublishing, batchId, itemId).';
grant execute on function app.content_review_lifecycle_matches(app.content_items, jsonb) to pressroom_api, pressroom_definer, pressroom_worker;

-- reviews: reviewLifecycle from app.content_review_lifecycle_of (the rest as in db/schema.sql).
create or replace function app.content_list_item_json(i app.content_items, r app.content_roots, p_platform text, p_media_count integer, p_recurring jsonb, p_review boolean)
returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', i.id,
    'rootId', i.root_id,
    'integrationId', i.integration_id,
    'platform', p_platform,
    'kind', i.kind,
    'status', i.status,
    'workflowStatus', app.content_workflow_status(i.status, i.scheduled_at),
    'scheduledAt', i.scheduled_at,
    'intendedPublishAt', i.intended_publish_at,
    'caption', coalesce(i.caption, r.caption),
    'title', r.title,
    'organizationalTitle', r.organizational_title,
    'campaignId', r.campaign_id,
    'phaseId', r.phase_id,
    'mediaCount', coalesce(p_media_count, 0),
    'version', i.version,
    'sentAt', i.sent_at,
    'permalink', i.permalink,
    'error', i.error,
    'createdAt', i.created_at,
    'updatedAt', i.updated_at,
    'recurringMetadata', p_recurring,
    'publishing', app.publishing_json(i.id))
  || case when p_review then jsonb_build_object('reviewLifecycle', app.content_review_lifecycle_of(i)) else '{}' end  -- reviews
$$;

-- reviews: api.list_content with the reviewLifecycle* filters (the lines marked "reviews").
create or replace function api.list_content(p_query jsonb)
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
  -- reviews: the reviewLifecycle* filters (db/migrations/current/10c-content-review-filters.sql)
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
    -- serves them); the workflow predicate then splits scheduled/publishing.
    v_live := v_live || format(' and i.status = any (%L::text[]) and app.content_workflow_status(i.status, i.scheduled_at) = any ($4)',
      array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                   when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
            from unnest(v_workflow) w));
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
  execute format('select count(*) from app.content_items i where %s', v_where)
  into v_total
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$function$;;
comment on function api.list_content(jsonb) is 'Serves GET /v1/workspaces/{workspaceId}/content (listContent_v1). A page of editions filtered by status, workflow statuses, integration and the reviewLifecycle* filters (any of them opts pending_approval and rejected content in and adds reviewLifecycle), sorted as asked; with since, the editions changed after it and tombstones of those deleted after it. Returns items and meta (limit, offset, total, hasMore). Requires the viewer role.';

select app.harden_api_functions();
