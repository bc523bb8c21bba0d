--! Previous: sha1:b224309a106600763500fed6620fe4b92f8b4c49
--! Hash: sha1:79180b391ef85ab2d4eae83767ba375b9c69d429
--! Message: lifecycle webhooks

--! split: 22-webhook-subscriptions.sql
-- Lifecycle webhooks: outbound, signed notifications of what happens to a
-- workspace's content, reviews and inbox (docs/webhooks.md).
--
--   app.webhook_subscriptions  per workspace: URL, events wanted, active or
--                              paused, the Standard Webhooks secret encrypted
--                              by the server (server/webhooks/secret.ts).
--   app.webhook_events         the outbox: one row per event, written by
--                              triggers in the transaction of the change.
--   app.webhook_deliveries     one row per (subscription, event): pending,
--                              delivered; attempts and next attempt.
--   app.webhook_delivery_log   every attempt (request, status, bounded
--                              excerpt of the response, duration) and the
--                              webhook.paused / webhook.resumed entries.
--
-- Order: job webhooks.deliver (server/jobs/lifecycle.ts, one queued per
-- subscription, policy stately) sends a subscription's pending deliveries in
-- outbox order and stops at the first failure, retrying it with backoff
-- (settings webhook_retry_base_ms, webhook_retry_max_ms): nothing after it is
-- sent before it, so events of one content item arrive in order. After
-- webhook_pause_after_failures failed attempts in a row the subscription is
-- paused (log entry webhook.paused); its events keep queuing and go out, in
-- order, once a manager resumes it.

insert into app.settings (key, value, kind, minimum, description) values
  ('webhook_pause_after_failures', '50', 'integer', 1, 'Failed delivery attempts in a row after which a lifecycle webhook subscription is paused (log entry webhook.paused); app.webhook_record_attempt.'),
  ('webhook_retry_base_ms', '5000', 'integer', 10, 'First retry delay of a failed lifecycle webhook delivery; doubles per attempt up to webhook_retry_max_ms (app.webhook_record_attempt).'),
  ('webhook_timeout_ms', '10000', 'integer', 100, 'How long a lifecycle webhook delivery waits for the receiver''s answer before the attempt counts as failed (app.webhook_claim, server/jobs/lifecycle.ts).'),
  ('webhook_retry_max_ms', '60000', 'integer', 10, 'Longest delay between two attempts of a lifecycle webhook delivery (app.webhook_record_attempt).')
on conflict (key) do nothing;

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------
create table app.webhook_subscriptions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  url text not null check (url ~ '^https?://' and length(url) <= 2048),
  events text[] not null check (cardinality(events) between 1 and 50),
  description text check (description is null or length(description) <= 500),
  active boolean not null default true,
  paused_reason text check (paused_reason in ('manual', 'failures')),
  secret_ciphertext bytea not null check (length(secret_ciphertext) between 29 and 2048),
  consecutive_failures int not null default 0,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (active = (paused_reason is null))
);
create index on app.webhook_subscriptions (workspace_id, created_at);
comment on table app.webhook_subscriptions is 'A workspace''s lifecycle webhook subscription: URL (checked by the server''s SSRF guard, server/net/ssrf.ts), the event types wanted, active or paused (manual, or failures after webhook_pause_after_failures failed attempts in a row), and its Standard Webhooks secret encrypted with AES-256-GCM by the server (server/webhooks/secret.ts), never readable by requests. Tenant policies (writes need editor; every api function manager).';
select app.apply_tenant_policies('app.webhook_subscriptions', array['select', 'insert', 'update', 'delete']);
grant select (id, organization_id, workspace_id, url, events, description, active, paused_reason, consecutive_failures, created_by, created_at, updated_at)
  on app.webhook_subscriptions to pressroom_api;
grant insert (id, organization_id, workspace_id, url, events, description, active, paused_reason, secret_ciphertext, created_by),
  update (url, events, description, active, paused_reason, secret_ciphertext, consecutive_failures, updated_at), delete
  on app.webhook_subscriptions to pressroom_api;
grant select, update on app.webhook_subscriptions to pressroom_worker;
grant select on app.webhook_subscriptions to pressroom_definer;

