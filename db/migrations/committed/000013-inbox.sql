--! Previous: sha1:508883f02a41cffef3c66a76049ffd017c1432d7
--! Hash: sha1:632329f978c0da756b7f5c2b0081543bf4493087
--! Message: inbox

--! split: 11-inbox.sql
-- The inbox: comments and direct messages of connected accounts, fed by the
-- platforms' own webhooks (facebook, instagram, x) and by sandbox deliveries
-- signed Standard Webhooks style.
--
--   app.inbox_hook_secrets   per integration and source: the signing secret
--                            (AES-256-GCM ciphertext, made by the server) and
--                            the SHA-256 of Meta's verify token
--   app.inbox_deliveries     every accepted delivery, raw
--   app.inbox_events         its events, normalized, unique on (integration,
--                            platform event id): a redelivery changes nothing
--   app.inbox_threads        one post's comments or one conversation
--   app.inbox_messages       inbound, outbound (replies) and internal notes
--   app.inbox_reads          read state per member (principal) and thread
--   app.inbox_platform_rules what each platform allows (reply window, moderation)
--
-- Folding (app.inbox_fold, job inbox.fold) recomputes every touched message
-- from ALL of its events, so the result depends on the set of events and not
-- on the order they arrived in. Replies and moderation go to the platform
-- through the integration's connector in job inbox.action.

------------------------------------------------------------------------------
-- Audit rows of inbound deliveries carry actor kind platform_webhook.
------------------------------------------------------------------------------
alter table audit.api_calls drop constraint if exists api_calls_actor_kind_check;
alter table audit.api_calls add constraint api_calls_actor_kind_check
  check (actor_kind = any (array['user', 'api_key', 'anonymous', 'platform_webhook']));

------------------------------------------------------------------------------
-- Settings the rules read.
------------------------------------------------------------------------------
insert into app.settings (key, value, kind, minimum, description) values
  ('inbox_fold_batch', '1000', 'integer', 1, 'How many inbound events one run of the inbox fold job takes (app.inbox_fold); the job runs again while more wait.'),
  ('inbox_reply_max_length', '8000', 'integer', 1, 'Longest reply or note text of the inbox, in characters.'),
  ('inbox_page_max', '100', 'integer', 1, 'Largest page of the inbox thread and message lists.'),
  ('inbox_delivery_retention_days', '30', 'integer', 1, 'Days a raw inbound delivery (body and signature headers) is kept once all its events are folded; job inbox.purge-deliveries deletes it then (app.inbox_purge_deliveries). Its events, and so de-duplication, stay.')
on conflict (key) do nothing;

------------------------------------------------------------------------------
-- What each platform allows in its inbox (data, not code). platform '*' is
-- the rule of every platform without a row of its own (sandbox accounts of
-- other platforms).
------------------------------------------------------------------------------
create table app.inbox_platform_rules (
  platform text not null,
  kind text not null check (kind in ('comment', 'message')),
  can_reply boolean not null,
  reply_window_hours int check (reply_window_hours is null or reply_window_hours > 0),
  moderation text[] not null default '{}' check (moderation <@ array['hide', 'unhide', 'delete']),
  reason text,
  primary key (platform, kind)
);
comment on table app.inbox_platform_rules is 'What a platform allows in the inbox, per thread kind: replying (and within how many hours of the last inbound message), and which moderation actions (hide, unhide, delete). platform * applies to platforms without a row. Reference data, readable by every role.';
alter table app.inbox_platform_rules enable row level security;
alter table app.inbox_platform_rules force row level security;
create policy inbox_platform_rules_read on app.inbox_platform_rules for select to public using (true);
grant select on app.inbox_platform_rules to pressroom_api, pressroom_definer, pressroom_worker;
insert into app.inbox_platform_rules (platform, kind, can_reply, reply_window_hours, moderation, reason) values
  ('facebook', 'comment', true, null, '{hide,unhide,delete}', null),
  ('facebook', 'message', true, 24, '{}', 'Messenger lets a page answer a person only within 24 hours of their last message, and has no moderation of messages.'),
  ('instagram', 'comment', true, null, '{hide,unhide,delete}', null),
  ('instagram', 'message', true, 24, '{}', 'Instagram lets an account answer a direct message only within 24 hours of the last message, and has no moderation of messages.'),
  ('x', 'comment', true, null, '{hide,unhide}', 'X lets an account hide replies to its posts, but delete only its own posts.'),
  ('x', 'message', true, null, '{}', 'X has no moderation of direct messages.'),
  ('*', 'comment', true, null, '{hide,unhide,delete}', null),
  ('*', 'message', true, null, '{}', 'Direct messages cannot be moderated.');

create function app.inbox_rule(p_platform text, p_kind text) returns app.inbox_platform_rules
language sql stable set search_path = pg_catalog as $$
  select r from app.inbox_platform_rules r
  where r.kind = p_kind and r.platform in (p_platform, '*')
  order by (r.platform = '*') limit 1
$$;
comment on function app.inbox_rule(text, text) is 'The inbox rule of a platform and thread kind (app.inbox_platform_rules), falling back to platform *.';
grant execute on function app.inbox_rule(text, text) to pressroom_api, pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- Secrets of the inbound hooks.
------------------------------------------------------------------------------
create table app.inbox_hook_secrets (
  integration_id uuid not null references app.integrations (id) on delete cascade,
  source text not null check (source in ('facebook', 'instagram', 'x', 'sandbox')),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  secret_ciphertext bytea not null check (length(secret_ciphertext) between 29 and 2048),
  verify_token_hash bytea check (verify_token_hash is null or length(verify_token_hash) = 32),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (integration_id, source)
);
comment on table app.inbox_hook_secrets is 'The secrets of an integration''s inbound webhook, per source: the app secret (facebook, instagram), consumer secret (x) or Standard Webhooks secret (sandbox), encrypted by the server with AES-256-GCM (server/inbox/secrets.ts) since it must compute HMACs with it, and the SHA-256 of Meta''s verify token. Requests write them through api.set_inbox_hook_secret and never read the secret columns; the hook routes read them through api.inbox_hook_target. Tenant policies (writes need editor, the api function manager).';
select app.apply_tenant_policies('app.inbox_hook_secrets', array['select', 'insert', 'update', 'delete']);
grant select (integration_id, source, organization_id, workspace_id, created_at, updated_at) on app.inbox_hook_secrets to pressroom_api;
grant delete on app.inbox_hook_secrets to pressroom_api;
select app.grant_api_columns('app.inbox_hook_secrets', array['insert', 'update']);

------------------------------------------------------------------------------
-- Raw deliveries and their normalized events.
------------------------------------------------------------------------------
create table app.inbox_deliveries (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  source text not null check (source in ('facebook', 'instagram', 'x', 'sandbox')),
  body bytea not null check (length(body) <= 1048576),
  headers jsonb not null default '{}' check (jsonb_typeof(headers) = 'object'),
  event_count int not null check (event_count >= 0),
  new_event_count int not null check (new_event_count >= 0),
  received_at timestamptz not null default now()
);
comment on table app.inbox_deliveries is 'Every inbound webhook delivery whose signature was valid, as received (raw body and the signature headers), with how many events it held and how many were new. Written only by api.inbox_receive (pressroom_definer); requests read nothing of it but through the inbox functions. Tenant policies (select only for pressroom_api).';
create index inbox_deliveries_integration_idx on app.inbox_deliveries (integration_id, received_at);
create index inbox_deliveries_received_idx on app.inbox_deliveries (received_at);
create index inbox_deliveries_workspace_id_idx on app.inbox_deliveries (workspace_id);
select app.apply_tenant_policies('app.inbox_deliveries', array['select']);
grant select on app.inbox_deliveries to pressroom_api;

