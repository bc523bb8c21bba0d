--! Previous: sha1:cd3d2f1eec4698fbf2b3e64092354a309887a286
--! Hash: sha1:121b9049ad0a85db0e7a2c0cc0393526eb75c704
--! Message: reviews and approval workflows

--! split: 10-reviews.sql
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

--! split: 10a-reviews-api.sql
-- Reviews and approval workflows: the api functions the routes call
-- (server/routes/approvalWorkflows.ts, server/routes/reviews.ts). The engine
-- and the tables are in 10-reviews.sql. Every function checks the role;
-- row-level security holds each to the request's workspace.

-- ---------------------------------------------------------------------------
-- Helpers.
-- ---------------------------------------------------------------------------
create function app.workflow_for(p_id uuid, p_lock boolean default false) returns app.approval_workflows
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  if p_lock then
    select * into w from app.approval_workflows where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into w from app.approval_workflows where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if w.id is null then
    perform app.raise_not_found('approval workflow', p_id);
  end if;
  return w;
end
$$;
comment on function app.workflow_for(uuid, boolean) is 'The approval workflow of the current workspace with this id (locked on request), or 404 NOT_FOUND.';
grant execute on function app.workflow_for(uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_for(p_id uuid, p_lock boolean default false) returns app.reviews
language plpgsql as $$
declare
  r app.reviews;
begin
  if p_lock then
    select * into r from app.reviews where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into r from app.reviews where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if r.id is null then
    perform app.raise_not_found('review', p_id);
  end if;
  return r;
end
$$;
comment on function app.review_for(uuid, boolean) is 'The review of the current workspace with this id (locked on request), or 404 NOT_FOUND.';
grant execute on function app.review_for(uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.review_item_for(r app.reviews, p_item_id uuid, p_lock boolean default false) returns app.review_items
language plpgsql as $$
declare
  it app.review_items;
begin
  if p_lock then
    select * into it from app.review_items where id = p_item_id and review_id = r.id for update;
  else
    select * into it from app.review_items where id = p_item_id and review_id = r.id;
  end if;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$$;
comment on function app.review_item_for(app.reviews, uuid, boolean) is 'The item of this review with this id, or 404 NOT_FOUND.';
grant execute on function app.review_item_for(app.reviews, uuid, boolean) to pressroom_api, pressroom_definer, pressroom_worker;

create function app.require_review_status(r app.reviews, p_allowed text[]) returns void
language plpgsql as $$
begin
  if not (r.status = any (p_allowed)) then
    perform app.raise(409, 'INVALID_REVIEW_STATUS',
      format('This operation needs a review that is %s; this review is %s.', array_to_string(p_allowed, ' or '), r.status),
      jsonb_build_object('reviewId', r.id, 'status', r.status, 'allowedStatuses', to_jsonb(p_allowed)));
  end if;
end
$$;
comment on function app.require_review_status(app.reviews, text[]) is 'Raises 409 INVALID_REVIEW_STATUS unless the review is in one of the statuses.';
grant execute on function app.require_review_status(app.reviews, text[]) to pressroom_api, pressroom_definer, pressroom_worker;

-- Adds an item for one edition (draft review: just the row; active: the content enters review).
create function app.review_add_item(r app.reviews, p_content uuid) returns app.review_items
language plpgsql as $$
declare
  it app.review_items;
  v app.content_items;
begin
  select * into v from app.content_items where id = p_content and workspace_id = r.workspace_id and deleted_at is null;
  if v.id is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('contentId', 'not_found', 'no content with this id in this workspace')),
      'No content with this id in this workspace.');
  end if;
  if v.status not in ('draft', 'scheduled') then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can enter a review; this content is %s.', v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  if exists (select 1 from app.review_items x where x.content_id = v.id and x.open) then
    perform app.raise(409, 'CONTENT_IN_REVIEW', 'This content is already in an open review.',
      jsonb_build_object('contentId', v.id, 'reviewId', (select x.review_id from app.review_items x where x.content_id = v.id and x.open limit 1)));
  end if;
  insert into app.review_items (organization_id, workspace_id, review_id, content_id)
  values (r.organization_id, r.workspace_id, r.id, v.id) returning * into it;
  if r.status = 'active' then
    it := app.review_hold_content(it);
    perform app.review_activity_add(r, it.id, 'system', 'sent');
    perform app.review_item_refresh_waiting(it.id);
  end if;
  return it;
end
$$;
comment on function app.review_add_item(app.reviews, uuid) is 'Adds an edition to a review: draft or scheduled content of the workspace, in no other open review (409 CONTENT_IN_REVIEW); in an active review the content enters review at once.';
grant execute on function app.review_add_item(app.reviews, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

-- A random link token: 'prr_' + 64 hex digits of two v4 UUIDs (244 random bits from the server's CSPRNG).
create function app.new_review_link_token() returns text
language sql volatile as $$
  select 'prr_' || replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')
$$;
comment on function app.new_review_link_token() is 'A new client review link token (prr_ + 64 hex digits, 244 random bits); only its SHA-256 is stored.';
grant execute on function app.new_review_link_token() to pressroom_api, pressroom_definer;

-- Creates the missing client links of a review; returns the new ones with their tokens (shown once).
create function app.review_create_links(r app.reviews) returns jsonb
language plpgsql as $$
declare
  v_client record;
  v_token text;
  v_out jsonb := '[]';
  v_link app.review_links;
begin
  for v_client in
    select distinct on (lower(a ->> 'email')) lower(a ->> 'email') as email, a ->> 'name' as name
    from jsonb_array_elements(r.stages) s, jsonb_array_elements(s -> 'approvers') a
    where a ->> 'type' = 'client'
    order by lower(a ->> 'email')
  loop
    continue when exists (select 1 from app.review_links l where l.review_id = r.id and l.email = v_client.email);
    v_token := app.new_review_link_token();
    insert into app.review_links (organization_id, workspace_id, review_id, email, name, token_hash, expires_at)
    values (r.organization_id, r.workspace_id, r.id, v_client.email, v_client.name,
            sha256(convert_to(v_token, 'UTF8')), r.due_at)
    returning id, email, name, expires_at into v_link.id, v_link.email, v_link.name, v_link.expires_at;
    v_out := v_out || jsonb_build_object('id', v_link.id, 'email', v_link.email, 'name', v_link.name,
                                         'token', v_token, 'expiresAt', v_link.expires_at);
  end loop;
  return v_out;
end
$$;
comment on function app.review_create_links(app.reviews) is 'Creates one review link per client reviewer of the review''s stages that has none yet (token hashed with SHA-256, expiring with the review); returns the new links with their tokens, which are never shown again.';
grant execute on function app.review_create_links(app.reviews) to pressroom_api, pressroom_definer;

-- Notifies the members a review now waits on.
create function app.review_notify_waiting(r app.reviews, p_kind text, p_data jsonb default '{}', p_only text[] default null)
returns int
language plpgsql as $$
declare
  v_count int;
begin
  with waiting as (
    select distinct k as approver_key from app.review_items it, unnest(it.waiting_on) k
    where it.review_id = r.id and it.state = 'pending' and it.open
      and (p_only is null or k = any (p_only))
  ), ins as (
    insert into app.notifications (organization_id, workspace_id, user_id, review_link_id, kind, review_id, data)
    select r.organization_id, r.workspace_id,
           case when w.approver_key like 'user:%' then substr(w.approver_key, 6)::uuid end,
           case when w.approver_key like 'client:%' then
             (select l.id from app.review_links l where l.review_id = r.id and 'client:' || l.email = w.approver_key) end,
           p_kind, r.id, jsonb_build_object('title', r.title) || p_data
    from waiting w
    where w.approver_key like 'user:%'
       or exists (select 1 from app.review_links l where l.review_id = r.id and 'client:' || l.email = w.approver_key)
    returning 1
  )
  select count(*) into v_count from ins;
  return v_count;
end
$$;
comment on function app.review_notify_waiting(app.reviews, text, jsonb, text[]) is 'Writes a notification (review_requested or review_reminder) for every approver a review waits on (members by user, clients by link), optionally only for the listed approver keys; returns how many.';
grant execute on function app.review_notify_waiting(app.reviews, text, jsonb, text[]) to pressroom_api, pressroom_definer;

-- The one decision function: members (api.decide_review_item) and clients
-- (api.review_link_decide) both end here.
create function app.review_decide(r app.reviews, it app.review_items, p_decision text, p_comment text) returns jsonb
language plpgsql as $$
declare
  v_key text := app.current_approver_key();
  v_stage jsonb;
  d app.review_decisions;
begin
  if r.status <> 'active' then
    perform app.require_review_status(r, array['active']);
  end if;
  if it.state <> 'pending' or not it.open then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s; it takes no more decisions.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  v_stage := r.stages -> it.current_stage;
  if v_key is null or not exists (select 1 from jsonb_array_elements(v_stage -> 'approvers') a where app.approver_key(a) = v_key) then
    perform app.raise(403, 'NOT_AN_APPROVER',
      format('Only an approver of the open stage (%s) decides this item.', v_stage ->> 'name'),
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage, 'stageName', v_stage ->> 'name'));
  end if;
  if exists (select 1 from app.review_decisions x where x.item_id = it.id and x.stage = it.current_stage
             and x.approver_key = v_key and x.revoked_at is null and x.superseded_at is null) then
    perform app.raise(409, 'ALREADY_DECIDED', 'You already decided this item at this stage; revoke that decision first to change it.',
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage));
  end if;
  insert into app.review_decisions (organization_id, workspace_id, review_id, item_id, stage, stage_name, approver_key,
    user_id, client_email, decision, comment)
  values (r.organization_id, r.workspace_id, r.id, it.id, it.current_stage, v_stage ->> 'name', v_key,
    case when v_key like 'user:%' then substr(v_key, 6)::uuid end,
    case when v_key like 'client:%' then substr(v_key, 8) end, p_decision, p_comment)
  returning * into d;
  perform app.review_activity_add(r, it.id, 'decision', p_decision, p_comment,
    jsonb_build_object('decisionId', d.id, 'stage', d.stage, 'stageName', d.stage_name));
  perform app.review_advance(r.id, it.id);
  select * into it from app.review_items where id = it.id;
  return jsonb_build_object('decisionId', d.id, 'itemId', it.id, 'decision', d.decision, 'stage', d.stage,
    'itemState', it.state, 'currentStage', it.current_stage,
    'contentStatus', (select status from app.content_items where id = it.content_id),
    'reviewStatus', (select status from app.reviews where id = r.id));
end
$$;
comment on function app.review_decide(app.reviews, app.review_items, text, text) is 'Records the caller''s decision on an item at its open stage: the review must be active (409 INVALID_REVIEW_STATUS), the item pending (409 ITEM_ALREADY_DECIDED), the caller an approver of that stage (403 NOT_AN_APPROVER) without a live decision there (409 ALREADY_DECIDED); then the engine advances (app.review_advance).';
grant execute on function app.review_decide(app.reviews, app.review_items, text, text) to pressroom_api, pressroom_definer;

create function app.review_comment(r app.reviews, it app.review_items, p_body text, p_mentions uuid[]) returns jsonb
language plpgsql as $$
declare
  v_id uuid;
  v_bad uuid[];
  a app.review_activity;
