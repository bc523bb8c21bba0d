-- Publishing engine (issue 5): attempts recorded before the platform is
-- called, outcomes, the publishing state shown on content, the sandbox
-- platform's received posts, and the functions of the publishing routes.
--
-- Exactly once. The worker (server/jobs/publish.ts, as pressroom_worker)
--   1. app.publish_claim(content, job): only when the edition is scheduled,
--      its publish_job_id is this job and it awaits no confirmation. It
--      commits an attempt row (started_at, token) BEFORE the platform call.
--      An attempt still open at claim time belongs to a worker that died
--      mid-call: the outcome is unknown. If the connector accepts an
--      idempotency token (sandbox) the same attempt is re-sent with the same
--      token (the platform answers with the post it already made); otherwise
--      the attempt is closed as `unknown` and the edition waits for
--      POST content/{id}/resolve-publishing-result (awaiting_confirmation).
--   2. app.publish_record(attempt, outcome...): moves the edition to sent or
--      failed, or (transient) puts the same pg-boss job back to `retry` with
--      start_after = now + PUBLISH_RETRY_BASE_MS * 2^(n-1), or (unknown)
--      leaves it scheduled, awaiting confirmation.
-- pg-boss's completion only touches active jobs, so a job set back to retry
-- here is not completed by the handler's return.

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------
create table if not exists app.publish_attempts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  content_item_id uuid not null references app.content_items (id) on delete cascade,
  attempt int not null check (attempt > 0),
  -- attempt number within the current run (publish, retry and resolve start a new run)
  run_attempt int not null check (run_attempt > 0),
  job_id uuid,
  connector text not null,
  idempotency_token text not null,
  started_at timestamptz not null default clock_timestamp(),
  finished_at timestamptz,
  outcome text check (outcome in ('published', 'failed', 'transient', 'unknown', 'resolved_published', 'resolved_failed', 'skipped')),
  error text,
  platform_post_id text,
  permalink text,
  resent int not null default 0,
  unique (content_item_id, attempt)
);
create index if not exists publish_attempts_open_idx on app.publish_attempts (content_item_id) where finished_at is null;
create index if not exists publish_attempts_workspace_id_idx on app.publish_attempts (workspace_id);
create index if not exists publish_attempts_organization_id_idx on app.publish_attempts (organization_id);

create table if not exists app.publishing_states (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  -- the job this state belongs to; a new job (reschedule, publish, retry) means a new run
  job_id uuid,
  state text not null check (state in ('publishing', 'retrying', 'awaiting_confirmation', 'failed', 'published')),
  run_attempts int not null default 0,
  last_error text,
  next_attempt_at timestamptz,
  updated_at timestamptz not null default now()
);
create index if not exists publishing_states_workspace_id_idx on app.publishing_states (workspace_id);
create index if not exists publishing_states_organization_id_idx on app.publishing_states (organization_id);

-- What the sandbox platform received: one post per (integration, idempotency
-- token); a re-send with the same token counts a delivery and returns the post.
create table if not exists app.sandbox_posts (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  integration_id uuid not null references app.integrations (id) on delete cascade,
  content_item_id uuid,
  idempotency_token text not null,
  platform_post_id text not null,
  permalink text,
  caption text not null,
  payload jsonb not null,
  deliveries int not null default 1,
  caption_edits int not null default 0,
  received_at timestamptz not null default clock_timestamp(),
  updated_at timestamptz not null default clock_timestamp(),
  unique (integration_id, idempotency_token)
);
create index if not exists sandbox_posts_integration_idx on app.sandbox_posts (integration_id, received_at, id);
create index if not exists sandbox_posts_workspace_id_idx on app.sandbox_posts (workspace_id);
create index if not exists sandbox_posts_organization_id_idx on app.sandbox_posts (organization_id);

create table if not exists app.published_captions (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  caption text not null check (length(caption) <= 100000),
  edits int not null default 1,
  updated_at timestamptz not null default clock_timestamp()
);
create index if not exists published_captions_workspace_id_idx on app.published_captions (workspace_id);
create index if not exists published_captions_organization_id_idx on app.published_captions (organization_id);

