--! Previous: sha1:79180b391ef85ab2d4eae83767ba375b9c69d429
--! Hash: sha1:1f595ae13372296a78eaf48c32b5c91140f93b66
--! Message: webhooks retention batched delivery content check and time range

--! split: 30-webhooks-retention-content-check.sql
-- Lifecycle webhooks, continued (docs/webhooks.md; committed/000018-lifecycle-webhooks.sql),
-- and checking a draft against the platforms' rules without writing it (docs/mcp.md):
--
--   Retention    setting webhook_retention_days (WEBHOOK_RETENTION_DAYS, default 30):
--                job webhooks.purge (hourly, server/jobs/lifecycle.ts) calls
--                app.webhook_purge, which deletes, in batches, events older than
--                that whose every delivery is finished (delivered) and older too,
--                with their deliveries and log entries, and webhook.paused /
--                webhook.resumed entries older than that. A pending delivery is
--                never deleted, nor its event.
--   410 Gone     a receiver answering 410 pauses its subscription at once
--                (paused_reason 'gone', log entry webhook.paused with the reason).
--   Batches      app.webhook_claim_batch / app.webhook_record_attempts: the worker
--                takes up to n due deliveries of a subscription in outbox order,
--                sends them one after the other (stopping at the first failure)
--                and records them in one transaction, which hands back the next
--                batch. Order and "nothing passes a failed delivery" are as before.
--   Wake-up      trigger webhook_deliveries_95_wake notifies channel pressroom_webhooks,
--                so an idle worker fetches the job at the commit instead of at its next poll.
--   Check        api.check_content: the body of content create, checked channel by
--                channel with app.content_item_problems, nothing written.
--   Range        api.list_content takes scheduledFrom / scheduledTo (the calendar
--                fetches the visible weeks only); index content_items_workspace_scheduled_range_idx.

insert into app.settings (key, value, kind, minimum, description) values
  ('webhook_retention_days', '30', 'integer', 1, 'Days lifecycle webhook events, deliveries and delivery log entries are kept once delivered (WEBHOOK_RETENTION_DAYS); job webhooks.purge deletes older ones (app.webhook_purge). Pending deliveries and their events are never deleted.')
on conflict (key) do nothing;

------------------------------------------------------------------------------
-- 410 Gone pauses at once
------------------------------------------------------------------------------
alter table app.webhook_subscriptions drop constraint webhook_subscriptions_paused_reason_check;
alter table app.webhook_subscriptions add constraint webhook_subscriptions_paused_reason_check
  check (paused_reason in ('manual', 'failures', 'gone'));
comment on table app.webhook_subscriptions is 'A workspace''s lifecycle webhook subscription: URL (checked by the server''s SSRF guard, server/net/ssrf.ts), the event types wanted, active or paused (manual; failures after webhook_pause_after_failures failed attempts in a row; gone when the receiver answered 410 Gone), and its Standard Webhooks secret encrypted with AES-256-GCM by the server (server/webhooks/secret.ts), never readable by requests. Tenant policies (writes need editor; every api function manager).';

------------------------------------------------------------------------------
-- Indexes the purge (and the cascades of its deletes) need
------------------------------------------------------------------------------
create index webhook_events_occurred_at_idx on app.webhook_events (occurred_at);
create index webhook_deliveries_event_id_idx on app.webhook_deliveries (event_id);
create index webhook_delivery_log_delivery_id_idx on app.webhook_delivery_log (delivery_id);
create index webhook_delivery_log_undelivered_created_at_idx on app.webhook_delivery_log (created_at) where delivery_id is null;

------------------------------------------------------------------------------
-- Recording attempts
------------------------------------------------------------------------------
create function app.webhook_record_one(p_delivery uuid, p_ok boolean, p_request jsonb, p_status int, p_excerpt text,
  p_error text, p_duration_ms int) returns jsonb
language plpgsql volatile set search_path = pg_catalog as $$
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
  select * into s from app.webhook_subscriptions x where x.id = d.subscription_id for update;
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
$$;
comment on function app.webhook_record_one(uuid, boolean, jsonb, int, text, text, int) is 'Records one attempt in the log; on success marks the delivery delivered and clears the failure run; on failure schedules the retry (webhook_retry_base_ms doubling up to webhook_retry_max_ms) and pauses the subscription at once on 410 Gone (paused_reason gone) or after webhook_pause_after_failures failures in a row (failures), with a webhook.paused log entry.';
grant execute on function app.webhook_record_one(uuid, boolean, jsonb, int, text, text, int) to pressroom_worker;