create table app.inbox_events (
  id bigint generated always as identity primary key,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  -- null once the raw delivery is deleted (inbox_delivery_retention_days): the
  -- event itself stays, it is the de-duplication key and what folding reads.
  delivery_id uuid references app.inbox_deliveries (id) on delete set null,
  event_id text not null check (length(event_id) between 1 and 300),
  type text not null check (type in ('message.created', 'message.edited', 'message.deleted', 'message.hidden',
                                     'message.unhidden', 'reaction.added', 'reaction.removed')),
  thread_kind text not null check (thread_kind in ('comment', 'message')),
  -- Null only for a deletion that does not say where the message was (X's
  -- tweet_delete_events): the message's other events place it.
  thread_key text check (length(thread_key) between 1 and 300),
  message_key text not null check (length(message_key) between 1 and 300),
  parent_key text check (length(parent_key) <= 300),
  author jsonb check (author is null or jsonb_typeof(author) = 'object'),
  body text check (length(body) <= 65536),
  attachments jsonb not null default '[]' check (jsonb_typeof(attachments) = 'array'),
  reaction text check (length(reaction) <= 64),
  reactor_id text check (length(reactor_id) <= 300),
  occurred_at timestamptz not null,
  received_at timestamptz not null default now(),
  folded_at timestamptz,
  constraint inbox_events_unique_event unique (integration_id, event_id),
  constraint inbox_events_thread check (thread_key is not null or type = 'message.deleted'),
  constraint inbox_events_reaction check ((type like 'reaction.%') = (reaction is not null and reactor_id is not null))
);
comment on table app.inbox_events is 'The events of the inbound deliveries, normalized (server/inbox/normalize.ts): a message created, edited, deleted, hidden or unhidden, or a reaction added or removed, with the platform''s keys of its thread and message. Unique on (integration, platform event id), so a redelivery inserts nothing. Folded into threads and messages by app.inbox_fold. Tenant policies (select only for pressroom_api).';
create index inbox_events_message_idx on app.inbox_events (integration_id, message_key);
create index inbox_events_unfolded_idx on app.inbox_events (integration_id, id) where folded_at is null;
create index inbox_events_workspace_id_idx on app.inbox_events (workspace_id);
create index inbox_events_delivery_idx on app.inbox_events (delivery_id);
select app.apply_tenant_policies('app.inbox_events', array['select']);
grant select on app.inbox_events to pressroom_api;

------------------------------------------------------------------------------
-- Threads, messages, read state.
------------------------------------------------------------------------------
create table app.inbox_threads (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  platform text not null references app.platforms (code),
  kind text not null check (kind in ('comment', 'message')),
  thread_key text not null check (length(thread_key) between 1 and 300),
  content_item_id uuid references app.content_items (id) on delete set null,
  participants jsonb not null default '[]' check (jsonb_typeof(participants) = 'array'),
  last_message_at timestamptz,
  last_inbound_at timestamptz,
  message_count int not null default 0,
  status text not null default 'open' check (status in ('open', 'archived')),
  archived_at timestamptz,
  assignee_id uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint inbox_threads_key unique (integration_id, kind, thread_key)
);
comment on table app.inbox_threads is 'An inbox thread: the comments on one post (kind comment, thread_key the platform post id, content_item_id the edition when we published it) or one direct-message conversation (kind message) of an integration. Made and summed up by app.inbox_fold; requests change only status (archive) and assignee through api.update_inbox_thread. An archived thread opens again when an inbound message arrives after it was archived. Tenant policies (select, update; writes need editor).';
create index inbox_threads_list_idx on app.inbox_threads (workspace_id, last_message_at desc, id desc) where last_message_at is not null;
create index inbox_threads_assignee_idx on app.inbox_threads (assignee_id) where assignee_id is not null;
create index inbox_threads_content_idx on app.inbox_threads (content_item_id) where content_item_id is not null;
select app.apply_tenant_policies('app.inbox_threads', array['select', 'update']);
grant select on app.inbox_threads to pressroom_api;
grant update (status, archived_at, assignee_id, updated_at) on app.inbox_threads to pressroom_api;

create table app.inbox_messages (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  thread_id uuid not null references app.inbox_threads (id) on delete cascade,
  direction text not null check (direction in ('inbound', 'outbound', 'note')),
  message_key text check (length(message_key) between 1 and 300),
  parent_key text check (length(parent_key) <= 300),
  in_reply_to_id uuid references app.inbox_messages (id) on delete set null,
  author jsonb not null default '{}' check (jsonb_typeof(author) = 'object'),
  body text check (length(body) <= 65536),
  attachments jsonb not null default '[]' check (jsonb_typeof(attachments) = 'array'),
  reactions jsonb not null default '{}' check (jsonb_typeof(reactions) = 'object'),
  has_original boolean not null default true,
  moderation text not null default 'visible' check (moderation in ('visible', 'hidden', 'deleted')),
  moderation_pending text check (moderation_pending in ('hide', 'unhide', 'delete')),
  moderation_error text,
  delivery_state text check (delivery_state in ('pending', 'sent', 'failed')),
  delivery_error text,
  action_job_id uuid,
  attempts int not null default 0,
  -- The job whose claim counted the last attempt: a job pg-boss hands out
  -- again (its worker died) re-sends the same attempt, with the same token.
  attempt_job_id uuid,
  occurred_at timestamptz not null default now(),
  edited_at timestamptz,
  created_by uuid,
  -- The clock, not the transaction's start: messages folded together still
  -- arrive one after the other for read state (app.inbox_unread_count).
  created_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default now(),
  constraint inbox_messages_key unique (integration_id, message_key),
  constraint inbox_messages_delivery check ((direction = 'outbound') = (delivery_state is not null)),
  constraint inbox_messages_inbound_key check (direction <> 'inbound' or message_key is not null)
);
comment on table app.inbox_messages is 'A message of an inbox thread: inbound (folded from platform events by app.inbox_fold; has_original is false while only reactions or deletions of it have arrived), outbound (a reply, delivery_state pending, sent or failed with delivery_error, sent by job inbox.action) or an internal note (never sent). moderation is visible, hidden or deleted; moderation_pending the action the job is carrying out. Only the engine writes the engine columns. Tenant policies (select, insert, update; writes need editor).';
create index inbox_messages_thread_idx on app.inbox_messages (thread_id, occurred_at, id);
create index inbox_messages_unread_idx on app.inbox_messages (thread_id, created_at) where direction = 'inbound' and has_original;
create index inbox_messages_workspace_id_idx on app.inbox_messages (workspace_id);
select app.apply_tenant_policies('app.inbox_messages', array['select', 'insert', 'update']);
grant select on app.inbox_messages to pressroom_api;
grant insert (organization_id, workspace_id, integration_id, thread_id, direction, in_reply_to_id, author, body, delivery_state, created_by)
  on app.inbox_messages to pressroom_api;
grant update (moderation_pending, moderation_error, delivery_state, delivery_error, action_job_id, updated_at)
  on app.inbox_messages to pressroom_api;

create table app.inbox_reads (
  thread_id uuid not null references app.inbox_threads (id) on delete cascade,
  principal_id uuid not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  read_at timestamptz not null,
  updated_at timestamptz not null default now(),
  primary key (thread_id, principal_id)
);
comment on table app.inbox_reads is 'Read state per member: the principal (user or API key) has read the inbound messages of the thread that arrived up to read_at. Messages that arrived later count as unread for that principal only. A principal sees and writes only its own rows, of threads it can see (policy inbox_reads_api_own).';
create index inbox_reads_principal_idx on app.inbox_reads (principal_id);
alter table app.inbox_reads enable row level security;
alter table app.inbox_reads force row level security;
create policy inbox_reads_definer on app.inbox_reads to pressroom_definer using (true) with check (true);
create policy inbox_reads_worker on app.inbox_reads to pressroom_worker using (true) with check (true);
create policy inbox_reads_api_own on app.inbox_reads for all to pressroom_api
  using (organization_id = (select app.current_organization_id()) and principal_id = (select app.current_principal_id())
         and exists (select 1 from app.inbox_threads t where t.id = thread_id))
  with check (organization_id = (select app.current_organization_id()) and principal_id = (select app.current_principal_id())
         and exists (select 1 from app.inbox_threads t where t.id = thread_id));
grant select, insert, update, delete on app.inbox_reads to pressroom_api, pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- Jobs: inbox.fold (per integration, one queued at a time) and inbox.action
-- (a reply or a moderation through the connector).
------------------------------------------------------------------------------
create function app.inbox_enqueue(p_queue text, p_data jsonb, p_singleton text) returns uuid
language plpgsql security definer set search_path = pg_catalog as $$
declare
  v_queue record;
  v_job uuid := gen_random_uuid();
  v_rows int;
begin
  if p_queue not in ('inbox.fold', 'inbox.action') then
    raise exception 'app.inbox_enqueue: unknown queue %', p_queue;
  end if;
  select * into v_queue from pgboss.queue where name = p_queue;
  if v_queue.name is null then
    raise exception 'pg-boss queue % is not installed (server/jobs/queues.ts installQueues)', p_queue;
  end if;
  insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
    keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
  values (v_job, p_queue, p_data, 0, now(), p_singleton, v_queue.expire_seconds, v_queue.deletion_seconds,
    now() + v_queue.retention_seconds * interval '1 second', v_queue.retry_limit, v_queue.retry_delay,
    v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy, v_queue.dead_letter, v_queue.heartbeat_seconds)
  on conflict do nothing;
  get diagnostics v_rows = row_count;
  return case when v_rows = 1 then v_job end;