do $$
declare
  t text;
  x text;
begin
  foreach t in array array['publish_attempts', 'publishing_states', 'sandbox_posts', 'published_captions'] loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    foreach x in array array['definer', 'worker', 'request_select'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    -- Requests read only (the routes write through definer functions), within the workspace.
    execute format($p$create policy %I on app.%I for select to pressroom_request
      using (workspace_id = (select app.current_workspace_id())
             and organization_id = (select app.current_organization_id())
             and workspace_id in (select unnest(app.accessible_workspace_ids()))
             and app.role_rank((select app.current_workspace_role())) >= 1)$p$, t || '_request_select', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
    execute format('grant select on app.%I to pressroom_request', t);
  end loop;
end
$$;

------------------------------------------------------------------------------
-- The publishing state shown on content get and list
------------------------------------------------------------------------------
create or replace function app.publishing_json_of(i app.content_items, s app.publishing_states, p_attempts bigint) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'state', case
      when i.status = 'sent' then 'published'
      when i.status = 'failed' then 'failed'
      when i.status <> 'scheduled' or i.deleted_at is not null then 'idle'
      when s.state in ('publishing', 'retrying', 'awaiting_confirmation') and s.job_id is not distinct from i.publish_job_id then s.state
      else 'queued' end,
    'attempts', coalesce(p_attempts, 0),
    'lastError', case when i.status = 'failed' then coalesce(i.error, s.last_error) else s.last_error end,
    'nextAttemptAt', case
      when i.status <> 'scheduled' or i.deleted_at is not null then null
      when s.state = 'retrying' and s.job_id is not distinct from i.publish_job_id then s.next_attempt_at
      when s.state in ('publishing', 'awaiting_confirmation') and s.job_id is not distinct from i.publish_job_id then null
      else i.scheduled_at end)
$$;

-- {state, attempts, lastError, nextAttemptAt} of one edition.
create or replace function app.publishing_json(p_content_item_id uuid) returns jsonb
language sql stable
as $$
  select app.publishing_json_of(i, s, (select count(*) from app.publish_attempts a where a.content_item_id = i.id))
  from app.content_items i
  left join app.publishing_states s on s.content_item_id = i.id
  where i.id = p_content_item_id
$$;

-- Content list items and detail carry it as `publishing`: 40-content.sql's
-- app.content_list_item_json adds `'publishing', app.publishing_json(i.id)`
-- (and the ContentListItem/ContentDetail schemas the Publishing schema).

------------------------------------------------------------------------------
-- The worker's functions (pressroom_worker)
------------------------------------------------------------------------------
-- The effective edition to publish (caption, thread, settings, media ids).
create or replace function app.publish_edition_json(p_item_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', i.id, 'rootId', i.root_id, 'workspaceId', i.workspace_id, 'version', i.version,
    'caption', coalesce(i.caption, r.caption, ''),
    'title', r.title,
    'settings', app.sanitize_settings(g.platform, i.settings),
    'scheduledAt', i.scheduled_at,
    'media', (select coalesce(jsonb_agg(jsonb_build_object('id', m.id, 'type', m.type, 'contentType', m.content_type,
                'altText', m.alt_text) order by x.n), '[]')
              from unnest(app.content_item_media_ids(i.id, i.root_id, i.own_media)) with ordinality x (id, n)
              join app.media_items m on m.id = x.id),
    'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                 'mediaIds', coalesce(e -> 'mediaIds', '[]')) order by n), '[]')
               from jsonb_array_elements(i.thread) with ordinality t (e, n)),
    'integration', jsonb_build_object('id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name,
      'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret,
      'status', g.status, 'deleted', g.deleted_at is not null))
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = p_item_id
$$;

-- Claims an edition for one attempt. Returns {action: 'skip', reason} or
-- {action: 'send', attemptId, attempt, runAttempt, token, resend, edition}.
-- p_resendable: connectors that accept an idempotency token.
create or replace function app.publish_claim(p_content_id uuid, p_job_id uuid, p_resendable text[]) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  s app.publishing_states;
  a app.publish_attempts;
  v_connector text;
  v_n int;
  v_run int;
  v_token text;