create table app.webhook_events (
  id uuid primary key default gen_random_uuid(),
  seq bigint generated always as identity unique,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  type text not null,
  subject_id uuid,
  data jsonb not null,
  occurred_at timestamptz not null default clock_timestamp()
);
create index on app.webhook_events (workspace_id, seq);
comment on table app.webhook_events is 'The outbox of lifecycle events: written by triggers (app.webhook_emit) in the transaction of the change, so an event exists exactly when its change committed. subject_id names the content item, review or message. Read by the worker; requests read it through the delivery log. Tenant policies (select only).';
select app.apply_tenant_policies('app.webhook_events', array['select', 'insert']);
grant select on app.webhook_events to pressroom_api, pressroom_worker;
grant insert (organization_id, workspace_id, type, subject_id, data) on app.webhook_events to pressroom_api;
grant select, insert on app.webhook_events to pressroom_definer;

create table app.webhook_deliveries (
  id uuid primary key default gen_random_uuid(),
  seq bigint generated always as identity unique,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  subscription_id uuid not null references app.webhook_subscriptions (id) on delete cascade,
  event_id uuid not null references app.webhook_events (id) on delete cascade,
  state text not null default 'pending' check (state in ('pending', 'delivered')),
  attempts int not null default 0,
  next_attempt_at timestamptz not null default now(),
  last_status int,
  last_error text,
  delivered_at timestamptz,
  redelivery_of uuid references app.webhook_deliveries (id) on delete set null,
  created_at timestamptz not null default clock_timestamp()
);
create index webhook_deliveries_pending on app.webhook_deliveries (subscription_id, seq) where state = 'pending';
create index on app.webhook_deliveries (subscription_id, seq desc);
comment on table app.webhook_deliveries is 'One event to one subscription: pending until the receiver answers 2xx, then delivered. The worker sends a subscription''s pending deliveries in seq order and never passes a failed one (app.webhook_claim). A manual redelivery is a new row (redelivery_of). Written by triggers, api functions and the worker; tenant policies (select; writes need manager).';
select app.apply_tenant_policies('app.webhook_deliveries', array['select', 'insert', 'update']);
grant select, insert (organization_id, workspace_id, subscription_id, event_id, redelivery_of), update (next_attempt_at)
  on app.webhook_deliveries to pressroom_api;
grant select, insert on app.webhook_deliveries to pressroom_definer;
grant select, update on app.webhook_deliveries to pressroom_worker;

create table app.webhook_delivery_log (
  id uuid primary key default gen_random_uuid(),
  seq bigint generated always as identity unique,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  subscription_id uuid not null references app.webhook_subscriptions (id) on delete cascade,
  delivery_id uuid references app.webhook_deliveries (id) on delete cascade,
  kind text not null check (kind in ('attempt', 'webhook.paused', 'webhook.resumed')),
  attempt int,
  request jsonb,
  response_status int,
  response_excerpt text check (response_excerpt is null or length(response_excerpt) <= 2048),
  error text check (error is null or length(error) <= 2048),
  duration_ms int,
  created_at timestamptz not null default clock_timestamp()
);
create index on app.webhook_delivery_log (subscription_id, seq desc);
comment on table app.webhook_delivery_log is 'What happened to a subscription''s deliveries: every attempt (request URL, headers and body; response status and the first 2048 characters of its body; error; duration) and the webhook.paused / webhook.resumed entries. Written by the worker (app.webhook_record_attempt) and api functions. Tenant policies (select only).';
select app.apply_tenant_policies('app.webhook_delivery_log', array['select', 'insert']);
grant select, insert (organization_id, workspace_id, subscription_id, kind, error) on app.webhook_delivery_log to pressroom_api;
grant select, insert on app.webhook_delivery_log to pressroom_worker;

------------------------------------------------------------------------------
-- Event types and queueing
------------------------------------------------------------------------------
create function app.webhook_event_types() returns text[]
language sql immutable set search_path = pg_catalog as $$
  select array['content.created', 'content.scheduled', 'content.published', 'content.failed',
    'content.awaiting_confirmation', 'content.deleted', 'review.sent', 'review.decided', 'review.completed',
    'inbox.message.received']
$$;
comment on function app.webhook_event_types() is 'The lifecycle event types a subscription may ask for (webhook.test is sent on request to one subscription only).';
grant execute on function app.webhook_event_types() to pressroom_api, pressroom_definer, pressroom_worker;

