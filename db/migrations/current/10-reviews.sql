-- Reviews and approval workflows (the Standard plan's approval flow): tables,
-- the review engine, and the content rules it adds. The api functions the
-- routes call are in 10a-reviews-api.sql, the client reviewer links in
-- 10b-review-links.sql. Everything here is enforced in the database:
--
--   * approval workflows route a channel (first active workflow by position
--     whose match fits); the workspace's review policy (none, optional,
--     required) decides whether scheduling needs an approved review;
--   * a review moves draft -> active (send), draft|active -> cancelled,
--     active -> completed (every item decided), active -> expired (job);
--   * content follows its review item (pending_approval, rejected, back to
--     draft or scheduled), and content in review cannot be scheduled or
--     published by anyone but the engine (trigger content_items_18_review_rules).

-- ---------------------------------------------------------------------------
-- Settings the rules read.
-- ---------------------------------------------------------------------------
insert into app.settings (key, value, kind, minimum, description) values
  ('review_remind_interval_seconds', '3600', 'integer', 1,
   'Reviews: at most one reminder per approver of a review within this many seconds (409 REMIND_TOO_SOON).')
on conflict (key) do nothing;

-- ---------------------------------------------------------------------------
-- Tables.
-- ---------------------------------------------------------------------------
create table app.review_settings (
  workspace_id uuid primary key references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  review_policy text not null default 'none' check (review_policy in ('none', 'optional', 'required')),
  updated_at timestamptz not null default now(),
  updated_by uuid references app.users (id) on delete set null
);
comment on table app.review_settings is 'A workspace''s review policy: none (default when no row), optional, required. Under required, scheduling or publishing content without an approved review answers 409 REVIEW_REQUIRED (trigger content_items_18_review_rules). Written by managers (api.set_review_policy). Tenant policies of app.apply_tenant_policies; the api functions that write it require the manager role.';
select app.apply_tenant_policies('app.review_settings', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_settings', array['insert', 'update']);
grant select on app.review_settings to pressroom_api;

create table app.approval_workflows (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 120),
  position int not null,
  active boolean not null default true,
  match jsonb not null default '{}',
  stages jsonb not null,
  auto_schedule_on_approval boolean not null default false,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index approval_workflows_workspace_name_key on app.approval_workflows (workspace_id, lower(btrim(name)));
create index approval_workflows_workspace_position_idx on app.approval_workflows (workspace_id, position);
create index approval_workflows_organization_id_idx on app.approval_workflows (organization_id);
comment on table app.approval_workflows is 'An approval workflow: routing conditions (match: integrationIds, platforms, tagIds, campaignIds; empty = catch-all), ordered stages (name, approvers, rule all|any|quorum, dueInHours) checked by app.review_stages_problems, and whether approval schedules the content. The first active workflow by position whose match fits routes a channel (app.route_channel). Tenant policies of app.apply_tenant_policies; the api functions that write it require the manager role.';
select app.apply_tenant_policies('app.approval_workflows');
select app.grant_api_columns('app.approval_workflows', array['insert', 'update']);
grant select, delete on app.approval_workflows to pressroom_api;
create trigger approval_workflows_10_set_updated_at before update on app.approval_workflows
  for each row execute function app.tg_set_updated_at();

create table app.reviews (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  workflow_id uuid references app.approval_workflows (id) on delete set null,
  status text not null default 'draft' check (status in ('draft', 'active', 'completed', 'cancelled', 'expired')),
  title text not null check (length(btrim(title)) between 1 and 200),
  message text check (message is null or length(message) <= 5000),
  due_at timestamptz,
  config_revision int not null default 1,
  stages jsonb,
  auto_schedule_on_approval boolean not null default false,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  sent_at timestamptz,
  sent_by uuid references app.users (id) on delete set null,
  completed_at timestamptz,
  completed_by uuid references app.users (id) on delete set null,
  check (status in ('draft', 'cancelled') or stages is not null)
);
create index reviews_workspace_status_idx on app.reviews (workspace_id, status, created_at desc);
create index reviews_organization_id_idx on app.reviews (organization_id);
create index reviews_workflow_id_idx on app.reviews (workflow_id);
create index reviews_due_idx on app.reviews (due_at) where status = 'active';
comment on table app.reviews is 'A review: draft, active, completed, cancelled or expired (moves checked by trigger reviews_20_status_machine, 409 INVALID_REVIEW_TRANSITION), its stages (copied from the workflow at send, or custom), title, message, due time and config revision. Items are in app.review_items. Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.reviews');
select app.grant_api_columns('app.reviews', array['insert', 'update']);
grant select, delete on app.reviews to pressroom_api;
create trigger reviews_10_set_updated_at before update on app.reviews
  for each row execute function app.tg_set_updated_at();

create table app.review_items (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  content_id uuid not null references app.content_items (id) on delete cascade,
  state text not null default 'pending' check (state in ('pending', 'approved', 'changes_requested', 'removed')),
  current_stage int not null default 0,
  stage_opened_at timestamptz,
  open boolean not null default true,
  prior_status text,
  prior_scheduled_at timestamptz,
  approved_version int,
  waiting_on text[] not null default '{}',
  decided_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index review_items_open_content_key on app.review_items (content_id) where open;
create index review_items_review_idx on app.review_items (review_id);
create index review_items_content_idx on app.review_items (content_id, created_at desc);
create index review_items_workspace_pending_idx on app.review_items (workspace_id, review_id) where state = 'pending' and open;
create index review_items_waiting_on_idx on app.review_items using gin (waiting_on) where cardinality(waiting_on) > 0;
create index review_items_organization_id_idx on app.review_items (organization_id);
comment on table app.review_items is 'One content edition in a review: state pending, approved, changes_requested or removed, the stage it waits on, and what the content was before the review held it (prior_status, prior_scheduled_at). An edition is in at most one open review (index review_items_open_content_key, 409 CONTENT_IN_REVIEW). approved_version is the content version that was approved (app.content_review_approved); waiting_on lists the approvers (user:<id>, client:<email>) the item waits on, kept by app.review_item_refresh_waiting for the inbox. Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_items');
select app.grant_api_columns('app.review_items', array['insert', 'update']);
grant select on app.review_items to pressroom_api;
create trigger review_items_10_set_updated_at before update on app.review_items
  for each row execute function app.tg_set_updated_at();