begin
  if btrim(coalesce(p_body, '')) = '' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('body', 'required', 'a comment needs text')), 'A comment needs text.');
  end if;
  v_bad := array(select m from unnest(coalesce(p_mentions, '{}')) m
                 where not exists (select 1 from app.user_workspace_roles(m) x where x.workspace_id = r.workspace_id));
  if cardinality(v_bad) > 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('mentions', 'not_a_member',
      'every mentioned user must be a member of this workspace')), 'A mentioned user is not a member of this workspace.',
      jsonb_build_object('userIds', to_jsonb(v_bad)));
  end if;
  v_id := app.review_activity_add(r, it.id, 'comment', 'comment', p_body, '{}',
    array(select distinct m from unnest(coalesce(p_mentions, '{}')) m));
  insert into app.notifications (organization_id, workspace_id, user_id, kind, review_id, item_id, data)
  select r.organization_id, r.workspace_id, m, 'mention', r.id, it.id,
         jsonb_build_object('title', r.title, 'activityId', v_id, 'excerpt', left(p_body, 200))
  from (select distinct m from unnest(coalesce(p_mentions, '{}')) m) x;
  select * into a from app.review_activity where id = v_id;
  return app.review_activity_json(a);
end
$$;
comment on function app.review_comment(app.reviews, app.review_items, text, uuid[]) is 'Adds a comment to a review item, with @mentions of workspace members (each mentioned member gets a notification).';
grant execute on function app.review_comment(app.reviews, app.review_items, text, uuid[]) to pressroom_api, pressroom_definer;

create function app.review_react(r app.reviews, it app.review_items, p_activity uuid, p_emoji text, p_add boolean) returns jsonb
language plpgsql as $$
declare
  v_key text := app.current_approver_key();
begin
  if not exists (select 1 from app.review_activity a where a.id = p_activity and a.item_id = it.id) then
    perform app.raise_not_found('activity entry', p_activity);
  end if;
  if p_add then
    insert into app.review_reactions (activity_id, actor_key, organization_id, workspace_id, emoji)
    values (p_activity, v_key, r.organization_id, r.workspace_id, p_emoji)
    on conflict (activity_id, actor_key) do update set emoji = excluded.emoji;
  else
    delete from app.review_reactions where activity_id = p_activity and actor_key = v_key and emoji = p_emoji;
    if not found then
      perform app.raise(404, 'NOT_FOUND', 'You have no such reaction on this activity entry.',
        jsonb_build_object('activityId', p_activity, 'emoji', p_emoji));
    end if;
  end if;
  return jsonb_build_object('activityId', p_activity, 'emoji', p_emoji, 'reacted', p_add);
end
$$;
comment on function app.review_react(app.reviews, app.review_items, uuid, text, boolean) is 'Adds (replacing the caller''s previous one) or removes the caller''s emoji on an activity entry of the item; 404 when there is nothing to remove.';
grant execute on function app.review_react(app.reviews, app.review_items, uuid, text, boolean) to pressroom_api, pressroom_definer;

create function app.review_item_activity(it app.review_items) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(app.review_activity_json(a) order by a.created_at, a.id), '[]')
  from app.review_activity a where a.item_id = it.id
$$;
comment on function app.review_item_activity(app.review_items) is 'An item''s activity in order: decisions, comments, system events, each with its reactions.';
grant execute on function app.review_item_activity(app.review_items) to pressroom_api, pressroom_definer;

-- ---------------------------------------------------------------------------
-- Review policy.
-- ---------------------------------------------------------------------------
create function api.get_review_policy() returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return jsonb_build_object('reviewPolicy', app.review_policy(app.current_workspace_id()));
end
$$;
comment on function api.get_review_policy() is 'Serves GET /v1/workspaces/{workspaceId}/review-policy (getReviewPolicy_v1): none, optional or required. Viewer role.';

create function api.set_review_policy(p_body jsonb) returns jsonb
language plpgsql as $$
begin
  perform app.require_role('manager');
  insert into app.review_settings (workspace_id, organization_id, review_policy, updated_by)
  values (app.current_workspace_id(), app.current_organization_id(), p_body ->> 'reviewPolicy', app.current_person_id())
  on conflict (workspace_id) do update set review_policy = excluded.review_policy, updated_at = now(), updated_by = excluded.updated_by;
  return jsonb_build_object('reviewPolicy', app.review_policy(app.current_workspace_id()));
end
$$;
comment on function api.set_review_policy(jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/review-policy (setReviewPolicy_v1): sets the workspace''s review policy. Manager role.';

-- ---------------------------------------------------------------------------
-- Approval workflows.
-- ---------------------------------------------------------------------------
create function app.workflow_problems(p_body jsonb, p_partial boolean) returns jsonb
language plpgsql stable as $$
declare
  v_problems jsonb := '[]';
  v_bad text[];
begin
  if p_body ? 'stages' or not p_partial then
    v_problems := v_problems || app.review_stages_problems(p_body -> 'stages', 'stages');
  end if;
  if p_body ? 'match' then
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'integrationIds', '[]')) x
                   where not exists (select 1 from app.integrations g where g.id = x::uuid and g.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/integrationIds', 'not_found', 'no channel with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'tagIds', '[]')) x
                   where not exists (select 1 from app.tags t where t.id = x::uuid and t.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/tagIds', 'not_found', 'no tag with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
    v_bad := array(select x from jsonb_array_elements_text(coalesce(p_body -> 'match' -> 'campaignIds', '[]')) x
                   where not exists (select 1 from app.campaigns c where c.id = x::uuid and c.workspace_id = app.current_workspace_id()));
    if cardinality(v_bad) > 0 then
      v_problems := v_problems || app.field_problem('match/campaignIds', 'not_found', 'no campaign with this id in this workspace: ' || array_to_string(v_bad, ', '));
    end if;
  end if;
  return v_problems;
end
$$;
comment on function app.workflow_problems(jsonb, boolean) is 'Field problems of a workflow body: its stages (app.review_stages_problems) and match references (channels, tags, campaigns of this workspace).';
grant execute on function app.workflow_problems(jsonb, boolean) to pressroom_api;

create function app.workflow_name_taken(p_name text, p_except uuid) returns void
language plpgsql as $$
begin
  if exists (select 1 from app.approval_workflows w where w.workspace_id = app.current_workspace_id()
             and lower(btrim(w.name)) = lower(btrim(p_name)) and w.id is distinct from p_except) then
    perform app.raise(409, 'NAME_TAKEN', 'An approval workflow with this name exists in this workspace.',
      jsonb_build_object('name', btrim(p_name)));
  end if;
end
$$;
comment on function app.workflow_name_taken(text, uuid) is 'Raises 409 NAME_TAKEN when another workflow of the workspace has this name (case-insensitive, trimmed).';
grant execute on function app.workflow_name_taken(text, uuid) to pressroom_api;

create function api.list_approval_workflows() returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.workflow_json(w) order by w.position, w.created_at, w.id)
                   from app.approval_workflows w where w.workspace_id = app.current_workspace_id()), '[]');
end
$$;
comment on function api.list_approval_workflows() is 'Serves GET /v1/workspaces/{workspaceId}/approval-workflows (listApprovalWorkflows_v1): the workspace''s workflows in routing order. Viewer role.';

create function api.create_approval_workflow(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  perform app.require_role('manager');
  perform app.raise_field_problems(app.workflow_problems(p_body, false), 'The workflow is not valid; see details.fields.');
  perform app.workflow_name_taken(p_body ->> 'name', null);
  insert into app.approval_workflows (organization_id, workspace_id, name, position, active, match, stages,
    auto_schedule_on_approval, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_body ->> 'name'),
    coalesce((select max(position) + 1 from app.approval_workflows where workspace_id = app.current_workspace_id()), 0),
    coalesce((p_body ->> 'active')::boolean, true), app.workflow_match_normalize(coalesce(p_body -> 'match', '{}')),
    app.review_stages_normalize(p_body -> 'stages'), coalesce((p_body ->> 'autoScheduleOnApproval')::boolean, false),
    app.current_person_id())
  returning * into w;
  return app.workflow_json(w);