create function app.webhook_enqueue(p_subscription uuid, p_start timestamptz default now()) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_queue record;
  v_job uuid := gen_random_uuid();
  v_rows int;
begin
  select * into v_queue from pgboss.queue where name = 'webhooks.deliver';
  if v_queue.name is null then
    raise exception 'pg-boss queue webhooks.deliver is not installed (server/jobs/queues.ts installQueues)';
  end if;
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
    keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
  values (v_job, 'webhooks.deliver', jsonb_build_object('subscriptionId', p_subscription), 0, p_start, p_subscription::text,
    v_queue.expire_seconds, v_queue.deletion_seconds, p_start + v_queue.retention_seconds * interval '1 second',
    v_queue.retry_limit, v_queue.retry_delay, v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy,
    v_queue.dead_letter, v_queue.heartbeat_seconds)
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  if v_rows = 0 then
    -- one is queued already: make it due no later than asked (a resume, a new event after a retry wait)
    update pgboss.job j set start_after = p_start
    where j.name = 'webhooks.deliver' and j.singleton_key = p_subscription::text and j.state in ('created', 'retry')
      and j.start_after > p_start;
  end if;
  return case when v_rows = 1 then v_job end;
end
$$;
alter function app.webhook_enqueue(uuid, timestamptz) owner to pressroom_definer;
comment on function app.webhook_enqueue(uuid, timestamptz) is 'Queues job webhooks.deliver for a subscription in the caller''s transaction; one queued per subscription (queue policy stately), so a burst of events makes one job; when one is queued already it is made due no later than p_start. Returns the job id or null when one was already queued.';
grant execute on function app.webhook_enqueue(uuid, timestamptz) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.webhook_emit(p_org uuid, p_ws uuid, p_type text, p_subject uuid, p_data jsonb) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_event uuid;
  v_sub record;
begin
  if not exists (select 1 from app.webhook_subscriptions s where s.workspace_id = p_ws and p_type = any (s.events)) then
    return null;
  end if;
  insert into app.webhook_events (organization_id, workspace_id, type, subject_id, data)
  values (p_org, p_ws, p_type, p_subject, p_data) returning id into v_event;
  for v_sub in select s.id, s.active from app.webhook_subscriptions s
               where s.workspace_id = p_ws and p_type = any (s.events) order by s.id loop
    insert into app.webhook_deliveries (organization_id, workspace_id, subscription_id, event_id)
    values (p_org, p_ws, v_sub.id, v_event);
    if v_sub.active then
      perform app.webhook_enqueue(v_sub.id);
    end if;
  end loop;
  return v_event;
end
$$;
alter function app.webhook_emit(uuid, uuid, text, uuid, jsonb) owner to pressroom_definer;
comment on function app.webhook_emit(uuid, uuid, text, uuid, jsonb) is 'Writes a lifecycle event to the outbox and a pending delivery for every subscription of the workspace that wants it (paused ones too: they go out on resume), and queues their delivery jobs. Nothing is written when no subscription wants the type.';
grant execute on function app.webhook_emit(uuid, uuid, text, uuid, jsonb) to pressroom_api, pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- Triggers: content, publishing states, reviews, inbox
------------------------------------------------------------------------------
create function app.webhook_content_data(i app.content_items) returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object('contentId', i.id, 'rootId', i.root_id, 'integrationId', i.integration_id, 'kind', i.kind,
    'status', i.status, 'scheduledAt', i.scheduled_at, 'sentAt', i.sent_at, 'permalink', i.permalink,
    'error', i.error, 'version', i.version)
$$;
comment on function app.webhook_content_data(app.content_items) is 'The data of a content.* lifecycle event.';
grant execute on function app.webhook_content_data(app.content_items) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.tg_content_items_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_type text;
begin
  if tg_op = 'INSERT' then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'content.created', new.id, app.webhook_content_data(new));
    if new.status = 'scheduled' then
      perform app.webhook_emit(new.organization_id, new.workspace_id, 'content.scheduled', new.id, app.webhook_content_data(new));
    end if;
    return null;
  end if;
  if new.deleted_at is not null and old.deleted_at is null then
    v_type := 'content.deleted';
  elsif new.status is distinct from old.status or (new.status = 'scheduled' and new.scheduled_at is distinct from old.scheduled_at) then
    v_type := case new.status when 'scheduled' then 'content.scheduled' when 'sent' then 'content.published'
                              when 'failed' then 'content.failed' end;
  end if;
  if v_type is not null then
    perform app.webhook_emit(new.organization_id, new.workspace_id, v_type, new.id, app.webhook_content_data(new));
  end if;
  return null;