create table app.review_decisions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  item_id uuid not null references app.review_items (id) on delete cascade,
  stage int not null,
  stage_name text not null,
  approver_key text not null,
  user_id uuid references app.users (id) on delete set null,
  client_email text,
  decision text not null check (decision in ('approved', 'changes_requested')),
  comment text check (comment is null or length(comment) <= 5000),
  override boolean not null default false,
  reason text check (reason is null or length(reason) <= 2000),
  revoked_at timestamptz,
  superseded_at timestamptz,
  created_at timestamptz not null default clock_timestamp(),
  check (not override or reason is not null)
);
create unique index review_decisions_live_key on app.review_decisions (item_id, stage, approver_key)
  where revoked_at is null and superseded_at is null;
create index review_decisions_review_idx on app.review_decisions (review_id);
create index review_decisions_item_idx on app.review_decisions (item_id, stage);
create index review_decisions_organization_id_idx on app.review_decisions (organization_id);
comment on table app.review_decisions is 'A decision on a review item at one stage by one approver (member "user:<id>" or client "client:<email>"), or a manager''s override (reason required). One live decision per approver, item and stage; a revoke or a replacement of the stages keeps the row (revoked_at, superseded_at) for history. Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_decisions', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_decisions', array['insert', 'update']);
grant select on app.review_decisions to pressroom_api;

create table app.review_activity (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  item_id uuid references app.review_items (id) on delete cascade,
  kind text not null check (kind in ('decision', 'comment', 'system')),
  event text not null,
  actor_key text,
  actor_name text,
  body text check (body is null or length(body) <= 10000),
  mentions uuid[] not null default '{}',
  data jsonb not null default '{}',
  created_at timestamptz not null default clock_timestamp()
);
create index review_activity_item_idx on app.review_activity (item_id, created_at, id);
create index review_activity_review_idx on app.review_activity (review_id);
create index review_activity_organization_id_idx on app.review_activity (organization_id);
comment on table app.review_activity is 'What happened to a review item, in order: decisions, comments (with @mentions of members) and system events (sent, stage opened, approved, cancelled, ...). Append-only for requests. Tenant policies of app.apply_tenant_policies (select and insert; writes need editor).';
select app.apply_tenant_policies('app.review_activity', array['select', 'insert']);
select app.grant_api_columns('app.review_activity', array['insert']);
grant select on app.review_activity to pressroom_api;

create table app.review_reactions (
  activity_id uuid not null references app.review_activity (id) on delete cascade,
  actor_key text not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  emoji text not null check (length(emoji) between 1 and 32 and emoji !~ '[[:space:][:cntrl:]]'),
  created_at timestamptz not null default now(),
  primary key (activity_id, actor_key)
);
create index review_reactions_workspace_idx on app.review_reactions (workspace_id);
create index review_reactions_organization_id_idx on app.review_reactions (organization_id);
comment on table app.review_reactions is 'One emoji per person (member "user:<id>" or client "client:<email>") per activity entry; adding another replaces it. Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_reactions');
select app.grant_api_columns('app.review_reactions', array['insert', 'update']);
grant select, delete on app.review_reactions to pressroom_api;