end
$$;
comment on function api.create_approval_workflow(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/approval-workflows (createApprovalWorkflow_v1): a workflow, last in routing order. Manager role; 400 VALIDATION_FAILED (stages, match references), 409 NAME_TAKEN.';

create function api.get_approval_workflow(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.workflow_json(app.workflow_for(p_id));
end
$$;
comment on function api.get_approval_workflow(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (getApprovalWorkflow_v1). Viewer role; 404 NOT_FOUND.';

create function api.update_approval_workflow(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
begin
  perform app.require_role('manager');
  w := app.workflow_for(p_id, true);
  perform app.raise_field_problems(app.workflow_problems(p_body, true), 'The workflow is not valid; see details.fields.');
  if p_body ? 'name' then
    perform app.workflow_name_taken(p_body ->> 'name', w.id);
  end if;
  update app.approval_workflows set
    name = case when p_body ? 'name' then btrim(p_body ->> 'name') else name end,
    active = case when p_body ? 'active' then (p_body ->> 'active')::boolean else active end,
    match = case when p_body ? 'match' then app.workflow_match_normalize(p_body -> 'match') else match end,
    stages = case when p_body ? 'stages' then app.review_stages_normalize(p_body -> 'stages') else stages end,
    auto_schedule_on_approval = case when p_body ? 'autoScheduleOnApproval' then (p_body ->> 'autoScheduleOnApproval')::boolean
                                     else auto_schedule_on_approval end
  where id = w.id returning * into w;
  return app.workflow_json(w);
end
$$;
comment on function api.update_approval_workflow(uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (updateApprovalWorkflow_v1): name, active, match, stages, autoScheduleOnApproval; reviews already sent keep the stages they copied. Manager role; 400 VALIDATION_FAILED, 404 NOT_FOUND, 409 NAME_TAKEN.';

create function api.delete_approval_workflow(p_id uuid) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
  v_ids uuid[];
begin
  perform app.require_role('manager');
  w := app.workflow_for(p_id, true);
  v_ids := array(select r.id from app.reviews r where r.workflow_id = w.id and r.status in ('draft', 'active') order by r.created_at limit 100);
  if cardinality(v_ids) > 0 then
    perform app.raise(409, 'WORKFLOW_IN_USE',
      'Open reviews use this workflow; deactivate it instead (PATCH active: false), or delete it once they are closed.',
      jsonb_build_object('workflowId', w.id, 'reviewIds', to_jsonb(v_ids)));
  end if;
  delete from app.approval_workflows where id = w.id;
  return jsonb_build_object('id', w.id, 'deleted', true);
end
$$;
comment on function api.delete_approval_workflow(uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/approval-workflows/{workflowId} (deleteApprovalWorkflow_v1). Manager role; 404 NOT_FOUND, 409 WORKFLOW_IN_USE while a draft or active review uses it.';

create function api.reorder_approval_workflows(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_ids uuid[] := array(select x::uuid from jsonb_array_elements_text(p_body -> 'workflowIds') x);
  v_have uuid[];
begin
  perform app.require_role('manager');
  v_have := array(select id from app.approval_workflows where workspace_id = app.current_workspace_id() order by id for update);
  if cardinality(v_ids) <> cardinality(v_have)
     or array(select distinct x from unnest(v_ids) x order by x) <> v_have then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('workflowIds', 'not_a_permutation',
      'list every workflow of the workspace exactly once')), 'List every workflow of the workspace exactly once.',
      jsonb_build_object('workflowIds', to_jsonb(v_have)));
  end if;
  update app.approval_workflows w set position = x.n - 1
  from unnest(v_ids) with ordinality x (id, n)
  where w.id = x.id and w.position <> x.n - 1;
  return api.list_approval_workflows();
end
$$;
comment on function api.reorder_approval_workflows(jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/approval-workflows/order (reorderApprovalWorkflows_v1): the routing order, every workflow listed once. Manager role; 400 VALIDATION_FAILED.';

-- ---------------------------------------------------------------------------
-- Resolve, preview, submit.
-- ---------------------------------------------------------------------------
create function app.require_content_ids(p_ids uuid[]) returns void
language plpgsql as $$
declare
  v_missing uuid[];
begin
  v_missing := array(select x from unnest(p_ids) x
                     where not exists (select 1 from app.content_items i where i.id = x
                                       and i.workspace_id = app.current_workspace_id() and i.deleted_at is null));
  if cardinality(v_missing) > 0 then
    perform app.raise(404, 'NOT_FOUND', 'No content with these ids in this workspace.', jsonb_build_object('ids', to_jsonb(v_missing)));
  end if;
end
$$;
comment on function app.require_content_ids(uuid[]) is 'Raises 404 NOT_FOUND listing the ids that are not live content of the workspace.';
grant execute on function app.require_content_ids(uuid[]) to pressroom_api;

create function api.resolve_reviews(p_body jsonb) returns jsonb
language plpgsql stable as $$
declare
  v_ids uuid[];
begin
  perform app.require_role('editor');
  if p_body ? 'contentIds' then
    v_ids := array(select distinct x::uuid from jsonb_array_elements_text(p_body -> 'contentIds') x);
    perform app.require_content_ids(v_ids);
    return coalesce((select jsonb_agg(app.content_resolution(i.id) order by x.n)
                     from unnest(array(select x::uuid from jsonb_array_elements_text(p_body -> 'contentIds') x)) with ordinality x (id, n)
                     join app.content_items i on i.id = x.id), '[]');
  end if;
  -- Unsaved channels, routed as authored.
  if exists (select 1 from jsonb_array_elements(coalesce(p_body -> 'channels', '[]')) c
             where not exists (select 1 from app.integrations g where g.id = (c ->> 'integrationId')::uuid
                               and g.workspace_id = app.current_workspace_id() and g.deleted_at is null)) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('channels', 'integration_not_found',
      'a channel is not a connected channel of this workspace')), 'A channel is not a connected channel of this workspace.');
  end if;
  return coalesce((select jsonb_agg(
      jsonb_build_object('contentId', null, 'rootId', null, 'integrationId', g.id, 'platform', g.platform,
        'contentVersion', null, 'status', null,
        'workflow', case when w.id is not null then jsonb_build_object('id', w.id, 'name', w.name) end,
        'reviewRequired', app.review_policy(app.current_workspace_id()) = 'required', 'approved', false) order by c.n)
    from jsonb_array_elements(coalesce(p_body -> 'channels', '[]')) with ordinality c (ch, n)
    join app.integrations g on g.id = (c.ch ->> 'integrationId')::uuid
    left join lateral app.route_channel(g.id, g.platform,
      array(select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'tagIds', '[]')) x),
      (p_body ->> 'campaignId')::uuid) w on true), '[]');
end
$$;
comment on function api.resolve_reviews(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/resolve (resolveReviews_v1): the routing preview, one resolution per saved edition (contentIds) or unsaved channel (channels with the root''s tagIds and campaignId): the workflow or null, whether review is required, and the content version seen. Editor role; 400 VALIDATION_FAILED, 404 NOT_FOUND.';

create function app.review_content_eligibility(p_id uuid) returns jsonb
language sql stable as $$
  select case
    when i.id is null then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'not_found')
    when exists (select 1 from app.review_items x where x.content_id = i.id and x.open)
      then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'in_review',
             'reviewId', (select x.review_id from app.review_items x where x.content_id = i.id and x.open limit 1))
    when i.status not in ('draft', 'scheduled')
      then jsonb_build_object('contentId', p_id, 'eligible', false, 'reason', 'status_' || i.status)
    else jsonb_build_object('contentId', p_id, 'eligible', true, 'reason', null)
  end
  from (select p_id as pid) q
  left join app.content_items i on i.id = q.pid and i.workspace_id = app.current_workspace_id() and i.deleted_at is null
$$;
comment on function app.review_content_eligibility(uuid) is 'Whether an edition can enter a review, and why not: not_found, in_review (with the review), or status_<status> (only draft and scheduled content can).';
grant execute on function app.review_content_eligibility(uuid) to pressroom_api;

create function api.preview_review(p_body jsonb) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('editor');
  return coalesce((select jsonb_agg(app.review_content_eligibility(x::uuid) order by n)
                   from jsonb_array_elements_text(p_body -> 'contentIds') with ordinality t (x, n)), '[]');
end
$$;
comment on function api.preview_review(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/preview (previewReview_v1): for each content id, whether it can enter a review and the reason if not. Editor role.';

-- ---------------------------------------------------------------------------
-- Reviews.
-- ---------------------------------------------------------------------------
create function app.review_new(p_title text, p_message text, p_due_at timestamptz, p_workflow uuid, p_stages jsonb) returns app.reviews
language plpgsql as $$
declare
  r app.reviews;
  w app.approval_workflows;
begin
  if p_due_at is not null and p_due_at <= now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('dueAt', 'in_past', 'a due time must be ahead')),
      'A due time must be ahead.');
  end if;
  if p_workflow is not null and p_stages is not null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('stages', 'not_allowed', 'give a workflowId or stages, not both')),
      'Give a workflowId or stages, not both.');
  end if;
  if p_workflow is not null then
    select * into w from app.approval_workflows where id = p_workflow and workspace_id = app.current_workspace_id();
    if w.id is null or not w.active then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE', 'This workflow is inactive or gone.', jsonb_build_object('workflowId', p_workflow));
    end if;
  end if;
  if p_stages is not null then
    perform app.raise_field_problems(app.review_stages_problems(p_stages, 'stages'), 'The stages are not valid; see details.fields.');
  end if;
  insert into app.reviews (organization_id, workspace_id, workflow_id, title, message, due_at, stages,
    auto_schedule_on_approval, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), w.id, btrim(p_title), p_message, p_due_at,
    case when p_stages is not null then app.review_stages_normalize(p_stages) end,
    coalesce(w.auto_schedule_on_approval, false), app.current_person_id())
  returning * into r;
  return r;
end
$$;
comment on function app.review_new(text, text, timestamptz, uuid, jsonb) is 'A new draft review with a workflow (active, of this workspace; 409 REVIEW_WORKFLOW_UNAVAILABLE) or custom stages (validated), not both.';
grant execute on function app.review_new(text, text, timestamptz, uuid, jsonb) to pressroom_api;

create function app.review_send(r app.reviews) returns jsonb
language plpgsql as $$
declare
  w app.approval_workflows;
  it app.review_items;
  v_links jsonb;
  v_due timestamptz;
begin
  perform app.require_review_status(r, array['draft']);
  if r.stages is null then
    select * into w from app.approval_workflows where id = r.workflow_id;
    if w.id is null or not w.active then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE', 'The review''s workflow is inactive or gone; choose another or custom stages.',
        jsonb_build_object('reviewId', r.id, 'workflowId', r.workflow_id));
    end if;
  end if;
  if not exists (select 1 from app.review_items where review_id = r.id and state = 'pending') then
    perform app.raise(409, 'REVIEW_EMPTY', 'A review needs at least one item to be sent.', jsonb_build_object('reviewId', r.id));
  end if;
  update app.reviews set status = 'active', sent_at = now(), sent_by = app.current_person_id(),
    stages = coalesce(stages, w.stages),
    auto_schedule_on_approval = case when stages is null then w.auto_schedule_on_approval else auto_schedule_on_approval end
  where id = r.id returning * into r;
  for it in select * from app.review_items where review_id = r.id and state = 'pending' order by created_at, id loop
    it := app.review_hold_content(it);
    perform app.review_activity_add(r, it.id, 'system', 'sent');
    perform app.review_item_refresh_waiting(it.id);
  end loop;
  v_links := app.review_create_links(r);
  perform app.review_notify_waiting(r, 'review_requested');
  return jsonb_build_object('reviewId', r.id, 'status', r.status, 'sentAt', r.sent_at, 'links', v_links);
end
$$;
comment on function app.review_send(app.reviews) is 'Sends a draft review (draft -> active): copies the workflow''s stages (409 REVIEW_WORKFLOW_UNAVAILABLE when it is inactive or gone), puts every item''s content in review, creates the client links (tokens returned once) and notifies the first stage''s approvers. 409 REVIEW_EMPTY without items.';
grant execute on function app.review_send(app.reviews) to pressroom_api;

create function api.create_review(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v_id text;
begin
  perform app.require_role('editor');
  r := app.review_new(p_body ->> 'title', p_body ->> 'message', (p_body ->> 'dueAt')::timestamptz,
                      (p_body ->> 'workflowId')::uuid, p_body -> 'stages');
  for v_id in select x from jsonb_array_elements_text(coalesce(p_body -> 'contentIds', '[]')) x loop
    perform app.review_add_item(r, v_id::uuid);
  end loop;
  return app.review_json(r);
end
$$;
comment on function api.create_review(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews (createReview_v1): a draft review with a workflow or custom stages and its first items. Editor role; 400 VALIDATION_FAILED, 400 INVALID_CONTENT_STATUS, 409 CONTENT_IN_REVIEW, 409 REVIEW_WORKFLOW_UNAVAILABLE.';

create function api.list_reviews(p_status text) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_json(r) order by r.created_at desc, r.id desc)
                   from (select * from app.reviews r where r.workspace_id = app.current_workspace_id()
                           and (p_status is null or r.status = p_status)
                         order by r.created_at desc, r.id desc limit 200) r), '[]');
end
$$;
comment on function api.list_reviews(text) is 'Serves GET /v1/workspaces/{workspaceId}/reviews (listReviews_v1): the newest 200 reviews, optionally of one status, with stages and items. Viewer role.';

create function api.get_review(p_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  return app.review_json(app.review_for(p_id));
end
$$;
comment on function api.get_review(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/{reviewId} (getReview_v1): the review with one view per item. Viewer role; 404 NOT_FOUND.';

create function api.update_review(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  if p_body ? 'expectedConfigRevision' and (p_body ->> 'expectedConfigRevision')::int <> r.config_revision then
    perform app.raise(409, 'REVIEW_CONFIG_STALE', format('The review is at config revision %s.', r.config_revision),
      jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision));
  end if;
  if p_body ? 'dueAt' and (p_body ->> 'dueAt')::timestamptz <= now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('dueAt', 'in_past', 'a due time must be ahead')),
      'A due time must be ahead.');
  end if;
  update app.reviews set
    title = case when p_body ? 'title' then btrim(p_body ->> 'title') else title end,
    message = case when p_body ? 'message' then p_body ->> 'message' else message end,
    due_at = case when p_body ? 'dueAt' then (p_body ->> 'dueAt')::timestamptz else due_at end,
    config_revision = config_revision + 1
  where id = r.id returning * into r;
  if p_body ? 'dueAt' then
    update app.review_links set expires_at = r.due_at where review_id = r.id and revoked_at is null;
  end if;
  return jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision, 'review', app.review_json(r));