create or replace function app.webhook_record_attempt(p_delivery uuid, p_ok boolean, p_request jsonb, p_status int, p_excerpt text,
  p_error text, p_duration_ms int) returns jsonb
language plpgsql volatile set search_path = pg_catalog as $$
declare
  v jsonb := app.webhook_record_one(p_delivery, p_ok, p_request, p_status, p_excerpt, p_error, p_duration_ms);
begin
  if not (v->>'recorded')::boolean then
    return jsonb_build_object('recorded', false);
  end if;
  -- the next claim in the same transaction: one round trip per delivery
  return (v - 'subscriptionId') || jsonb_build_object('next', app.webhook_claim((v->>'subscriptionId')::uuid));
end
$$;
comment on function app.webhook_record_attempt(uuid, boolean, jsonb, int, text, text, int) is 'Records one attempt (app.webhook_record_one) and returns the subscription''s next claim (app.webhook_claim) with it.';

create function app.webhook_claim_batch(p_subscription uuid, p_limit int) returns jsonb
language plpgsql volatile set search_path = pg_catalog as $$
declare
  s app.webhook_subscriptions;
  v_first app.webhook_deliveries;
  v_items jsonb;
begin
  select * into s from app.webhook_subscriptions x where x.id = p_subscription;
  if s.id is null or not s.active then
    return jsonb_build_object('action', 'stop');
  end if;
  select * into v_first from app.webhook_deliveries x where x.subscription_id = s.id and x.state = 'pending' order by x.seq limit 1;
  if v_first.id is null then
    return jsonb_build_object('action', 'stop');
  end if;
  if v_first.next_attempt_at > now() then
    return jsonb_build_object('action', 'wait', 'until', v_first.next_attempt_at);
  end if;
  -- the due prefix of the pending deliveries, in outbox order (a delivery not yet due ends it)
  select jsonb_agg(jsonb_build_object('deliveryId', p.id, 'attempt', p.attempts + 1,
           'event', jsonb_build_object('id', e.id, 'type', e.type, 'workspaceId', e.workspace_id, 'subjectId', e.subject_id,
                                       'occurredAt', e.occurred_at, 'data', e.data)) order by p.seq)
  into v_items
  from (select x.*, bool_and(x.next_attempt_at <= now()) over (order by x.seq) as due
        from app.webhook_deliveries x where x.subscription_id = s.id and x.state = 'pending'
        order by x.seq limit least(greatest(coalesce(p_limit, 1), 1), 500)) p
  join app.webhook_events e on e.id = p.event_id
  where p.due;
  return jsonb_build_object('action', 'send', 'timeoutMs', app.setting_int('webhook_timeout_ms'),
    'subscription', jsonb_build_object('id', s.id, 'url', s.url, 'secretCiphertext', encode(s.secret_ciphertext, 'base64')),
    'deliveries', v_items);
end
$$;
comment on function app.webhook_claim_batch(uuid, int) is 'Up to p_limit (at most 500) due deliveries of a subscription, in outbox order, to send one after the other (with URL, encrypted secret and events); or wait until the first one''s retry time, or stop (none pending, or paused). The batch form of app.webhook_claim.';
grant execute on function app.webhook_claim_batch(uuid, int) to pressroom_worker;

create function app.webhook_record_attempts(p_subscription uuid, p_attempts jsonb, p_next_limit int) returns jsonb
language plpgsql volatile set search_path = pg_catalog as $$
declare
  a jsonb;
  r jsonb;
  v_delivered int := 0;
  v_failed int := 0;
  v_paused boolean := false;
begin
  if jsonb_typeof(p_attempts) is distinct from 'array' then
    raise exception 'p_attempts must be a JSON array';
  end if;
  for a in select x from jsonb_array_elements(p_attempts) x loop
    r := app.webhook_record_one((a->>'deliveryId')::uuid, (a->>'ok')::boolean, a->'request', (a->>'status')::int,
      a->>'excerpt', a->>'error', (a->>'durationMs')::int);
    if (r->>'recorded')::boolean then
      if (r->>'delivered')::boolean then v_delivered := v_delivered + 1; else v_failed := v_failed + 1; end if;
      v_paused := v_paused or coalesce((r->>'paused')::boolean, false);
    end if;
  end loop;
  return jsonb_build_object('delivered', v_delivered, 'failed', v_failed, 'paused', v_paused,
    'next', app.webhook_claim_batch(p_subscription, p_next_limit));
end
$$;
comment on function app.webhook_record_attempts(uuid, jsonb, int) is 'Records a batch of attempts of one subscription in the order they were made (each as app.webhook_record_one: [{deliveryId, ok, request, status, excerpt, error, durationMs}]) in one transaction, and returns the next batch (app.webhook_claim_batch) with the counts.';
grant execute on function app.webhook_record_attempts(uuid, jsonb, int) to pressroom_worker;