end
$$;
alter function app.inbox_enqueue(text, jsonb, text) owner to pressroom_definer;
comment on function app.inbox_enqueue(text, jsonb, text) is 'Writes a job of queue inbox.fold or inbox.action into pg-boss in the caller''s transaction (so the job commits with what it acts on); a fold job of an integration that already has one queued is not added twice (queue policy stately). Returns the job id, or null when none was added.';
grant execute on function app.inbox_enqueue(text, jsonb, text) to pressroom_api, pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- JSON of threads and messages.
------------------------------------------------------------------------------
create function app.inbox_unread_count(p_thread uuid) returns int
language sql stable set search_path = pg_catalog as $$
  select count(*)::int from app.inbox_messages m
  where m.thread_id = p_thread and m.direction = 'inbound' and m.has_original and m.moderation <> 'deleted'
    and m.created_at > coalesce((select r.read_at from app.inbox_reads r
                                 where r.thread_id = p_thread and r.principal_id = app.current_principal_id()), '-infinity')
$$;
comment on function app.inbox_unread_count(uuid) is 'How many inbound messages of the thread (deleted ones aside) arrived after the current principal last read it (app.inbox_reads).';
grant execute on function app.inbox_unread_count(uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.inbox_thread_json(t app.inbox_threads) returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object(
    'id', t.id, 'integrationId', t.integration_id, 'platform', t.platform, 'kind', t.kind,
    'platformThreadId', t.thread_key,
    'post', case when t.kind = 'comment' then jsonb_build_object('platformPostId', t.thread_key, 'contentId', t.content_item_id) end,
    'participants', t.participants, 'messageCount', t.message_count,
    'lastMessageAt', t.last_message_at, 'lastInboundAt', t.last_inbound_at,
    'unreadCount', app.inbox_unread_count(t.id), 'status', t.status, 'assigneeId', t.assignee_id,
    'createdAt', t.created_at, 'updatedAt', t.updated_at)
$$;
comment on function app.inbox_thread_json(app.inbox_threads) is 'A thread as the API shows it (schema InboxThread), with the current principal''s unread count.';
grant execute on function app.inbox_thread_json(app.inbox_threads) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.inbox_message_json(m app.inbox_messages) returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object(
    'id', m.id, 'threadId', m.thread_id, 'direction', m.direction,
    'platformMessageId', m.message_key, 'platformParentId', m.parent_key, 'inReplyToId', m.in_reply_to_id,
    'author', m.author, 'text', m.body, 'attachments', m.attachments, 'reactions', m.reactions,
    'moderation', m.moderation,
    'moderationPending', m.moderation_pending, 'moderationError', m.moderation_error,
    'delivery', case when m.direction = 'outbound'
                     then jsonb_build_object('state', m.delivery_state, 'error', m.delivery_error, 'attempts', m.attempts) end,
    'occurredAt', m.occurred_at, 'editedAt', m.edited_at, 'createdAt', m.created_at)
$$;
comment on function app.inbox_message_json(app.inbox_messages) is 'A message as the API shows it (schema InboxMessage).';
grant execute on function app.inbox_message_json(app.inbox_messages) to pressroom_api, pressroom_definer, pressroom_worker;

------------------------------------------------------------------------------
-- Folding.
------------------------------------------------------------------------------
create function app.inbox_fold(p_integration uuid) returns jsonb
language plpgsql set search_path = pg_catalog as $$
declare
  v_integ app.integrations;
  v_ids bigint[];
  v_keys text[];
  v_threads uuid[];
  v_batch int := coalesce(app.setting('inbox_fold_batch')::int, 1000);
begin
  -- One fold of an integration at a time; a second waits and then finds the rest.
  perform pg_advisory_xact_lock(hashtextextended('pressroom:inbox.fold:' || p_integration::text, 0));
  select * into v_integ from app.integrations where id = p_integration;
  if v_integ.id is null then
    return jsonb_build_object('folded', 0, 'more', false);
  end if;
  select array_agg(id) into v_ids
  from (select id from app.inbox_events where integration_id = p_integration and folded_at is null order by id limit v_batch) e;
  if v_ids is null then
    return jsonb_build_object('folded', 0, 'more', false);
  end if;

  insert into app.inbox_threads (organization_id, workspace_id, integration_id, platform, kind, thread_key)
  select distinct v_integ.organization_id, v_integ.workspace_id, p_integration, v_integ.platform, e.thread_kind, e.thread_key
  from app.inbox_events e where e.id = any (v_ids) and e.thread_key is not null
  on conflict (integration_id, kind, thread_key) do nothing;

  select array_agg(distinct e.message_key) into v_keys from app.inbox_events e where e.id = any (v_ids);

  -- Every touched message from ALL of its events: what is shown depends on
  -- the set of events, never on the order they arrived in.
  with ev as (
    select e.* from app.inbox_events e
    where e.integration_id = p_integration and e.message_key = any (v_keys)
  ), keyed as (
    select message_key, min(thread_kind) filter (where thread_key is not null) as thread_kind, min(thread_key) as thread_key,
           bool_or(type in ('message.created', 'message.edited')) as has_original,
           bool_or(type = 'message.deleted') as deleted,
           max(occurred_at) filter (where type = 'message.edited') as edited_at,
           min(occurred_at) as first_at
    from ev group by message_key
  ), origin as (
    select distinct on (message_key) message_key, author, parent_key, occurred_at
    from ev where type in ('message.created', 'message.edited')
    order by message_key, (type = 'message.created') desc, occurred_at, event_id
  ), latest as (
    select distinct on (message_key) message_key, body, attachments
    from ev where type in ('message.created', 'message.edited')
    order by message_key, occurred_at desc, (type = 'message.edited') desc, event_id desc
  ), hiding as (
    select distinct on (message_key) message_key, type = 'message.hidden' as hidden
    from ev where type in ('message.hidden', 'message.unhidden')
    order by message_key, occurred_at desc, event_id desc
  ), reacting as (
    select message_key, jsonb_object_agg(reaction, n) as reactions
    from (select message_key, reaction, count(*) as n
          from (select distinct on (message_key, reactor_id, reaction) message_key, reactor_id, reaction, type
                from ev where type in ('reaction.added', 'reaction.removed')
                order by message_key, reactor_id, reaction, occurred_at desc, (type = 'reaction.removed') desc, event_id desc) x
          where type = 'reaction.added'
          group by message_key, reaction) y
    group by message_key
  )
  insert into app.inbox_messages as m (organization_id, workspace_id, integration_id, thread_id, direction, message_key,
    parent_key, author, body, attachments, reactions, has_original, moderation, occurred_at, edited_at)
  select v_integ.organization_id, v_integ.workspace_id, p_integration, t.id, 'inbound', k.message_key,
         o.parent_key, coalesce(o.author, '{}'), l.body, coalesce(l.attachments, '[]'), coalesce(r.reactions, '{}'),
         k.has_original,
         case when k.deleted then 'deleted' when h.hidden then 'hidden' else 'visible' end,
         coalesce(o.occurred_at, k.first_at), k.edited_at
  from keyed k
  join app.inbox_threads t on t.integration_id = p_integration and t.kind = k.thread_kind and t.thread_key = k.thread_key
  left join origin o using (message_key)
  left join latest l using (message_key)
  left join hiding h using (message_key)
  left join reacting r using (message_key)
  on conflict (integration_id, message_key) do update set
    parent_key = excluded.parent_key,
    author = case when m.direction = 'inbound' then excluded.author else m.author end,
    body = case when m.direction = 'inbound' then excluded.body else m.body end,
    attachments = case when m.direction = 'inbound' then excluded.attachments else m.attachments end,
    reactions = excluded.reactions,
    has_original = m.direction <> 'inbound' or excluded.has_original,
    -- Platform deletions and hide/unhide events decide; without any, what
    -- our own moderation (job inbox.action) recorded stays.
    moderation = case when excluded.moderation = 'deleted' then 'deleted'
                      when (select true from app.inbox_events e where e.integration_id = p_integration
                              and e.message_key = m.message_key and e.type in ('message.hidden', 'message.unhidden') limit 1)
                        then excluded.moderation
                      else m.moderation end,
    occurred_at = case when m.direction = 'inbound' then excluded.occurred_at else m.occurred_at end,
    edited_at = excluded.edited_at,
    updated_at = now();

  select array_agg(distinct m.thread_id) into v_threads
  from app.inbox_messages m where m.integration_id = p_integration and m.message_key = any (v_keys);
  perform app.inbox_refresh_threads(v_threads);

  update app.inbox_events set folded_at = now() where id = any (v_ids);
  return jsonb_build_object('folded', cardinality(v_ids), 'more', cardinality(v_ids) >= v_batch);
end
$$;
comment on function app.inbox_fold(uuid) is 'Folds the unfolded events of an integration (at most setting inbox_fold_batch) into threads and messages: every touched message is recomputed from all of its events (original and latest edit by platform time, deletion, latest hide/unhide, reactions as the latest add/remove per person and reaction), so any arrival order converges to the same state. Run by job inbox.fold as pressroom_worker; answers {folded, more}.';
grant execute on function app.inbox_fold(uuid) to pressroom_worker, pressroom_definer;

create function app.inbox_refresh_threads(p_threads uuid[]) returns void
language sql set search_path = pg_catalog as $$
  update app.inbox_threads t set
    last_message_at = s.last_at,
    last_inbound_at = s.last_in,
    message_count = s.n,
    participants = s.people,
    content_item_id = coalesce(t.content_item_id, case when t.kind = 'comment' then (
      select ci.id from app.content_items ci
      where ci.integration_id = t.integration_id and ci.platform_post_id = t.thread_key
      order by ci.created_at limit 1) end),
    status = case when t.archived_at is not null and (s.last_in is null or t.archived_at >= s.last_in) then 'archived' else 'open' end,
    updated_at = now()
  from (
    select th.id,
           max(m.occurred_at) filter (where m.has_original and m.direction <> 'note') as last_at,
           max(m.occurred_at) filter (where m.has_original and m.direction = 'inbound') as last_in,
           count(m.id) filter (where m.has_original and m.direction <> 'note')::int as n,
           coalesce((select jsonb_agg(a order by a ->> 'id') from (
                       select distinct m2.author as a from app.inbox_messages m2
                       where m2.thread_id = th.id and m2.direction = 'inbound' and m2.has_original and m2.author ? 'id'
                       order by 1 limit 50) p), '[]') as people
    from unnest(p_threads) th (id)
    left join app.inbox_messages m on m.thread_id = th.id
    group by th.id
  ) s
  where t.id = s.id
$$;
comment on function app.inbox_refresh_threads(uuid[]) is 'Sums up threads from their messages: last message and last inbound time, message count, participants (inbound authors, at most 50), the content edition of the post, and status (archived only while no inbound message arrived after archived_at).';
grant execute on function app.inbox_refresh_threads(uuid[]) to pressroom_worker, pressroom_definer, pressroom_api;

------------------------------------------------------------------------------
-- Inbound hook: target lookup and receipt (server login role only).
------------------------------------------------------------------------------
create function api.inbox_hook_target(p_source text, p_integration uuid) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_integ app.integrations;
  v_secret app.inbox_hook_secrets;
begin
  if p_source not in ('facebook', 'instagram', 'x', 'sandbox') then
    return jsonb_build_object('found', false, 'reason', 'source');
  end if;
  select * into v_integ from app.integrations where id = p_integration and deleted_at is null;
  if v_integ.id is null
     or (p_source = 'sandbox' and v_integ.connector <> 'sandbox')
     or (p_source <> 'sandbox' and v_integ.platform <> p_source) then
    return jsonb_build_object('found', false, 'reason', 'integration');
  end if;
  select * into v_secret from app.inbox_hook_secrets where integration_id = p_integration and source = p_source;
  if v_secret.integration_id is null then
    return jsonb_build_object('found', false, 'reason', 'secret');
  end if;
  return jsonb_build_object('found', true, 'integrationId', v_integ.id, 'organizationId', v_integ.organization_id,
    'workspaceId', v_integ.workspace_id, 'platform', v_integ.platform, 'connector', v_integ.connector,
    'secretCiphertext', encode(v_secret.secret_ciphertext, 'base64'),
    'verifyTokenHash', encode(v_secret.verify_token_hash, 'hex'));
end
$$;
alter function api.inbox_hook_target(text, uuid) owner to pressroom_definer;
comment on function api.inbox_hook_target(text, uuid) is 'Serves the inbound hook routes (server/routes/hooks.ts, no bearer): the integration a delivery is for, when it exists, is not deleted, matches the source (its platform, or connector sandbox) and has a secret for it, with the encrypted secret and the verify token''s hash. Owned by pressroom_definer, executable by pressroom_app only.';
grant execute on function api.inbox_hook_target(text, uuid) to pressroom_app;

create function api.inbox_receive(p_source text, p_integration uuid, p_body bytea, p_headers jsonb, p_events jsonb)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_integ app.integrations;
  v_delivery uuid := gen_random_uuid();
  v_count int := coalesce(jsonb_array_length(p_events), 0);
  v_new int;
begin
  select * into v_integ from app.integrations where id = p_integration and deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No such integration.', jsonb_build_object('id', p_integration));
  end if;
  if jsonb_typeof(p_events) <> 'array' then
    perform app.raise(400, 'INVALID_DELIVERY', 'The events are not a list.');
  end if;
  insert into app.inbox_deliveries (id, organization_id, workspace_id, integration_id, source, body, headers, event_count, new_event_count)
  values (v_delivery, v_integ.organization_id, v_integ.workspace_id, p_integration, p_source, p_body, coalesce(p_headers, '{}'), v_count, 0);
  with ins as (
    insert into app.inbox_events (organization_id, workspace_id, integration_id, delivery_id, event_id, type, thread_kind,
      thread_key, message_key, parent_key, author, body, attachments, reaction, reactor_id, occurred_at)
    select v_integ.organization_id, v_integ.workspace_id, p_integration, v_delivery, e ->> 'eventId', e ->> 'type', e ->> 'threadKind',
           e ->> 'threadKey', e ->> 'messageKey', e ->> 'parentKey', nullif(e -> 'author', 'null'::jsonb), e ->> 'text',
           coalesce(nullif(e -> 'attachments', 'null'::jsonb), '[]'), e ->> 'reaction', e ->> 'reactorId', (e ->> 'occurredAt')::timestamptz
    from jsonb_array_elements(p_events) e
    on conflict (integration_id, event_id) do nothing
    returning 1)
  select count(*) into v_new from ins;
  if v_new = 0 and v_count > 0 then
    -- A redelivery: every event is known already, so nothing is kept.
    delete from app.inbox_deliveries where id = v_delivery;
    v_delivery := null;
  else
    update app.inbox_deliveries set new_event_count = v_new where id = v_delivery;
  end if;
  if v_new > 0 then
    perform app.inbox_enqueue('inbox.fold', jsonb_build_object('integrationId', p_integration), p_integration::text);
  end if;
  return jsonb_build_object('deliveryId', v_delivery, 'events', v_count, 'newEvents', v_new,
    'organizationId', v_integ.organization_id, 'workspaceId', v_integ.workspace_id);
end
$$;
alter function api.inbox_receive(text, uuid, bytea, jsonb, jsonb) owner to pressroom_definer;
comment on function api.inbox_receive(text, uuid, bytea, jsonb, jsonb) is 'Serves POST /v1/hooks/{source}/{integrationId} after the server checked the signature: stores the raw delivery and its normalized events, skipping events already received (unique integration and event id; a delivery whose events are all known is a redelivery and keeps nothing, deliveryId null), and queues the fold job when something is new. Owned by pressroom_definer, executable by pressroom_app only.';
grant execute on function api.inbox_receive(text, uuid, bytea, jsonb, jsonb) to pressroom_app;

------------------------------------------------------------------------------
-- Hook secrets (manager).
------------------------------------------------------------------------------
create function api.set_inbox_hook_secret(p_integration uuid, p_source text, p_secret text, p_secret_ciphertext bytea,
  p_verify_token_hash bytea) returns jsonb
language plpgsql as $$
declare
  v_integ record;
  v_row app.inbox_hook_secrets;
begin
  perform app.require_role('manager');
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = p_integration and i.deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration));
  end if;
  if p_source not in ('facebook', 'instagram', 'x', 'sandbox') then
    perform app.raise(400, 'VALIDATION_FAILED', 'source must be facebook, instagram, x or sandbox.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'path.source', 'code', 'enum', 'message', 'must be facebook, instagram, x or sandbox'))));
  end if;
  if (p_source = 'sandbox' and v_integ.connector <> 'sandbox') or (p_source <> 'sandbox' and v_integ.platform <> p_source) then
    perform app.raise(400, 'HOOK_SOURCE_MISMATCH',
      format('This integration (%s, connector %s) cannot receive %s deliveries: a platform source must be the integration''s platform, sandbox needs the sandbox connector.',
             v_integ.platform, v_integ.connector, p_source),
      jsonb_build_object('platform', v_integ.platform, 'connector', v_integ.connector, 'source', p_source));
  end if;
  if p_source = 'sandbox' and app.webhook_secret_key_length(p_secret) is null then
    perform app.raise(400, 'VALIDATION_FAILED', 'A sandbox secret is a Standard Webhooks secret: whsec_ followed by the base64 of 24 to 64 bytes.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'format', 'message', 'must be whsec_ followed by the base64 of 24 to 64 bytes'))));
  end if;
  if p_secret is null or length(p_secret) not between 16 and 512 then
    perform app.raise(400, 'VALIDATION_FAILED', 'secret must have 16 to 512 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'length', 'message', 'must have 16 to 512 characters'))));
  end if;
  if p_source in ('facebook', 'instagram') and p_verify_token_hash is null then
    perform app.raise(400, 'VALIDATION_FAILED', 'Meta sources need verifyToken, the token Meta sends with the subscription handshake.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.verifyToken', 'code', 'required', 'message', 'is required for facebook and instagram'))));
  end if;
  if p_source not in ('facebook', 'instagram') and p_verify_token_hash is not null then
    perform app.raise(400, 'VALIDATION_FAILED', 'verifyToken belongs to the Meta sources only.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.verifyToken', 'code', 'unexpected', 'message', 'only for facebook and instagram'))));
  end if;
  update app.inbox_hook_secrets set secret_ciphertext = p_secret_ciphertext, verify_token_hash = p_verify_token_hash, updated_at = now()
  where integration_id = p_integration and source = p_source;
  if not found then
    insert into app.inbox_hook_secrets (integration_id, source, organization_id, workspace_id, secret_ciphertext, verify_token_hash, created_by)
    values (p_integration, p_source, v_integ.organization_id, v_integ.workspace_id, p_secret_ciphertext, p_verify_token_hash, app.current_user_id());
  end if;
  return jsonb_build_object('integrationId', p_integration, 'source', p_source,
    'path', format('/v1/hooks/%s/%s', p_source, p_integration),
    'verifyTokenSet', p_verify_token_hash is not null, 'updatedAt', now());