create table app.review_links (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  email text not null check (email ~ '^[^@\s]+@[^@\s]+$' and length(email) <= 320),
  name text not null check (length(btrim(name)) between 1 and 200),
  token_hash bytea not null unique check (length(token_hash) = 32),
  expires_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now(),
  unique (review_id, email)
);
create index review_links_workspace_idx on app.review_links (workspace_id);
create index review_links_organization_id_idx on app.review_links (organization_id);
comment on table app.review_links is 'A client reviewer''s link to one review: a random token shown once at send, stored only as its SHA-256 hash; it expires with the review (expires_at, revoked_at when the review ends). Authenticated by api.gate_review_link. Tenant policies of app.apply_tenant_policies; requests never read token_hash.';
select app.apply_tenant_policies('app.review_links', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_links', array['insert', 'update'], array['token_hash']);
grant insert (token_hash) on app.review_links to pressroom_api;
grant select (id, organization_id, workspace_id, review_id, email, name, expires_at, revoked_at, created_at)
  on app.review_links to pressroom_api;

create table app.notifications (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  user_id uuid references app.users (id) on delete cascade,
  review_link_id uuid references app.review_links (id) on delete cascade,
  kind text not null check (kind in ('review_reminder', 'review_requested', 'mention')),
  review_id uuid references app.reviews (id) on delete cascade,
  item_id uuid references app.review_items (id) on delete cascade,
  data jsonb not null default '{}',
  created_at timestamptz not null default clock_timestamp(),
  read_at timestamptz,
  check ((user_id is null) <> (review_link_id is null))
);
create index notifications_user_idx on app.notifications (user_id, created_at desc, id desc) where user_id is not null;
create index notifications_link_idx on app.notifications (review_link_id, created_at desc, id desc) where review_link_id is not null;
create index notifications_workspace_idx on app.notifications (workspace_id);
create index notifications_organization_id_idx on app.notifications (organization_id);
comment on table app.notifications is 'A per-person feed entry (a member by user_id, a client by review_link_id): review reminders, review requests, mentions. Members read theirs with api.list_notifications (GET /v1/me/notifications, definer-owned, scoped to the caller), clients through their link. Tenant policies of app.apply_tenant_policies (select and insert; writes need editor).';
select app.apply_tenant_policies('app.notifications', array['select', 'insert']);
select app.grant_api_columns('app.notifications', array['insert']);
grant select on app.notifications to pressroom_api;

create table app.review_reminders (
  review_id uuid not null references app.reviews (id) on delete cascade,
  approver_key text not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  reminded_at timestamptz not null default now(),
  primary key (review_id, approver_key)
);
create index review_reminders_workspace_idx on app.review_reminders (workspace_id);
create index review_reminders_organization_id_idx on app.review_reminders (organization_id);
comment on table app.review_reminders is 'When each approver of a review was last reminded: at most one reminder per approver within review_remind_interval_seconds (409 REMIND_TOO_SOON). Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_reminders', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_reminders', array['insert', 'update']);
grant select on app.review_reminders to pressroom_api;

create table app.review_submissions (
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  request_id text not null check (length(request_id) between 1 and 200),
  principal_key text not null,
  results jsonb not null,
  created_at timestamptz not null default now(),
  primary key (workspace_id, principal_key, request_id)
);
create index review_submissions_organization_id_idx on app.review_submissions (organization_id);
comment on table app.review_submissions is 'The stored results of POST reviews/submit by requestId (per workspace and principal): a retry with the same requestId replays them. Tenant policies of app.apply_tenant_policies (select and insert; writes need editor).';
select app.apply_tenant_policies('app.review_submissions', array['select', 'insert']);
select app.grant_api_columns('app.review_submissions', array['insert']);
grant select on app.review_submissions to pressroom_api;

-- ---------------------------------------------------------------------------
-- Who acts, and as which approver.
-- ---------------------------------------------------------------------------

-- The person acting: the session's user, or the API key's creator.
create function app.current_person_id() returns uuid
language sql stable security definer set search_path = pg_catalog, app as $$
  select case app.current_actor_kind()
    when 'user' then app.current_user_id()
    when 'api_key' then (select k.created_by from app.api_keys k
                         where k.id = app.current_api_key_id() and k.organization_id = app.current_organization_id())
  end
$$;
alter function app.current_person_id() owner to pressroom_definer;
comment on function app.current_person_id() is 'The person a request acts for: the session''s user, or the creator of the API key; null for anonymous calls and review links.';
grant execute on function app.current_person_id() to pressroom_api, pressroom_worker;

create function app.current_review_link_id() returns uuid
language sql stable parallel safe as $$ select nullif(current_setting('pressroom.review_link_id', true), '')::uuid $$;
comment on function app.current_review_link_id() is 'The review link of a client reviewer''s request (set by the pipeline after api.gate_review_link), else null.';
grant execute on function app.current_review_link_id() to pressroom_api, pressroom_definer, pressroom_worker;

-- The approver key of the caller: 'user:<id>' for a member, 'client:<email>' for a link.
create function app.current_approver_key() returns text
language sql stable security definer set search_path = pg_catalog, app as $$
  select case
    when app.current_actor_kind() = 'review_link' then
      (select 'client:' || lower(l.email) from app.review_links l where l.id = app.current_review_link_id())
    else 'user:' || app.current_person_id()::text
  end
$$;
alter function app.current_approver_key() owner to pressroom_definer;
comment on function app.current_approver_key() is 'The caller as an approver: user:<person id> for members (sessions and keys), client:<email> for a review link.';
grant execute on function app.current_approver_key() to pressroom_api, pressroom_worker;

create function app.approver_key(p_approver jsonb) returns text
language sql immutable as $$
  select case p_approver ->> 'type'
    when 'member' then 'user:' || lower(p_approver ->> 'userId')
    when 'client' then 'client:' || lower(btrim(p_approver ->> 'email'))
  end
$$;
comment on function app.approver_key(jsonb) is 'The key of an approver entry of a stage: user:<id> or client:<email>.';
grant execute on function app.approver_key(jsonb) to pressroom_api, pressroom_definer, pressroom_worker;

-- ---------------------------------------------------------------------------
-- Stages and match: validation and normalization.
-- ---------------------------------------------------------------------------

-- Problems of a stages array (field paths under p_field), [] when valid.
-- Member approvers must be editors or managers of the current workspace.
create function app.review_stages_problems(p_stages jsonb, p_field text) returns jsonb
language plpgsql stable as $$
declare
  v_problems jsonb := '[]';
  v_stage jsonb;
  v_i int := 0;
  v_a jsonb;
  v_j int;
  v_keys text[];
  v_role text;
  v_n int;
begin
  if jsonb_typeof(p_stages) <> 'array' or jsonb_array_length(p_stages) = 0 then
    return jsonb_build_array(app.field_problem(p_field, 'required', 'at least one stage'));
  end if;
  if jsonb_array_length(p_stages) > 10 then
    return jsonb_build_array(app.field_problem(p_field, 'too_many', 'at most 10 stages'));
  end if;
  for v_stage in select e from jsonb_array_elements(p_stages) e loop
    v_keys := '{}';
    v_j := 0;
    if jsonb_typeof(v_stage -> 'approvers') <> 'array' or jsonb_array_length(v_stage -> 'approvers') = 0 then
      v_problems := v_problems || app.field_problem(format('%s/%s/approvers', p_field, v_i), 'required', 'at least one approver');
    else
      for v_a in select e from jsonb_array_elements(v_stage -> 'approvers') e loop
        if v_a ->> 'type' = 'member' then
          select r.role into v_role from app.user_workspace_roles((v_a ->> 'userId')::uuid) r
          where r.workspace_id = app.current_workspace_id();
          if app.role_rank(v_role) < app.role_rank('editor') then
            v_problems := v_problems || app.field_problem(format('%s/%s/approvers/%s/userId', p_field, v_i, v_j), 'not_an_editor',
              'an approver must be an editor or manager of this workspace (or a client reviewer)');
          end if;
        end if;
        if app.approver_key(v_a) = any (v_keys) then
          v_problems := v_problems || app.field_problem(format('%s/%s/approvers/%s', p_field, v_i, v_j), 'duplicate', 'listed twice in this stage');
        end if;
        v_keys := v_keys || app.approver_key(v_a);
        v_j := v_j + 1;
      end loop;
    end if;
    v_n := coalesce(jsonb_array_length(v_stage -> 'approvers'), 0);
    if v_stage ->> 'rule' = 'quorum' then
      if (v_stage ->> 'quorum') is null or (v_stage ->> 'quorum')::int > v_n then
        v_problems := v_problems || app.field_problem(format('%s/%s/quorum', p_field, v_i), 'out_of_range',
          format('a quorum between 1 and the number of approvers (%s)', v_n));
      end if;
    elsif v_stage ? 'quorum' and v_stage -> 'quorum' <> 'null' then
      v_problems := v_problems || app.field_problem(format('%s/%s/quorum', p_field, v_i), 'not_allowed', 'quorum goes with rule quorum');
    end if;
    v_i := v_i + 1;
  end loop;
  return v_problems;
end
$$;
comment on function app.review_stages_problems(jsonb, text) is 'Field problems of a stages array: 1 to 10 stages, each with approvers (members who are editors or managers of the workspace, or clients), no approver twice in a stage, a quorum between 1 and the number of approvers with rule quorum only.';
grant execute on function app.review_stages_problems(jsonb, text) to pressroom_api, pressroom_definer, pressroom_worker;

-- Stages as stored: names trimmed, client e-mail addresses lower-cased, defaults filled.
create function app.review_stages_normalize(p_stages jsonb) returns jsonb
language sql immutable as $$
  select coalesce(jsonb_agg(jsonb_build_object(
      'name', btrim(s ->> 'name'),
      'rule', coalesce(s ->> 'rule', 'all'),
      'quorum', case when s ->> 'rule' = 'quorum' then (s ->> 'quorum')::int end,
      'dueInHours', (s ->> 'dueInHours')::int,
      'approvers', (select coalesce(jsonb_agg(case a ->> 'type'
                       when 'member' then jsonb_build_object('type', 'member', 'userId', lower(a ->> 'userId'))
                       else jsonb_build_object('type', 'client', 'email', lower(btrim(a ->> 'email')), 'name', btrim(a ->> 'name'))
                     end order by k), '[]')
                    from jsonb_array_elements(s -> 'approvers') with ordinality x (a, k))) order by n), '[]')
  from jsonb_array_elements(p_stages) with ordinality t (s, n)
$$;
comment on function app.review_stages_normalize(jsonb) is 'Stages as stored: trimmed names, lower-cased client e-mail addresses and member ids, rule all by default, quorum only with rule quorum.';
grant execute on function app.review_stages_normalize(jsonb) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.workflow_match_normalize(p_match jsonb) returns jsonb
language sql immutable as $$
  select jsonb_build_object(
    'integrationIds', coalesce(p_match -> 'integrationIds', '[]'),
    'platforms', coalesce(p_match -> 'platforms', '[]'),
    'tagIds', coalesce(p_match -> 'tagIds', '[]'),
    'campaignIds', coalesce(p_match -> 'campaignIds', '[]'))
$$;
comment on function app.workflow_match_normalize(jsonb) is 'A workflow''s match with all four lists present (empty lists match anything).';
grant execute on function app.workflow_match_normalize(jsonb) to pressroom_api, pressroom_definer, pressroom_worker;

-- Does a workflow's match fit a channel? Each non-empty list must contain the
-- channel's value (tags: any of the root's tags).
create function app.workflow_matches(p_match jsonb, p_integration uuid, p_platform text, p_tag_ids uuid[], p_campaign uuid)
returns boolean
language sql immutable as $$
  select (jsonb_array_length(coalesce(p_match -> 'integrationIds', '[]')) = 0 or (p_match -> 'integrationIds') ? p_integration::text)
     and (jsonb_array_length(coalesce(p_match -> 'platforms', '[]')) = 0 or (p_match -> 'platforms') ? p_platform)
     and (jsonb_array_length(coalesce(p_match -> 'campaignIds', '[]')) = 0
          or (p_campaign is not null and (p_match -> 'campaignIds') ? p_campaign::text))
     and (jsonb_array_length(coalesce(p_match -> 'tagIds', '[]')) = 0
          or exists (select 1 from unnest(coalesce(p_tag_ids, '{}')) t where (p_match -> 'tagIds') ? t::text))