end
$$;
alter function app.tg_content_items_webhooks() owner to pressroom_definer;
comment on function app.tg_content_items_webhooks() is 'Emits content.created, content.scheduled (also on a new time), content.published (sent), content.failed and content.deleted for an edition, in the transaction of the change.';
grant execute on function app.tg_content_items_webhooks() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger content_items_90_webhooks after insert or update on app.content_items
  for each row execute function app.tg_content_items_webhooks();

create function app.tg_publishing_states_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  i app.content_items;
begin
  if new.state = 'awaiting_confirmation' and (tg_op = 'INSERT' or old.state is distinct from new.state) then
    select * into i from app.content_items where id = new.content_item_id;
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'content.awaiting_confirmation', new.content_item_id,
      app.webhook_content_data(i) || jsonb_build_object('publishingState', new.state, 'lastError', new.last_error));
  end if;
  return null;
end
$$;
alter function app.tg_publishing_states_webhooks() owner to pressroom_definer;
comment on function app.tg_publishing_states_webhooks() is 'Emits content.awaiting_confirmation when the publishing engine cannot tell whether a post went out.';
grant execute on function app.tg_publishing_states_webhooks() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger publishing_states_90_webhooks after insert or update on app.publishing_states
  for each row execute function app.tg_publishing_states_webhooks();

create function app.tg_reviews_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_data jsonb := jsonb_build_object('reviewId', new.id, 'status', new.status, 'sentAt', new.sent_at, 'completedAt', new.completed_at);
begin
  if new.sent_at is not null and old.sent_at is null then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'review.sent', new.id, v_data);
  end if;
  if new.completed_at is not null and old.completed_at is null then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'review.completed', new.id, v_data);
  end if;
  return null;
end
$$;
alter function app.tg_reviews_webhooks() owner to pressroom_definer;
comment on function app.tg_reviews_webhooks() is 'Emits review.sent and review.completed.';
grant execute on function app.tg_reviews_webhooks() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger reviews_90_webhooks after update on app.reviews
  for each row execute function app.tg_reviews_webhooks();

create function app.tg_review_decisions_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_review uuid;
  v_content uuid;
begin
  select ri.review_id, ri.content_id into v_review, v_content from app.review_items ri where ri.id = new.item_id;
  perform app.webhook_emit(new.organization_id, new.workspace_id, 'review.decided', v_review,
    jsonb_build_object('reviewId', v_review, 'itemId', new.item_id, 'contentId', v_content, 'decision', new.decision,
      'override', new.override));
  return null;
end
$$;
alter function app.tg_review_decisions_webhooks() owner to pressroom_definer;
comment on function app.tg_review_decisions_webhooks() is 'Emits review.decided for every decision on a review item.';
grant execute on function app.tg_review_decisions_webhooks() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger review_decisions_90_webhooks after insert on app.review_decisions
  for each row execute function app.tg_review_decisions_webhooks();

create function app.tg_inbox_messages_webhooks() returns trigger
language plpgsql security definer set search_path = pg_catalog as $$
begin
  if new.direction = 'inbound' then
    perform app.webhook_emit(new.organization_id, new.workspace_id, 'inbox.message.received', new.thread_id,
      jsonb_build_object('messageId', new.id, 'threadId', new.thread_id, 'integrationId', new.integration_id,
        'author', new.author, 'body', new.body, 'createdAt', new.created_at));
  end if;
  return null;
end
$$;
alter function app.tg_inbox_messages_webhooks() owner to pressroom_definer;
comment on function app.tg_inbox_messages_webhooks() is 'Emits inbox.message.received for every inbound comment or message folded into a thread.';
grant execute on function app.tg_inbox_messages_webhooks() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger inbox_messages_90_webhooks after insert on app.inbox_messages
  for each row execute function app.tg_inbox_messages_webhooks();