begin
  select * into v from app.content_items where id = p_content_id for update;
  if v.id is null or v.deleted_at is not null then
    return jsonb_build_object('action', 'skip', 'reason', 'gone');
  end if;
  if v.status <> 'scheduled' then
    return jsonb_build_object('action', 'skip', 'reason', 'status ' || v.status);
  end if;
  if v.publish_job_id is distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'stale job');
  end if;
  select * into s from app.publishing_states where content_item_id = v.id for update;
  if s.state = 'awaiting_confirmation' and s.job_id is not distinct from p_job_id then
    return jsonb_build_object('action', 'skip', 'reason', 'awaiting confirmation');
  end if;
  select connector into v_connector from app.integrations where id = v.integration_id;
  select * into a from app.publish_attempts where content_item_id = v.id and finished_at is null
  order by attempt desc limit 1;
  if a.id is not null then
    -- A worker died while this attempt was in flight: the platform may have the post.
    if a.connector = any (p_resendable) then
      update app.publish_attempts set resent = resent + 1, job_id = p_job_id where id = a.id;
      insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
      values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', a.run_attempt)
      on conflict (content_item_id) do update set job_id = p_job_id, state = 'publishing', next_attempt_at = null, updated_at = now();
      return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
        'token', a.idempotency_token, 'resend', true, 'edition', app.publish_edition_json(v.id));
    end if;
    update app.publish_attempts set finished_at = clock_timestamp(), outcome = 'unknown',
      error = 'The worker stopped while this attempt was in flight; the platform may or may not have the post.'
    where id = a.id;
    insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts, last_error)
    values (v.id, v.organization_id, v.workspace_id, p_job_id, 'awaiting_confirmation', a.run_attempt,
            'The worker stopped while the post was being sent; check the platform and resolve the outcome.')
    on conflict (content_item_id) do update set job_id = p_job_id, state = 'awaiting_confirmation', next_attempt_at = null,
      last_error = excluded.last_error, updated_at = now();
    return jsonb_build_object('action', 'skip', 'reason', 'unknown outcome of an interrupted attempt');
  end if;
  select coalesce(max(attempt), 0) + 1 into v_n from app.publish_attempts where content_item_id = v.id;
  v_run := case when s.job_id is not distinct from p_job_id then coalesce(s.run_attempts, 0) + 1 else 1 end;
  -- One token per edition and version: the same post whatever the attempt.
  v_token := 'pr_' || replace(v.id::text, '-', '') || '_v' || v.version;
  insert into app.publish_attempts (organization_id, workspace_id, content_item_id, attempt, run_attempt, job_id, connector, idempotency_token)
  values (v.organization_id, v.workspace_id, v.id, v_n, v_run, p_job_id, v_connector, v_token)
  returning * into a;
  insert into app.publishing_states as ps (content_item_id, organization_id, workspace_id, job_id, state, run_attempts)
  values (v.id, v.organization_id, v.workspace_id, p_job_id, 'publishing', v_run)
  on conflict (content_item_id) do update set job_id = p_job_id, state = 'publishing', run_attempts = v_run,
    next_attempt_at = null, updated_at = now();
  return jsonb_build_object('action', 'send', 'attemptId', a.id, 'attempt', a.attempt, 'runAttempt', a.run_attempt,
    'token', a.idempotency_token, 'resend', false, 'edition', app.publish_edition_json(v.id));
end
$$;

-- Records the outcome of an attempt. p_outcome: published | failed |
-- transient | unknown. Returns {action: 'done'|'retry'|'ignored', ...}.
-- SECURITY DEFINER: a transient failure puts the pg-boss job back to retry.
create or replace function app.publish_record(p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text,
  p_permalink text, p_max_attempts int, p_retry_base_ms int) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  a app.publish_attempts;
  v app.content_items;
  v_delay_ms bigint;
  v_next timestamptz;