$$;
comment on function app.workflow_matches(jsonb, uuid, text, uuid[], uuid) is 'Whether a workflow''s match fits a channel: every non-empty list (integrationIds, platforms, campaignIds, tagIds) contains the channel''s value; an empty match is a catch-all.';
grant execute on function app.workflow_matches(jsonb, uuid, text, uuid[], uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- The workflow that routes a channel in the current workspace: the first active one by position.
create function app.route_channel(p_integration uuid, p_platform text, p_tag_ids uuid[], p_campaign uuid)
returns app.approval_workflows
language sql stable as $$
  select w.* from app.approval_workflows w
  where w.workspace_id = app.current_workspace_id() and w.active
    and app.workflow_matches(w.match, p_integration, p_platform, p_tag_ids, p_campaign)
  order by w.position, w.created_at, w.id
  limit 1
$$;
comment on function app.route_channel(uuid, text, uuid[], uuid) is 'The workflow routing a channel: the first active workflow of the workspace, by position, whose match fits.';
grant execute on function app.route_channel(uuid, text, uuid[], uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_policy(p_workspace uuid) returns text
language sql stable as $$
  select coalesce((select review_policy from app.review_settings where workspace_id = p_workspace), 'none')
$$;
comment on function app.review_policy(uuid) is 'The review policy of a workspace: none (no row), optional or required.';
grant execute on function app.review_policy(uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.workflow_json(w app.approval_workflows) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', w.id, 'name', w.name, 'position', w.position, 'active', w.active,
    'match', app.workflow_match_normalize(w.match), 'stages', w.stages,
    'autoScheduleOnApproval', w.auto_schedule_on_approval,
    'inUse', exists (select 1 from app.reviews r where r.workflow_id = w.id and r.status in ('draft', 'active')),
    'createdAt', w.created_at, 'updatedAt', w.updated_at)
$$;
comment on function app.workflow_json(app.approval_workflows) is 'An approval workflow as the API shows it.';
grant execute on function app.workflow_json(app.approval_workflows) to pressroom_api, pressroom_definer, pressroom_worker;

-- Approved: an item of this edition was approved at its last stage, for the
-- edition's current version.
create function app.content_review_approved(p_content uuid) returns boolean
language sql stable as $$
  select exists (select 1 from app.review_items ri join app.content_items i on i.id = ri.content_id
                 where ri.content_id = p_content and ri.state = 'approved' and ri.approved_version = i.version)
$$;
comment on function app.content_review_approved(uuid) is 'Whether the edition''s current version was approved by a review (an item approved at its last stage for that version).';
grant execute on function app.content_review_approved(uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- The routing of one saved edition: the resolution resolve, submit and
-- REVIEW_REQUIRED show.
create function app.content_resolution(p_content uuid) returns jsonb
language sql stable as $$
  select jsonb_build_object('contentId', i.id, 'rootId', i.root_id, 'integrationId', i.integration_id,
    'platform', g.platform, 'contentVersion', i.version, 'status', i.status,
    'workflow', case when w.id is not null then jsonb_build_object('id', w.id, 'name', w.name) end,
    'reviewRequired', app.review_policy(i.workspace_id) = 'required',
    'approved', app.content_review_approved(i.id))
  from app.content_items i
  join app.integrations g on g.id = i.integration_id
  join app.content_roots r on r.id = i.root_id
  left join lateral app.route_channel(i.integration_id, g.platform,
    array(select t.tag_id from app.content_root_tags t where t.root_id = r.id), r.campaign_id) w on true
  where i.id = p_content
$$;

-- ---------------------------------------------------------------------------
-- Content and reviews: the rules on content_items.
-- ---------------------------------------------------------------------------

comment on function app.content_resolution(uuid) is 'The routing of a saved edition: its channel, the workflow that routes it (or null), whether the workspace requires review, whether it is approved, and the content version seen.';
grant execute on function app.content_resolution(uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- 409 REVIEW_IN_PROGRESS when the edition waits on a review (shared by the
-- content functions and the trigger).
create function app.assert_not_in_review(v app.content_items) returns void
language plpgsql as $$
begin
  if v.status = 'pending_approval' then
    perform app.raise(409, 'REVIEW_IN_PROGRESS',
      'This content is in review; it can be scheduled or published once the review approves it, or after the review is cancelled or the item removed.',
      jsonb_build_object('contentId', v.id, 'reviewId',
        (select ri.review_id from app.review_items ri where ri.content_id = v.id and ri.open limit 1)));
  end if;
end
$$;
comment on function app.assert_not_in_review(app.content_items) is 'Raises 409 REVIEW_IN_PROGRESS for an edition in pending_approval (its open review in details.reviewId).';
grant execute on function app.assert_not_in_review(app.content_items) to pressroom_api, pressroom_definer, pressroom_worker;

-- 409 REVIEW_REQUIRED when the workspace requires review and the edition has
-- no approved review for its current version.
create function app.assert_review_allows_publishing(p_content uuid, p_workspace uuid) returns void
language plpgsql as $$
begin
  if app.review_policy(p_workspace) = 'required' and not app.content_review_approved(p_content) then
    perform app.raise(409, 'REVIEW_REQUIRED',
      'This workspace requires an approved review before content is scheduled or published; submit it for review (details.resolutions shows the routing).',
      jsonb_build_object('contentId', p_content, 'resolutions', jsonb_build_array(app.content_resolution(p_content))));
  end if;
end
$$;
comment on function app.assert_review_allows_publishing(uuid, uuid) is 'Raises 409 REVIEW_REQUIRED (details.resolutions: the routing reviews/resolve shows) when the workspace''s policy is required and the edition''s current version has no approved review.';
grant execute on function app.assert_review_allows_publishing(uuid, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- Moves content as the review engine: the one way into and out of pending_approval and into rejected.
create function app.review_move_content(p_content uuid, p_status text, p_scheduled_at timestamptz default null,
                                        p_intended_at timestamptz default null, p_keep_intended boolean default true)
returns void
language plpgsql as $$
begin
  perform set_config('pressroom.review_engine', 'on', true);
  update app.content_items
  set status = p_status,
      scheduled_at = case when p_status = 'scheduled' then p_scheduled_at else null end,
      intended_publish_at = case when p_keep_intended then coalesce(p_intended_at, intended_publish_at) else p_intended_at end
  where id = p_content;
  perform set_config('pressroom.review_engine', '', true);
exception when others then
  perform set_config('pressroom.review_engine', '', true);
  raise;
end
$$;
comment on function app.review_move_content(uuid, text, timestamptz, timestamptz, boolean) is 'The review engine''s move of an edition (into or out of pending_approval, to rejected, to scheduled on approval), flagged for trigger content_items_18_review_rules for this statement only.';
grant execute on function app.review_move_content(uuid, text, timestamptz, timestamptz, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.tg_content_items_review_rules() returns trigger
language plpgsql as $$
declare
  v_engine boolean := current_setting('pressroom.review_engine', true) = 'on';
begin
  if tg_op = 'INSERT' then
    if new.status = 'scheduled' then
      perform app.assert_review_allows_publishing(new.id, new.workspace_id);
    end if;
    return new;
  end if;
  -- The engine's own moves, and the owner's (migrations, administration), pass.
  if v_engine or current_user not in ('pressroom_api', 'pressroom_definer', 'pressroom_worker') then
    return new;
  end if;
  if old.status = 'pending_approval' and (new.status <> old.status or new.deleted_at is not null) then
    perform app.assert_not_in_review(old);
  end if;
  if new.status <> old.status and (new.status in ('pending_approval', 'rejected')) then
    perform app.raise(409, 'INVALID_STATUS_TRANSITION',
      format('Only a review moves content to %s.', new.status),
      jsonb_build_object('contentId', old.id, 'from', old.status, 'to', new.status));
  end if;
  if new.status = 'scheduled' and old.status <> 'scheduled' and new.deleted_at is null then
    perform app.assert_review_allows_publishing(new.id, new.workspace_id);
  end if;
  return new;
end
$$;
comment on function app.tg_content_items_review_rules() is 'Trigger content_items_18_review_rules: content in review is moved only by the review engine (409 REVIEW_IN_PROGRESS), only a review moves content to pending_approval or rejected, and under the required policy scheduling needs an approved review (409 REVIEW_REQUIRED).';
grant execute on function app.tg_content_items_review_rules() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger content_items_18_review_rules before insert or update on app.content_items
  for each row execute function app.tg_content_items_review_rules();

-- ---------------------------------------------------------------------------
-- Reviews: status machine and engine.
-- ---------------------------------------------------------------------------
create function app.review_transition_allowed(p_from text, p_to text) returns boolean
language sql immutable parallel safe as $$
  select (p_from, p_to) in (('draft', 'active'), ('draft', 'cancelled'), ('active', 'cancelled'),
                            ('active', 'completed'), ('active', 'expired'))
$$;
comment on function app.review_transition_allowed(text, text) is 'The review transition table: draft -> active (send), draft|active -> cancelled, active -> completed, active -> expired.';
grant execute on function app.review_transition_allowed(text, text) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.tg_reviews_status_machine() returns trigger
language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    if new.status <> 'draft' then
      perform app.raise(409, 'INVALID_REVIEW_TRANSITION', 'A review starts as a draft.',
        jsonb_build_object('from', null, 'to', new.status));
    end if;
    return new;
  end if;
  if new.status <> old.status and not app.review_transition_allowed(old.status, new.status) then
    perform app.raise(409, 'INVALID_REVIEW_TRANSITION',
      format('A review cannot move from %s to %s.', old.status, new.status),
      jsonb_build_object('reviewId', old.id, 'from', old.status, 'to', new.status));
  end if;
  if new.status = old.status and old.status in ('completed', 'cancelled', 'expired')
     and (new.title, new.message, new.due_at, new.stages) is distinct from (old.title, old.message, old.due_at, old.stages) then
    perform app.raise(409, 'REVIEW_CLOSED', format('This review is %s and cannot change.', old.status),
      jsonb_build_object('reviewId', old.id, 'status', old.status));
  end if;
  if new.workspace_id <> old.workspace_id or new.organization_id <> old.organization_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A review cannot move to another workspace.', jsonb_build_object('reviewId', old.id));
  end if;
  return new;
end
$$;
comment on function app.tg_reviews_status_machine() is 'Trigger reviews_20_status_machine: reviews start as drafts and move by app.review_transition_allowed (409 INVALID_REVIEW_TRANSITION); a closed review does not change (409 REVIEW_CLOSED).';
grant execute on function app.tg_reviews_status_machine() to pressroom_api, pressroom_definer, pressroom_worker;
create trigger reviews_20_status_machine before insert or update on app.reviews
  for each row execute function app.tg_reviews_status_machine();

create function app.review_activity_add(p_review app.reviews, p_item uuid, p_kind text, p_event text,
                                        p_body text default null, p_data jsonb default '{}', p_mentions uuid[] default '{}')
returns uuid
language plpgsql as $$
declare
  v_id uuid;
  v_key text := app.current_approver_key();
  v_name text;
begin
  if app.current_actor_kind() = 'review_link' then
    select l.name into v_name from app.review_links l where l.id = app.current_review_link_id();
  elsif app.current_person_id() is not null then
    select u.email into v_name from app.users u where u.id = app.current_person_id();
  end if;
  insert into app.review_activity (organization_id, workspace_id, review_id, item_id, kind, event, actor_key, actor_name,
                                   body, data, mentions)
  values (p_review.organization_id, p_review.workspace_id, p_review.id, p_item, p_kind, p_event,
          case when app.current_actor_kind() is null then null else v_key end, v_name, p_body, coalesce(p_data, '{}'),
          coalesce(p_mentions, '{}'))
  returning id into v_id;
  return v_id;
end
$$;
comment on function app.review_activity_add(app.reviews, uuid, text, text, text, jsonb, uuid[]) is 'Appends an activity entry (decision, comment or system event) to a review item, or to the review when p_item is null, with the caller as actor.';
grant execute on function app.review_activity_add(app.reviews, uuid, text, text, text, jsonb, uuid[]) to pressroom_api, pressroom_definer, pressroom_worker;

-- The outcome of a stage for an item from its live decisions: an override
-- decides; else a change request decides; else the rule counts approvals.
create function app.review_stage_outcome(p_review app.reviews, p_item uuid, p_stage int) returns text
language plpgsql stable as $$
declare
  v_stage jsonb := p_review.stages -> p_stage;
  v_override text;
  v_approvals int;
  v_changes int;
  v_needed int;
begin
  select decision into v_override from app.review_decisions
  where item_id = p_item and stage = p_stage and override and revoked_at is null and superseded_at is null
  order by created_at desc limit 1;
  if v_override is not null then
    return v_override;
  end if;
  select count(*) filter (where decision = 'approved'), count(*) filter (where decision = 'changes_requested')
  into v_approvals, v_changes
  from app.review_decisions d
  where d.item_id = p_item and d.stage = p_stage and not d.override and d.revoked_at is null and d.superseded_at is null
    and d.approver_key in (select app.approver_key(a) from jsonb_array_elements(v_stage -> 'approvers') a);
  if v_changes > 0 then
    return 'changes_requested';
  end if;
  v_needed := case v_stage ->> 'rule'
    when 'any' then 1
    when 'quorum' then (v_stage ->> 'quorum')::int
    else jsonb_array_length(v_stage -> 'approvers') end;
  if v_approvals >= v_needed then
    return 'approved';
  end if;
  return null;
end
$$;
comment on function app.review_stage_outcome(app.reviews, uuid, int) is 'A stage''s outcome for an item: the latest override, else changes_requested when an approver asked for changes, else approved when the rule (all, any, quorum n) is met by live approvals, else null (open).';
grant execute on function app.review_stage_outcome(app.reviews, uuid, int) to pressroom_api, pressroom_definer, pressroom_worker;

-- Where content goes back to when its item leaves a review undecided.
create function app.review_release_content(p_item app.review_items) returns void
language plpgsql as $$
declare
  v app.content_items;
begin
  select * into v from app.content_items where id = p_item.content_id for update;
  if v.status <> 'pending_approval' or v.deleted_at is not null then
    return;
  end if;
  if p_item.prior_status = 'scheduled' and p_item.prior_scheduled_at > now() then
    perform app.review_move_content(v.id, 'scheduled', p_item.prior_scheduled_at);
  else
    perform app.review_move_content(v.id, 'draft');
  end if;
end
$$;
comment on function app.review_release_content(app.review_items) is 'Returns an undecided item''s content to where it was: scheduled again at its time when it was scheduled and that time is still ahead, else draft.';
grant execute on function app.review_release_content(app.review_items) to pressroom_api, pressroom_definer, pressroom_worker;

-- Puts an item's content in review (send, add item to an active review).
create function app.review_hold_content(p_item app.review_items) returns app.review_items
language plpgsql as $$
declare
  v app.content_items;
begin
  select * into v from app.content_items where id = p_item.content_id and deleted_at is null for update;
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
$$;
comment on function app.review_hold_content(app.review_items) is 'Moves an item''s draft or scheduled content to pending_approval (a scheduled edition keeps its time as intended time and loses its publish job), remembering where it was.';
grant execute on function app.review_hold_content(app.review_items) to pressroom_api, pressroom_definer, pressroom_worker;

-- After a decision (or a stage change): closes stages by their rule, opens
-- the next, decides the item at its last stage and moves its content; then
-- completes the review when every item is decided.
create function app.review_advance(p_review_id uuid, p_item_id uuid) returns void
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  v_outcome text;
  v app.content_items;
  v_last int;
  v_opened boolean := false;
begin
  select * into r from app.reviews where id = p_review_id for update;
  select * into it from app.review_items where id = p_item_id for update;
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
      select * into v from app.content_items where id = it.content_id for update;
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
$$;
comment on function app.review_advance(uuid, uuid) is 'The engine after a decision: closes the item''s stages by their rule and opens the next; at the last stage approves the item (content scheduled at its intended time when the review auto-schedules and that time is ahead, else draft marked approved) or, on a change request, rejects it; completes the review when every item is decided.';
grant execute on function app.review_advance(uuid, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_complete_if_done(p_review_id uuid) returns void
language plpgsql as $$
declare
  r app.reviews;
begin
  select * into r from app.reviews where id = p_review_id for update;
  if r.status = 'active'
     and exists (select 1 from app.review_items where review_id = r.id and state <> 'removed')
     and not exists (select 1 from app.review_items where review_id = r.id and state = 'pending') then
    update app.reviews set status = 'completed', completed_at = now(), completed_by = app.current_person_id()
    where id = r.id returning * into r;
    update app.review_links set revoked_at = coalesce(revoked_at, now()) where review_id = r.id;
    perform app.review_activity_add(r, null, 'system', 'completed');
  end if;
end
$$;
comment on function app.review_complete_if_done(uuid) is 'Completes an active review once it has items and none is pending; its client links end with it.';
grant execute on function app.review_complete_if_done(uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- Ends a review (cancel or expire): undecided items release their content.
create function app.review_end(p_review_id uuid, p_status text) returns app.reviews
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
begin
  select * into r from app.reviews where id = p_review_id for update;
  for it in select * from app.review_items where review_id = r.id and state = 'pending' and open for update loop
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
$$;
comment on function app.review_end(uuid, text) is 'Cancels or expires a review: its pending items close and their content returns where it was (cancel) or to draft (expire); its client links end.';
grant execute on function app.review_end(uuid, text) to pressroom_api, pressroom_definer, pressroom_worker;

-- The job: active reviews whose due time passed expire.
create function app.expire_due_reviews() returns int
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_id uuid;
  v_count int := 0;
begin
  for v_id in select id from app.reviews where status = 'active' and due_at <= now() order by due_at limit 500
              for update skip locked loop
    perform app.review_end(v_id, 'expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
alter function app.expire_due_reviews() owner to pressroom_definer;
comment on function app.expire_due_reviews() is 'The reviews.expire-due job (server/jobs/reviews.ts, every minute): active reviews past due_at expire and their pending items'' content returns to draft. Idempotent.';
grant execute on function app.expire_due_reviews() to pressroom_worker;

-- ---------------------------------------------------------------------------
-- Reading reviews.
-- ---------------------------------------------------------------------------
create function app.review_item_due_at(r app.reviews, it app.review_items) returns timestamptz
language sql stable as $$
  select least(r.due_at, case when (r.stages -> it.current_stage ->> 'dueInHours') is not null
                               then it.stage_opened_at + make_interval(hours => (r.stages -> it.current_stage ->> 'dueInHours')::int) end)
$$;
comment on function app.review_item_due_at(app.reviews, app.review_items) is 'When an item''s open stage is due: the earlier of the review''s due time and the stage''s dueInHours after it opened.';
grant execute on function app.review_item_due_at(app.reviews, app.review_items) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_decision_json(d app.review_decisions) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', d.id, 'itemId', d.item_id, 'stage', d.stage, 'stageName', d.stage_name,
    'approver', d.approver_key, 'userId', d.user_id, 'clientEmail', d.client_email, 'decision', d.decision,
    'comment', d.comment, 'override', d.override, 'reason', d.reason, 'revokedAt', d.revoked_at,
    'supersededAt', d.superseded_at, 'createdAt', d.created_at)
$$;
comment on function app.review_decision_json(app.review_decisions) is 'A decision as the API shows it.';
grant execute on function app.review_decision_json(app.review_decisions) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_item_json(r app.reviews, it app.review_items) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', it.id, 'reviewId', it.review_id, 'contentId', it.content_id, 'state', it.state,
    'currentStage', it.current_stage,
    'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
    'dueAt', case when it.state = 'pending' and r.status = 'active' then app.review_item_due_at(r, it) end,
    'platform', g.platform, 'integrationId', i.integration_id, 'contentStatus', i.status,
    'caption', coalesce(i.caption, cr.caption), 'intendedPublishAt', coalesce(i.intended_publish_at, i.scheduled_at),
    'contentVersion', i.version, 'approvedVersion', it.approved_version, 'decidedAt', it.decided_at,
    'createdAt', it.created_at,
    'decisions', coalesce((select jsonb_agg(app.review_decision_json(d) order by d.created_at, d.id)
                           from app.review_decisions d where d.item_id = it.id), '[]'))
  from app.content_items i
  join app.content_roots cr on cr.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = it.content_id
$$;
comment on function app.review_item_json(app.reviews, app.review_items) is 'A review item as the API shows it: state, open stage and its due time, its content (platform, status, caption, intended time, version) and every decision.';
grant execute on function app.review_item_json(app.reviews, app.review_items) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_json(r app.reviews, p_items boolean default true) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', r.id, 'status', r.status, 'title', r.title, 'message', r.message, 'dueAt', r.due_at,
    'workflowId', r.workflow_id, 'configRevision', r.config_revision,
    'stages', coalesce(r.stages, (select w.stages from app.approval_workflows w where w.id = r.workflow_id), '[]'),
    'autoScheduleOnApproval', r.auto_schedule_on_approval,
    'createdAt', r.created_at, 'createdBy', r.created_by, 'updatedAt', r.updated_at,
    'sentAt', r.sent_at, 'sentBy', r.sent_by, 'completedAt', r.completed_at, 'completedBy', r.completed_by,
    'clientReviewers', coalesce((select jsonb_agg(jsonb_build_object('id', l.id, 'email', l.email, 'name', l.name,
                                    'expiresAt', l.expires_at, 'revokedAt', l.revoked_at) order by l.created_at, l.email)
                                 from app.review_links l where l.review_id = r.id), '[]'))
  || case when p_items then jsonb_build_object('items',
       coalesce((select jsonb_agg(app.review_item_json(r, it) order by it.created_at, it.id)
                 from app.review_items it where it.review_id = r.id), '[]')) else '{}' end
$$;
comment on function app.review_json(app.reviews, boolean) is 'A review as the API shows it: status, stages, timestamps and actors, client reviewers (never their tokens), and its items.';
grant execute on function app.review_json(app.reviews, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_activity_json(a app.review_activity) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'kind', a.kind, 'event', a.event,
    'actor', a.actor_key, 'actorName', a.actor_name, 'body', a.body, 'mentions', to_jsonb(a.mentions), 'data', a.data,
    'reactions', coalesce((select jsonb_agg(jsonb_build_object('emoji', x.emoji, 'count', x.n, 'actors', x.actors) order by x.emoji)
                           from (select emoji, count(*)::int as n, jsonb_agg(actor_key order by actor_key) as actors
                                 from app.review_reactions where activity_id = a.id group by emoji) x), '[]'),
    'createdAt', a.created_at)
$$;
comment on function app.review_activity_json(app.review_activity) is 'An activity entry with its reactions (emoji, count, who).';
grant execute on function app.review_activity_json(app.review_activity) to pressroom_api, pressroom_definer, pressroom_worker;

-- The approvers an item waits on (the inbox reads it through index
-- review_items_waiting_on_idx): those of its open stage without a live decision.
create function app.review_item_refresh_waiting(p_item_id uuid) returns void
language plpgsql as $$
declare
  it app.review_items;
  r app.reviews;
  v_keys text[] := '{}';
begin
  select * into it from app.review_items where id = p_item_id;
  select * into r from app.reviews where id = it.review_id;
  if r.status = 'active' and it.state = 'pending' and it.open then
    v_keys := array(select app.approver_key(a) from jsonb_array_elements(r.stages -> it.current_stage -> 'approvers') a
                    where app.approver_key(a) not in (
                      select d.approver_key from app.review_decisions d
                      where d.item_id = it.id and d.stage = it.current_stage and d.revoked_at is null and d.superseded_at is null));
  end if;
  if v_keys is distinct from it.waiting_on then
    update app.review_items set waiting_on = v_keys where id = it.id;
  end if;
end
$$;
comment on function app.review_item_refresh_waiting(uuid) is 'Recomputes review_items.waiting_on: the approvers of the open stage of a pending item of an active review who have not decided; empty otherwise.';
grant execute on function app.review_item_refresh_waiting(uuid) to pressroom_api, pressroom_definer, pressroom_worker;