------------------------------------------------------------------------------
-- JSON
------------------------------------------------------------------------------
create function app.webhook_subscription_json(s app.webhook_subscriptions) returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object('id', s.id, 'url', s.url, 'events', to_jsonb(s.events), 'description', s.description,
    'active', s.active, 'pausedReason', s.paused_reason, 'consecutiveFailures', s.consecutive_failures,
    'pendingDeliveries', (select count(*)::int from app.webhook_deliveries d where d.subscription_id = s.id and d.state = 'pending'),
    'createdAt', s.created_at, 'updatedAt', s.updated_at)
$$;
comment on function app.webhook_subscription_json(app.webhook_subscriptions) is 'A subscription as the API shows it (never its secret).';
grant execute on function app.webhook_subscription_json(app.webhook_subscriptions) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.webhook_subscription_for_update(p_id uuid) returns app.webhook_subscriptions
language plpgsql volatile set search_path = pg_catalog as $$
declare
  v app.webhook_subscriptions;
begin
  perform app.require_role('manager');
  -- every column but the secret (requests cannot read it)
  select s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at into v
  from app.webhook_subscriptions s where s.id = p_id and s.workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No webhook subscription with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;
comment on function app.webhook_subscription_for_update(uuid) is 'The subscription, locked, after checking the manager role; 404 NOT_FOUND otherwise.';
grant execute on function app.webhook_subscription_for_update(uuid) to pressroom_api;

create function app.webhook_check_events(p_events text[]) returns text[]
language plpgsql stable set search_path = pg_catalog as $$
declare
  v_bad text[];