------------------------------------------------------------------------------
-- Wake-up: notify the worker at the commit
------------------------------------------------------------------------------
create function app.tg_webhook_deliveries_wake() returns trigger
language plpgsql set search_path = pg_catalog as $$
begin
  -- sent at the commit, once per transaction however many statements (identical notifications fold)
  perform pg_notify('pressroom_webhooks', '');
  return null;
end
$$;
comment on function app.tg_webhook_deliveries_wake() is 'Notifies channel pressroom_webhooks when deliveries are written (an event, a test event, a redelivery), so the worker listening on it (server/jobs/lifecycle.ts) fetches the delivery job at the commit rather than at its next poll. A hint only: polling stays the floor.';
grant execute on function app.tg_webhook_deliveries_wake() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger webhook_deliveries_95_wake after insert on app.webhook_deliveries
  for each statement execute function app.tg_webhook_deliveries_wake();

------------------------------------------------------------------------------
-- Retention (job webhooks.purge)
------------------------------------------------------------------------------
grant delete on app.webhook_events, app.webhook_deliveries, app.webhook_delivery_log to pressroom_definer;
grant select on app.webhook_delivery_log to pressroom_definer;

create function app.webhook_purge(p_limit int default 500) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_days int := app.setting_int('webhook_retention_days');
  v_cutoff timestamptz := now() - make_interval(days => v_days);
  v_limit int := least(greatest(coalesce(p_limit, 500), 1), 10000);
  v_events int;
  v_entries int;