begin
  if p_outcome not in ('published', 'failed', 'transient', 'unknown') then
    raise exception 'publish_record: unknown outcome %', p_outcome;
  end if;
  select * into a from app.publish_attempts where id = p_attempt_id for update;
  if a.id is null then
    return jsonb_build_object('action', 'ignored', 'reason', 'no attempt');
  end if;
  select * into v from app.content_items where id = a.content_item_id for update;
  -- Already settled (by a resolve, or by another worker that took over).
  if a.finished_at is not null and not (a.outcome = 'unknown' and p_outcome in ('published', 'failed')) then
    return jsonb_build_object('action', 'ignored', 'reason', 'attempt already finished');
  end if;
  update app.publish_attempts set finished_at = clock_timestamp(), outcome = p_outcome, error = p_error,
    platform_post_id = p_platform_post_id, permalink = p_permalink
  where id = a.id;
  if v.id is null or v.deleted_at is not null or v.status <> 'scheduled' then
    return jsonb_build_object('action', 'ignored', 'reason', 'edition no longer scheduled');
  end if;
  if p_outcome = 'published' then
    update app.content_items set status = 'sent', sent_at = clock_timestamp(), permalink = p_permalink,
      platform_post_id = p_platform_post_id, error = null
    where id = v.id;
    update app.publishing_states set state = 'published', last_error = null, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'sent');
  elsif p_outcome = 'failed' or (p_outcome = 'transient' and a.run_attempt >= p_max_attempts) then
    update app.content_items set status = 'failed', error = coalesce(p_error, 'The platform refused the post.')
    where id = v.id;
    update app.publishing_states set state = 'failed', last_error = p_error, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'failed');
  elsif p_outcome = 'transient' then
    v_delay_ms := p_retry_base_ms::bigint * (2 ^ least(a.run_attempt - 1, 20))::bigint;
    v_next := clock_timestamp() + v_delay_ms * interval '1 millisecond';
    update app.publishing_states set state = 'retrying', last_error = p_error, next_attempt_at = v_next, updated_at = now()
    where content_item_id = v.id;
    update pgboss.job set state = 'retry', start_after = v_next, started_on = null
    where name = 'content.publish' and id = v.publish_job_id and state = 'active';
    return jsonb_build_object('action', 'retry', 'delayMs', v_delay_ms, 'nextAttemptAt', v_next);
  else
    update app.publishing_states set state = 'awaiting_confirmation', last_error = p_error, next_attempt_at = null, updated_at = now()
    where content_item_id = v.id;
    return jsonb_build_object('action', 'done', 'status', 'scheduled', 'state', 'awaiting_confirmation');
  end if;
end
$$;
alter function app.publish_record(uuid, text, text, text, text, int, int) owner to pressroom_definer;

-- The sandbox platform receives a post: one per (integration, token).
create or replace function app.sandbox_receive_post(p_integration_id uuid, p_token text, p_content_id uuid,
  p_platform_post_id text, p_permalink text, p_caption text, p_payload jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  p app.sandbox_posts;
begin
  insert into app.sandbox_posts (organization_id, workspace_id, integration_id, content_item_id, idempotency_token,
    platform_post_id, permalink, caption, payload)
  select g.organization_id, g.workspace_id, g.id, p_content_id, p_token, p_platform_post_id, p_permalink, p_caption, p_payload
  from app.integrations g where g.id = p_integration_id
  on conflict (integration_id, idempotency_token) do update set deliveries = app.sandbox_posts.deliveries + 1,
    updated_at = clock_timestamp()
  returning * into p;
  return jsonb_build_object('platformPostId', p.platform_post_id, 'permalink', p.permalink, 'deliveries', p.deliveries);
end
$$;

create or replace function app.sandbox_edit_caption(p_integration_id uuid, p_platform_post_id text, p_caption text) returns boolean
language sql volatile
as $$
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = clock_timestamp()
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id returning 1)
  select exists (select 1 from u)
$$;

------------------------------------------------------------------------------
-- Route functions (pressroom_request, invoker under RLS)
------------------------------------------------------------------------------
-- Starts a new run: forget the previous run's state.
create or replace function app.publishing_reset(p_content_id uuid) returns void
language sql volatile security definer
set search_path = pg_catalog, app
as $$ delete from app.publishing_states where content_item_id = p_content_id $$;
alter function app.publishing_reset(uuid) owner to pressroom_definer;