begin
  if p_events is null or cardinality(p_events) = 0 then
    perform app.raise(400, 'VALIDATION_FAILED', 'events must name at least one event type.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'events', 'message', 'at least one event type'))));
  end if;
  select array_agg(e) into v_bad from unnest(p_events) e where e <> all (app.webhook_event_types());
  if v_bad is not null then
    perform app.raise(400, 'UNKNOWN_EVENT_TYPE', 'Unknown webhook event type: ' || array_to_string(v_bad, ', ') || '.',
      jsonb_build_object('unknown', to_jsonb(v_bad), 'valid', to_jsonb(app.webhook_event_types())));
  end if;
  return (select array_agg(distinct e order by e) from unnest(p_events) e);
end
$$;
comment on function app.webhook_check_events(text[]) is 'The event list, de-duplicated and sorted; 400 VALIDATION_FAILED when empty, 400 UNKNOWN_EVENT_TYPE for a name not in app.webhook_event_types().';
grant execute on function app.webhook_check_events(text[]) to pressroom_api;

create function app.webhook_check_url(p_url text) returns text
language plpgsql immutable set search_path = pg_catalog as $$
begin
  if p_url is null or p_url !~ '^https?://[^/@\s]+' or length(p_url) > 2048 or p_url ~ '^https?://[^/]*@' then
    perform app.raise(400, 'INVALID_WEBHOOK_URL', 'url must be an http(s) URL without credentials, at most 2048 characters.',
      jsonb_build_object('field', 'url'));
  end if;
  return p_url;
end
$$;
comment on function app.webhook_check_url(text) is 'The URL''s shape (http or https, no credentials, length); the server''s SSRF guard checks its address before the call.';
grant execute on function app.webhook_check_url(text) to pressroom_api;

------------------------------------------------------------------------------
-- API: subscriptions
------------------------------------------------------------------------------
create function api.create_webhook_subscription(p_url text, p_events text[], p_description text, p_active boolean,
  p_secret_ciphertext bytea, p_id uuid) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions;
begin
  perform app.require_role('manager');
  if (select count(*) from app.webhook_subscriptions s where s.workspace_id = app.current_workspace_id()) >= 20 then
    perform app.raise(409, 'WEBHOOK_LIMIT', 'A workspace has at most 20 webhook subscriptions.', jsonb_build_object('limit', 20));
  end if;
  insert into app.webhook_subscriptions (id, organization_id, workspace_id, url, events, description, active, paused_reason,
    secret_ciphertext, created_by)
  values (p_id, app.current_organization_id(), app.current_workspace_id(), app.webhook_check_url(p_url),
    app.webhook_check_events(p_events), p_description, coalesce(p_active, true),
    case when coalesce(p_active, true) then null else 'manual' end, p_secret_ciphertext, app.current_user_id())
  returning id, organization_id, workspace_id, url, events, description, active, paused_reason, null::bytea, consecutive_failures, created_by, created_at, updated_at into v;
  return app.webhook_subscription_json(v);
end
$$;
comment on function api.create_webhook_subscription(text, text[], text, boolean, bytea, uuid) is 'Creates a lifecycle webhook subscription (manager role); the route generates the secret, encrypts it under the id it chose and shows it once.';

create function api.list_webhook_subscriptions() returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('manager');
  return coalesce((select jsonb_agg(app.webhook_subscription_json(row(s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at)::app.webhook_subscriptions)
                     order by s.created_at, s.id)
                   from app.webhook_subscriptions s where s.workspace_id = app.current_workspace_id()), '[]'::jsonb);
end
$$;
comment on function api.list_webhook_subscriptions() is 'The workspace''s webhook subscriptions, oldest first (manager role; at most 20).';

create function api.get_webhook_subscription(p_id uuid) returns jsonb
language plpgsql volatile as $$
begin
  return app.webhook_subscription_json(app.webhook_subscription_for_update(p_id));
end
$$;
comment on function api.get_webhook_subscription(uuid) is 'One webhook subscription (manager role).';

create function api.update_webhook_subscription(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
  v_active boolean := v.active;
begin
  if p_body ? 'url' then v.url := app.webhook_check_url(p_body->>'url'); end if;
  if p_body ? 'events' then
    v.events := app.webhook_check_events(array(select jsonb_array_elements_text(p_body->'events')));
  end if;
  if p_body ? 'description' then v.description := p_body->>'description'; end if;
  if p_body ? 'active' and (p_body->>'active')::boolean is distinct from v.active then
    v_active := (p_body->>'active')::boolean;
    v.active := v_active;
    v.paused_reason := case when v_active then null else 'manual' end;
    if v_active then v.consecutive_failures := 0; end if;
    insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, kind, error)
    values (v.organization_id, v.workspace_id, v.id, case when v_active then 'webhook.resumed' else 'webhook.paused' end,
            case when v_active then 'Resumed by a manager.' else 'Paused by a manager.' end);
  end if;
  update app.webhook_subscriptions s set url = v.url, events = v.events, description = v.description, active = v.active,
    paused_reason = v.paused_reason, consecutive_failures = v.consecutive_failures, updated_at = now()
  where s.id = v.id returning s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at into v;
  if v.active then
    -- due now: on resume the backlog goes out, in order
    update app.webhook_deliveries d set next_attempt_at = now() where d.subscription_id = v.id and d.state = 'pending';
    perform app.webhook_enqueue(v.id);
  end if;
  return app.webhook_subscription_json(v);
end
$$;
comment on function api.update_webhook_subscription(uuid, jsonb) is 'Changes url, events, description or active (manager role); pausing and resuming are logged (webhook.paused, webhook.resumed) and resuming sends the backlog in order.';

create function api.delete_webhook_subscription(p_id uuid) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
begin
  delete from app.webhook_subscriptions s where s.id = v.id;
  return jsonb_build_object('id', v.id, 'deleted', true);
end
$$;
comment on function api.delete_webhook_subscription(uuid) is 'Deletes a subscription with its deliveries and log (manager role).';

create function api.rotate_webhook_secret(p_id uuid, p_secret_ciphertext bytea) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
begin
  update app.webhook_subscriptions s set secret_ciphertext = p_secret_ciphertext, updated_at = now() where s.id = v.id
  returning s.id, s.organization_id, s.workspace_id, s.url, s.events, s.description, s.active, s.paused_reason, null::bytea, s.consecutive_failures, s.created_by, s.created_at, s.updated_at into v;
  return app.webhook_subscription_json(v);
end
$$;
comment on function api.rotate_webhook_secret(uuid, bytea) is 'Replaces the subscription''s secret with a new one the route generated and encrypted (manager role); later attempts are signed with it.';

create function api.send_webhook_test(p_id uuid) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
  v_event uuid;
  v_delivery uuid;
begin
  insert into app.webhook_events (organization_id, workspace_id, type, subject_id, data)
  values (v.organization_id, v.workspace_id, 'webhook.test', v.id, jsonb_build_object('subscriptionId', v.id, 'message', 'A test event.'))
  returning id into v_event;
  insert into app.webhook_deliveries (organization_id, workspace_id, subscription_id, event_id)
  values (v.organization_id, v.workspace_id, v.id, v_event) returning id into v_delivery;
  if v.active then perform app.webhook_enqueue(v.id); end if;
  return jsonb_build_object('eventId', v_event, 'deliveryId', v_delivery, 'queued', v.active);
end
$$;
comment on function api.send_webhook_test(uuid) is 'Queues a webhook.test event to this subscription only (manager role); it goes out after what is already pending.';

------------------------------------------------------------------------------
-- API: deliveries and log
------------------------------------------------------------------------------
create function app.webhook_delivery_json(d app.webhook_deliveries) returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object('id', d.id, 'eventId', d.event_id, 'eventType', e.type, 'subjectId', e.subject_id,
    'state', d.state, 'attempts', d.attempts, 'nextAttemptAt', case when d.state = 'pending' then d.next_attempt_at end,
    'lastStatus', d.last_status, 'lastError', d.last_error, 'deliveredAt', d.delivered_at, 'redeliveryOf', d.redelivery_of,
    'createdAt', d.created_at)
  from app.webhook_events e where e.id = d.event_id
$$;
comment on function app.webhook_delivery_json(app.webhook_deliveries) is 'A delivery as the API shows it.';
grant execute on function app.webhook_delivery_json(app.webhook_deliveries) to pressroom_api;

create function api.list_webhook_deliveries(p_id uuid, p_limit int, p_offset int, p_state text) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
begin
  if p_limit is null or p_limit not between 1 and 100 or p_offset is null or p_offset < 0 or p_offset > 100000 then
    perform app.raise(400, 'VALIDATION_FAILED', 'limit must be 1 to 100 and offset 0 to 100000.', '{}'::jsonb);
  end if;
  return jsonb_build_object(
    'data', coalesce((select jsonb_agg(app.webhook_delivery_json(d) order by d.seq desc)
                      from (select * from app.webhook_deliveries d where d.subscription_id = v.id
                              and (p_state is null or d.state = p_state)
                            order by d.seq desc limit p_limit offset p_offset) d), '[]'::jsonb),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset,
      'total', (select count(*)::int from app.webhook_deliveries d where d.subscription_id = v.id and (p_state is null or d.state = p_state))));