end
$$;
comment on function api.set_inbox_hook_secret(uuid, text, text, bytea, bytea) is 'Serves PUT /v1/workspaces/{workspaceId}/integrations/{id}/inbox-hooks/{source} (setInboxHookSecret_v1). Sets the secret an integration''s inbound deliveries from a source are signed with (the server passes it to check its shape, and stores only the ciphertext it made) and, for facebook and instagram, the SHA-256 of the verify token. Requires the manager role; 404 INTEGRATION_NOT_FOUND, 400 HOOK_SOURCE_MISMATCH and VALIDATION_FAILED.';

------------------------------------------------------------------------------
-- Platform access tokens of the inbox: with one, an integration's replies and
-- moderation go to the platform's own API (server/platforms/inbox-meta.ts,
-- inbox-x.ts) instead of its connector. Encrypted like the hook secrets.
------------------------------------------------------------------------------
create table app.inbox_platform_tokens (
  integration_id uuid primary key references app.integrations (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  token_ciphertext bytea not null check (length(token_ciphertext) between 29 and 8192),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
comment on table app.inbox_platform_tokens is 'The access token an integration of facebook, instagram or x uses for the inbox''s replies and moderation through the platform''s API (a Page or Instagram access token for the Graph API, an OAuth 2.0 user token for X API v2), encrypted by the server with AES-256-GCM (server/inbox/secrets.ts) since it must send it. Requests write it through api.set_inbox_platform_token and never read the ciphertext; job inbox.action reads it through app.inbox_action_claim. Tenant policies.';
create index inbox_platform_tokens_workspace_id_idx on app.inbox_platform_tokens (workspace_id);
select app.apply_tenant_policies('app.inbox_platform_tokens', array['select', 'insert', 'update', 'delete']);
grant select (integration_id, organization_id, workspace_id, created_at, updated_at) on app.inbox_platform_tokens to pressroom_api;
grant delete on app.inbox_platform_tokens to pressroom_api;
select app.grant_api_columns('app.inbox_platform_tokens', array['insert', 'update']);
grant select on app.inbox_platform_tokens to pressroom_worker;

create function api.set_inbox_platform_token(p_integration uuid, p_token_length int, p_token_ciphertext bytea) returns jsonb
language plpgsql as $$
declare
  v_integ record;
begin
  perform app.require_role('manager');
  select i.id, i.organization_id, i.workspace_id, i.platform into v_integ from app.integrations i where i.id = p_integration and i.deleted_at is null;
  if v_integ.id is null then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration));
  end if;
  if v_integ.platform not in ('facebook', 'instagram', 'x') then
    perform app.raise(400, 'PLATFORM_TOKEN_UNSUPPORTED',
      format('The inbox talks to the platform''s API for facebook, instagram and x only; this integration is %s.', v_integ.platform),
      jsonb_build_object('platform', v_integ.platform, 'supported', jsonb_build_array('facebook', 'instagram', 'x')));
  end if;
  if p_token_length is null or p_token_length not between 16 and 4096 then
    perform app.raise(400, 'VALIDATION_FAILED', 'accessToken must have 16 to 4096 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.accessToken', 'code', 'length', 'message', 'must have 16 to 4096 characters'))));
  end if;
  -- Update, else insert (no upsert: requests may not read the ciphertext column that ON CONFLICT would).
  update app.inbox_platform_tokens set token_ciphertext = p_token_ciphertext, updated_at = now() where integration_id = p_integration;
  if not found then
    insert into app.inbox_platform_tokens (integration_id, organization_id, workspace_id, token_ciphertext, created_by)
    values (p_integration, v_integ.organization_id, v_integ.workspace_id, p_token_ciphertext, app.current_user_id());
  end if;
  return jsonb_build_object('integrationId', p_integration, 'platform', v_integ.platform, 'updatedAt', now());
