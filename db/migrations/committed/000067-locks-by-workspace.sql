--! Previous: sha1:26f6472a417af4a38a2370249423c06fc31d3217
--! Hash: sha1:37cfe3c1c19e4614b2dc7a02a0cd1b1e14740384
--! Message: locks by workspace

--! split: 01-current.sql
-- Locks by workspace: statements that lock rows of a workspace table name its workspace.
--
-- Citus runs a statement that locks rows (FOR UPDATE, FOR SHARE, ...) only when it reads one
-- shard, which it knows from `workspace_id = <value>`; the statements below found their rows by
-- id, by a parent's id or by a column of a row in hand, and were refused on the cluster (`could
-- not run distributed query with FOR UPDATE/SHARE commands`, found by the content test run there
-- and by a text search of the functions for locking statements without workspace_id). Each now
-- pairs workspace_id with the row's own workspace (the parameter row's, the trigger's new row's,
-- or the row read before it), the same rows on one PostgreSQL. The triggers on an edition's media
-- list and on campaign phases read the edition, the media item and the campaign by workspace too
-- (a trigger on a shard may read only rows on its node), and app.review_revoke reads the
-- approver's key before its statement (a statement sent to a shard cannot call a helper that
-- reads tables).
--
-- Left for later (their callers pass only an id): the review that app.review_advance and
-- app.review_end lock, app.review_complete_if_done, app.materialize_series, app.inbox_action_claim and
-- app.inbox_action_record, app.grid_lock_editions, app.grid_lock_scheduled, app.grid_tile,
-- app.credentials_put, app.campaign_phase_for_update and app.webhook_record_one's delivery
-- (docs/citus.md).

CREATE OR REPLACE FUNCTION app.cancel_occurrence(o app.recurring_occurrences)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  v_cancelled uuid[];
  v_kept uuid[];
begin
  if o.root_id is not null then
    perform 1 from app.content_items where workspace_id = o.workspace_id and root_id = o.root_id and deleted_at is null for update;
    v_cancelled := array(select id from app.content_items
                         where root_id = o.root_id and deleted_at is null and status in ('draft', 'scheduled') order by id);
    update app.content_items set status = 'cancelled' where id = any (v_cancelled);
    v_kept := array(select id from app.content_items
                    where root_id = o.root_id and deleted_at is null and status not in ('cancelled') order by id);
  end if;
  update app.recurring_occurrences set status = 'cancelled', cancelled_at = now() where id = o.id;
  return jsonb_build_object('cancelled', to_jsonb(coalesce(v_cancelled, '{}')), 'kept', to_jsonb(coalesce(v_kept, '{}')));
end
$function$;

CREATE OR REPLACE FUNCTION app.review_advance(p_review_id uuid, p_item_id uuid)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  r app.reviews;
  it app.review_items;
  v_outcome text;
  v app.content_items;
  v_last int;
  v_opened boolean := false;
begin
  select * into r from app.reviews where id = p_review_id for update;
  select * into it from app.review_items where workspace_id = r.workspace_id and id = p_item_id for update;
  if r.status <> 'active' or it.state <> 'pending' or not it.open then
    return;
  end if;
  v_last := jsonb_array_length(r.stages) - 1;
  loop
    v_outcome := app.review_stage_outcome(r, it.id, it.current_stage);
    exit when v_outcome is null;
    if v_outcome = 'changes_requested' then
      update app.review_items set state = 'changes_requested', open = false, decided_at = now()
      where id = it.id returning * into it;
      perform app.review_move_content(it.content_id, 'rejected');
      perform app.review_activity_add(r, it.id, 'system', 'changes_requested', null, jsonb_build_object('stage', it.current_stage));
      exit;
    end if;
    if it.current_stage >= v_last then
      select * into v from app.content_items where workspace_id = it.workspace_id and id = it.content_id for update;
      update app.review_items set state = 'approved', open = false, decided_at = now(), approved_version = v.version
      where id = it.id returning * into it;
      if r.auto_schedule_on_approval and v.intended_publish_at > now() then
        perform app.review_move_content(v.id, 'scheduled', v.intended_publish_at);
      else
        perform app.review_move_content(v.id, 'draft');
      end if;
      perform app.review_activity_add(r, it.id, 'system', 'approved', null, jsonb_build_object('stage', it.current_stage));
      exit;
    end if;
    update app.review_items set current_stage = current_stage + 1, stage_opened_at = now()
    where id = it.id returning * into it;
    perform app.review_activity_add(r, it.id, 'system', 'stage_opened',
      null, jsonb_build_object('stage', it.current_stage, 'stageName', r.stages -> it.current_stage ->> 'name'));
    v_opened := true;
  end loop;
  perform app.review_item_refresh_waiting(it.id);
  if v_opened then
    -- The approvers of the stage that opened are asked (members' and clients' feeds).
    perform app.review_notify_waiting(r, 'review_requested', jsonb_build_object('itemId', it.id),
      (select waiting_on from app.review_items where id = it.id));
  end if;
  perform app.review_complete_if_done(r.id);
end
$function$;

CREATE OR REPLACE FUNCTION app.review_attachment_for(r app.reviews, p_item uuid, p_id uuid, p_lock boolean DEFAULT false)
 RETURNS app.review_attachments
 LANGUAGE plpgsql
AS $function$
declare
  a app.review_attachments;
begin
  if p_lock then
    select * into a from app.review_attachments where workspace_id = r.workspace_id and id = p_id and review_id = r.id and item_id = p_item for update;
  else
    select * into a from app.review_attachments where id = p_id and review_id = r.id and item_id = p_item;
  end if;
  if a.id is null then
    perform app.raise_not_found('attachment', p_id);
  end if;
  return a;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_end(p_review_id uuid, p_status text)
 RETURNS app.reviews
 LANGUAGE plpgsql
AS $function$
declare
  r app.reviews;
  it app.review_items;
begin
  select * into r from app.reviews where id = p_review_id for update;
  for it in select * from app.review_items where workspace_id = r.workspace_id and review_id = r.id and state = 'pending' and open for update loop
    update app.review_items set open = false, waiting_on = '{}' where id = it.id;
    if r.status = 'active' then
      if p_status = 'expired' then
        perform app.review_move_content(it.content_id, 'draft');
      else
        perform app.review_release_content(it);
      end if;
    end if;
  end loop;
  update app.reviews set status = p_status, completed_at = now(), completed_by = app.current_person_id()
  where id = r.id returning * into r;
  update app.review_links set revoked_at = coalesce(revoked_at, now()) where review_id = r.id;
  perform app.review_activity_add(r, null, 'system', p_status);
  return r;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_hold_content(p_item app.review_items)
 RETURNS app.review_items
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
begin
  select * into v from app.content_items where workspace_id = p_item.workspace_id and id = p_item.content_id and deleted_at is null for update;
  if v.id is null then
    perform app.raise_not_found('content', p_item.content_id);
  end if;
  if v.status not in ('draft', 'scheduled') then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can enter a review; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  update app.review_items set prior_status = v.status, prior_scheduled_at = v.scheduled_at,
    stage_opened_at = now(), current_stage = 0
  where id = p_item.id returning * into p_item;
  if v.status = 'scheduled' then
    -- Through draft: content_items_30_publish_job cancels the publish job
    -- (409 PUBLISHING_IN_PROGRESS while it runs); the time stays as intended time.
    perform app.review_move_content(v.id, 'draft', null, v.scheduled_at);
  end if;
  perform app.review_move_content(v.id, 'pending_approval');
  return p_item;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_item_for(r app.reviews, p_item_id uuid, p_lock boolean DEFAULT false)
 RETURNS app.review_items
 LANGUAGE plpgsql
AS $function$
declare
  it app.review_items;
begin
  if p_lock then
    select * into it from app.review_items where workspace_id = r.workspace_id and id = p_item_id and review_id = r.id for update;
  else
    select * into it from app.review_items where id = p_item_id and review_id = r.id;
  end if;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_link_item(l app.review_links, p_item_id uuid)
 RETURNS app.review_items
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  it app.review_items;
begin
  select * into it from app.review_items where workspace_id = l.workspace_id and id = p_item_id and review_id = l.review_id and state <> 'removed' for update;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_release_content(p_item app.review_items)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
declare
  v app.content_items;
begin
  select * into v from app.content_items where workspace_id = p_item.workspace_id and id = p_item.content_id for update;
  if v.status <> 'pending_approval' or v.deleted_at is not null then
    return;
  end if;
  if p_item.prior_status = 'scheduled' and p_item.prior_scheduled_at > now() then
    perform app.review_move_content(v.id, 'scheduled', p_item.prior_scheduled_at);
  else
    perform app.review_move_content(v.id, 'draft');
  end if;
end
$function$;

CREATE OR REPLACE FUNCTION app.review_revoke(r app.reviews, it app.review_items)
 RETURNS jsonb
 LANGUAGE plpgsql
AS $function$
declare
  d app.review_decisions;
  v_key text;
begin
  perform app.require_review_status(r, array['active']);
  -- The approver's key read first: a statement Citus sends to the workspace's shard cannot call a helper that reads tables.
  v_key := app.current_approver_key();
  select * into d from app.review_decisions
  where workspace_id = it.workspace_id and item_id = it.id and stage = it.current_stage and approver_key = v_key
    and revoked_at is null and superseded_at is null and it.state = 'pending' and it.open
  for update;
  if d.id is null then
    perform app.raise(409, 'NOTHING_TO_REVOKE', 'You have no decision on this item''s open stage to take back.',
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage));
  end if;
  update app.review_decisions set revoked_at = now() where workspace_id = d.workspace_id and id = d.id;
  perform app.review_activity_add(r, it.id, 'decision', 'revoked', null, jsonb_build_object('decisionId', d.id, 'stage', d.stage));
  perform app.review_item_refresh_waiting(it.id);
  return jsonb_build_object('decisionId', d.id);
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_media_link_not_binned()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_state text;
begin
  select state into v_state from app.media_items where workspace_id = new.workspace_id and id = new.media_id for share;
  if v_state = 'deleted' then
    perform app.raise(409, 'MEDIA_IN_BIN', 'This media item is in the bin; restore it before using it in content.',
      jsonb_build_object('mediaId', new.media_id));
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_media_folders_check_depth()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_parent app.media_folders;
begin
  if new.parent_id is null then
    return new;
  end if;
  if tg_op = 'UPDATE' and new.parent_id is not distinct from old.parent_id then
    return new;
  end if;
  if new.parent_id = new.id then
    perform app.raise(409, 'FOLDER_DEPTH_EXCEEDED', 'A folder cannot be moved into itself.',
      jsonb_build_object('folderId', new.id, 'parentId', new.parent_id));
  end if;
  select * into v_parent from app.media_folders where workspace_id = new.workspace_id and id = new.parent_id for update;
  if v_parent.id is null or v_parent.workspace_id <> new.workspace_id then
    perform app.raise(404, 'NOT_FOUND', 'No such parent folder in this workspace.',
      jsonb_build_object('parentId', new.parent_id));
  end if;
  if v_parent.parent_id is not null then
    perform app.raise(409, 'FOLDER_DEPTH_EXCEEDED',
      'Folders nest one level deep: the target folder is already a subfolder; choose a root folder or the root.',
      jsonb_build_object('parentId', new.parent_id, 'maxDepth', 2));
  end if;
  if tg_op = 'UPDATE' and exists (select 1 from app.media_folders c where c.parent_id = new.id) then
    perform app.raise(409, 'FOLDER_DEPTH_EXCEEDED',
      'This folder has subfolders, so it cannot become a subfolder itself; move its subfolders out first.',
      jsonb_build_object('folderId', new.id, 'parentId', new.parent_id, 'maxDepth', 2));
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_media_item_labels_check_label()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v_merged uuid;
begin
  select merged_into_id into v_merged from app.media_labels where workspace_id = new.workspace_id and id = new.label_id for key share;
  if v_merged is not null then
    perform app.raise(409, 'LABEL_MERGED', 'This label was merged into another; use that label.',
      jsonb_build_object('labelId', new.label_id, 'mergedIntoId', v_merged));
  end if;
  return new;
end
$function$;

CREATE OR REPLACE FUNCTION app.workbench_apply_content(p_row app.workbench_rows, p_body jsonb)
 RETURNS app.workbench_rows
 LANGUAGE plpgsql
AS $function$
declare
  v_root app.content_roots;
  v_planning jsonb := app.workbench_planning_body(p_body);
  v_channels uuid[] := coalesce(app.jsonb_uuids(p_body -> 'channels'), '{}');
  v_item app.content_items;
  v_id uuid;
  v_i int;
  v_platform text;
begin
  if p_row.content_root_id is not null then
    select * into v_root from app.content_roots where workspace_id = p_row.workspace_id and id = p_row.content_root_id and deleted_at is null for update;
  end if;
  if v_root.id is null then
    v_id := app.workbench_first_content(p_row.title, p_row.planned_at, p_body);
    if v_id is not null then
      update app.workbench_rows set content_root_id = v_id where id = p_row.id returning * into p_row;
    end if;
    return p_row;
  end if;
  if p_body ? 'channels' then
    perform app.raise_field_problems(app.workbench_channel_problems(p_body -> 'channels'), 'The request is not valid; see details.fields.');
  end if;

  if p_body ? 'caption' or p_body ? 'mediaIds' then
    perform api.update_content_root(v_root.id,
      (case when p_body ? 'caption' then jsonb_build_object('caption', p_body -> 'caption') else '{}' end)
      || (case when p_body ? 'mediaIds' then jsonb_build_object('mediaIds', coalesce(nullif(p_body -> 'mediaIds', 'null'), '[]')) else '{}' end));
  end if;
  if v_planning <> '{}' then
    perform app.raise_field_problems(app.planning_problems(v_planning, v_root.campaign_id), 'The request is not valid; see details.fields.');
    if v_planning ? 'campaignId' then
      update app.content_roots set campaign_id = (v_planning ->> 'campaignId')::uuid,
        phase_id = case when (v_planning ->> 'campaignId')::uuid is distinct from campaign_id then null else phase_id end,
        updated_at = now()
      where id = v_root.id returning * into v_root;
    end if;
    perform app.apply_root_taxonomy(v_root, v_planning);
  end if;
  if p_body ? 'channels' then
    -- Editions of channels no longer listed go (drafts and scheduled only).
    for v_item in select * from app.content_items
                  where root_id = v_root.id and deleted_at is null and integration_id <> all (v_channels)
                  order by created_at, id loop
      perform app.require_content_status(v_item, array['draft', 'scheduled']);
      perform api.delete_content(v_item.id);
    end loop;
    -- New channels get a draft edition, as api.create_content makes them.
    v_i := 0;
    foreach v_id in array v_channels loop
      if not exists (select 1 from app.content_items where root_id = v_root.id and integration_id = v_id and deleted_at is null) then
        select platform into v_platform from app.integrations where id = v_id;
        perform app.raise_field_problems(
          app.content_payload_problems(v_platform, jsonb_build_object('integrationId', v_id), 'channels.' || v_i || '.'),
          'The request is not valid; see details.fields.');
        perform app.create_edition(v_root, jsonb_build_object('integrationId', v_id), 'draft', null, p_row.planned_at);
      end if;
      v_i := v_i + 1;
    end loop;
  end if;
  if p_body ? 'scheduledAt' then
    -- The planned time goes to the editions: drafts' intended time, scheduled ones rescheduled.
    for v_item in select * from app.content_items where root_id = v_root.id and deleted_at is null order by created_at, id loop
      if v_item.status in ('draft', 'pending_approval') and v_item.intended_publish_at is distinct from p_row.planned_at then
        perform api.set_content_intended_publish_time(v_item.id, p_row.planned_at);
      elsif v_item.status = 'scheduled' and p_row.planned_at is not null and v_item.scheduled_at <> p_row.planned_at then
        perform api.schedule_content(v_item.id, p_row.planned_at);
      end if;
    end loop;
  end if;
  return p_row;
end
$function$;

CREATE OR REPLACE FUNCTION api.cancel_recurring_series(p_series_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  s app.recurring_series;
  v_from int;
  o app.recurring_occurrences;
  v_out jsonb;
  v_occurrences uuid[] := '{}';
  v_cancelled jsonb := '[]';
  v_kept jsonb := '[]';
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into s from app.recurring_series
  where id = p_series_id and workspace_id = v_ctx_workspace for update;
  if s.id is null then
    perform app.raise_not_found('recurring series', p_series_id);
  end if;
  perform app.require_series_version(s, p_body);
  if s.status = 'cancelled' then
    perform app.raise(409, 'SERIES_ALREADY_CANCELLED', 'This series is already cancelled.', jsonb_build_object('seriesId', s.id));
  end if;
  if p_body ->> 'effectiveOccurrenceId' is not null then
    select occurrence_index into v_from from app.recurring_occurrences
    where id = (p_body ->> 'effectiveOccurrenceId')::uuid and series_id = s.id;
    if v_from is null then
      perform app.raise(404, 'NOT_FOUND', 'No occurrence with this id in this series.',
        jsonb_build_object('seriesId', s.id, 'effectiveOccurrenceId', p_body -> 'effectiveOccurrenceId'));
    end if;
  else
    select min(occurrence_index) into v_from from app.recurring_occurrences
    where series_id = s.id and status = 'materialized' and not app.recurring_occurrence_published(root_id);
    v_from := coalesce(v_from, s.next_index);
  end if;
  for o in select * from app.recurring_occurrences
           where workspace_id = s.workspace_id and series_id = s.id and occurrence_index >= v_from and status <> 'cancelled'
           order by occurrence_index for update loop
    continue when (select app.recurring_occurrence_published(o.root_id));
    v_out := app.cancel_occurrence(o);
    v_occurrences := v_occurrences || o.id;
    v_cancelled := v_cancelled || (v_out -> 'cancelled');
    v_kept := v_kept || (v_out -> 'kept');
  end loop;
  update app.recurring_series set status = 'cancelled', cancelled_at = now(), version = version + 1
  where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', to_jsonb(v_occurrences), 'cancelledContentIds', v_cancelled, 'keptContentIds', v_kept);
end
$function$;

CREATE OR REPLACE FUNCTION api.cancel_recurring_occurrence(p_occurrence_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
declare
  o app.recurring_occurrences;
  s app.recurring_series;
  v_out jsonb;
  v_ctx_workspace uuid := app.current_workspace_id();  -- the request context, read once (docs/citus.md)
begin
  perform app.require_role('editor');
  select * into o from app.recurring_occurrences
  where id = p_occurrence_id and workspace_id = v_ctx_workspace;
  if o.id is null then
    perform app.raise_not_found('recurring occurrence', p_occurrence_id);
  end if;
  select * into s from app.recurring_series where workspace_id = o.workspace_id and id = o.series_id for update;
  select * into o from app.recurring_occurrences where workspace_id = o.workspace_id and id = o.id for update;
  perform app.require_series_version(s, p_body);
  if o.status = 'cancelled' then
    perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is already cancelled.',
      jsonb_build_object('occurrenceId', o.id));
  end if;
  if (select app.recurring_occurrence_published(o.root_id)) then
    perform app.raise(409, 'OCCURRENCE_ALREADY_PUBLISHED', 'This occurrence was already published; it cannot be cancelled.',
      jsonb_build_object('occurrenceId', o.id, 'rootId', o.root_id));
  end if;
  v_out := app.cancel_occurrence(o);
  update app.recurring_series set version = version + 1 where id = s.id returning * into s;
  return jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'seriesStatus', s.status,
    'cancelledOccurrenceIds', jsonb_build_array(o.id), 'cancelledContentIds', v_out -> 'cancelled',
    'keptContentIds', v_out -> 'kept');
end
$function$;

CREATE OR REPLACE FUNCTION app.webhook_record_one(p_delivery uuid, p_ok boolean, p_request jsonb, p_status integer, p_excerpt text, p_error text, p_duration_ms integer)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
declare
  d app.webhook_deliveries;
  s app.webhook_subscriptions;
  v_delay_ms bigint;
  v_paused boolean := false;
begin
  select * into d from app.webhook_deliveries x where x.id = p_delivery for update;
  if d.id is null or d.state <> 'pending' then
    return jsonb_build_object('recorded', false, 'subscriptionId', d.subscription_id);
  end if;
  select * into s from app.webhook_subscriptions x where x.workspace_id = d.workspace_id and x.id = d.subscription_id for update;
  insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, delivery_id, kind, attempt, request,
    response_status, response_excerpt, error, duration_ms)
  values (d.organization_id, d.workspace_id, d.subscription_id, d.id, 'attempt', d.attempts + 1, p_request, p_status,
    left(p_excerpt, 2048), left(p_error, 2048), p_duration_ms);
  if p_ok then
    update app.webhook_deliveries x set state = 'delivered', attempts = x.attempts + 1, last_status = p_status,
      last_error = null, delivered_at = now() where x.id = d.id;
    update app.webhook_subscriptions x set consecutive_failures = 0 where x.id = s.id and x.consecutive_failures <> 0;
    return jsonb_build_object('recorded', true, 'delivered', true, 'subscriptionId', s.id);
  end if;
  v_delay_ms := least(app.setting_int('webhook_retry_max_ms')::bigint,
                      app.setting_int('webhook_retry_base_ms')::bigint * (2 ^ least(d.attempts, 20))::bigint);
  update app.webhook_deliveries x set attempts = x.attempts + 1, last_status = p_status, last_error = left(p_error, 2048),
    next_attempt_at = now() + v_delay_ms * interval '1 millisecond' where x.id = d.id;
  update app.webhook_subscriptions x set consecutive_failures = x.consecutive_failures + 1 where x.id = s.id
  returning * into s;
  if s.active and p_status = 410 then
    -- Standard Webhooks: 410 Gone means the endpoint is gone for good; stop at once.
    update app.webhook_subscriptions x set active = false, paused_reason = 'gone', updated_at = now() where x.id = s.id;
    insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, delivery_id, kind, error)
    values (s.organization_id, s.workspace_id, s.id, d.id, 'webhook.paused',
      'Paused at once: the receiver answered 410 Gone (the endpoint no longer exists). Resume it when the URL works again.');
    v_paused := true;
  elsif s.active and s.consecutive_failures >= app.setting_int('webhook_pause_after_failures') then
    update app.webhook_subscriptions x set active = false, paused_reason = 'failures', updated_at = now() where x.id = s.id;
    insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, delivery_id, kind, error)
    values (s.organization_id, s.workspace_id, s.id, d.id, 'webhook.paused',
      format('Paused after %s failed attempts in a row.', s.consecutive_failures));
    v_paused := true;
  end if;
  return jsonb_build_object('recorded', true, 'delivered', false, 'paused', v_paused, 'retryInMs', v_delay_ms, 'subscriptionId', s.id);
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
  where r.id = (select i.root_id from app.content_items i where i.id = p_id and i.workspace_id = v_ctx_workspace)
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

CREATE OR REPLACE FUNCTION api.review_link_decide(p_item_id uuid, p_body jsonb)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where workspace_id = l.workspace_id and id = l.review_id for update;
  return app.review_decide(r, app.review_link_item(l, p_item_id), p_body ->> 'decision', p_body ->> 'comment');
end
$function$;

CREATE OR REPLACE FUNCTION api.swap_grid_tile_media(p_integration_id uuid, p_tile_id uuid, p_other_id uuid)
 RETURNS jsonb
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  perform 1 from app.grid_tiles where workspace_id = v.workspace_id and id in (a.id, b.id) order by id for update;
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
    v_campaign := (select campaign_id from app.campaign_phases where id = v_phase);
  end if;
  update app.content_roots set
    organizational_title = case when p_body ? 'title' then p_body ->> 'title' else organizational_title end,
    campaign_id = v_campaign,
    phase_id = v_phase,
    updated_at = now()
  where id = v_root.id returning * into v_root;
  perform app.apply_root_taxonomy(v_root, p_body);
  return jsonb_build_object('contentId', v.id, 'rootId', v_root.id) || app.content_root_metadata_json(v_root.id)
    || jsonb_build_object('updatedAt', v_root.updated_at);
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_content_item_media_same_workspace_while_editable()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare
  v_item record;
  v_item_id uuid := case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end;
begin
  select id, status, workspace_id, organization_id, deleted_at into v_item from app.content_items
  where workspace_id = case when tg_op = 'DELETE' then old.workspace_id else new.workspace_id end and id = v_item_id;
  if v_item.id is null then
    return case when tg_op = 'DELETE' then old else new end;
  end if;
  if pg_trigger_depth() <= 1 and (v_item.status not in ('draft', 'scheduled') or v_item.deleted_at is not null) then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can be edited; this content is %s.',
             case when v_item.deleted_at is not null then 'deleted' else v_item.status end),
      jsonb_build_object('contentId', v_item.id, 'status', v_item.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  if tg_op <> 'DELETE' then
    if new.workspace_id <> v_item.workspace_id or new.organization_id <> v_item.organization_id
       or not exists (select 1 from app.media_items m where m.id = new.media_id and m.workspace_id = v_item.workspace_id) then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('mediaIds', 'media_not_found', 'no media item with this id in this workspace')));
    end if;
    return new;
  end if;
  return old;
end
$function$;

CREATE OR REPLACE FUNCTION app.tg_campaign_phases_check_campaign()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'app'
AS $function$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.campaign_id is distinct from old.campaign_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A phase cannot move to another campaign.',
      jsonb_build_object('id', old.id, 'campaignId', old.campaign_id));
  end if;
  select c.workspace_id, c.organization_id into v from app.campaigns c where c.workspace_id = new.workspace_id and c.id = new.campaign_id;
  if not found or v.workspace_id <> new.workspace_id or v.organization_id <> new.organization_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if tg_op = 'INSERT' and (select count(*) from app.campaign_phases p where p.workspace_id = new.workspace_id and p.campaign_id = new.campaign_id) >= 50 then
    perform app.raise(409, 'PHASE_LIMIT_REACHED', 'A campaign has at most 50 phases.',
      jsonb_build_object('campaignId', new.campaign_id, 'limit', 50));
  end if;
  return new;
end
$function$;