end
$$;
comment on function api.list_webhook_deliveries(uuid, int, int, text) is 'A subscription''s deliveries, newest first, optionally of one state (manager role).';

create function api.list_webhook_log(p_id uuid, p_limit int, p_offset int) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
begin
  if p_limit is null or p_limit not between 1 and 100 or p_offset is null or p_offset < 0 or p_offset > 100000 then
    perform app.raise(400, 'VALIDATION_FAILED', 'limit must be 1 to 100 and offset 0 to 100000.', '{}'::jsonb);
  end if;
  return jsonb_build_object(
    'data', coalesce((select jsonb_agg(jsonb_build_object('id', l.id, 'kind', l.kind, 'deliveryId', l.delivery_id,
                        'eventType', (select e.type from app.webhook_deliveries d join app.webhook_events e on e.id = d.event_id where d.id = l.delivery_id),
                        'attempt', l.attempt, 'request', l.request, 'responseStatus', l.response_status,
                        'responseExcerpt', l.response_excerpt, 'error', l.error, 'durationMs', l.duration_ms, 'createdAt', l.created_at)
                      order by l.seq desc)
                      from (select * from app.webhook_delivery_log l where l.subscription_id = v.id
                            order by l.seq desc limit p_limit offset p_offset) l), '[]'::jsonb),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset,
      'total', (select count(*)::int from app.webhook_delivery_log l where l.subscription_id = v.id)));
end
$$;
comment on function api.list_webhook_log(uuid, int, int) is 'A subscription''s delivery log (attempts, webhook.paused, webhook.resumed), newest first (manager role).';

create function api.redeliver_webhook(p_id uuid, p_delivery uuid) returns jsonb
language plpgsql volatile as $$
declare
  v app.webhook_subscriptions := app.webhook_subscription_for_update(p_id);
  d app.webhook_deliveries;
begin
  select * into d from app.webhook_deliveries x where x.id = p_delivery and x.subscription_id = v.id and x.workspace_id = v.workspace_id;
  if d.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No delivery with this id for this subscription.', jsonb_build_object('id', p_delivery));
  end if;
  insert into app.webhook_deliveries (organization_id, workspace_id, subscription_id, event_id, redelivery_of)
  values (v.organization_id, v.workspace_id, v.id, d.event_id, d.id) returning * into d;
  if v.active then perform app.webhook_enqueue(v.id); end if;
  return app.webhook_delivery_json(d);