end
$$;
comment on function api.set_inbox_platform_token(uuid, int, bytea) is 'Serves PUT /v1/workspaces/{workspaceId}/integrations/{id}/inbox-platform-token (setInboxPlatformToken_v1). Stores the ciphertext of the access token the server made (it passes the token''s length to check it); from then on the integration''s inbox replies and moderation go to the platform''s API. Requires the manager role; 404 INTEGRATION_NOT_FOUND, 400 PLATFORM_TOKEN_UNSUPPORTED (not facebook, instagram or x) and VALIDATION_FAILED.';

create function api.delete_inbox_platform_token(p_integration uuid) returns void
language plpgsql as $$
begin
  perform app.require_role('manager');
  if not exists (select 1 from app.integrations i where i.id = p_integration and i.deleted_at is null) then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_integration));
  end if;
  delete from app.inbox_platform_tokens where integration_id = p_integration;
  if not found then
    perform app.raise(404, 'NOT_FOUND', 'This integration has no platform token.', jsonb_build_object('id', p_integration));
  end if;
end
$$;
comment on function api.delete_inbox_platform_token(uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/integrations/{id}/inbox-platform-token (deleteInboxPlatformToken_v1): the integration''s inbox goes back to its connector. Requires the manager role; 404 INTEGRATION_NOT_FOUND or NOT_FOUND (no token).';

------------------------------------------------------------------------------
-- Threads.
------------------------------------------------------------------------------
create function app.inbox_thread(p_id uuid) returns app.inbox_threads
language plpgsql stable set search_path = pg_catalog as $$
declare v app.inbox_threads;
begin
  select * into v from app.inbox_threads where id = p_id;
  if v.id is null or v.last_message_at is null then
    perform app.raise(404, 'NOT_FOUND', 'No inbox thread with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;
comment on function app.inbox_thread(uuid) is 'The thread of the caller''s workspace (RLS), or 404 NOT_FOUND; a thread with no message to show yet does not exist for requests.';
grant execute on function app.inbox_thread(uuid) to pressroom_api;

create function api.list_inbox_threads(p_filters jsonb, p_after jsonb, p_limit int) returns jsonb
language plpgsql stable as $$
declare
  v_limit int := least(greatest(coalesce(p_limit, 25), 1), coalesce(app.setting('inbox_page_max')::int, 100));
  v_after_at timestamptz := (p_after -> 'k' ->> 0)::timestamptz;
  v_after_id uuid := (p_after -> 'k' ->> 1)::uuid;
  v_search text := nullif(btrim(p_filters ->> 'search'), '');
  v_items jsonb;
  v_rows app.inbox_threads[];
begin
  perform app.require_role('viewer');
  select array_agg(t order by t.last_message_at desc, t.id desc) into v_rows
  from (
    select t.* from app.inbox_threads t
    where t.last_message_at is not null
      and (p_filters ->> 'integrationId' is null or t.integration_id = (p_filters ->> 'integrationId')::uuid)
      and (p_filters ->> 'platform' is null or t.platform = p_filters ->> 'platform')
      and (p_filters ->> 'kind' is null or t.kind = p_filters ->> 'kind')
      and (p_filters ->> 'status' is null or t.status = p_filters ->> 'status')
      and (p_filters ->> 'assigneeId' is null or t.assignee_id = (p_filters ->> 'assigneeId')::uuid)
      and (not coalesce((p_filters ->> 'unassigned')::boolean, false) or t.assignee_id is null)
      and (p_filters ->> 'unread' is null or ((p_filters ->> 'unread')::boolean = (app.inbox_unread_count(t.id) > 0)))
      and (v_search is null
           or t.thread_key = v_search
           or t.participants::text ilike '%' || replace(replace(v_search, '%', '\%'), '_', '\_') || '%'
           or exists (select 1 from app.inbox_messages m where m.thread_id = t.id and m.body ilike '%' || replace(replace(v_search, '%', '\%'), '_', '\_') || '%'))
      and (v_after_at is null or (t.last_message_at, t.id) < (v_after_at, v_after_id))
    order by t.last_message_at desc, t.id desc
    limit v_limit + 1) t;
  v_rows := coalesce(v_rows, '{}');
  select coalesce(jsonb_agg(app.inbox_thread_json(v_rows[i]) order by i), '[]') into v_items
  from generate_series(1, least(cardinality(v_rows), v_limit)) i;
  return jsonb_build_object('items', v_items, 'hasMore', cardinality(v_rows) > v_limit,
    'last', case when cardinality(v_rows) > v_limit
                 then jsonb_build_array(v_rows[v_limit].last_message_at, v_rows[v_limit].id) end);
end
$$;
comment on function api.list_inbox_threads(jsonb, jsonb, int) is 'Serves GET /v1/workspaces/{workspaceId}/inbox/threads (listInboxThreads_v1). A keyset page of threads, newest message first, filtered by integration, platform, kind, status, assignee (or unassigned), unread for the caller, and search (the platform thread id, participants, message text); the server signs the last key as the cursor. Requires the viewer role.';

create function api.get_inbox_thread(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.inbox_thread_json(app.inbox_thread(p_id));
end
$$;
comment on function api.get_inbox_thread(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/inbox/threads/{threadId} (getInboxThread_v1). Requires the viewer role; 404 NOT_FOUND.';

create function api.update_inbox_thread(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql as $$
declare
  v app.inbox_threads;
  v_assignee uuid;
begin
  perform app.require_role('editor');
  v := app.inbox_thread(p_id);
  if p_patch ? 'assigneeId' then
    v_assignee := (p_patch ->> 'assigneeId')::uuid;
    if v_assignee is not null and not exists (
         select 1 from app.user_workspace_roles(v_assignee) r where r.workspace_id = app.current_workspace_id()) then
      perform app.raise(400, 'ASSIGNEE_NOT_MEMBER', 'The assignee must be a member of this workspace.',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.assigneeId', 'code', 'not_member', 'message', 'is not a member of this workspace'))));
    end if;
    update app.inbox_threads set assignee_id = v_assignee, updated_at = now() where id = p_id;
  end if;
  if p_patch ? 'status' then
    update app.inbox_threads
    set status = p_patch ->> 'status',
        archived_at = case when p_patch ->> 'status' = 'archived' then now() end,
        updated_at = now()
    where id = p_id;
  end if;
  select * into v from app.inbox_threads where id = p_id;
  return app.inbox_thread_json(v);
end
$$;
comment on function api.update_inbox_thread(uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/inbox/threads/{threadId} (updateInboxThread_v1): archive or reopen (status) and assign (assigneeId, a member of the workspace, or null). Requires the editor role; 404 NOT_FOUND, 400 ASSIGNEE_NOT_MEMBER.';

create function api.mark_inbox_thread(p_id uuid, p_read boolean) returns jsonb
language plpgsql as $$
declare
  v app.inbox_threads;
  v_at timestamptz;
begin
  perform app.require_role('viewer');
  v := app.inbox_thread(p_id);
  if app.current_principal_id() is null then
    perform app.raise(403, 'ROLE_REQUIRED', 'Read state belongs to a member or API key.');
  end if;
  if p_read then
    v_at := greatest(now(), (select max(created_at) from app.inbox_messages where thread_id = p_id));
  else
    -- Unread from the newest inbound message on (none: nothing is unread).
    v_at := (select max(created_at) from app.inbox_messages
             where thread_id = p_id and direction = 'inbound' and has_original) - interval '1 microsecond';
    v_at := coalesce(v_at, now());
  end if;
  insert into app.inbox_reads (thread_id, principal_id, organization_id, read_at)
  values (p_id, app.current_principal_id(), app.current_organization_id(), v_at)
  on conflict (thread_id, principal_id) do update set read_at = excluded.read_at, updated_at = now();
  return app.inbox_thread_json(v);
end
$$;
comment on function api.mark_inbox_thread(uuid, boolean) is 'Serves POST .../inbox/threads/{threadId}/read and /unread (markInboxThreadRead_v1, markInboxThreadUnread_v1): the caller''s own read state (app.inbox_reads); unread makes the newest inbound message unread again. Any role; 404 NOT_FOUND.';

create function api.inbox_unread_counts() returns jsonb
language plpgsql stable as $$
declare v jsonb;
begin
  perform app.require_role('viewer');
  with u as (
    select t.platform, t.kind, t.integration_id, app.inbox_unread_count(t.id) as n
    from app.inbox_threads t where t.status = 'open' and t.last_message_at is not null
  ), p as (select platform, sum(n)::int as n from u where n > 0 group by platform),
     k as (select kind, sum(n)::int as n from u where n > 0 group by kind),
     i as (select integration_id, sum(n)::int as n from u where n > 0 group by integration_id)
  select jsonb_build_object(
    'messages', coalesce((select sum(n) from u), 0)::int,
    'threads', (select count(*) from u where n > 0)::int,
    'byPlatform', coalesce((select jsonb_object_agg(platform, n) from p), '{}'),
    'byKind', coalesce((select jsonb_object_agg(kind, n) from k), '{}'),
    'byIntegration', coalesce((select jsonb_object_agg(integration_id, n) from i), '{}')) into v;
  return v;
end
$$;
comment on function api.inbox_unread_counts() is 'Serves GET /v1/workspaces/{workspaceId}/inbox/unread-counts (getInboxUnreadCounts_v1): the caller''s unread messages and threads among open threads, by platform, kind and integration. Requires the viewer role.';

------------------------------------------------------------------------------
-- Messages.
------------------------------------------------------------------------------
create function api.list_inbox_messages(p_thread uuid, p_after jsonb, p_limit int) returns jsonb
language plpgsql stable as $$
declare
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), coalesce(app.setting('inbox_page_max')::int, 100));
  v_after_at timestamptz := (p_after -> 'k' ->> 0)::timestamptz;
  v_after_id uuid := (p_after -> 'k' ->> 1)::uuid;
  v_rows app.inbox_messages[];
  v_items jsonb;
begin
  perform app.require_role('viewer');
  perform app.inbox_thread(p_thread);
  select array_agg(m order by m.occurred_at, m.id) into v_rows
  from (select m.* from app.inbox_messages m
        where m.thread_id = p_thread and m.has_original
          and (v_after_at is null or (m.occurred_at, m.id) > (v_after_at, v_after_id))
        order by m.occurred_at, m.id limit v_limit + 1) m;
  v_rows := coalesce(v_rows, '{}');
  select coalesce(jsonb_agg(app.inbox_message_json(v_rows[i]) order by i), '[]') into v_items
  from generate_series(1, least(cardinality(v_rows), v_limit)) i;
  return jsonb_build_object('items', v_items, 'hasMore', cardinality(v_rows) > v_limit,
    'last', case when cardinality(v_rows) > v_limit then jsonb_build_array(v_rows[v_limit].occurred_at, v_rows[v_limit].id) end);
end
$$;
comment on function api.list_inbox_messages(uuid, jsonb, int) is 'Serves GET /v1/workspaces/{workspaceId}/inbox/threads/{threadId}/messages (listInboxMessages_v1). A keyset page of the thread''s messages, oldest first (inbound, replies and notes). Requires the viewer role; 404 NOT_FOUND.';

create function app.inbox_message(p_thread uuid, p_id uuid) returns app.inbox_messages
language plpgsql stable set search_path = pg_catalog as $$
declare v app.inbox_messages;
begin
  select * into v from app.inbox_messages where id = p_id and thread_id = p_thread and has_original;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No message with this id in this thread.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;
comment on function app.inbox_message(uuid, uuid) is 'The message of the thread (RLS: of the caller''s workspace), or 404 NOT_FOUND.';
grant execute on function app.inbox_message(uuid, uuid) to pressroom_api;

create function app.inbox_author() returns jsonb
language sql stable set search_path = pg_catalog as $$
  select jsonb_build_object('kind', case when app.current_actor_kind() = 'api_key' then 'api_key' else 'member' end,
    'id', app.current_principal_id(),
    'name', null)
$$;
comment on function app.inbox_author() is 'The author of a reply or note: the current member or API key.';
grant execute on function app.inbox_author() to pressroom_api;

create function api.reply_inbox_thread(p_thread uuid, p_text text, p_in_reply_to uuid) returns jsonb
language plpgsql as $$
declare
  t app.inbox_threads;
  v_integ record;
  v_rule app.inbox_platform_rules;
  v_parent app.inbox_messages;
  v app.inbox_messages;
  v_max int := coalesce(app.setting('inbox_reply_max_length')::int, 8000);
  v_job uuid;
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  if p_text is null or length(btrim(p_text)) = 0 or length(p_text) > v_max then
    perform app.raise(400, 'VALIDATION_FAILED', format('text must have 1 to %s characters.', v_max),
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.text', 'code', 'length', 'message', format('must have 1 to %s characters', v_max)))));
  end if;
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = t.integration_id;
  if v_integ.deleted_at is not null or v_integ.status <> 'active' then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', 'The integration of this thread is disconnected or deleted; nothing can be sent through it.',
      jsonb_build_object('reason', 'integration_inactive', 'integrationId', v_integ.id));
  end if;
  v_rule := app.inbox_rule(t.platform, t.kind);
  if not v_rule.can_reply then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', coalesce(v_rule.reason, format('%s does not allow replies here.', t.platform)),
      jsonb_build_object('reason', 'platform', 'platform', t.platform, 'kind', t.kind));
  end if;
  if v_rule.reply_window_hours is not null
     and (t.last_inbound_at is null or t.last_inbound_at < now() - make_interval(hours => v_rule.reply_window_hours)) then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', v_rule.reason,
      jsonb_build_object('reason', 'reply_window', 'platform', t.platform, 'windowHours', v_rule.reply_window_hours,
                         'lastInboundAt', t.last_inbound_at));
  end if;
  if p_in_reply_to is not null then
    v_parent := app.inbox_message(p_thread, p_in_reply_to);
    if v_parent.direction = 'note' or v_parent.message_key is null then
      perform app.raise(400, 'REPLY_NOT_ALLOWED', 'Only a message the platform has can be replied to (not a note or an unsent reply).',
        jsonb_build_object('reason', 'parent_not_on_platform', 'inReplyToId', p_in_reply_to));
    end if;
    if v_parent.moderation = 'deleted' then
      perform app.raise(400, 'REPLY_NOT_ALLOWED', 'The message was deleted; it cannot be replied to.',
        jsonb_build_object('reason', 'parent_deleted', 'inReplyToId', p_in_reply_to));
    end if;
  end if;
  insert into app.inbox_messages (organization_id, workspace_id, integration_id, thread_id, direction, in_reply_to_id, author, body, delivery_state, created_by)
  values (t.organization_id, t.workspace_id, t.integration_id, t.id, 'outbound', p_in_reply_to, app.inbox_author(), p_text, 'pending', app.current_user_id())
  returning * into v;
  v_job := app.inbox_enqueue('inbox.action', jsonb_build_object('messageId', v.id, 'workspaceId', v.workspace_id, 'action', 'reply'), v.id::text);
  update app.inbox_messages set action_job_id = v_job where id = v.id returning * into v;
  return app.inbox_message_json(v);
end
$$;
comment on function api.reply_inbox_thread(uuid, text, uuid) is 'Serves POST /v1/workspaces/{workspaceId}/inbox/threads/{threadId}/replies (replyInboxThread_v1): records an outbound reply (delivery pending) and queues job inbox.action, which sends it through the integration''s connector. Refuses with 400 REPLY_NOT_ALLOWED and the reason when the platform forbids it (app.inbox_platform_rules: no replies, or outside the reply window), the integration is inactive, or the parent is a note, unsent or deleted. Requires the editor role; 404 NOT_FOUND.';

create function api.add_inbox_note(p_thread uuid, p_text text) returns jsonb
language plpgsql as $$
declare
  t app.inbox_threads;
  v app.inbox_messages;
  v_max int := coalesce(app.setting('inbox_reply_max_length')::int, 8000);
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  if p_text is null or length(btrim(p_text)) = 0 or length(p_text) > v_max then
    perform app.raise(400, 'VALIDATION_FAILED', format('text must have 1 to %s characters.', v_max),
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.text', 'code', 'length', 'message', format('must have 1 to %s characters', v_max)))));
  end if;
  insert into app.inbox_messages (organization_id, workspace_id, integration_id, thread_id, direction, author, body, created_by)
  values (t.organization_id, t.workspace_id, t.integration_id, t.id, 'note', app.inbox_author(), p_text, app.current_user_id())
  returning * into v;
  return app.inbox_message_json(v);
end
$$;
comment on function api.add_inbox_note(uuid, text) is 'Serves POST /v1/workspaces/{workspaceId}/inbox/threads/{threadId}/notes (addInboxNote_v1): an internal note in the thread, never sent to the platform. Requires the editor role; 404 NOT_FOUND.';

create function api.moderate_inbox_message(p_thread uuid, p_message uuid, p_action text) returns jsonb
language plpgsql as $$
declare
  t app.inbox_threads;
  v app.inbox_messages;
  v_rule app.inbox_platform_rules;
  v_integ record;
  v_job uuid;
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  v := app.inbox_message(p_thread, p_message);
  if p_action is null or p_action not in ('hide', 'unhide', 'delete') then
    perform app.raise(400, 'VALIDATION_FAILED', 'action must be hide, unhide or delete.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.action', 'code', 'enum', 'message', 'must be hide, unhide or delete'))));
  end if;
  if v.direction <> 'inbound' then
    perform app.raise(400, 'MODERATION_NOT_ALLOWED', 'Only inbound messages are moderated; notes and replies are not.',
      jsonb_build_object('reason', 'not_inbound', 'direction', v.direction));
  end if;
  v_rule := app.inbox_rule(t.platform, t.kind);
  if not p_action = any (v_rule.moderation) then
    perform app.raise(400, 'MODERATION_NOT_ALLOWED',
      coalesce(v_rule.reason, format('%s does not allow %s here.', t.platform, p_action)),
      jsonb_build_object('reason', 'platform', 'platform', t.platform, 'kind', t.kind, 'action', p_action,
                         'allowedActions', to_jsonb(v_rule.moderation)));
  end if;
  if v.moderation = 'deleted' then
    perform app.raise(400, 'MODERATION_NOT_ALLOWED', 'The message is deleted; nothing more can be done with it.',
      jsonb_build_object('reason', 'deleted'));
  end if;
  if v.moderation_pending is not null then
    perform app.raise(409, 'MODERATION_IN_PROGRESS', format('A %s of this message is on its way; wait for its outcome.', v.moderation_pending),
      jsonb_build_object('pending', v.moderation_pending));
  end if;
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = t.integration_id;
  if v_integ.deleted_at is not null or v_integ.status <> 'active' then
    perform app.raise(400, 'MODERATION_NOT_ALLOWED', 'The integration of this thread is disconnected or deleted.',
      jsonb_build_object('reason', 'integration_inactive'));
  end if;
  if (p_action = 'hide' and v.moderation = 'hidden') or (p_action = 'unhide' and v.moderation = 'visible') then
    return app.inbox_message_json(v);
  end if;
  v_job := app.inbox_enqueue('inbox.action', jsonb_build_object('messageId', v.id, 'workspaceId', v.workspace_id, 'action', 'moderate'), v.id::text || ':moderate');
  update app.inbox_messages set moderation_pending = p_action, moderation_error = null, action_job_id = v_job, updated_at = now()
  where id = v.id returning * into v;
  return app.inbox_message_json(v);
end
$$;
comment on function api.moderate_inbox_message(uuid, uuid, text) is 'Serves POST /v1/workspaces/{workspaceId}/inbox/threads/{threadId}/messages/{messageId}/moderation (moderateInboxMessage_v1): hide, unhide or delete an inbound message on the platform, where the platform allows it (app.inbox_platform_rules); queues job inbox.action and answers the message with moderationPending. Hiding a hidden or unhiding a visible message changes nothing. Requires the editor role; 404 NOT_FOUND, 400 MODERATION_NOT_ALLOWED, 409 MODERATION_IN_PROGRESS.';

create function api.retry_inbox_message(p_thread uuid, p_message uuid) returns jsonb
language plpgsql as $$
declare
  t app.inbox_threads;
  v app.inbox_messages;
  v_integ record;
  v_job uuid;
begin
  perform app.require_role('editor');
  t := app.inbox_thread(p_thread);
  v := app.inbox_message(p_thread, p_message);
  if v.direction <> 'outbound' or v.delivery_state <> 'failed' then
    perform app.raise(409, 'NOT_RETRYABLE', 'Only a reply whose delivery failed can be retried.',
      jsonb_build_object('direction', v.direction, 'deliveryState', v.delivery_state));
  end if;
  select i.id, i.organization_id, i.workspace_id, i.connector, i.platform, i.status, i.deleted_at into v_integ from app.integrations i where i.id = t.integration_id;
  if v_integ.deleted_at is not null or v_integ.status <> 'active' then
    perform app.raise(400, 'REPLY_NOT_ALLOWED', 'The integration of this thread is disconnected or deleted; nothing can be sent through it.',
      jsonb_build_object('reason', 'integration_inactive', 'integrationId', v_integ.id));
  end if;
  v_job := app.inbox_enqueue('inbox.action', jsonb_build_object('messageId', v.id, 'workspaceId', v.workspace_id, 'action', 'reply'), v.id::text);
  update app.inbox_messages set delivery_state = 'pending', delivery_error = null, action_job_id = v_job, updated_at = now()
  where id = v.id returning * into v;
  return app.inbox_message_json(v);
end
$$;
comment on function api.retry_inbox_message(uuid, uuid) is 'Serves POST /v1/workspaces/{workspaceId}/inbox/threads/{threadId}/messages/{messageId}/retry (retryInboxMessage_v1): sends a failed reply again (delivery pending, a new inbox.action job). Requires the editor role; 404 NOT_FOUND, 409 NOT_RETRYABLE, 400 REPLY_NOT_ALLOWED.';

------------------------------------------------------------------------------
-- The action job (pressroom_worker): claim, then record the outcome.
------------------------------------------------------------------------------
create function app.inbox_action_claim(p_message uuid, p_job uuid, p_action text) returns jsonb
language plpgsql set search_path = pg_catalog as $$
declare
  v app.inbox_messages;
  t app.inbox_threads;
  i app.integrations;
  v_parent text;
begin
  select * into v from app.inbox_messages where id = p_message for update;
  if v.id is null or v.action_job_id is distinct from p_job
     or (p_action = 'reply' and v.delivery_state is distinct from 'pending')
     or (p_action = 'moderate' and v.moderation_pending is null) then
    return jsonb_build_object('action', 'skip');
  end if;
  select * into t from app.inbox_threads where id = v.thread_id;
  select * into i from app.integrations where id = v.integration_id;
  update app.inbox_messages
  set attempts = attempts + case when p_action = 'reply' and attempt_job_id is distinct from p_job then 1 else 0 end,
      attempt_job_id = case when p_action = 'reply' then p_job else attempt_job_id end,
      updated_at = now()
  where id = p_message returning * into v;
  if p_action = 'reply' then
    select message_key into v_parent from app.inbox_messages where id = v.in_reply_to_id;
  end if;
  return jsonb_build_object('action', 'send', 'kind', p_action,
    'integration', jsonb_build_object('id', i.id, 'connector', i.connector, 'platform', i.platform, 'name', i.name,
      'username', i.username, 'settings', i.settings, 'webhookUrl', i.webhook_url, 'webhookSecret', i.webhook_secret,
      'active', i.deleted_at is null and i.status = 'active',
      'platformTokenCiphertext', (select encode(pt.token_ciphertext, 'base64') from app.inbox_platform_tokens pt where pt.integration_id = i.id)),
    'thread', jsonb_build_object('kind', t.kind, 'platformThreadId', t.thread_key),
    'message', jsonb_build_object('id', v.id, 'text', v.body, 'platformMessageId', v.message_key,
      'inReplyTo', v_parent, 'moderation', v.moderation_pending, 'attempt', v.attempts));
end
$$;
comment on function app.inbox_action_claim(uuid, uuid, text) is 'Job inbox.action: the reply or moderation of a message to carry out, with its integration (and webhook secret, and the ciphertext of its platform token when it has one), when this job is still the message''s job and the action is still pending; otherwise skip. Counts a reply''s attempts once per job, so a job handed out again after its worker died re-sends the same attempt (same idempotency token).';
grant execute on function app.inbox_action_claim(uuid, uuid, text) to pressroom_worker;

create function app.inbox_action_record(p_message uuid, p_job uuid, p_action text, p_ok boolean, p_error text, p_platform_id text)
returns jsonb
language plpgsql set search_path = pg_catalog as $$
declare
  v app.inbox_messages;
begin
  select * into v from app.inbox_messages where id = p_message for update;
  if v.id is null or v.action_job_id is distinct from p_job then
    return jsonb_build_object('recorded', false);
  end if;
  if p_action = 'reply' then
    update app.inbox_messages set
      delivery_state = case when p_ok then 'sent' else 'failed' end,
      delivery_error = case when p_ok then null else left(p_error, 2000) end,
      message_key = case when p_ok and p_platform_id is not null
                          and not exists (select 1 from app.inbox_messages o where o.integration_id = v.integration_id and o.message_key = p_platform_id)
                         then p_platform_id else message_key end,
      occurred_at = case when p_ok then now() else occurred_at end,
      updated_at = now()
    where id = p_message;
  else
    update app.inbox_messages set
      moderation = case when p_ok then case moderation_pending when 'hide' then 'hidden' when 'unhide' then 'visible' else 'deleted' end
                        else moderation end,
      moderation_error = case when p_ok then null else left(p_error, 2000) end,
      moderation_pending = null,
      updated_at = now()
    where id = p_message;
  end if;
  perform app.inbox_refresh_threads(array[v.thread_id]);
  return jsonb_build_object('recorded', true);
end
$$;
comment on function app.inbox_action_record(uuid, uuid, text, boolean, text, text) is 'Job inbox.action: records the connector''s outcome: a reply sent (with the platform''s message id) or failed with the reason; a moderation done or refused (moderation_error). Ignored when the message has another job by now.';
grant execute on function app.inbox_action_record(uuid, uuid, text, boolean, text, text) to pressroom_worker;

------------------------------------------------------------------------------
-- Retention of raw deliveries (job inbox.purge-deliveries, server/jobs/inbox.ts).
-- Only the raw body and headers go: the events (platform event id, the
-- unique key of de-duplication, and what app.inbox_fold recomputes messages
-- from) stay as long as the integration, so a redelivery after the raw
-- delivery is gone still changes nothing, however late it comes.
------------------------------------------------------------------------------
create function app.inbox_purge_deliveries(p_limit int default 500) returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v_days int := app.setting_int('inbox_delivery_retention_days');
  v_purged int;
  v_limit int := least(greatest(coalesce(p_limit, 500), 1), 10000);
begin
  with old as (
    select d.id from app.inbox_deliveries d
    where d.received_at < now() - make_interval(days => v_days)
      and not exists (select 1 from app.inbox_events e where e.delivery_id = d.id and e.folded_at is null)
    order by d.received_at
    limit v_limit
    for update of d skip locked),
  del as (delete from app.inbox_deliveries d using old where d.id = old.id returning 1)
  select count(*) into v_purged from del;
  return jsonb_build_object('purged', v_purged, 'more', v_purged >= v_limit, 'retentionDays', v_days);
end
$$;
alter function app.inbox_purge_deliveries(int) owner to pressroom_definer;
comment on function app.inbox_purge_deliveries(int) is 'Job inbox.purge-deliveries: deletes at most p_limit raw inbound deliveries older than setting inbox_delivery_retention_days whose events are all folded (oldest first, skipping rows another run holds); their events stay, with delivery_id null, so de-duplication on the platform event id is unchanged. Answers {purged, more, retentionDays}.';
revoke all on function app.inbox_purge_deliveries(int) from public;
grant execute on function app.inbox_purge_deliveries(int) to pressroom_worker;

select app.harden_api_functions();