create or replace function app.publishing_item_json(p_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object('id', i.id, 'rootId', i.root_id, 'integrationId', i.integration_id, 'status', i.status,
    'scheduledAt', i.scheduled_at, 'sentAt', i.sent_at, 'permalink', i.permalink, 'platformPostId', i.platform_post_id,
    'error', i.error, 'caption', coalesce(i.caption, r.caption),
    'publishedCaption', case when i.status = 'sent' then coalesce(pc.caption, i.caption, r.caption) end,
    'publishing', app.publishing_json(i.id))
  from app.content_items i join app.content_roots r on r.id = i.root_id
  left join app.published_captions pc on pc.content_item_id = i.id
  where i.id = p_id
$$;

-- POST content/{id}/publish: draft or scheduled -> scheduled now.
create or replace function api.publish_content(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  s app.publishing_states;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['draft', 'scheduled']);
  select * into s from app.publishing_states where content_item_id = v.id;
  if v.status = 'scheduled' and s.state = 'awaiting_confirmation' and s.job_id is not distinct from v.publish_job_id then
    perform app.raise(409, 'PUBLISHING_AWAITS_CONFIRMATION',
      'The last attempt may have published this content; resolve its outcome first (resolve-publishing-result).',
      jsonb_build_object('contentId', v.id));
  end if;
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = now() where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  perform app.publishing_reset(v.id);
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;

-- POST content/{id}/retry: failed -> scheduled now.
create or replace function api.retry_content(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['failed']);
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = now(), error = null where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  perform app.publishing_reset(v.id);
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;

-- Applies a verified outcome (definer: closes attempts, writes the state).
create or replace function app.publishing_resolve(p_id uuid, p_outcome text, p_permalink text, p_post_id text, p_error text)
returns void
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
begin
  update app.publish_attempts set finished_at = coalesce(finished_at, clock_timestamp()),
    outcome = case when p_outcome = 'published' then 'resolved_published' else 'resolved_failed' end,
    platform_post_id = coalesce(p_post_id, platform_post_id), permalink = coalesce(p_permalink, permalink),
    error = coalesce(p_error, error)
  where content_item_id = p_id and (finished_at is null or outcome = 'unknown');
  if p_outcome = 'published' then
    update app.content_items set status = 'sent', sent_at = clock_timestamp(), permalink = p_permalink,
      platform_post_id = p_post_id, error = null where id = p_id;
  else
    update app.content_items set status = 'failed',
      error = coalesce(p_error, 'Marked as not published after checking the platform.') where id = p_id;
  end if;
  update app.publishing_states set state = case when p_outcome = 'published' then 'published' else 'failed' end,
    last_error = case when p_outcome = 'failed' then p_error end, next_attempt_at = null, updated_at = now()
  where content_item_id = p_id;
end
$$;
alter function app.publishing_resolve(uuid, text, text, text, text) owner to pressroom_definer;

-- POST content/{id}/resolve-publishing-result
create or replace function api.resolve_publishing_result(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  s app.publishing_states;
  v_outcome text := p_body ->> 'outcome';
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  if v_outcome is null or v_outcome not in ('published', 'failed') then
    perform app.raise(400, 'VALIDATION_FAILED', 'outcome must be published or failed.',
      jsonb_build_object('fields', jsonb_build_array(app.field_problem('body.outcome', 'enum', 'must be published or failed'))));
  end if;
  select * into s from app.publishing_states where content_item_id = v.id;
  if v.status <> 'scheduled' or s.state is distinct from 'awaiting_confirmation'
     or s.job_id is distinct from v.publish_job_id then
    perform app.raise(409, 'NOTHING_TO_RESOLVE', 'This content awaits no publishing confirmation.',
      jsonb_build_object('contentId', v.id, 'status', v.status, 'publishingState', (app.publishing_json(v.id)) ->> 'state'));
  end if;
  perform app.publishing_resolve(v.id, v_outcome, p_body ->> 'permalink', p_body ->> 'platformPostId', p_body ->> 'error');
  return (select app.publishing_item_json(v.id));
end
$$;

-- PATCH content/{id}/published-caption: checks only; the route calls the
-- connector, then api.record_published_caption.
create or replace function api.published_caption_target(p_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v app.content_items;
  g record;
begin
  perform app.require_role('editor');
  select * into v from app.content_items where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null;
  if v.id is null then
    perform app.raise_not_found('content', p_id);
  end if;
  if v.status <> 'sent' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only published (sent) content has a published caption; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('sent')));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, i.deleted_at,
         coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, true) as can_edit
  into g from app.integrations i left join app.platforms p on p.code = i.platform where i.id = v.integration_id;
  if g.connector not in ('sandbox', 'webhook') or not g.can_edit then
    perform app.raise(409, 'CAPTION_EDIT_NOT_SUPPORTED',
      format('The channel''s connector (%s, %s) cannot edit a published caption.', g.connector, g.platform),
      jsonb_build_object('contentId', v.id, 'connector', g.connector, 'platform', g.platform));
  end if;
  if g.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_UNAVAILABLE', 'The channel of this content was deleted.', jsonb_build_object('integrationId', g.id));
  end if;
  return jsonb_build_object('contentId', v.id, 'integrationId', g.id, 'connector', g.connector, 'platform', g.platform,
    'name', g.name, 'username', g.username, 'settings', g.settings, 'webhookUrl', g.webhook_url,
    'platformPostId', v.platform_post_id, 'caption', v.caption,
    'attempt', coalesce((select edits from app.published_captions where content_item_id = v.id), 0) + 1);