end
$$;
comment on function api.update_review(uuid, jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/reviews/{reviewId} (updateReview_v1): title, message, due time of a draft or active review; answers the new config revision. Editor role; 409 INVALID_REVIEW_STATUS, 409 REVIEW_CONFIG_STALE.';

create function api.replace_review_stages(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  v_links jsonb := '[]';
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  if p_body ? 'expectedConfigRevision' and (p_body ->> 'expectedConfigRevision')::int <> r.config_revision then
    perform app.raise(409, 'REVIEW_CONFIG_STALE', format('The review is at config revision %s.', r.config_revision),
      jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision));
  end if;
  perform app.raise_field_problems(app.review_stages_problems(p_body -> 'stages', 'stages'), 'The stages are not valid; see details.fields.');
  update app.reviews set stages = app.review_stages_normalize(p_body -> 'stages'), config_revision = config_revision + 1
  where id = r.id returning * into r;
  if r.status = 'active' then
    -- Decisions under the old stages stay in history; pending items start again at the first stage.
    update app.review_decisions set superseded_at = now()
    where review_id = r.id and revoked_at is null and superseded_at is null
      and item_id in (select id from app.review_items where review_id = r.id and state = 'pending' and open);
    for it in select * from app.review_items where review_id = r.id and state = 'pending' and open loop
      update app.review_items set current_stage = 0, stage_opened_at = now() where id = it.id;
      perform app.review_activity_add(r, it.id, 'system', 'stages_replaced', null, jsonb_build_object('configRevision', r.config_revision));
      perform app.review_item_refresh_waiting(it.id);
    end loop;
    v_links := app.review_create_links(r);
  end if;
  return jsonb_build_object('reviewId', r.id, 'configRevision', r.config_revision, 'stages', r.stages, 'links', v_links);
end
$$;
comment on function api.replace_review_stages(uuid, jsonb) is 'Serves PUT /v1/workspaces/{workspaceId}/reviews/{reviewId}/stages (replaceReviewStages_v1): new stages for a draft or active review; in an active one the pending items start again at the first stage, earlier decisions kept in history as superseded, and new client reviewers get links (tokens returned once). Editor role; 400 VALIDATION_FAILED, 409 INVALID_REVIEW_STATUS, 409 REVIEW_CONFIG_STALE.';

create function api.send_review(p_id uuid) returns jsonb
language plpgsql as $$
begin
  perform app.require_role('editor');
  return app.review_send(app.review_for(p_id, true));
end
$$;
comment on function api.send_review(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/send (sendReview_v1): draft -> active (app.review_send); the client links'' tokens are in the answer, once. Editor role; 409 INVALID_REVIEW_STATUS, REVIEW_EMPTY, REVIEW_WORKFLOW_UNAVAILABLE.';

create function api.cancel_review(p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  r := app.review_end(r.id, 'cancelled');
  return jsonb_build_object('reviewId', r.id, 'status', r.status);
end
$$;
comment on function api.cancel_review(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/cancel (cancelReview_v1): draft or active -> cancelled; pending items'' content returns to where it was. Editor role; 409 INVALID_REVIEW_STATUS.';

create function api.add_review_item(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  it := app.review_add_item(r, (p_body ->> 'contentId')::uuid);
  return app.review_item_json(r, it);
end
$$;
comment on function api.add_review_item(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items (addReviewItem_v1): adds an edition to a draft or active review. Editor role; 400 INVALID_CONTENT_STATUS, 409 CONTENT_IN_REVIEW, 409 INVALID_REVIEW_STATUS.';

create function api.remove_review_item(p_id uuid, p_item_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['draft', 'active']);
  it := app.review_item_for(r, p_item_id, true);
  if it.state <> 'pending' then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s and stays in the review''s history.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  update app.review_items set state = 'removed', open = false, waiting_on = '{}' where id = it.id returning * into it;
  if r.status = 'active' then
    perform app.review_release_content(it);
  end if;
  perform app.review_activity_add(r, it.id, 'system', 'removed');
  perform app.review_complete_if_done(r.id);
  return jsonb_build_object('reviewId', r.id, 'itemId', it.id, 'state', it.state);
end
$$;
comment on function api.remove_review_item(uuid, uuid) is 'Serves DELETE /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId} (removeReviewItem_v1): a pending item leaves the review and its content returns to where it was. Editor role; 404 NOT_FOUND, 409 ITEM_ALREADY_DECIDED, 409 INVALID_REVIEW_STATUS.';

create function api.decide_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  return app.review_decide(r, app.review_item_for(r, p_item_id, true), p_body ->> 'decision', p_body ->> 'comment');
end
$$;
comment on function api.decide_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/decision (decideReviewItem_v1): the caller''s decision (approved or changes_requested, optional comment) at the item''s open stage (app.review_decide). Editor role and approver of the open stage; 403 NOT_AN_APPROVER, 404 NOT_FOUND, 409 INVALID_REVIEW_STATUS, ITEM_ALREADY_DECIDED, ALREADY_DECIDED.';

create function api.decide_review_items(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  d jsonb;
  v_out jsonb := '[]';
  v_result jsonb;
  v_state text;
  v_code text;
  v_msg text;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  for d in select e from jsonb_array_elements(p_body -> 'decisions') e loop
    begin
      v_result := app.review_decide(r, app.review_item_for(r, (d ->> 'itemId')::uuid, true), d ->> 'decision', d ->> 'comment');
      v_out := v_out || jsonb_build_object('itemId', d ->> 'itemId', 'ok', true, 'result', v_result, 'error', null);
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_code = pg_exception_detail, v_msg = message_text;
      if v_state not like 'PT%' then
        raise;
      end if;
      v_out := v_out || jsonb_build_object('itemId', d ->> 'itemId', 'ok', false, 'result', null,
        'error', jsonb_build_object('status', substr(v_state, 3)::int, 'code', v_code, 'message', v_msg));
    end;
    select * into r from app.reviews where id = r.id;
  end loop;
  return v_out;
end
$$;
comment on function api.decide_review_items(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/decisions (decideReviewItems_v1): several decisions, each alone (partial success): one result per decision, with its own error code when refused. Editor role.';

create function api.override_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  d app.review_decisions;
begin
  perform app.require_role('manager');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  it := app.review_item_for(r, p_item_id, true);
  if it.state <> 'pending' or not it.open then
    perform app.raise(409, 'ITEM_ALREADY_DECIDED', format('This review item is %s; it takes no more decisions.', it.state),
      jsonb_build_object('itemId', it.id, 'state', it.state));
  end if;
  if btrim(coalesce(p_body ->> 'reason', '')) = '' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('reason', 'required', 'an override needs a reason')),
      'An override needs a reason.');
  end if;
  insert into app.review_decisions (organization_id, workspace_id, review_id, item_id, stage, stage_name, approver_key,
    user_id, decision, comment, override, reason)
  values (r.organization_id, r.workspace_id, r.id, it.id, it.current_stage, r.stages -> it.current_stage ->> 'name',
    'override:' || gen_random_uuid(), app.current_person_id(), p_body ->> 'decision', p_body ->> 'comment', true, btrim(p_body ->> 'reason'))
  returning * into d;
  perform app.review_activity_add(r, it.id, 'decision', 'override_' || d.decision, d.reason,
    jsonb_build_object('decisionId', d.id, 'stage', d.stage, 'stageName', d.stage_name, 'override', true));
  perform app.review_advance(r.id, it.id);
  return jsonb_build_object('decisionId', d.id);
end
$$;
comment on function api.override_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/override (overrideReviewItem_v1): a manager decides the item''s open stage (reason required); the engine advances. Manager role; 400 VALIDATION_FAILED, 409 INVALID_REVIEW_STATUS, ITEM_ALREADY_DECIDED.';

create function app.review_revoke(r app.reviews, it app.review_items) returns jsonb
language plpgsql as $$
declare
  d app.review_decisions;
begin
  perform app.require_review_status(r, array['active']);
  select * into d from app.review_decisions
  where item_id = it.id and stage = it.current_stage and approver_key = app.current_approver_key()
    and revoked_at is null and superseded_at is null and it.state = 'pending' and it.open
  for update;
  if d.id is null then
    perform app.raise(409, 'NOTHING_TO_REVOKE', 'You have no decision on this item''s open stage to take back.',
      jsonb_build_object('itemId', it.id, 'stage', it.current_stage));
  end if;
  update app.review_decisions set revoked_at = now() where id = d.id;
  perform app.review_activity_add(r, it.id, 'decision', 'revoked', null, jsonb_build_object('decisionId', d.id, 'stage', d.stage));
  perform app.review_item_refresh_waiting(it.id);
  return jsonb_build_object('decisionId', d.id);
end
$$;
comment on function app.review_revoke(app.reviews, app.review_items) is 'Takes back the caller''s live decision on the item''s open stage (409 NOTHING_TO_REVOKE when there is none: a closed stage cannot be revoked).';
grant execute on function app.review_revoke(app.reviews, app.review_items) to pressroom_api, pressroom_definer;

create function api.revoke_review_decision(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  return app.review_revoke(r, app.review_item_for(r, p_item_id, true));
end
$$;
comment on function api.revoke_review_decision(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/revoke (revokeReviewDecision_v1): takes back one''s own decision while the stage is open. Editor role; 409 NOTHING_TO_REVOKE, 409 INVALID_REVIEW_STATUS.';

create function api.comment_review_item(p_id uuid, p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v jsonb;
  a app.review_activity;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  v := app.review_comment(r, app.review_item_for(r, p_item_id),
    p_body ->> 'body', array(select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'mentions', '[]')) x));
  if jsonb_array_length(coalesce(p_body -> 'attachmentIds', '[]')) > 0 then
    -- Completed comment attachments of this item (10d-review-attachments.sql).
    perform app.review_attach_to_comment(p_item_id, (v ->> 'id')::uuid,
      array(select x::uuid from jsonb_array_elements_text(p_body -> 'attachmentIds') x));
    select * into a from app.review_activity where id = (v ->> 'id')::uuid;
    v := app.review_activity_json(a);
  end if;
  return v;
end
$$;
comment on function api.comment_review_item(uuid, uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/comments (commentReviewItem_v1): a comment with @mentions of members (each notified) and completed attachments of the item. Editor role; 400 VALIDATION_FAILED, 404 NOT_FOUND.';

create function api.list_review_item_activity(p_id uuid, p_item_id uuid) returns jsonb
language plpgsql stable as $$
declare
  r app.reviews;
begin
  perform app.require_role('viewer');
  r := app.review_for(p_id);
  return app.review_item_activity(app.review_item_for(r, p_item_id));
end
$$;
comment on function api.list_review_item_activity(uuid, uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/{reviewId}/items/{itemId}/activity (listReviewItemActivity_v1): decisions, comments and system events in order, with reactions. Viewer role; 404 NOT_FOUND.';

create function api.add_review_reaction(p_id uuid, p_item_id uuid, p_activity_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  return app.review_react(r, app.review_item_for(r, p_item_id), p_activity_id, p_body ->> 'emoji', true);
end
$$;
comment on function api.add_review_reaction(uuid, uuid, uuid, jsonb) is 'Serves POST .../reviews/{reviewId}/items/{itemId}/activity/{activityId}/reactions (addReviewReaction_v1): the caller''s one emoji on the entry (replaces a previous one). Editor role; 404 NOT_FOUND.';

create function api.remove_review_reaction(p_id uuid, p_item_id uuid, p_activity_id uuid, p_emoji text) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id);
  return app.review_react(r, app.review_item_for(r, p_item_id), p_activity_id, p_emoji, false);
end
$$;
comment on function api.remove_review_reaction(uuid, uuid, uuid, text) is 'Serves DELETE .../reviews/{reviewId}/items/{itemId}/activity/{activityId}/reactions/{emoji} (removeReviewReaction_v1). Editor role; 404 NOT_FOUND.';

create function api.remind_review(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  v_waiting text[];
  v_recent text[];
  v_interval int := app.setting_int('review_remind_interval_seconds');
  v_count int;
begin
  perform app.require_role('editor');
  r := app.review_for(p_id, true);
  perform app.require_review_status(r, array['active']);
  v_waiting := array(select distinct k from app.review_items it, unnest(it.waiting_on) k
                     where it.review_id = r.id and it.state = 'pending' and it.open order by k);
  if cardinality(v_waiting) = 0 then
    perform app.raise(409, 'NOTHING_TO_REMIND', 'No approver is pending on this review.', jsonb_build_object('reviewId', r.id));
  end if;
  v_recent := array(select m.approver_key from app.review_reminders m
                    where m.review_id = r.id and m.approver_key = any (v_waiting)
                      and m.reminded_at > now() - make_interval(secs => v_interval) order by 1);
  if cardinality(v_recent) > 0 then
    perform app.raise(409, 'REMIND_TOO_SOON',
      format('An approver of this review was reminded less than %s seconds ago.', v_interval),
      jsonb_build_object('reviewId', r.id, 'approvers', to_jsonb(v_recent), 'intervalSeconds', v_interval,
        'retryAfter', (select ceil(extract(epoch from (max(m.reminded_at) + make_interval(secs => v_interval) - now())))::int
                       from app.review_reminders m where m.review_id = r.id and m.approver_key = any (v_recent))));
  end if;
  insert into app.review_reminders (review_id, approver_key, organization_id, workspace_id)
  select r.id, k, r.organization_id, r.workspace_id from unnest(v_waiting) k
  on conflict (review_id, approver_key) do update set reminded_at = now();
  v_count := app.review_notify_waiting(r, 'review_reminder', jsonb_build_object('message', p_body ->> 'message'));
  perform app.review_activity_add(r, null, 'system', 'reminded', p_body ->> 'message', jsonb_build_object('approvers', to_jsonb(v_waiting)));
  return jsonb_build_object('reviewId', r.id, 'reminded', cardinality(v_waiting), 'notifications', v_count);
end
$$;
comment on function api.remind_review(uuid, jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/{reviewId}/remind (remindReview_v1): a reminder to every pending approver of the open stages, into their notifications; at most one per approver per review_remind_interval_seconds (409 REMIND_TOO_SOON). Editor role; 409 INVALID_REVIEW_STATUS, NOTHING_TO_REMIND.';

-- ---------------------------------------------------------------------------
-- Inbox, summary, history.
-- ---------------------------------------------------------------------------
create function app.review_urgency(p_due timestamptz, p_tz text) returns text
language sql stable as $$
  select case
    when p_due is null then 'later'
    when p_due < now() then 'overdue'
    when p_due < (date_trunc('day', now() at time zone p_tz) + interval '1 day') at time zone p_tz then 'today'
    when p_due < now() + interval '7 days' then 'week'
    else 'later' end
$$;
comment on function app.review_urgency(timestamptz, text) is 'An inbox item''s urgency from its due time: overdue, today (before midnight in the workspace''s zone), week (within 7 days), later (or no due time).';
grant execute on function app.review_urgency(timestamptz, text) to pressroom_api, pressroom_definer;

-- The items waiting on the caller (index review_items_waiting_on_idx). As
-- pressroom_definer, scoped here to the request's organization and workspace:
-- under row-level security a non-leakproof operator such as @> cannot use an
-- index ahead of the policies, and the inbox would read every item of the
-- workspace. Only pressroom_api runs it, from api functions that checked the
-- role and pass app.current_approver_key().
create function app.review_inbox_rows(p_key text)
returns table (item app.review_items, review app.reviews, platform text, due_at timestamptz, urgency text)
language sql stable security definer set search_path = pg_catalog, app as $$
  select it, r, g.platform, app.review_item_due_at(r, it), app.review_urgency(app.review_item_due_at(r, it), w.timezone)
  from app.review_items it
  join app.reviews r on r.id = it.review_id and r.status = 'active'
  join app.content_items i on i.id = it.content_id
  join app.integrations g on g.id = i.integration_id
  join app.workspaces w on w.id = it.workspace_id
  where it.workspace_id = app.current_workspace_id() and it.organization_id = app.current_organization_id()
    and it.waiting_on @> array[p_key] and cardinality(it.waiting_on) > 0
$$;
alter function app.review_inbox_rows(text) owner to pressroom_definer;
comment on function app.review_inbox_rows(text) is 'The pending items of active reviews of the request''s workspace that wait on an approver, with platform, due time and urgency (definer-owned so the GIN index on waiting_on serves it; scoped to the request''s organization and workspace).';
grant execute on function app.review_inbox_rows(text) to pressroom_api;

create function api.review_inbox(p_platform text, p_urgency text) returns jsonb
language plpgsql stable as $$
declare
  v_key text := app.current_approver_key();
begin
  perform app.require_role('viewer');
  return coalesce((select jsonb_agg(app.review_item_json(x.review, x.item)
                      || jsonb_build_object('reviewTitle', (x.review).title, 'urgency', x.urgency)
                    order by x.due_at nulls last, (x.item).created_at, (x.item).id)
                   from app.review_inbox_rows(v_key) x
                   where (p_platform = 'all' or x.platform = p_platform) and (p_urgency = 'all' or x.urgency = p_urgency)), '[]');
end
$$;
comment on function api.review_inbox(text, text) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/inbox (reviewInbox_v1): the items waiting on the caller, by platform (or all) and urgency (overdue, today, week, later or all), soonest due first. Viewer role.';

create function api.review_summary() returns jsonb
language plpgsql stable as $$
declare
  v_key text := app.current_approver_key();
begin
  perform app.require_role('viewer');
  return (select jsonb_build_object('total', count(*),
            'overdue', count(*) filter (where urgency = 'overdue'), 'today', count(*) filter (where urgency = 'today'),
            'week', count(*) filter (where urgency = 'week'), 'later', count(*) filter (where urgency = 'later'))
          from app.review_inbox_rows(v_key));
end
$$;
comment on function api.review_summary() is 'Serves GET /v1/workspaces/{workspaceId}/reviews/summary (reviewSummary_v1): the caller''s inbox counted by urgency. Viewer role.';

create function api.review_history(p_limit int, p_offset bigint) returns jsonb
language plpgsql stable as $$
declare
  v_total bigint;
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.reviews where workspace_id = app.current_workspace_id()
    and status in ('completed', 'cancelled', 'expired');
  return jsonb_build_object('items', coalesce((select jsonb_agg(app.review_json(r, false) order by r.completed_at desc, r.id desc)
      from (select * from app.reviews r where r.workspace_id = app.current_workspace_id() and r.status in ('completed', 'cancelled', 'expired')
            order by r.completed_at desc, r.id desc limit p_limit offset p_offset) r), '[]'),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + p_limit < v_total));
end
$$;
comment on function api.review_history(int, bigint) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history (reviewHistory_v1): completed, cancelled and expired reviews, most recently closed first, paginated. Viewer role.';

create function api.review_history_content(p_content_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_content_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('content', p_content_id);
  end if;
  return coalesce((select jsonb_agg(app.review_item_json(r, it)
                      || jsonb_build_object('reviewTitle', r.title, 'reviewStatus', r.status) order by it.created_at desc, it.id desc)
                   from app.review_items it join app.reviews r on r.id = it.review_id
                   where it.content_id = p_content_id), '[]');
end
$$;
comment on function api.review_history_content(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history/content/{contentId} (reviewHistoryContent_v1): every review item of one edition, newest first, with its decisions. Viewer role; 404 NOT_FOUND.';

create function api.review_history_review(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  r app.reviews;
begin
  perform app.require_role('viewer');
  r := app.review_for(p_id);
  return app.review_json(r) || jsonb_build_object('activity',
    coalesce((select jsonb_agg(app.review_activity_json(a) order by a.created_at, a.id)
              from app.review_activity a where a.review_id = r.id), '[]'));
end
$$;
comment on function api.review_history_review(uuid) is 'Serves GET /v1/workspaces/{workspaceId}/reviews/history/{reviewId} (reviewHistoryReview_v1): the review, one view per item, and its whole activity. Viewer role; 404 NOT_FOUND.';

-- ---------------------------------------------------------------------------
-- Submit: resolve, group and send in one call, replayable by requestId.
-- ---------------------------------------------------------------------------
create function api.submit_reviews(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_request text := p_body ->> 'requestId';
  v_principal text := coalesce(app.current_approver_key(), 'anonymous');
  v_stored jsonb;
  v_item jsonb;
  v_res jsonb;
  v_results jsonb := '[]';
  v_group record;
  r app.reviews;
  v_send jsonb;
  v_choice text;
  v_resolutions jsonb := '[]';
begin
  perform app.require_role('editor');
  if v_request is not null then
    select results into v_stored from app.review_submissions
    where workspace_id = app.current_workspace_id() and principal_key = v_principal and request_id = v_request;
    if v_stored is not null then
      return v_stored || jsonb_build_object('replayed', true);
    end if;
  end if;
  perform app.require_content_ids(array(select (e ->> 'contentId')::uuid from jsonb_array_elements(p_body -> 'items') e));
  -- Check every item first: all or nothing.
  for v_item in select e from jsonb_array_elements(p_body -> 'items') e loop
    v_res := app.content_resolution((v_item ->> 'contentId')::uuid);
    v_choice := v_item -> 'choice' ->> 'type';
    if v_item ? 'contentVersion' and (v_item ->> 'contentVersion')::int <> (v_res ->> 'contentVersion')::int then
      perform app.raise(409, 'REVIEW_SUBMIT_STALE',
        'The content changed since it was resolved; resolve again and resubmit.',
        jsonb_build_object('contentId', v_item ->> 'contentId', 'contentVersion', (v_res ->> 'contentVersion')::int,
                           'expectedVersion', (v_item ->> 'contentVersion')::int, 'resolutions', jsonb_build_array(v_res)));
    end if;
    if v_choice = 'none' and (v_res ->> 'reviewRequired')::boolean and not (v_res ->> 'approved')::boolean
       and v_item ->> 'action' in ('schedule', 'publish_now') then
      v_resolutions := v_resolutions || v_res;
    end if;
    if v_choice = 'workflow' and not exists (
         select 1 from app.approval_workflows w
         join app.content_items i on i.id = (v_item ->> 'contentId')::uuid
         join app.content_roots cr on cr.id = i.root_id
         where w.id = (v_item -> 'choice' ->> 'workflowId')::uuid and w.workspace_id = app.current_workspace_id() and w.active
           and app.workflow_matches(w.match, i.integration_id, v_res ->> 'platform',
                 array(select t.tag_id from app.content_root_tags t where t.root_id = cr.id), cr.campaign_id)) then
      perform app.raise(409, 'REVIEW_WORKFLOW_UNAVAILABLE',
        'The chosen workflow is inactive, gone, or no longer matches this channel; resolve again.',
        jsonb_build_object('contentId', v_item ->> 'contentId', 'workflowId', v_item -> 'choice' ->> 'workflowId',
                           'resolutions', jsonb_build_array(v_res)));
    end if;
  end loop;
  if jsonb_array_length(v_resolutions) > 0 then
    perform app.raise(409, 'REVIEW_REQUIRED',
      'This workspace requires review for these channels; choose a workflow or custom stages.',
      jsonb_build_object('resolutions', v_resolutions));
  end if;
  -- One review per group, sent at once.
  for v_group in
    select min(e ->> 'group') as grp, min(e -> 'choice' ->> 'type') as kind, min(e -> 'choice' ->> 'workflowId') as workflow_id,
           count(distinct coalesce(e -> 'choice' ->> 'type', '') || coalesce(e -> 'choice' ->> 'workflowId', '')
                   || coalesce((e -> 'choice' -> 'stages')::text, '')) as variants,
           (array_agg(e -> 'choice' -> 'stages'))[1] as stages,
           jsonb_agg(e ->> 'contentId' order by n) as content_ids
    from jsonb_array_elements(p_body -> 'items') with ordinality t (e, n)
    where e -> 'choice' ->> 'type' in ('workflow', 'custom')
    group by coalesce('group:' || (e ->> 'group'), 'item:' || n)  -- an item without a group is a group of its own
    order by min(n)
  loop
    if v_group.variants > 1 then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('items', 'mixed_group',
        format('every item of group %s must make the same choice', coalesce(v_group.grp, '(none)')))),
        'Every item of a group must make the same choice.');
    end if;
    r := app.review_new(coalesce(p_body ->> 'title', 'Review'), p_body ->> 'message', (p_body ->> 'dueAt')::timestamptz,
      case when v_group.kind = 'workflow' then v_group.workflow_id::uuid end,
      case when v_group.kind = 'custom' then v_group.stages end);
    for v_item in select x from jsonb_array_elements(v_group.content_ids) x loop
      perform app.review_add_item(r, (v_item #>> '{}')::uuid);
    end loop;
    v_send := app.review_send(r);
    for v_item in select x from jsonb_array_elements(v_group.content_ids) x loop
      v_results := v_results || jsonb_build_object('contentId', v_item #>> '{}', 'group', v_group.grp, 'outcome', 'review_sent',
        'reviewId', r.id, 'itemId', (select id from app.review_items where review_id = r.id and content_id = (v_item #>> '{}')::uuid),
        'links', v_send -> 'links');
    end loop;
  end loop;
  -- Items without review: their action runs now (the content rules still apply).
  for v_item in select e from jsonb_array_elements(p_body -> 'items') e where e -> 'choice' ->> 'type' = 'none' loop
    if v_item ->> 'action' = 'schedule' then
      perform api.schedule_content((v_item ->> 'contentId')::uuid, (v_item ->> 'scheduledAt')::timestamptz);
    elsif v_item ->> 'action' = 'publish_now' then
      perform api.publish_content((v_item ->> 'contentId')::uuid);
    end if;
    v_results := v_results || jsonb_build_object('contentId', v_item ->> 'contentId', 'group', null,
      'outcome', coalesce(v_item ->> 'action', 'draft'), 'reviewId', null, 'itemId', null, 'links', '[]'::jsonb);
  end loop;
  v_stored := jsonb_build_object('requestId', v_request, 'results', v_results, 'replayed', false);
  if v_request is not null then
    insert into app.review_submissions (workspace_id, organization_id, request_id, principal_key, results)
    values (app.current_workspace_id(), app.current_organization_id(), v_request, v_principal, v_stored - 'replayed');
  end if;
  return v_stored;
end
$$;
comment on function api.submit_reviews(jsonb) is 'Serves POST /v1/workspaces/{workspaceId}/reviews/submit (submitReviews_v1): each item names its choice (workflow, custom stages, none) and action; workflow and custom items are grouped (one review per group, sent at once), none items run their action. All or nothing: 409 REVIEW_REQUIRED (details.resolutions), REVIEW_WORKFLOW_UNAVAILABLE, REVIEW_SUBMIT_STALE. A requestId replays the stored results. Editor role.';

select app.harden_api_functions();

--! split: 10b-review-links.sql
-- Reviews, part 3: client reviewer links (their gate and the functions a
-- link may call), the members' notifications feed, the audit actor kind
-- review_link, and the content functions that refuse content in review.

-- ---------------------------------------------------------------------------
-- Audit: calls made with a review link are audited with actor kind review_link.
-- ---------------------------------------------------------------------------
alter table audit.api_calls drop constraint api_calls_actor_kind_check;
alter table audit.api_calls add constraint api_calls_actor_kind_check
  check (actor_kind in ('user', 'api_key', 'anonymous', 'review_link'));

-- ---------------------------------------------------------------------------
-- The gate of the client-review routes (x-auth: reviewLink in openapi.yaml).
-- ---------------------------------------------------------------------------
create function api.gate_review_link(p_token_hash bytea, p_class text, p_client text) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_window timestamptz := date_trunc('minute', now());
  v_reset int := greatest(1, ceil(extract(epoch from (date_trunc('minute', now()) + interval '1 minute' - clock_timestamp())))::int);
  v_failures int;
  v_link app.review_links;
  v_org app.organizations;
  v_principal jsonb;
  v_limit int := app.setting_int('rate_limit_' || p_class);
  v_rate jsonb;
begin
  select failures into v_failures from app.auth_failures where client = p_client and window_start = v_window;
  if coalesce(v_failures, 0) >= app.setting_int('auth_failure_limit') then
    update app.auth_failures set failures = failures + 1 where client = p_client and window_start = v_window;
    return jsonb_build_object('audit', false, 'retryAfter', v_reset,
      'error', jsonb_build_object('status', 429, 'code', 'AUTH_THROTTLED',
        'message', 'Too many failed credentials from this address; retry after the time in Retry-After.',
        'details', jsonb_build_object('retryAfter', v_reset)));
  end if;
  select * into v_link from app.review_links where token_hash = p_token_hash;
  if p_token_hash is null or v_link.id is null or v_link.revoked_at is not null
     or (v_link.expires_at is not null and v_link.expires_at <= now()) then
    perform app.flush_auth_failures(p_client);
    insert into app.auth_failures as f (client, window_start, failures, audited)
    values (p_client, v_window, 1, 1)
    on conflict (client, window_start) do update
      set failures = f.failures + 1,
          audited = f.audited + case when f.failures < app.setting_int('auth_failure_audit') then 1 else 0 end
    returning failures into v_failures;
    return jsonb_build_object('audit', v_failures <= app.setting_int('auth_failure_audit'),
      'error', jsonb_build_object('status', 401, 'code', 'UNAUTHENTICATED',
        'message', case when v_link.id is null then 'Send a review link token: Authorization: Bearer <review link token>.'
                        else 'This review link has ended (the review closed or expired).' end));
  end if;
  select * into v_org from app.organizations where id = v_link.organization_id;
  v_principal := jsonb_build_object('actorKind', 'review_link', 'reviewLinkId', v_link.id,
    'organizationId', v_link.organization_id, 'plan', v_org.plan);
  if (v_org.plan = 'trial' and v_org.trial_ends_at <= now()) or app.plan_rank(v_org.plan) < app.plan_rank('standard') then
    return jsonb_build_object('principal', v_principal, 'error', jsonb_build_object('status', 401, 'code', 'PLAN_REQUIRED',
      'message', format('Client review needs the standard plan or higher; this organization is on %s%s.', v_org.plan,
                        case when v_org.plan = 'trial' then ' (ended)' else '' end),
      'details', jsonb_build_object('plan', v_org.plan, 'requiredPlan', 'standard')));
  end if;
  v_rate := app.rate_limit_hit('review_link:' || v_link.id, p_class, v_limit);
  if not (v_rate ->> 'allowed')::boolean then
    return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'rate', v_rate,
      'error', jsonb_build_object('status', 429, 'code', 'RATE_LIMITED',
        'message', format('The %s limit of %s requests per minute for this link is used up; retry after %s s.', p_class, v_limit, v_rate ->> 'reset'),
        'details', jsonb_build_object('class', p_class, 'limit', v_limit, 'retryAfter', (v_rate ->> 'reset')::int)));
  end if;
  return jsonb_build_object('principal', v_principal, 'workspaceId', v_link.workspace_id, 'workspaceRole', null, 'rate', v_rate);
end
$$;
alter function api.gate_review_link(bytea, text, text) owner to pressroom_definer;
comment on function api.gate_review_link(bytea, text, text) is 'The gate of the client-review routes (server/http/pipeline.ts, operations with x-auth: reviewLink), as pressroom_app: the review link of the bearer token (SHA-256), live (not revoked, not expired), of an organization on the standard plan or higher (401 PLAN_REQUIRED), the rate limit per link, and the failed-credential guard of api.gate_guarded. Returns the principal (actorKind review_link) and the link''s workspace.';
revoke all on function api.gate_review_link(bytea, text, text) from public;
grant execute on function api.gate_review_link(bytea, text, text) to pressroom_app;

-- ---------------------------------------------------------------------------
-- What a link may do: its own review, nothing else.
-- ---------------------------------------------------------------------------
create function app.review_link_context() returns app.review_links
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links;
begin
  if app.current_actor_kind() is distinct from 'review_link' then
    perform app.raise(403, 'REVIEW_LINK_REQUIRED', 'This operation is for client reviewers with a review link.');
  end if;
  select * into l from app.review_links where id = app.current_review_link_id()
    and workspace_id = app.current_workspace_id() and revoked_at is null and (expires_at is null or expires_at > now());
  if l.id is null then
    perform app.raise(401, 'UNAUTHENTICATED', 'This review link has ended.');
  end if;
  return l;
end
$$;
alter function app.review_link_context() owner to pressroom_definer;
comment on function app.review_link_context() is 'The live review link of a client reviewer''s request (403 REVIEW_LINK_REQUIRED for any other caller, 401 when it has ended).';
grant execute on function app.review_link_context() to pressroom_definer;

create function app.review_link_item(l app.review_links, p_item_id uuid) returns app.review_items
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  it app.review_items;
begin
  select * into it from app.review_items where id = p_item_id and review_id = l.review_id and state <> 'removed' for update;
  if it.id is null then
    perform app.raise_not_found('review item', p_item_id);
  end if;
  return it;
end
$$;
alter function app.review_link_item(app.review_links, uuid) owner to pressroom_definer;
comment on function app.review_link_item(app.review_links, uuid) is 'An item of the link''s review (never one of another review), or 404 NOT_FOUND.';
grant execute on function app.review_link_item(app.review_links, uuid) to pressroom_definer;

create function api.review_link_get() returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return jsonb_build_object(
    'review', jsonb_build_object('id', r.id, 'title', r.title, 'message', r.message, 'status', r.status, 'dueAt', r.due_at),
    'reviewer', jsonb_build_object('email', l.email, 'name', l.name, 'expiresAt', l.expires_at),
    'items', coalesce((select jsonb_agg(jsonb_build_object('id', it.id, 'contentId', it.content_id, 'state', it.state,
        'currentStage', it.current_stage, 'currentStageName', case when it.state = 'pending' then r.stages -> it.current_stage ->> 'name' end,
        'awaitingYou', ('client:' || l.email) = any (it.waiting_on),
        'platform', g.platform, 'channelName', g.name,
        'caption', coalesce(i.caption, cr.caption), 'thread', i.thread,
        'scheduledAt', coalesce(i.scheduled_at, i.intended_publish_at),
        'media', coalesce((select jsonb_agg(jsonb_build_object('id', m.id, 'type', m.type, 'contentType', m.content_type,
                              'filename', m.filename, 'storageKey', m.storage_key) order by x.n)
                           from unnest(app.content_item_media_ids(i.id, i.root_id, i.own_media)) with ordinality x (id, n)
                           join app.media_items m on m.id = x.id), '[]')) order by it.created_at, it.id)
      from app.review_items it
      join app.content_items i on i.id = it.content_id
      join app.content_roots cr on cr.id = i.root_id
      join app.integrations g on g.id = i.integration_id
      where it.review_id = r.id and it.state <> 'removed'), '[]'));
end
$$;
alter function api.review_link_get() owner to pressroom_definer;
comment on function api.review_link_get() is 'Serves GET /v1/review-link (getReviewLink_v1): the link''s review and its items as a client sees them (platform, caption, thread, scheduled time, media; the route signs media view URLs and drops the storage keys). Review link only.';
grant execute on function api.review_link_get() to pressroom_request;

create function api.review_link_decide(p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id for update;
  return app.review_decide(r, app.review_link_item(l, p_item_id), p_body ->> 'decision', p_body ->> 'comment');
end
$$;
alter function api.review_link_decide(uuid, jsonb) owner to pressroom_definer;
comment on function api.review_link_decide(uuid, jsonb) is 'Serves POST /v1/review-link/items/{itemId}/decision (decideReviewLinkItem_v1): the client''s decision at the item''s open stage, as app.review_decide (403 NOT_AN_APPROVER when the client is not an approver of that stage). Review link only.';
grant execute on function api.review_link_decide(uuid, jsonb) to pressroom_request;

create function api.review_link_comment(p_item_id uuid, p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return app.review_comment(r, app.review_link_item(l, p_item_id), p_body ->> 'body', '{}');
end
$$;
alter function api.review_link_comment(uuid, jsonb) owner to pressroom_definer;
comment on function api.review_link_comment(uuid, jsonb) is 'Serves POST /v1/review-link/items/{itemId}/comments (commentReviewLinkItem_v1): a client''s comment on an item of its review. Review link only.';
grant execute on function api.review_link_comment(uuid, jsonb) to pressroom_request;

create function api.review_link_activity(p_item_id uuid) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
begin
  return app.review_item_activity(app.review_link_item(l, p_item_id));
end
$$;
alter function api.review_link_activity(uuid) owner to pressroom_definer;
comment on function api.review_link_activity(uuid) is 'Serves GET /v1/review-link/items/{itemId}/activity (listReviewLinkItemActivity_v1). Review link only.';
grant execute on function api.review_link_activity(uuid) to pressroom_request;

create function api.review_link_react(p_item_id uuid, p_activity_id uuid, p_emoji text, p_add boolean) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
  r app.reviews;
begin
  select * into r from app.reviews where id = l.review_id;
  return app.review_react(r, app.review_link_item(l, p_item_id), p_activity_id, p_emoji, p_add);
end
$$;
alter function api.review_link_react(uuid, uuid, text, boolean) owner to pressroom_definer;
comment on function api.review_link_react(uuid, uuid, text, boolean) is 'Serves POST and DELETE /v1/review-link/items/{itemId}/activity/{activityId}/reactions[/{emoji}] (addReviewLinkReaction_v1, removeReviewLinkReaction_v1). Review link only.';
grant execute on function api.review_link_react(uuid, uuid, text, boolean) to pressroom_request;

-- ---------------------------------------------------------------------------
-- Notifications feeds (cursor: the id of the last entry of the previous page).
-- ---------------------------------------------------------------------------
create function app.notifications_page(p_user uuid, p_link uuid, p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  v_after_at timestamptz;
  v_after_id uuid;
  v_rows jsonb;
  v_next uuid;
  v_count int;
begin
  if p_cursor is not null then
    select created_at, id into v_after_at, v_after_id from app.notifications
    where id = p_cursor and (user_id = p_user or review_link_id = p_link);
    if v_after_id is null then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('cursor', 'invalid', 'not a cursor of this feed')),
        'The cursor is not one of this feed.');
    end if;
  end if;
  with page as (
    select n.* from app.notifications n
    where (n.user_id = p_user or n.review_link_id = p_link)
      and (not p_unread or n.read_at is null)
      and (v_after_id is null or (n.created_at, n.id) < (v_after_at, v_after_id))
    order by n.created_at desc, n.id desc
    limit p_limit + 1)
  select jsonb_agg(jsonb_build_object('id', p.id, 'kind', p.kind, 'workspaceId', p.workspace_id, 'reviewId', p.review_id,
           'itemId', p.item_id, 'data', p.data, 'read', p.read_at is not null, 'readAt', p.read_at, 'createdAt', p.created_at)
           order by p.created_at desc, p.id desc) filter (where p.rn <= p_limit),
         (array_agg(p.id order by p.created_at desc, p.id desc) filter (where p.rn = p_limit))[1],
         count(*)
  into v_rows, v_next, v_count
  from (select page.*, row_number() over (order by created_at desc, id desc) as rn from page) p;
  return jsonb_build_object('items', coalesce(v_rows, '[]'),
    'meta', jsonb_build_object('limit', p_limit, 'nextCursor', case when v_count > p_limit then v_next end,
      'unread', (select count(*) from app.notifications n where (n.user_id = p_user or n.review_link_id = p_link) and n.read_at is null)));
end
$$;
alter function app.notifications_page(uuid, uuid, int, uuid, boolean) owner to pressroom_definer;
comment on function app.notifications_page(uuid, uuid, int, uuid, boolean) is 'A page of one person''s notifications (a user''s or a review link''s), newest first, after a cursor (the last id of the previous page), optionally unread only; meta has nextCursor and the unread count.';
grant execute on function app.notifications_page(uuid, uuid, int, uuid, boolean) to pressroom_definer;

create function api.list_notifications(p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
begin
  perform app.require_session();
  return app.notifications_page(app.current_user_id(), null, p_limit, p_cursor, p_unread);
end
$$;
alter function api.list_notifications(int, uuid, boolean) owner to pressroom_definer;
comment on function api.list_notifications(int, uuid, boolean) is 'Serves GET /v1/me/notifications (listNotifications_v1): the signed-in user''s notifications (reminders, review requests, mentions), cursor-paginated, with read state. Session only (403 SESSION_REQUIRED).';
grant execute on function api.list_notifications(int, uuid, boolean) to pressroom_request;

create function api.mark_notifications_read(p_body jsonb) returns jsonb
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  v_count int;
begin
  perform app.require_session();
  update app.notifications set read_at = now()
  where user_id = app.current_user_id() and read_at is null
    and (coalesce((p_body ->> 'all')::boolean, false)
         or id in (select x::uuid from jsonb_array_elements_text(coalesce(p_body -> 'ids', '[]')) x));
  get diagnostics v_count = row_count;
  return jsonb_build_object('marked', v_count);
end
$$;
alter function api.mark_notifications_read(jsonb) owner to pressroom_definer;
comment on function api.mark_notifications_read(jsonb) is 'Serves POST /v1/me/notifications/read (markNotificationsRead_v1): marks the listed (or all) of the signed-in user''s notifications read. Session only.';
grant execute on function api.mark_notifications_read(jsonb) to pressroom_request;

create function api.review_link_notifications(p_limit int, p_cursor uuid, p_unread boolean) returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, app as $$
declare
  l app.review_links := app.review_link_context();
begin
  return app.notifications_page(null, l.id, p_limit, p_cursor, p_unread);
end
$$;
alter function api.review_link_notifications(int, uuid, boolean) owner to pressroom_definer;
comment on function api.review_link_notifications(int, uuid, boolean) is 'Serves GET /v1/review-link/notifications (listReviewLinkNotifications_v1): the client''s feed (reminders, review requests). Review link only.';
grant execute on function api.review_link_notifications(int, uuid, boolean) to pressroom_request;

-- ---------------------------------------------------------------------------
-- Content functions: content in review is refused by schedule and publish
-- with 409 REVIEW_IN_PROGRESS (before the status check, which answers 400 to
-- edits), and editing rejected content returns it to draft. Each is the
-- function of db/schema.sql with the lines marked "reviews" added.
-- ---------------------------------------------------------------------------
create or replace function api.schedule_content(p_id uuid, p_scheduled_at timestamp with time zone)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
  perform app.require_content_status(v, array['draft', 'scheduled']);
  if p_scheduled_at < now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
      'A time in the past cannot be scheduled.');
  end if;
  perform app.defer_content_checks();
  update app.content_items set status = 'scheduled', scheduled_at = p_scheduled_at
  where id = v.id returning * into v;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;
comment on function api.schedule_content(uuid,timestamp with time zone) is 'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/schedule (scheduleContent_v1). Schedules or reschedules a draft or scheduled edition at a future time, validated against its platform''s rules; the publish job follows in the same transaction. Requires the editor role; 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED (time in the past, platform rules), 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 REVIEW_IN_PROGRESS (content in review), 409 REVIEW_REQUIRED (the workspace requires an approved review).';

create or replace function api.publish_content(p_id uuid)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
  s app.publishing_states;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.assert_not_in_review(v);  -- reviews: 409 REVIEW_IN_PROGRESS
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
comment on function api.publish_content(uuid) is 'Serves POST /v1/workspaces/{workspaceId}/content/{id}/publish (publishContent_v1). Moves a draft or scheduled edition to scheduled now, validated against its platform''s rules, and starts a new publishing run. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 PUBLISHING_IN_PROGRESS, 409 REVIEW_IN_PROGRESS, 409 REVIEW_REQUIRED.';

create or replace function api.update_content(p_id uuid, p_body jsonb)
returns jsonb
language plpgsql security definer set search_path = pg_catalog, public, pg_temp as $$
declare
  v app.content_items;
  v_platform text;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  -- reviews: editing an edition a review rejected returns it to draft.
  if v.status = 'rejected' then
    perform app.review_move_content(v.id, 'draft');
    v := app.content_item_for_update(p_id);
  end if;
  perform app.require_content_status(v, array['draft', 'scheduled']);
  select platform into v_platform from app.integrations where id = v.integration_id;
  perform app.raise_field_problems(app.content_payload_problems(v_platform, p_body, ''), 'The request is not valid; see details.fields.');
  perform app.defer_content_checks();
  update app.content_items set
    caption = case when p_body ? 'caption' then p_body ->> 'caption' else caption end,
    thread = case when p_body ? 'thread' then app.content_normalize_thread(p_body -> 'thread') else thread end,
    settings = case when p_body ? 'settings' then coalesce(nullif(p_body -> 'settings', 'null'), '{}') else settings end,
    own_media = case when p_body ? 'mediaIds' then jsonb_typeof(p_body -> 'mediaIds') = 'array' else own_media end
  where id = v.id
  returning * into v;
  if p_body ? 'mediaIds' then
    perform app.replace_item_media(v, app.jsonb_uuids(p_body -> 'mediaIds'));
  end if;
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]));
end
$$;
comment on function api.update_content(uuid,jsonb) is 'Serves PATCH /v1/workspaces/{workspaceId}/content/{id} (updateContent_v1). Changes a draft or scheduled edition''s caption, thread, settings or own media, re-validating scheduled content; an edition a review rejected returns to draft when edited. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS (also for content in review), 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';

select app.harden_api_functions();

--! split: 10c-content-review-filters.sql
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

--! split: 10d-review-attachments.sql
-- Reviews, part 5: comment attachments through the media library's signed-upload
-- flow (init, PUT the bytes to the signed URL, complete, abort). Images (PNG,
-- JPEG, WebP, GIF) and PDFs up to 25 MB; the type is decided from the bytes at
-- completion (server/routes/reviews.ts). An aborted or expired upload queues
-- its keys in app.media_storage_garbage, whose bytes the media purge job
-- deletes, so it leaves no file behind. Re-creates api.storage_upload_session
-- and api.storage_media_object (media area) with the attachments added
-- (marked "reviews"), and app.review_activity_json (10-reviews.sql) with them.

insert into app.settings (key, value, kind, minimum, description) values
  ('review_attachment_max_bytes', '26214400', 'integer', 1,
   'Reviews: the largest comment attachment in bytes (25 MB; 413 MEDIA_TOO_LARGE).')
on conflict (key) do nothing;

create table app.review_attachments (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  review_id uuid not null references app.reviews (id) on delete cascade,
  item_id uuid not null references app.review_items (id) on delete cascade,
  activity_id uuid references app.review_activity (id) on delete set null,
  filename text not null check (length(btrim(filename)) between 1 and 255),
  content_type text not null check (content_type in ('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf')),
  declared_size bigint not null check (declared_size > 0),
  file_size bigint,
  checksum_sha256 text,
  state text not null default 'pending' check (state in ('pending', 'completed', 'aborted', 'expired')),
  upload_key text not null,
  storage_key text not null,
  uploaded_by text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index review_attachments_item_idx on app.review_attachments (item_id);
create index review_attachments_activity_idx on app.review_attachments (activity_id) where activity_id is not null;
create index review_attachments_pending_idx on app.review_attachments (expires_at) where state = 'pending';
create index review_attachments_workspace_idx on app.review_attachments (workspace_id);
create index review_attachments_organization_id_idx on app.review_attachments (organization_id);
comment on table app.review_attachments is 'A comment attachment of a review item: an upload session (pending; bytes PUT to uploads/<workspace>/<id>) that completes into media/<workspace>/<id> once the bytes are verified (an image or a PDF of the declared size, at most review_attachment_max_bytes), or is aborted or expires (its keys queued in app.media_storage_garbage). A comment references completed attachments (activity_id). Tenant policies of app.apply_tenant_policies (writes need editor).';
select app.apply_tenant_policies('app.review_attachments', array['select', 'insert', 'update']);
select app.grant_api_columns('app.review_attachments', array['insert', 'update']);
grant select on app.review_attachments to pressroom_api;

create function app.review_attachment_json(a app.review_attachments) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'activityId', a.activity_id,
    'filename', a.filename, 'contentType', a.content_type, 'declaredSize', a.declared_size, 'fileSize', a.file_size,
    'checksumSha256', a.checksum_sha256, 'state', a.state, 'expiresAt', a.expires_at, 'createdAt', a.created_at,
    'completedAt', a.completed_at, 'storageKey', case when a.state = 'pending' then a.upload_key else a.storage_key end)
$$;
comment on function app.review_attachment_json(app.review_attachments) is 'An attachment with its storage key (the upload key while pending: the route signs the upload URL; the final key once completed: the route signs the view URL and drops the key).';
grant execute on function app.review_attachment_json(app.review_attachments) to pressroom_api, pressroom_definer;

create function app.review_attachment_for(r app.reviews, p_item uuid, p_id uuid, p_lock boolean default false) returns app.review_attachments
language plpgsql as $$
declare
  a app.review_attachments;
begin
  if p_lock then
    select * into a from app.review_attachments where id = p_id and review_id = r.id and item_id = p_item for update;
  else
    select * into a from app.review_attachments where id = p_id and review_id = r.id and item_id = p_item;
  end if;
  if a.id is null then
    perform app.raise_not_found('attachment', p_id);
  end if;
  return a;
end
$$;
comment on function app.review_attachment_for(app.reviews, uuid, uuid, boolean) is 'The attachment of this review item with this id, or 404 NOT_FOUND.';
grant execute on function app.review_attachment_for(app.reviews, uuid, uuid, boolean) to pressroom_api;

-- Queues an attachment's keys for the media purge job (bytes may sit under either).
create function app.review_attachment_discard(a app.review_attachments, p_reason text) returns void
language sql as $$
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (a.upload_key, a.workspace_id, a.organization_id, p_reason), (a.storage_key, a.workspace_id, a.organization_id, p_reason)
  on conflict (storage_key) do nothing
$$;
comment on function app.review_attachment_discard(app.review_attachments, text) is 'Queues both storage keys of an aborted or expired attachment in app.media_storage_garbage (the media purge job deletes the bytes).';
grant execute on function app.review_attachment_discard(app.review_attachments, text) to pressroom_api, pressroom_definer;

create function api.init_review_attachment(p_review uuid, p_item uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  it app.review_items;
  a app.review_attachments;
  v_id uuid := gen_random_uuid();
  v_max bigint := app.setting_int('review_attachment_max_bytes');
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  it := app.review_item_for(r, p_item);
  perform app.require_review_status(r, array['draft', 'active']);
  if (p_body ->> 'contentType') not in ('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf') then
    perform app.raise(415, 'UNSUPPORTED_MEDIA_FORMAT', format('%s cannot be attached; images (PNG, JPEG, WebP, GIF) and PDFs can.', p_body ->> 'contentType'),
      jsonb_build_object('field', 'body.contentType', 'supported', jsonb_build_array('image/png', 'image/jpeg', 'image/webp', 'image/gif', 'application/pdf')));
  end if;
  if (p_body ->> 'size')::bigint > v_max then
    perform app.raise(413, 'MEDIA_TOO_LARGE', format('An attachment may be at most %s bytes; this one is %s bytes.', v_max, p_body ->> 'size'),
      jsonb_build_object('field', 'body.size', 'maxBytes', v_max, 'size', (p_body ->> 'size')::bigint));
  end if;
  if btrim(p_body ->> 'filename') = '' or (p_body ->> 'filename') ~ '[[:cntrl:]/\\]' then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('filename', 'invalid', 'a file name without slashes or control characters')),
      'The file name is not valid.');
  end if;
  insert into app.review_attachments (id, organization_id, workspace_id, review_id, item_id, filename, content_type, declared_size,
    upload_key, storage_key, uploaded_by, expires_at)
  values (v_id, r.organization_id, r.workspace_id, r.id, it.id, btrim(p_body ->> 'filename'), p_body ->> 'contentType',
    (p_body ->> 'size')::bigint, format('uploads/%s/%s', r.workspace_id, v_id), format('media/%s/%s', r.workspace_id, v_id),
    app.current_approver_key(), now() + make_interval(secs => app.setting_int('upload_session_ttl_seconds')))
  returning * into a;
  return app.review_attachment_json(a);
end
$$;
comment on function api.init_review_attachment(uuid, uuid, jsonb) is 'Serves POST .../reviews/{reviewId}/items/{itemId}/comment-attachments/init (initReviewAttachment_v1): an upload session for an image or PDF of at most review_attachment_max_bytes, expiring after upload_session_ttl_seconds; the route signs the upload URL. Editor role; 404 NOT_FOUND, 409 INVALID_REVIEW_STATUS, 413 MEDIA_TOO_LARGE, 415 UNSUPPORTED_MEDIA_FORMAT.';

create function api.begin_review_attachment_completion(p_review uuid, p_item uuid, p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state = 'completed' then
    return jsonb_build_object('state', 'completed', 'attachment', app.review_attachment_json(a));
  end if;
  if a.state <> 'pending' or a.expires_at <= now() then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s; start another.', case when a.state = 'pending' then 'expired' else a.state end),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  return jsonb_build_object('state', 'pending', 'uploadKey', a.upload_key, 'finalKey', a.storage_key,
    'declaredSize', a.declared_size, 'contentType', a.content_type);
end
$$;
comment on function api.begin_review_attachment_completion(uuid, uuid, uuid) is 'First phase of POST .../comment-attachments/{attachmentId}/complete (completeReviewAttachment_v1): the completed attachment, or what verifying the bytes needs (upload and final key, declared size and type). Editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_CLOSED.';

create function api.finish_review_attachment_completion(p_review uuid, p_item uuid, p_id uuid, p_facts jsonb) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state = 'completed' then
    return app.review_attachment_json(a);
  end if;
  if a.state <> 'pending' then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s; start another.', a.state),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  update app.review_attachments set state = 'completed', completed_at = now(), file_size = (p_facts ->> 'fileSize')::bigint,
    checksum_sha256 = p_facts ->> 'checksumSha256', content_type = p_facts ->> 'contentType'
  where id = a.id returning * into a;
  return app.review_attachment_json(a);
end
$$;
comment on function api.finish_review_attachment_completion(uuid, uuid, uuid, jsonb) is 'Last phase of completeReviewAttachment_v1: records the verified bytes (size, SHA-256, type from the bytes). Editor role.';

create function api.abort_review_attachment(p_review uuid, p_item uuid, p_id uuid) returns jsonb
language plpgsql as $$
declare
  r app.reviews;
  a app.review_attachments;
begin
  perform app.require_role('editor');
  r := app.review_for(p_review);
  a := app.review_attachment_for(r, p_item, p_id, true);
  if a.state <> 'pending' then
    perform app.raise(409, 'UPLOAD_SESSION_CLOSED', format('This upload is %s and cannot be aborted.', a.state),
      jsonb_build_object('attachmentId', a.id, 'state', a.state));
  end if;
  update app.review_attachments set state = 'aborted' where id = a.id returning * into a;
  perform app.review_attachment_discard(a, 'upload_aborted');
  return jsonb_build_object('attachmentId', a.id, 'state', a.state);
end
$$;
comment on function api.abort_review_attachment(uuid, uuid, uuid) is 'Serves POST .../comment-attachments/{attachmentId}/abort (abortReviewAttachment_v1): a pending upload is aborted and whatever was PUT is queued for deletion. Editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_CLOSED.';

-- The reviews job: pending attachments past their expiry expire, their bytes queued for deletion.
create function app.expire_review_attachments() returns int
language plpgsql security definer set search_path = pg_catalog, app as $$
declare
  a app.review_attachments;
  v_count int := 0;
begin
  for a in select * from app.review_attachments where state = 'pending' and expires_at <= now() order by expires_at limit 1000
           for update skip locked loop
    update app.review_attachments set state = 'expired' where id = a.id;
    perform app.review_attachment_discard(a, 'upload_expired');
    v_count := v_count + 1;
  end loop;
  return v_count;
end
$$;
alter function app.expire_review_attachments() owner to pressroom_definer;
comment on function app.expire_review_attachments() is 'The reviews.expire-due job also expires never-completed attachment uploads and queues their keys in app.media_storage_garbage. Idempotent.';
grant execute on function app.expire_review_attachments() to pressroom_worker;

-- Comments reference completed attachments of their item (the comment functions of 10a call this).
create function app.review_attach_to_comment(p_item uuid, p_activity uuid, p_ids uuid[]) returns void
language plpgsql as $$
declare
  v_bad uuid[];
begin
  v_bad := array(select x from unnest(coalesce(p_ids, '{}')) x
                 where not exists (select 1 from app.review_attachments a where a.id = x and a.item_id = p_item
                                   and a.state = 'completed' and a.activity_id is null));
  if cardinality(v_bad) > 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('attachmentIds', 'not_attachable',
      'every attachment must be a completed upload of this item, not yet on a comment')), 'An attachment cannot be used.',
      jsonb_build_object('attachmentIds', to_jsonb(v_bad)));
  end if;
  update app.review_attachments set activity_id = p_activity where id = any (p_ids);
end
$$;
comment on function app.review_attach_to_comment(uuid, uuid, uuid[]) is 'Puts completed attachments of an item on a comment (400 VALIDATION_FAILED for any other).';
grant execute on function app.review_attach_to_comment(uuid, uuid, uuid[]) to pressroom_api, pressroom_definer;

-- reviews: the storage router accepts the bytes of attachment uploads too (media area's function, attachments added).
create or replace function api.storage_upload_session(p_id uuid)
returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(
    (select jsonb_build_object('sessionId', s.id, 'state', s.state, 'storageKey', s.storage_key,
       'declaredSize', s.declared_size, 'contentType', s.content_type, 'expiresAt', s.expires_at,
       'expired', s.expires_at <= now())
     from app.media_upload_sessions s where s.id = p_id),
    (select jsonb_build_object('sessionId', a.id, 'state', a.state, 'storageKey', a.upload_key,  -- reviews
       'declaredSize', a.declared_size, 'contentType', a.content_type, 'expiresAt', a.expires_at,
       'expired', a.expires_at <= now())
     from app.review_attachments a where a.id = p_id))
$$;

-- reviews: the storage router serves completed attachments too (media area's function, attachments added).
create or replace function api.storage_media_object(p_id uuid)
returns jsonb
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(
    (select jsonb_build_object('id', m.id, 'storageKey', m.storage_key, 'contentType', m.content_type,
       'filename', m.filename, 'fileSize', m.file_size, 'checksumSha256', m.checksum_sha256)
     from app.media_items m where m.id = p_id),
    (select jsonb_build_object('id', a.id, 'storageKey', a.storage_key, 'contentType', a.content_type,  -- reviews
       'filename', a.filename, 'fileSize', a.file_size, 'checksumSha256', a.checksum_sha256)
     from app.review_attachments a where a.id = p_id and a.state = 'completed'))
$$;

-- An activity entry with its reactions and, for comments, its attachments
-- (storage keys: the routes sign view URLs and drop the keys).
create or replace function app.review_activity_json(a app.review_activity) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', a.id, 'reviewId', a.review_id, 'itemId', a.item_id, 'kind', a.kind, 'event', a.event,
    'actor', a.actor_key, 'actorName', a.actor_name, 'body', a.body, 'mentions', to_jsonb(a.mentions), 'data', a.data,
    'reactions', coalesce((select jsonb_agg(jsonb_build_object('emoji', x.emoji, 'count', x.n, 'actors', x.actors) order by x.emoji)
                           from (select emoji, count(*)::int as n, jsonb_agg(actor_key order by actor_key) as actors
                                 from app.review_reactions where activity_id = a.id group by emoji) x), '[]'),
    'attachments', coalesce((select jsonb_agg(jsonb_build_object('id', t.id, 'filename', t.filename, 'contentType', t.content_type,
                               'fileSize', t.file_size, 'storageKey', t.storage_key) order by t.created_at, t.id)
                             from app.review_attachments t where t.activity_id = a.id and t.state = 'completed'), '[]'),
    'createdAt', a.created_at)
$$;

select app.harden_api_functions();