end
$$;
comment on function api.redeliver_webhook(uuid, uuid) is 'Sends a delivery''s event again (manager role): a new delivery, queued after what is pending, with the same webhook-id so receivers can de-duplicate.';

------------------------------------------------------------------------------
-- Worker
------------------------------------------------------------------------------
create function app.webhook_claim(p_subscription uuid) returns jsonb
language plpgsql volatile set search_path = pg_catalog as $$
declare
  s app.webhook_subscriptions;
  d app.webhook_deliveries;
  e app.webhook_events;
begin
  select * into s from app.webhook_subscriptions x where x.id = p_subscription;
  if s.id is null or not s.active then
    return jsonb_build_object('action', 'stop');
  end if;
  select * into d from app.webhook_deliveries x where x.subscription_id = s.id and x.state = 'pending' order by x.seq limit 1;
  if d.id is null then
    return jsonb_build_object('action', 'stop');
  end if;
  if d.next_attempt_at > now() then
    return jsonb_build_object('action', 'wait', 'until', d.next_attempt_at);
  end if;
  select * into e from app.webhook_events x where x.id = d.event_id;
  return jsonb_build_object('action', 'send', 'deliveryId', d.id, 'attempt', d.attempts + 1,
    'timeoutMs', app.setting_int('webhook_timeout_ms'),
    'subscription', jsonb_build_object('id', s.id, 'url', s.url, 'secretCiphertext', encode(s.secret_ciphertext, 'base64')),
    'event', jsonb_build_object('id', e.id, 'type', e.type, 'workspaceId', e.workspace_id, 'subjectId', e.subject_id,
                                'occurredAt', e.occurred_at, 'data', e.data));
end
$$;
comment on function app.webhook_claim(uuid) is 'The next delivery of a subscription, in outbox order: send it (with URL, encrypted secret and event), wait until its retry time, or stop (none pending, or paused).';
grant execute on function app.webhook_claim(uuid) to pressroom_worker;

create function app.webhook_record_attempt(p_delivery uuid, p_ok boolean, p_request jsonb, p_status int, p_excerpt text,
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
    return jsonb_build_object('recorded', false);
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
    -- the next claim in the same transaction: one round trip per delivery
    return jsonb_build_object('recorded', true, 'delivered', true, 'next', app.webhook_claim(s.id));
  end if;
  v_delay_ms := least(app.setting_int('webhook_retry_max_ms')::bigint,
                      app.setting_int('webhook_retry_base_ms')::bigint * (2 ^ least(d.attempts, 20))::bigint);
  update app.webhook_deliveries x set attempts = x.attempts + 1, last_status = p_status, last_error = left(p_error, 2048),
    next_attempt_at = now() + v_delay_ms * interval '1 millisecond' where x.id = d.id;
  update app.webhook_subscriptions x set consecutive_failures = x.consecutive_failures + 1 where x.id = s.id
  returning * into s;
  if s.active and s.consecutive_failures >= app.setting_int('webhook_pause_after_failures') then
    update app.webhook_subscriptions x set active = false, paused_reason = 'failures', updated_at = now() where x.id = s.id;
    insert into app.webhook_delivery_log (organization_id, workspace_id, subscription_id, delivery_id, kind, error)
    values (s.organization_id, s.workspace_id, s.id, d.id, 'webhook.paused',
      format('Paused after %s failed attempts in a row.', s.consecutive_failures));
    v_paused := true;
  end if;
  return jsonb_build_object('recorded', true, 'delivered', false, 'paused', v_paused, 'retryInMs', v_delay_ms,
    'next', app.webhook_claim(s.id));
end
$$;
comment on function app.webhook_record_attempt(uuid, boolean, jsonb, int, text, text, int) is 'Records an attempt in the log; on success marks the delivery delivered and clears the failure run; on failure schedules the retry (webhook_retry_base_ms doubling up to webhook_retry_max_ms) and pauses the subscription after webhook_pause_after_failures failures in a row (log entry webhook.paused). Returns the subscription''s next claim (app.webhook_claim) with it.';
grant execute on function app.webhook_record_attempt(uuid, boolean, jsonb, int, text, text, int) to pressroom_worker;

select app.harden_api_functions();