end
$$;

-- A sent edition keeps what it published (the status machine freezes its
-- caption); a caption changed on the platform afterwards is kept here.
create or replace function app.publishing_set_caption(p_id uuid, p_caption text) returns void
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  insert into app.published_captions (content_item_id, organization_id, workspace_id, caption)
  select id, organization_id, workspace_id, p_caption from app.content_items where id = p_id
  on conflict (content_item_id) do update set caption = excluded.caption, edits = app.published_captions.edits + 1,
    updated_at = clock_timestamp()
$$;

create or replace function api.record_published_caption(p_id uuid, p_caption text) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  if v.status <> 'sent' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS', 'Only sent content has a published caption.',
      jsonb_build_object('contentId', v.id, 'status', v.status));
  end if;
  perform app.publishing_set_caption(v.id, p_caption);
  return (select app.publishing_item_json(v.id));
end
$$;

-- GET integrations/{id}/sandbox/posts
create or replace function api.list_sandbox_posts(p_integration_id uuid, p_limit int, p_offset bigint) returns jsonb
language plpgsql stable
as $$
declare
  g record;
begin
  perform app.require_role('viewer');
  select id, connector into g from app.integrations where id = p_integration_id and workspace_id = app.current_workspace_id()
    and deleted_at is null;
  if g.id is null or g.connector <> 'sandbox' then
    perform app.raise(404, 'NOT_FOUND', 'No sandbox integration with this id in this workspace.', jsonb_build_object('id', p_integration_id));
  end if;
  return jsonb_build_object(
    'items', (select coalesce(jsonb_agg(jsonb_build_object('id', p.id, 'contentId', p.content_item_id,
                'platformPostId', p.platform_post_id, 'permalink', p.permalink, 'caption', p.caption,
                'idempotencyToken', p.idempotency_token, 'deliveries', p.deliveries, 'captionEdits', p.caption_edits,
                'payload', p.payload, 'receivedAt', p.received_at) order by p.received_at, p.id), '[]')
              from (select * from app.sandbox_posts where integration_id = g.id
                    order by received_at, id limit p_limit offset p_offset) p),
    'meta', jsonb_build_object('total', (select count(*) from app.sandbox_posts where integration_id = g.id),
                               'limit', p_limit, 'offset', p_offset));
end
$$;

------------------------------------------------------------------------------
-- Owners and grants
------------------------------------------------------------------------------
alter function app.publishing_set_caption(uuid, text) owner to pressroom_definer;