begin
  -- Events older than the retention whose deliveries are all delivered, and delivered before it
  -- (a paused subscription's backlog, or a late redelivery, keeps its event and log).
  with old as (
    select e.id from app.webhook_events e
    where e.occurred_at < v_cutoff
      and not exists (select 1 from app.webhook_deliveries d where d.event_id = e.id
                        and (d.state = 'pending' or d.delivered_at >= v_cutoff or d.created_at >= v_cutoff))
    order by e.occurred_at
    limit v_limit
    for update of e skip locked),
  del as (delete from app.webhook_events e using old where e.id = old.id returning 1)
  select count(*) into v_events from del;
  -- webhook.paused / webhook.resumed entries of no delivery (their deliveries' entries go with them)
  with old as (
    select l.id from app.webhook_delivery_log l
    where l.delivery_id is null and l.created_at < v_cutoff
    order by l.created_at
    limit v_limit
    for update of l skip locked),
  del as (delete from app.webhook_delivery_log l using old where l.id = old.id returning 1)
  select count(*) into v_entries from del;
  return jsonb_build_object('events', v_events, 'logEntries', v_entries,
    'more', v_events >= v_limit or v_entries >= v_limit, 'retentionDays', v_days);
end
$$;
alter function app.webhook_purge(int) owner to pressroom_definer;
comment on function app.webhook_purge(int) is 'Job webhooks.purge: deletes at most p_limit lifecycle webhook events older than setting webhook_retention_days whose every delivery is delivered and was created and delivered before that too (oldest first, skipping rows another run holds), with their deliveries and log entries (foreign keys on delete cascade), and at most p_limit webhook.paused / webhook.resumed log entries of no delivery older than that. A pending delivery and its event are never deleted. Answers {events, logEntries, more, retentionDays}.';
revoke all on function app.webhook_purge(int) from public;
grant execute on function app.webhook_purge(int) to pressroom_worker;

------------------------------------------------------------------------------
-- Checking a draft against its channels' rules (POST {ws}/content/check)
------------------------------------------------------------------------------
create function api.check_content(p_body jsonb) returns jsonb
language plpgsql volatile as $$
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
      v_fields := v_fields || app.content_item_problems((v_created -> 'editions' -> v_i ->> 'id')::uuid, 'channels.' || v_i || '.');
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
$$;
comment on function api.check_content(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/content/check (checkContent_v1). Checks the body of content create without writing anything: the time for the intent asked for (scheduledAt required, in_past), then the body through api.create_content as a draft in a subtransaction that is rolled back (references, channels, settings) and every edition against its platform''s rules (app.content_item_problems), whatever the intent. Answers {valid, problems (not of one channel), channels: [{index, integrationId, platform, valid, problems}]}. Requires the editor role (create''s); 400 VALIDATION_FAILED for a body that is not an object; other refusals of create (409 MEDIA_IN_BIN, ...) as create answers them.';

------------------------------------------------------------------------------
-- The content list by time range (the calendar asks for the visible weeks only)
------------------------------------------------------------------------------
create index content_items_workspace_scheduled_range_idx on app.content_items (workspace_id, scheduled_at, id)
  where deleted_at is null;
comment on index app.content_items_workspace_scheduled_range_idx is 'GET content?scheduledFrom=&scheduledTo= without a status (api.list_content); with a status, content_items_workspace_list_idx serves the range.';

create or replace function api.list_content(p_query jsonb) returns jsonb
language plpgsql stable as $$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 20);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_since timestamptz := (p_query ->> 'since')::timestamptz;
  v_status text := p_query ->> 'status';
  v_workflow text[];
  v_integration uuid := (p_query ->> 'integrationId')::uuid;
  v_from timestamptz := (p_query ->> 'scheduledFrom')::timestamptz;
  v_to timestamptz := (p_query ->> 'scheduledTo')::timestamptz;
  v_review boolean := coalesce((p_query ->> 'includeReviewLifecycle')::boolean, false);
  v_sort text := coalesce(p_query ->> 'sortBy', 'updatedAt');
  v_dir text := coalesce(p_query ->> 'sortDirection', case when v_since is not null then 'asc' else 'desc' end);
  v_live text := 'i.deleted_at is null';
  v_where text := 'i.workspace_id = $1';
  v_join text := '';
  v_order text;
  v_total bigint;
  v_ids uuid[];
  -- reviews: the reviewLifecycle* filters (migration 000010, split 10c-content-review-filters.sql)
  v_lc jsonb := jsonb_strip_nulls(jsonb_build_object(
    'phase', p_query -> 'reviewLifecyclePhase', 'state', p_query -> 'reviewLifecycleState',
    'actor', p_query -> 'reviewLifecycleActor', 'nextAction', p_query -> 'reviewLifecycleNextAction',
    'blocker', p_query -> 'reviewLifecycleBlocker', 'blocksPublishing', p_query -> 'reviewLifecycleBlocksPublishing',
    'batchId', p_query -> 'reviewLifecycleBatchId', 'itemId', p_query -> 'reviewLifecycleItemId'));
begin
  perform app.require_role('viewer');
  if v_from is not null and v_to is not null and v_to <= v_from then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledTo', 'before_start', 'scheduledTo must be after scheduledFrom')),
      'The request is not valid; see details.fields.');
  end if;
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
    -- serves them); only when exactly one of scheduled/publishing is asked
    -- does a plain comparison of scheduled_at split them (the same rule as
    -- app.content_workflow_status, written so the planner can use an index).
    v_live := v_live || format(' and i.status = any (%L::text[])',
      array(select distinct case w when 'in_review' then 'pending_approval' when 'changes_requested' then 'rejected'
                                   when 'publishing' then 'scheduled' when 'published' then 'sent' else w end
            from unnest(v_workflow) w));
    if 'scheduled' = any (v_workflow) and not 'publishing' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at > now() or i.scheduled_at is null)$w$;
    elsif 'publishing' = any (v_workflow) and not 'scheduled' = any (v_workflow) then
      v_live := v_live || $w$ and (i.status <> 'scheduled' or i.scheduled_at <= now())$w$;
    end if;
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
  -- the time range of the calendar (db/migrations/committed/000019-webhooks-retention-batched-delivery-content-check-and-time-range.sql)
  if v_from is not null then
    v_live := v_live || ' and i.scheduled_at >= $9';
  end if;
  if v_to is not null then
    v_live := v_live || ' and i.scheduled_at < $10';
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
  -- The total: from the per-workspace counters when the query allows it
  -- (app.content_list_total), else an exact count of the filtered set.
  v_total := app.content_list_total(p_query);
  if v_total is null then
    execute format('select count(*) from app.content_items i where %s', v_where)
    into v_total
    using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, null::int, null::bigint, v_lc, v_from, v_to;
  end if;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset, v_lc, v_from, v_to;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$$;
comment on function api.list_content(jsonb) is 'Serves GET /v1/workspaces/{workspaceId}/content (listContent_v1). A page of editions filtered by status, workflow statuses, integration, the time range scheduledFrom (inclusive) to scheduledTo (exclusive) on scheduled_at, and the reviewLifecycle* filters (any of them opts pending_approval and rejected content in and adds reviewLifecycle), sorted as asked; with since, the editions changed after it and tombstones of those deleted after it. Returns items and meta (limit, offset, total, hasMore). Requires the viewer role; 400 VALIDATION_FAILED when scheduledTo is not after scheduledFrom.';

select app.harden_api_functions();