do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname, p.proname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array['publishing_json_of', 'publishing_json', 'publish_edition_json', 'publish_claim',
        'publish_record', 'sandbox_receive_post', 'sandbox_edit_caption', 'publishing_reset', 'publishing_item_json',
        'publishing_resolve', 'publishing_set_caption', 'publish_content', 'retry_content', 'resolve_publishing_result',
        'published_caption_target', 'record_published_caption', 'list_sandbox_posts'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'api' then
      execute format('grant execute on function %s to pressroom_request', f.sig);
    elsif f.proname in ('publish_claim', 'publish_record', 'sandbox_receive_post', 'sandbox_edit_caption', 'publish_edition_json') then
      execute format('grant execute on function %s to pressroom_worker, pressroom_definer', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    end if;
  end loop;
end
$$;

------------------------------------------------------------------------------
-- Queue content.publish: a heartbeat, so the jobs of a dead worker come back
-- within a minute (the worker sets the same at start from
-- JOB_HEARTBEAT_SECONDS), and enough retries to cover such returns (the
-- engine's own retries of transient failures reuse the job, see
-- app.publish_record). Jobs already queued take the heartbeat too.
------------------------------------------------------------------------------
do $$
begin
  if to_regclass('pgboss.queue') is not null then
    update pgboss.queue set heartbeat_seconds = 30, retry_limit = 1000, retry_delay = 0, retry_backoff = false
    where name = 'content.publish';
    update pgboss.job set heartbeat_seconds = 30, retry_limit = 1000, retry_delay = 0, retry_backoff = false
    where name = 'content.publish' and state in ('created', 'retry');
  end if;
end
$$;

-- The webhook secret of a sent edition's channel, for the published-caption
-- route (requests cannot read secrets; definer, after the same checks).
create or replace function app.published_caption_secret(p_id uuid) returns text
language plpgsql stable security definer
set search_path = pg_catalog, app
as $$
declare
  v_secret text;
begin
  perform app.require_role('editor');
  select g.webhook_secret into v_secret
  from app.content_items i join app.integrations g on g.id = i.integration_id
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and i.status = 'sent'
    and g.connector = 'webhook' and g.deleted_at is null;
  return v_secret;
end
$$;
alter function app.published_caption_secret(uuid) owner to pressroom_definer;
revoke execute on function app.published_caption_secret(uuid) from public;
grant execute on function app.published_caption_secret(uuid) to pressroom_request;

-- The sandbox platform takes a caption edit from the published-caption route
-- (a request of an editor of the integration's workspace).
create or replace function app.sandbox_edit_caption_for_request(p_integration_id uuid, p_platform_post_id text, p_caption text)
returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_ok boolean;
begin
  perform app.require_role('editor');
  with u as (update app.sandbox_posts set caption = p_caption, caption_edits = caption_edits + 1, updated_at = clock_timestamp()
             where integration_id = p_integration_id and platform_post_id = p_platform_post_id
               and workspace_id = app.current_workspace_id() returning 1)
  select exists (select 1 from u) into v_ok;
  return v_ok;
end
$$;
alter function app.sandbox_edit_caption_for_request(uuid, text, text) owner to pressroom_definer;
revoke execute on function app.sandbox_edit_caption_for_request(uuid, text, text) from public;
grant execute on function app.sandbox_edit_caption_for_request(uuid, text, text) to pressroom_request;

------------------------------------------------------------------------------
-- `publishing` on content list items and detail. It is 40-content.sql's
-- app.content_list_item_json with one more key; 40 itself cannot call
-- app.publishing_json (a SQL function's body is checked when created, and
-- this file runs after 40).
------------------------------------------------------------------------------
create or replace function app.content_list_item_json(i app.content_items, r app.content_roots, p_platform text,
  p_media_count int, p_recurring jsonb, p_review boolean)
returns jsonb
language sql stable
as $$
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
  || case when p_review then jsonb_build_object('reviewLifecycle', app.content_review_lifecycle(i.status)) else '{}' end
$$;
