--! Previous: sha1:32454ef2191e85eee877021592d0c2c7431734a9
--! Hash: sha1:63440360acc9d4beb334a3daf3323fa4f6f93441
--! Message: planning, content, media, publishing, articles

--! split: 10-planning-skeleton.sql
-- Content planning and media: the shared tables (issue 3 and 4). Functions,
-- triggers and further tables of each area live in the files after this one.

-- Platforms: reference data (not tenant data), readable by every request.
create table app.platforms (
  code text primary key check (code ~ '^[a-z][a-z0-9_]*$'),
  name text not null,
  caption_max_length int not null check (caption_max_length > 0),
  -- { "minItems", "maxItems", "kinds": ["image","video","gif"], "maxVideos", "maxImages", "maxGifs",
  --   "imageMaxBytes", "videoMaxBytes", "requiresMedia" }
  media_rules jsonb not null,
  -- [ { "name", "type", "description", "maxLength"? } ]
  required_settings jsonb not null default '[]',
  -- { "canPublishArticles", "boards", "videoCategories", "threads", "editPublishedCaption", "titleMaxLength"? }
  capabilities jsonb not null default '{}'
);
alter table app.platforms enable row level security;
alter table app.platforms force row level security;
create policy platforms_read on app.platforms for select using (true);
grant select on app.platforms to pressroom_request, pressroom_definer, pressroom_worker;

create table app.integrations (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  connector text not null check (connector in ('sandbox', 'webhook')),
  platform text not null references app.platforms (code),
  name text not null check (length(btrim(name)) between 1 and 200),
  username text check (username is null or length(username) <= 200),
  status text not null default 'active' check (status in ('active', 'disconnected')),
  settings jsonb not null default '{}',
  webhook_url text,
  -- Signing secret of webhook connectors: needed in clear to sign, so it is
  -- never granted to the request role and never returned.
  webhook_secret text,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  check (connector <> 'webhook' or (webhook_url is not null and webhook_secret is not null))
);
create index integrations_workspace_id_idx on app.integrations (workspace_id) where deleted_at is null;
create index integrations_organization_id_idx on app.integrations (organization_id);
create trigger integrations_10_set_updated_at before update on app.integrations
  for each row execute function app.tg_set_updated_at();

-- Taxonomy: names unique per workspace, case-insensitively.
create table app.tags (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 100),
  color text check (color is null or color ~ '^#[0-9a-fA-F]{6}$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index tags_workspace_name_key on app.tags (workspace_id, lower(name));
create index tags_organization_id_idx on app.tags (organization_id);
create trigger tags_10_set_updated_at before update on app.tags for each row execute function app.tg_set_updated_at();

create table app.pillars (like app.tags including defaults including constraints);
alter table app.pillars add primary key (id);
create unique index pillars_workspace_name_key on app.pillars (workspace_id, lower(name));
alter table app.pillars add foreign key (organization_id) references app.organizations (id) on delete cascade;
alter table app.pillars add foreign key (workspace_id) references app.workspaces (id) on delete cascade;
create index pillars_organization_id_idx on app.pillars (organization_id);
create trigger pillars_10_set_updated_at before update on app.pillars for each row execute function app.tg_set_updated_at();

create table app.formats (like app.tags including defaults including constraints);
alter table app.formats add primary key (id);
create unique index formats_workspace_name_key on app.formats (workspace_id, lower(name));
alter table app.formats add foreign key (organization_id) references app.organizations (id) on delete cascade;
alter table app.formats add foreign key (workspace_id) references app.workspaces (id) on delete cascade;
create index formats_organization_id_idx on app.formats (organization_id);
create trigger formats_10_set_updated_at before update on app.formats for each row execute function app.tg_set_updated_at();

create table app.hashtag_groups (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 100),
  hashtags text[] not null default '{}' check (cardinality(hashtags) <= 100),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index hashtag_groups_workspace_name_key on app.hashtag_groups (workspace_id, lower(name));
create index hashtag_groups_organization_id_idx on app.hashtag_groups (organization_id);
create trigger hashtag_groups_10_set_updated_at before update on app.hashtag_groups for each row execute function app.tg_set_updated_at();

-- Campaigns and their phases.
create table app.campaigns (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 160),
  description text check (description is null or length(description) <= 5000),
  color text check (color is null or color ~ '^#[0-9a-fA-F]{6}$'),
  starts_on date,
  ends_on date,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (starts_on is null or ends_on is null or starts_on <= ends_on)
);
create index campaigns_workspace_id_idx on app.campaigns (workspace_id);
create index campaigns_organization_id_idx on app.campaigns (organization_id);
create trigger campaigns_10_set_updated_at before update on app.campaigns for each row execute function app.tg_set_updated_at();

create table app.campaign_phases (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  campaign_id uuid not null references app.campaigns (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 160),
  position int not null default 0,
  color text check (color is null or color ~ '^#[0-9a-fA-F]{6}$'),
  starts_on date,
  ends_on date,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check (starts_on is null or ends_on is null or starts_on <= ends_on)
);
create index campaign_phases_campaign_id_idx on app.campaign_phases (campaign_id, position);
create index campaign_phases_workspace_id_idx on app.campaign_phases (workspace_id);
create index campaign_phases_organization_id_idx on app.campaign_phases (organization_id);
create trigger campaign_phases_10_set_updated_at before update on app.campaign_phases for each row execute function app.tg_set_updated_at();

-- Media library (issue 4 builds on it; content refers to it).
create table app.media_folders (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  parent_id uuid references app.media_folders (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 200),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index media_folders_workspace_parent_idx on app.media_folders (workspace_id, parent_id);
create index media_folders_organization_id_idx on app.media_folders (organization_id);
create trigger media_folders_10_set_updated_at before update on app.media_folders for each row execute function app.tg_set_updated_at();

create table app.media_items (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  folder_id uuid references app.media_folders (id) on delete set null,
  type text not null check (type in ('image', 'video', 'gif')),
  filename text not null check (length(filename) between 1 and 255),
  content_type text not null,
  file_size bigint not null check (file_size > 0),
  width int,
  height int,
  duration_ms int,
  checksum_sha256 text,
  storage_key text not null,
  alt_text text check (alt_text is null or length(alt_text) <= 1500),
  is_favorite boolean not null default false,
  source text,
  state text not null default 'active' check (state in ('active', 'deleted')),
  deleted_at timestamptz,
  delete_after timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((state = 'deleted') = (deleted_at is not null and delete_after is not null))
);
create index media_items_workspace_created_idx on app.media_items (workspace_id, state, created_at desc, id desc);
create index media_items_folder_id_idx on app.media_items (folder_id);
create index media_items_organization_id_idx on app.media_items (organization_id);
create trigger media_items_10_set_updated_at before update on app.media_items for each row execute function app.tg_set_updated_at();

-- Content: a root (the idea) has one edition per channel (integration).
create table app.content_roots (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  title text check (title is null or length(title) <= 500),            -- canonical (provider-facing) title
  caption text check (caption is null or length(caption) <= 100000),
  organizational_title text check (organizational_title is null or length(organizational_title) <= 500),
  notes jsonb,
  campaign_id uuid references app.campaigns (id) on delete set null,
  phase_id uuid references app.campaign_phases (id) on delete set null,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz
);
create index content_roots_workspace_id_idx on app.content_roots (workspace_id, updated_at desc);
create index content_roots_campaign_id_idx on app.content_roots (campaign_id);
create index content_roots_organization_id_idx on app.content_roots (organization_id);
create trigger content_roots_10_set_updated_at before update on app.content_roots for each row execute function app.tg_set_updated_at();

create table app.content_root_media (
  root_id uuid not null references app.content_roots (id) on delete cascade,
  media_id uuid not null references app.media_items (id),
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  position int not null,
  primary key (root_id, position)
);
create index content_root_media_media_id_idx on app.content_root_media (media_id);
create index content_root_media_workspace_id_idx on app.content_root_media (workspace_id);

create table app.content_items (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  root_id uuid not null references app.content_roots (id) on delete cascade,
  integration_id uuid not null references app.integrations (id),
  kind text not null default 'post' check (kind in ('post', 'article')),
  status text not null default 'draft'
    check (status in ('draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled')),
  scheduled_at timestamptz,
  intended_publish_at timestamptz,
  caption text check (caption is null or length(caption) <= 100000),  -- null: the root's caption
  thread jsonb not null default '[]',         -- further thread messages: [{ "caption", "mediaIds": [] }]
  settings jsonb not null default '{}',        -- platform settings (boardId, title, categoryId, ...)
  version int not null default 1,
  sent_at timestamptz,
  permalink text,
  platform_post_id text,
  error text,
  publish_job_id uuid,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz,
  check (status <> 'scheduled' or scheduled_at is not null)
);
create index content_items_workspace_list_idx on app.content_items (workspace_id, status, scheduled_at, id) where deleted_at is null;
create index content_items_workspace_updated_idx on app.content_items (workspace_id, updated_at);
-- The filtered list: one channel, one status, by time.
create index content_items_workspace_channel_list_idx on app.content_items
  (workspace_id, integration_id, status, scheduled_at desc nulls last, id desc) include (organization_id)
  where deleted_at is null;
create index content_items_root_id_idx on app.content_items (root_id);
create index content_items_integration_id_idx on app.content_items (integration_id);
create index content_items_organization_id_idx on app.content_items (organization_id);
create trigger content_items_10_set_updated_at before update on app.content_items for each row execute function app.tg_set_updated_at();

create table app.content_item_media (
  content_item_id uuid not null references app.content_items (id) on delete cascade,
  media_id uuid not null references app.media_items (id),
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  position int not null,
  primary key (content_item_id, position)
);
create index content_item_media_media_id_idx on app.content_item_media (media_id);
create index content_item_media_workspace_id_idx on app.content_item_media (workspace_id);

-- Whether the principal may really use the workspace of the context: a few
-- index lookups, evaluated once per statement by the scope policies (cheaper
-- than listing every accessible workspace).
create or replace function app.current_workspace_accessible() returns boolean
language sql stable security definer
set search_path = pg_catalog, app
as $$
  with ctx as (select app.current_workspace_id() as ws, app.current_actor_kind() as kind,
                      app.current_user_id() as uid, app.current_api_key_id() as kid),
  person as (
    -- The acting user: the session's user, or the key's creator.
    select u.id, u.organization_id, u.org_role
    from ctx cross join app.users u
    left join app.api_keys k on k.id = ctx.kid
    where u.status = 'active'
      and u.id = case ctx.kind when 'user' then ctx.uid when 'api_key' then k.created_by end
      and (ctx.kind = 'user'
           or (k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
               and exists (select 1 from app.api_key_workspaces g where g.api_key_id = k.id and g.workspace_id = ctx.ws))))
  select coalesce((
    select true from ctx cross join person p
    join app.workspaces w on w.organization_id = p.organization_id
    where w.id = ctx.ws
      and (p.org_role in ('owner', 'admin')
           or exists (select 1 from app.workspace_members m where m.workspace_id = ctx.ws and m.user_id = p.id))
    limit 1), false)
$$;
alter function app.current_workspace_accessible() owner to pressroom_definer;
grant execute on function app.current_workspace_accessible() to pressroom_request, pressroom_worker;

-- Row-level security for every new tenant table: the current workspace only.
do $$
declare
  t text;
begin
  foreach t in array array['integrations', 'tags', 'pillars', 'formats', 'hashtag_groups', 'campaigns',
    'campaign_phases', 'media_folders', 'media_items', 'content_roots', 'content_root_media',
    'content_items', 'content_item_media']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    -- Writes need the editor role in the current workspace.
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id())
                  and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I for delete to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_delete', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
    -- Defence in depth: even a forged workspace context reaches only the
    -- organization's workspaces the principal may really access.
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id())
             and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id())
                  and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
  end loop;
end
$$;

-- The worker acts across workspaces (publishing, purging): its own policy.
do $$
declare
  t text;
begin
  foreach t in array array['integrations', 'media_folders', 'media_items', 'content_roots', 'content_root_media',
    'content_items', 'content_item_media']
  loop
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
  end loop;
end
$$;

grant select, insert, update, delete on app.tags, app.pillars, app.formats, app.hashtag_groups, app.campaigns,
  app.campaign_phases, app.media_folders, app.media_items, app.content_roots, app.content_root_media,
  app.content_items, app.content_item_media to pressroom_request;
-- Integrations: every column but the webhook secret.
grant select (id, organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, created_by, created_at, updated_at, deleted_at) on app.integrations to pressroom_request;
grant insert (organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, webhook_secret, created_by) on app.integrations to pressroom_request;
grant update (name, username, status, settings, deleted_at) on app.integrations to pressroom_request;

--! split: 15-platforms.sql
-- The platforms Pressroom publishes to, with their publishing rules (as the
-- platforms document them). Reference data; updated by later migrations.
insert into app.platforms (code, name, caption_max_length, media_rules, required_settings, capabilities) values
('x', 'X', 280,
  '{"minItems":0,"maxItems":4,"kinds":["image","video","gif"],"maxVideos":1,"maxGifs":1,"mixedKinds":false,"imageMaxBytes":5242880,"videoMaxBytes":536870912,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":true,"boards":false,"videoCategories":false,"threads":true,"editPublishedCaption":false}'),
('linkedin', 'LinkedIn', 3000,
  '{"minItems":0,"maxItems":20,"kinds":["image","video","gif"],"maxVideos":1,"maxGifs":1,"mixedKinds":false,"imageMaxBytes":52428800,"videoMaxBytes":536870912,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":false,"editPublishedCaption":true}'),
('instagram', 'Instagram', 2200,
  '{"minItems":1,"maxItems":10,"kinds":["image","video"],"maxVideos":10,"maxGifs":0,"mixedKinds":true,"imageMaxBytes":8388608,"videoMaxBytes":314572800,"requiresMedia":true}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":false,"editPublishedCaption":true}'),
('facebook', 'Facebook', 63206,
  '{"minItems":0,"maxItems":10,"kinds":["image","video","gif"],"maxVideos":1,"maxGifs":1,"mixedKinds":false,"imageMaxBytes":10485760,"videoMaxBytes":536870912,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":false,"editPublishedCaption":true}'),
('pinterest', 'Pinterest', 500,
  '{"minItems":1,"maxItems":1,"kinds":["image","video"],"maxVideos":1,"maxGifs":0,"mixedKinds":false,"imageMaxBytes":20971520,"videoMaxBytes":536870912,"requiresMedia":true}',
  '[{"name":"boardId","type":"string","description":"Board to pin to (GET /integrations/{id}/boards)"},{"name":"title","type":"string","description":"Pin title","maxLength":100,"optional":true}]',
  '{"canPublishArticles":false,"boards":true,"videoCategories":false,"threads":false,"editPublishedCaption":false}'),
('youtube', 'YouTube', 5000,
  '{"minItems":1,"maxItems":1,"kinds":["video"],"maxVideos":1,"maxGifs":0,"mixedKinds":false,"imageMaxBytes":0,"videoMaxBytes":536870912,"requiresMedia":true}',
  '[{"name":"title","type":"string","description":"Video title","maxLength":100},{"name":"categoryId","type":"string","description":"Video category (GET /integrations/{id}/video-categories)"},{"name":"privacy","type":"string","enum":["public","unlisted","private"],"optional":true}]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":true,"threads":false,"editPublishedCaption":true}'),
('tiktok', 'TikTok', 2200,
  '{"minItems":1,"maxItems":35,"kinds":["image","video"],"maxVideos":1,"maxGifs":0,"mixedKinds":false,"imageMaxBytes":20971520,"videoMaxBytes":536870912,"requiresMedia":true}',
  '[{"name":"privacy","type":"string","enum":["public","friends","private"],"optional":true}]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":false,"editPublishedCaption":false}'),
('threads', 'Threads', 500,
  '{"minItems":0,"maxItems":10,"kinds":["image","video"],"maxVideos":10,"maxGifs":0,"mixedKinds":true,"imageMaxBytes":8388608,"videoMaxBytes":536870912,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":true,"editPublishedCaption":false}'),
('bluesky', 'Bluesky', 300,
  '{"minItems":0,"maxItems":4,"kinds":["image","video","gif"],"maxVideos":1,"maxGifs":1,"mixedKinds":false,"imageMaxBytes":1000000,"videoMaxBytes":104857600,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":true,"editPublishedCaption":false}'),
('mastodon', 'Mastodon', 500,
  '{"minItems":0,"maxItems":4,"kinds":["image","video","gif"],"maxVideos":1,"maxGifs":4,"mixedKinds":false,"imageMaxBytes":16777216,"videoMaxBytes":104857600,"requiresMedia":false}',
  '[]',
  '{"canPublishArticles":false,"boards":false,"videoCategories":false,"threads":true,"editPublishedCaption":true}');

--! split: 20-integrations-taxonomy-campaigns.sql
-- Integrations (connected accounts), taxonomy (tags, pillars, formats,
-- hashtag groups) and campaigns with phases: rules, triggers and the api.*
-- functions their routes call. Runs after 10-planning-skeleton.sql (tables,
-- base policies, grants) and 15-platforms.sql (platform rules).
--
-- Idempotent: functions are created or replaced, triggers, policies and
-- constraints are dropped first or guarded, so the file can run again.

------------------------------------------------------------------------------
-- Tenant scope, hardened. The base policies of 10 compare workspace_id with
-- the context's workspace only; these restrictive policies also require the
-- row's organization to be the principal's and the workspace to be one the
-- principal can really access (as the foundation's workspace policy does),
-- so a forged context reaches nothing.
------------------------------------------------------------------------------
do $$
declare
  t text;
begin
  foreach t in array array['integrations', 'tags', 'pillars', 'formats', 'hashtag_groups', 'campaigns', 'campaign_phases']
  loop
    execute format('drop policy if exists %I on app.%I', t || '_request_scope', t);
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id())
             and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id())
                  and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
  end loop;
end
$$;

------------------------------------------------------------------------------
-- Small shared helpers
------------------------------------------------------------------------------
-- Refuses a date range whose end is before its start (400 VALIDATION_FAILED
-- naming the field, as the HTTP layer's validation does).
create or replace function app.check_date_range(p_starts date, p_ends date, p_field_prefix text default 'body')
returns void
language plpgsql
as $$
begin
  if p_starts is not null and p_ends is not null and p_ends < p_starts then
    perform app.raise(400, 'VALIDATION_FAILED', 'endsOn must be on or after startsOn.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object(
        'field', p_field_prefix || '.endsOn', 'code', 'before_start', 'message', 'must be on or after startsOn'))));
  end if;
end
$$;

-- Escapes LIKE wildcards so a search string matches literally.
create or replace function app.like_escape(p_text text) returns text
language sql immutable parallel safe
as $$ select replace(replace(replace(p_text, '\', '\\'), '%', '\%'), '_', '\_') $$;

------------------------------------------------------------------------------
-- Integrations
------------------------------------------------------------------------------
-- A webhook URL is http(s) with no credentials in it, whoever writes it. (The
-- server also refuses hosts that resolve to private networks; see
-- server/platforms/webhook.ts.)
do $$
begin
  if not exists (select 1 from pg_constraint where conname = 'integrations_webhook_url_http'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_webhook_url_http
      check (webhook_url is null or (length(webhook_url) <= 2048 and webhook_url ~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$'));
  end if;
  if not exists (select 1 from pg_constraint where conname = 'integrations_webhook_secret_length'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_webhook_secret_length
      check (webhook_secret is null or length(webhook_secret) between 16 and 512);
  end if;
  if not exists (select 1 from pg_constraint where conname = 'integrations_settings_object'
                 and conrelid = 'app.integrations'::regclass) then
    alter table app.integrations add constraint integrations_settings_object
      check (jsonb_typeof(settings) = 'object');
  end if;
end
$$;

-- The publishing rules of a platform, in the API's shape.
create or replace function app.platform_rules_json(p_code text) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'caption', jsonb_build_object('maxLength', p.caption_max_length),
    'media', jsonb_build_object(
      'minItems', p.media_rules -> 'minItems',
      'maxItems', p.media_rules -> 'maxItems',
      'kinds', coalesce(p.media_rules -> 'kinds', '[]'),
      'maxImages', p.media_rules -> 'maxImages',
      'maxVideos', p.media_rules -> 'maxVideos',
      'maxGifs', p.media_rules -> 'maxGifs',
      'mixedKinds', coalesce(p.media_rules -> 'mixedKinds', 'false'),
      'imageMaxBytes', p.media_rules -> 'imageMaxBytes',
      'videoMaxBytes', p.media_rules -> 'videoMaxBytes',
      'requiresMedia', coalesce(p.media_rules -> 'requiresMedia', 'false')),
    'requiredSettings', coalesce((
      select jsonb_agg(jsonb_build_object(
               'name', s ->> 'name',
               'type', coalesce(s ->> 'type', 'string'),
               'description', s ->> 'description',
               'maxLength', s -> 'maxLength',
               'enum', s -> 'enum',
               'optional', coalesce((s ->> 'optional')::boolean, false))
             order by x.ord)
      from jsonb_array_elements(p.required_settings) with ordinality x (s, ord)), '[]'))
  from app.platforms p where p.code = p_code
$$;

create or replace function app.platform_capabilities_json(p_code text) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false),
    'boards', coalesce((p.capabilities ->> 'boards')::boolean, false),
    'videoCategories', coalesce((p.capabilities ->> 'videoCategories')::boolean, false),
    'threads', coalesce((p.capabilities ->> 'threads')::boolean, false),
    'editPublishedCaption', coalesce((p.capabilities ->> 'editPublishedCaption')::boolean, false))
  from app.platforms p where p.code = p_code
$$;

-- An integration as the API shows it. Explicit columns: the request role may
-- not read webhook_secret, so no whole-row reference.
create or replace function app.integration_json(p_id uuid, p_detail boolean default false) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', i.id,
    'connector', i.connector,
    'platform', i.platform,
    'name', i.name,
    'username', i.username,
    'status', i.status,
    'content', jsonb_build_object('canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
    'createdAt', i.created_at,
    'updatedAt', i.updated_at)
    || case when p_detail then jsonb_build_object(
      'platformName', p.name,
      'rules', app.platform_rules_json(i.platform),
      'capabilities', app.platform_capabilities_json(i.platform),
      'settings', i.settings,
      'webhookUrl', i.webhook_url)
    else '{}'::jsonb end
  from app.integrations i
  join app.platforms p on p.code = i.platform
  where i.id = p_id
$$;

create or replace function api.list_integrations() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(app.integration_json(i.id) order by i.created_at, i.id), '[]')
    from app.integrations i
    where i.workspace_id = app.current_workspace_id() and i.deleted_at is null);
end
$$;

create or replace function api.get_integration(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.integrations i
                 where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null) then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return app.integration_json(p_id, true);
end
$$;

-- What a connector needs to list boards or video categories of an
-- integration (never the secret); 404 NOT_SUPPORTED when the platform has
-- no such list.
create or replace function api.integration_for_listing(p_id uuid, p_capability text) returns jsonb
language plpgsql stable
as $$
declare
  v record;
  v_with text[];
  v_what text := case p_capability when 'boards' then 'boards' when 'videoCategories' then 'video categories' end;
begin
  perform app.require_role('viewer');
  if v_what is null then
    perform app.raise(400, 'VALIDATION_FAILED', format('Unknown list %s.', p_capability));
  end if;
  select i.id, i.connector, i.platform, i.name, i.username, i.settings, i.webhook_url, p.name as platform_name,
         coalesce((p.capabilities ->> p_capability)::boolean, false) as supported
  into v
  from app.integrations i join app.platforms p on p.code = i.platform
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  if not v.supported then
    select coalesce(array_agg(code order by code), '{}') into v_with
    from app.platforms where coalesce((capabilities ->> p_capability)::boolean, false);
    perform app.raise(404, 'NOT_SUPPORTED',
      format('%s has no %s; they exist on: %s.', v.platform_name, v_what, array_to_string(v_with, ', ')),
      jsonb_build_object('id', p_id, 'platform', v.platform, 'supportedPlatforms', to_jsonb(v_with)));
  end if;
  return jsonb_build_object('id', v.id, 'connector', v.connector, 'platform', v.platform, 'name', v.name,
    'username', v.username, 'settings', v.settings, 'webhookUrl', v.webhook_url);
end
$$;

-- Connects an account through a connector that needs no OAuth. The webhook
-- URL's host was resolved and checked by the server before this call.
create or replace function api.create_integration(
  p_connector text, p_platform text, p_name text, p_username text, p_settings jsonb,
  p_webhook_url text, p_webhook_secret text)
returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_settings jsonb := coalesce(p_settings, '{}'::jsonb);
  v_bad text[];
begin
  perform app.require_role('manager');
  if p_connector is null or p_connector not in ('sandbox', 'webhook') then
    perform app.raise(400, 'UNKNOWN_CONNECTOR', format('Unknown connector %s; use sandbox or webhook.', coalesce(p_connector, 'null')),
      jsonb_build_object('field', 'connector', 'connectors', jsonb_build_array('sandbox', 'webhook')));
  end if;
  if not exists (select 1 from app.platforms where code = p_platform) then
    perform app.raise(400, 'UNKNOWN_PLATFORM', format('Unknown platform %s.', coalesce(p_platform, 'null')),
      jsonb_build_object('field', 'platform', 'platforms', (select jsonb_agg(code order by code) from app.platforms)));
  end if;
  if p_name is null or length(btrim(p_name)) not between 1 and 200 then
    perform app.raise(400, 'VALIDATION_FAILED', 'name must have 1 to 200 characters.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.name', 'code', 'length', 'message', 'must have 1 to 200 characters'))));
  end if;
  if jsonb_typeof(v_settings) <> 'object' then
    perform app.raise(400, 'INVALID_SETTINGS', 'settings must be an object.', jsonb_build_object('field', 'settings'));
  end if;

  if p_connector = 'sandbox' then
    if p_webhook_url is not null or p_webhook_secret is not null then
      perform app.raise(400, 'VALIDATION_FAILED', 'url and secret belong to the webhook connector only.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'unexpected', 'message', 'only for connector webhook'))
                                      from unnest(array[case when p_webhook_url is not null then 'body.url' end,
                                                        case when p_webhook_secret is not null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'behavior';
    if v_bad is not null
       or (v_settings ? 'behavior' and coalesce(v_settings ->> 'behavior', '') not in ('succeed', 'fail', 'transient-then-succeed', 'unknown')) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Sandbox settings take only behavior: succeed, fail, transient-then-succeed or unknown.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('behavior', coalesce(v_settings ->> 'behavior', 'succeed'));
  else
    if p_webhook_url is null or p_webhook_secret is null then
      perform app.raise(400, 'VALIDATION_FAILED', 'The webhook connector needs url and secret.',
        jsonb_build_object('fields', (select jsonb_agg(jsonb_build_object('field', f, 'code', 'required', 'message', 'is required for connector webhook'))
                                      from unnest(array[case when p_webhook_url is null then 'body.url' end,
                                                        case when p_webhook_secret is null then 'body.secret' end]) f
                                      where f is not null)));
    end if;
    if length(p_webhook_url) > 2048
       or p_webhook_url !~* '^https?://[^/?#@[:space:]]+([/?#][^[:space:]]*)?$' then
      perform app.raise(400, 'INVALID_WEBHOOK_URL',
        'The webhook url must be an http or https URL without credentials, at most 2048 characters.',
        jsonb_build_object('field', 'url'));
    end if;
    if length(p_webhook_secret) not between 16 and 512 then
      perform app.raise(400, 'VALIDATION_FAILED', 'secret must have 16 to 512 characters.',
        jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.secret', 'code', 'length', 'message', 'must have 16 to 512 characters'))));
    end if;
    select array_agg(k) into v_bad from jsonb_object_keys(v_settings) k where k <> 'boards';
    if v_bad is not null
       or (v_settings ? 'boards' and (jsonb_typeof(v_settings -> 'boards') <> 'array'
           or jsonb_array_length(v_settings -> 'boards') > 100
           or exists (select 1 from jsonb_array_elements(v_settings -> 'boards') b
                      where jsonb_typeof(b) <> 'object' or jsonb_typeof(b -> 'id') <> 'string'
                         or jsonb_typeof(b -> 'name') <> 'string'))) then
      perform app.raise(400, 'INVALID_SETTINGS',
        'Webhook settings take only boards: up to 100 objects {id, name} with string values.',
        jsonb_build_object('field', 'settings', 'unknownKeys', to_jsonb(coalesce(v_bad, '{}'))));
    end if;
    v_settings := jsonb_build_object('boards', coalesce((
      select jsonb_agg(jsonb_build_object('id', b ->> 'id', 'name', b ->> 'name') order by ord)
      from jsonb_array_elements(v_settings -> 'boards') with ordinality x (b, ord)), '[]'));
  end if;

  insert into app.integrations (organization_id, workspace_id, connector, platform, name, username, settings,
    webhook_url, webhook_secret, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), p_connector, p_platform, btrim(p_name),
    nullif(btrim(p_username), ''), v_settings,
    case when p_connector = 'webhook' then p_webhook_url end,
    case when p_connector = 'webhook' then p_webhook_secret end,
    app.current_user_id())
  returning id into v_id;
  return app.integration_json(v_id, true);
end
$$;

-- Soft delete. Refused while editions are scheduled on the integration
-- (unschedule or delete them first); afterwards every route answers 404.
create or replace function api.delete_integration(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_ids uuid[];
  v_count int;
begin
  perform app.require_role('manager');
  -- FOR UPDATE waits for transactions that are adding editions on it.
  select i.id into v_id from app.integrations i
  where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null
  for update;
  if v_id is null then
    perform app.raise(404, 'NOT_FOUND', 'No integration with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  select count(*)::int, (array_agg(c.id order by c.scheduled_at, c.id))[1:100] into v_count, v_ids
  from app.content_items c
  where c.integration_id = p_id and c.workspace_id = app.current_workspace_id()
    and c.status = 'scheduled' and c.deleted_at is null;
  if v_count > 0 then
    perform app.raise(409, 'INTEGRATION_HAS_SCHEDULED_CONTENT',
      format('%s scheduled edition(s) would publish through this integration; unschedule or delete them first.', v_count),
      jsonb_build_object('id', p_id, 'count', v_count, 'contentIds', to_jsonb(v_ids)));
  end if;
  update app.integrations set deleted_at = now(), status = 'disconnected' where id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true);
end
$$;

-- An edition may only be added to, moved to or (re)scheduled on a live
-- integration of its own workspace, whoever writes it.
create or replace function app.tg_content_items_check_integration() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.integration_id = old.integration_id
     and not (new.status = 'scheduled' and old.status is distinct from 'scheduled') then
    return new;
  end if;
  -- KEY SHARE: a concurrent delete_integration (FOR UPDATE) waits for us,
  -- and we see its committed deleted_at.
  select i.workspace_id, i.deleted_at into v from app.integrations i where i.id = new.integration_id for key share;
  if not found or v.workspace_id <> new.workspace_id then
    perform app.raise(404, 'INTEGRATION_NOT_FOUND', 'No integration with this id in this workspace.',
      jsonb_build_object('integrationId', new.integration_id));
  end if;
  if v.deleted_at is not null then
    perform app.raise(409, 'INTEGRATION_DELETED', 'This integration was deleted; choose another channel.',
      jsonb_build_object('integrationId', new.integration_id, 'deletedAt', v.deleted_at));
  end if;
  return new;
end
$$;
alter function app.tg_content_items_check_integration() owner to pressroom_definer;
drop trigger if exists content_items_05_check_integration on app.content_items;
create trigger content_items_05_check_integration before insert or update of integration_id, status on app.content_items
  for each row execute function app.tg_content_items_check_integration();

------------------------------------------------------------------------------
-- Taxonomy: tags, pillars, formats ({name, color}) and hashtag groups
------------------------------------------------------------------------------
-- Names are trimmed (so "Summer " and "summer" collide on the unique index)
-- and colors kept lower case.
create or replace function app.tg_taxonomy_normalize() returns trigger
language plpgsql
as $$
begin
  new.name := btrim(new.name);
  new.color := lower(new.color);
  return new;
end
$$;
drop trigger if exists tags_20_normalize on app.tags;
create trigger tags_20_normalize before insert or update of name, color on app.tags
  for each row execute function app.tg_taxonomy_normalize();
drop trigger if exists pillars_20_normalize on app.pillars;
create trigger pillars_20_normalize before insert or update of name, color on app.pillars
  for each row execute function app.tg_taxonomy_normalize();
drop trigger if exists formats_20_normalize on app.formats;
create trigger formats_20_normalize before insert or update of name, color on app.formats
  for each row execute function app.tg_taxonomy_normalize();

-- Hashtags are stored without '#', deduplicated case-insensitively (the
-- first spelling wins), in the order given. A hashtag is letters, digits,
-- marks and underscores: ASCII punctuation, spaces and control characters
-- are refused here; the API also refuses non-ASCII punctuation.
create or replace function app.normalize_hashtags(p_hashtags text[]) returns text[]
language plpgsql immutable
as $$
declare
  v_out text[] := '{}';
  v_seen text[] := '{}';
  v_bad text[] := '{}';
  h text;
  v text;
begin
  foreach h in array coalesce(p_hashtags, '{}') loop
    v := regexp_replace(btrim(coalesce(h, '')), '^#', '');
    if v = '' or length(v) > 100 or v ~ '[\x01-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]' then
      v_bad := v_bad || coalesce(h, 'null');
    elsif not (lower(v) = any (v_seen)) then
      v_seen := v_seen || lower(v);
      v_out := v_out || v;
    end if;
  end loop;
  if cardinality(v_bad) > 0 then
    perform app.raise(400, 'INVALID_HASHTAG',
      'A hashtag is 1 to 100 letters, digits or underscores, optionally after one leading #.',
      jsonb_build_object('field', 'hashtags', 'hashtags', to_jsonb(v_bad)));
  end if;
  return v_out;
end
$$;

create or replace function app.tg_hashtag_groups_normalize() returns trigger
language plpgsql
as $$
begin
  new.name := btrim(new.name);
  new.hashtags := app.normalize_hashtags(new.hashtags);
  return new;
end
$$;
drop trigger if exists hashtag_groups_20_normalize on app.hashtag_groups;
create trigger hashtag_groups_20_normalize before insert or update of name, hashtags on app.hashtag_groups
  for each row execute function app.tg_hashtag_groups_normalize();

-- The tables behind the taxonomy kinds of the API.
create or replace function app.taxonomy_table(p_kind text) returns text
language plpgsql immutable
as $$
begin
  if p_kind in ('tags', 'pillars', 'formats') then
    return p_kind;
  end if;
  perform app.raise(400, 'VALIDATION_FAILED', format('Unknown taxonomy kind %s.', coalesce(p_kind, 'null')));
end
$$;

create or replace function app.taxonomy_noun(p_kind text) returns text
language sql immutable
as $$ select case p_kind when 'tags' then 'tag' when 'pillars' then 'pillar' when 'formats' then 'format' else 'term' end $$;

create or replace function api.list_taxonomy_terms(p_kind text) returns jsonb
language plpgsql stable
as $$
declare
  v jsonb;
begin
  perform app.require_role('viewer');
  execute format($q$
    select coalesce(jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name, 'color', t.color,
             'createdAt', t.created_at, 'updatedAt', t.updated_at) order by lower(t.name), t.id), '[]')
    from app.%I t where t.workspace_id = $1$q$, app.taxonomy_table(p_kind))
  into v using app.current_workspace_id();
  return v;
end
$$;

create or replace function api.create_taxonomy_term(p_kind text, p_name text, p_color text) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
begin
  perform app.require_role('editor');
  begin
    execute format($q$
      insert into app.%I (organization_id, workspace_id, name, color) values ($1, $2, $3, $4)
      returning jsonb_build_object('id', id, 'name', name, 'color', color, 'createdAt', created_at, 'updatedAt', updated_at)$q$,
      app.taxonomy_table(p_kind))
    into v using app.current_organization_id(), app.current_workspace_id(), p_name, p_color;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A %s named %s already exists in this workspace (names are compared case-insensitively).', app.taxonomy_noun(p_kind), btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return v;
end
$$;

-- p_patch: the provided fields only (name, color; color may be null).
create or replace function api.update_taxonomy_term(p_kind text, p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
begin
  perform app.require_role('editor');
  begin
    execute format($q$
      update app.%I set
        name = case when $3 ? 'name' then $3 ->> 'name' else name end,
        color = case when $3 ? 'color' then $3 ->> 'color' else color end
      where id = $1 and workspace_id = $2
      returning jsonb_build_object('id', id, 'name', name, 'color', color, 'createdAt', created_at, 'updatedAt', updated_at)$q$,
      app.taxonomy_table(p_kind))
    into v using p_id, app.current_workspace_id(), coalesce(p_patch, '{}'::jsonb);
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A %s named %s already exists in this workspace (names are compared case-insensitively).', app.taxonomy_noun(p_kind), btrim(p_patch ->> 'name')),
      jsonb_build_object('field', 'name', 'name', btrim(p_patch ->> 'name')));
  end;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', app.taxonomy_noun(p_kind)), jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

create or replace function api.delete_taxonomy_term(p_kind text, p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v uuid;
begin
  perform app.require_role('editor');
  execute format('delete from app.%I where id = $1 and workspace_id = $2 returning id', app.taxonomy_table(p_kind))
  into v using p_id, app.current_workspace_id();
  if v is null then
    perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', app.taxonomy_noun(p_kind)), jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$$;

create or replace function app.hashtag_group_json(g app.hashtag_groups) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', g.id, 'name', g.name, 'hashtags', to_jsonb(g.hashtags),
  'createdAt', g.created_at, 'updatedAt', g.updated_at) $$;

create or replace function api.list_hashtag_groups() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (select coalesce(jsonb_agg(app.hashtag_group_json(g) order by lower(g.name), g.id), '[]')
          from app.hashtag_groups g where g.workspace_id = app.current_workspace_id());
end
$$;

create or replace function api.create_hashtag_group(p_name text, p_hashtags text[]) returns jsonb
language plpgsql volatile
as $$
declare
  v app.hashtag_groups;
begin
  perform app.require_role('editor');
  begin
    insert into app.hashtag_groups (organization_id, workspace_id, name, hashtags)
    values (app.current_organization_id(), app.current_workspace_id(), p_name, coalesce(p_hashtags, '{}'))
    returning * into v;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A hashtag group named %s already exists in this workspace (names are compared case-insensitively).', btrim(p_name)),
      jsonb_build_object('field', 'name', 'name', btrim(p_name)));
  end;
  return app.hashtag_group_json(v);
end
$$;

create or replace function api.update_hashtag_group(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.hashtag_groups;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
begin
  perform app.require_role('editor');
  if v_patch ? 'hashtags' and jsonb_typeof(v_patch -> 'hashtags') <> 'array' then
    perform app.raise(400, 'INVALID_HASHTAG', 'hashtags must be an array of strings.', jsonb_build_object('field', 'hashtags'));
  end if;
  begin
    update app.hashtag_groups g set
      name = case when v_patch ? 'name' then v_patch ->> 'name' else g.name end,
      hashtags = case when v_patch ? 'hashtags'
                      then array(select jsonb_array_elements_text(v_patch -> 'hashtags'))
                      else g.hashtags end
    where g.id = p_id and g.workspace_id = app.current_workspace_id()
    returning * into v;
  exception when unique_violation then
    perform app.raise(409, 'NAME_TAKEN',
      format('A hashtag group named %s already exists in this workspace (names are compared case-insensitively).', btrim(v_patch ->> 'name')),
      jsonb_build_object('field', 'name', 'name', btrim(v_patch ->> 'name')));
  end;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No hashtag group with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return app.hashtag_group_json(v);
end
$$;

create or replace function api.delete_hashtag_group(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v uuid;
begin
  perform app.require_role('editor');
  delete from app.hashtag_groups where id = p_id and workspace_id = app.current_workspace_id() returning id into v;
  if v is null then
    perform app.raise(404, 'NOT_FOUND', 'No hashtag group with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return jsonb_build_object('id', v, 'deleted', true);
end
$$;

------------------------------------------------------------------------------
-- Campaigns and phases
------------------------------------------------------------------------------
-- A phase lives in its campaign's workspace and never moves to another
-- campaign; at most 50 phases per campaign.
create or replace function app.tg_campaign_phases_check_campaign() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v record;
begin
  if tg_op = 'UPDATE' and new.campaign_id is distinct from old.campaign_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A phase cannot move to another campaign.',
      jsonb_build_object('id', old.id, 'campaignId', old.campaign_id));
  end if;
  select c.workspace_id, c.organization_id into v from app.campaigns c where c.id = new.campaign_id;
  if not found or v.workspace_id <> new.workspace_id or v.organization_id <> new.organization_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if tg_op = 'INSERT' and (select count(*) from app.campaign_phases p where p.campaign_id = new.campaign_id) >= 50 then
    perform app.raise(409, 'PHASE_LIMIT_REACHED', 'A campaign has at most 50 phases.',
      jsonb_build_object('campaignId', new.campaign_id, 'limit', 50));
  end if;
  return new;
end
$$;
alter function app.tg_campaign_phases_check_campaign() owner to pressroom_definer;
drop trigger if exists campaign_phases_05_check_campaign on app.campaign_phases;
create trigger campaign_phases_05_check_campaign before insert or update of campaign_id, workspace_id, organization_id
  on app.campaign_phases for each row execute function app.tg_campaign_phases_check_campaign();

-- A content root's campaign is of its workspace, and its phase belongs to
-- that campaign. When the campaign is unassigned (or deleted: the foreign
-- key sets it null) the phase goes with it.
create or replace function app.tg_content_roots_check_campaign() returns trigger
language plpgsql
security definer
set search_path = pg_catalog, app
as $$
declare
  v_ws uuid;
  v_phase_campaign uuid;
begin
  if new.campaign_id is null then
    if new.phase_id is not null then
      if tg_op = 'UPDATE' and old.campaign_id is not null then
        new.phase_id := null;
      else
        perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'A phase needs its campaign: set campaignId too.',
          jsonb_build_object('phaseId', new.phase_id));
      end if;
    end if;
    return new;
  end if;
  if tg_op = 'UPDATE' and new.campaign_id is not distinct from old.campaign_id
     and new.phase_id is not distinct from old.phase_id and new.workspace_id = old.workspace_id then
    return new;
  end if;
  select c.workspace_id into v_ws from app.campaigns c where c.id = new.campaign_id;
  if v_ws is null or v_ws <> new.workspace_id then
    perform app.raise(404, 'CAMPAIGN_NOT_FOUND', 'No campaign with this id in this workspace.',
      jsonb_build_object('campaignId', new.campaign_id));
  end if;
  if new.phase_id is not null then
    select p.campaign_id into v_phase_campaign from app.campaign_phases p where p.id = new.phase_id;
    if v_phase_campaign is distinct from new.campaign_id then
      perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'This phase is not a phase of the campaign.',
        jsonb_build_object('phaseId', new.phase_id, 'campaignId', new.campaign_id));
    end if;
  end if;
  return new;
end
$$;
alter function app.tg_content_roots_check_campaign() owner to pressroom_definer;
drop trigger if exists content_roots_05_check_campaign on app.content_roots;
create trigger content_roots_05_check_campaign before insert or update of campaign_id, phase_id, workspace_id
  on app.content_roots for each row execute function app.tg_content_roots_check_campaign();

create or replace function app.campaign_phase_json(p app.campaign_phases) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', p.id, 'campaignId', p.campaign_id, 'name', p.name, 'color', p.color,
  'startsOn', p.starts_on, 'endsOn', p.ends_on, 'position', p.position,
  'createdAt', p.created_at, 'updatedAt', p.updated_at) $$;

create or replace function app.campaign_phases_json(p_campaign_id uuid) returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(app.campaign_phase_json(p) order by p.position, p.created_at, p.id), '[]')
  from app.campaign_phases p where p.campaign_id = p_campaign_id
$$;

create or replace function app.campaign_json(c app.campaigns, p_with_phases boolean) returns jsonb
language sql stable
as $$
  select jsonb_build_object('id', c.id, 'name', c.name, 'description', c.description, 'color', c.color,
    'startsOn', c.starts_on, 'endsOn', c.ends_on, 'createdAt', c.created_at, 'updatedAt', c.updated_at)
    || case when p_with_phases then jsonb_build_object('phases', app.campaign_phases_json(c.id)) else '{}'::jsonb end
$$;

-- The campaign of the current workspace, locked for a change to it or its
-- phases (one writer per campaign at a time), or 404.
create or replace function app.campaign_for_update(p_id uuid) returns app.campaigns
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

create or replace function app.campaign_visible(p_id uuid) returns app.campaigns
language plpgsql stable
as $$
declare
  v app.campaigns;
begin
  select * into v from app.campaigns c where c.id = p_id and c.workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No campaign with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

-- Keeps positions dense (0..n-1) and puts p_phase_id (if given) at
-- p_position (clamped), the others keeping their order.
create or replace function app.place_campaign_phase(p_campaign_id uuid, p_phase_id uuid, p_position int)
returns void
language plpgsql volatile
as $$
declare
  v_ids uuid[];
  v_pos int;
begin
  v_ids := array(select p.id from app.campaign_phases p
                 where p.campaign_id = p_campaign_id and p.id is distinct from p_phase_id
                 order by p.position, p.created_at, p.id);
  if p_phase_id is not null then
    v_pos := least(greatest(coalesce(p_position, cardinality(v_ids)), 0), cardinality(v_ids));
    v_ids := v_ids[1:v_pos] || p_phase_id || v_ids[v_pos + 1:];
  end if;
  update app.campaign_phases p set position = x.ord - 1
  from unnest(v_ids) with ordinality x (id, ord)
  where p.id = x.id and p.position <> x.ord - 1;
end
$$;

create or replace function api.list_campaigns(p_search text, p_include_phases boolean) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(app.campaign_json(c, coalesce(p_include_phases, false))
                              order by c.starts_on nulls last, lower(c.name), c.id), '[]')
    from app.campaigns c
    where c.workspace_id = app.current_workspace_id()
      and (nullif(p_search, '') is null or c.name ilike '%' || app.like_escape(p_search) || '%'));
end
$$;

create or replace function api.get_campaign(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.campaign_json(app.campaign_visible(p_id), true);
end
$$;

-- Writes the phases of a campaign as listed (bulk save): items with an id
-- are updated, items without one created, phases not listed deleted;
-- positions follow the list. Ids must be phases of this campaign.
create or replace function app.save_campaign_phases(p_campaign_id uuid, p_phases jsonb) returns void
language plpgsql volatile
as $$
declare
  v_item jsonb;
  v_ord int;
  v_ids uuid[];
  v_foreign uuid[];
  v_phase app.campaign_phases;
begin
  if p_phases is null or jsonb_typeof(p_phases) <> 'array' then
    perform app.raise(400, 'VALIDATION_FAILED', 'phases must be an array.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.phases', 'code', 'type', 'message', 'must be array'))));
  end if;
  if jsonb_array_length(p_phases) > 50 then
    perform app.raise(409, 'PHASE_LIMIT_REACHED', 'A campaign has at most 50 phases.',
      jsonb_build_object('campaignId', p_campaign_id, 'limit', 50));
  end if;
  v_ids := array(select (e ->> 'id')::uuid from jsonb_array_elements(p_phases) e where e ? 'id' and e ->> 'id' is not null);
  if cardinality(v_ids) <> (select count(distinct x) from unnest(v_ids) x) then
    perform app.raise(400, 'VALIDATION_FAILED', 'A phase id appears more than once in phases.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'body.phases', 'code', 'duplicate_id', 'message', 'each id at most once'))));
  end if;
  v_foreign := array(select x from unnest(v_ids) x
                     where not exists (select 1 from app.campaign_phases p where p.id = x and p.campaign_id = p_campaign_id));
  if cardinality(v_foreign) > 0 then
    perform app.raise(400, 'PHASE_NOT_IN_CAMPAIGN', 'Some phase ids are not phases of this campaign; omit id to create a phase.',
      jsonb_build_object('phaseIds', to_jsonb(v_foreign), 'campaignId', p_campaign_id));
  end if;
  delete from app.campaign_phases p where p.campaign_id = p_campaign_id and not (p.id = any (v_ids));
  for v_item, v_ord in select e, ord from jsonb_array_elements(p_phases) with ordinality x (e, ord) loop
    if v_item ->> 'id' is not null then
      select * into v_phase from app.campaign_phases p where p.id = (v_item ->> 'id')::uuid;
      if v_item ? 'name' then v_phase.name := btrim(v_item ->> 'name'); end if;
      if v_item ? 'color' then v_phase.color := lower(v_item ->> 'color'); end if;
      if v_item ? 'startsOn' then v_phase.starts_on := (v_item ->> 'startsOn')::date; end if;
      if v_item ? 'endsOn' then v_phase.ends_on := (v_item ->> 'endsOn')::date; end if;
      perform app.check_date_range(v_phase.starts_on, v_phase.ends_on, format('body.phases.%s', v_ord - 1));
      update app.campaign_phases p set name = v_phase.name, color = v_phase.color,
        starts_on = v_phase.starts_on, ends_on = v_phase.ends_on, position = v_ord - 1
      where p.id = v_phase.id;
    else
      perform app.check_date_range((v_item ->> 'startsOn')::date, (v_item ->> 'endsOn')::date, format('body.phases.%s', v_ord - 1));
      insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, color, starts_on, ends_on, position)
      values (app.current_organization_id(), app.current_workspace_id(), p_campaign_id, btrim(v_item ->> 'name'),
        lower(v_item ->> 'color'), (v_item ->> 'startsOn')::date, (v_item ->> 'endsOn')::date, v_ord - 1);
    end if;
  end loop;
end
$$;

create or replace function api.create_campaign(p_name text, p_description text, p_color text,
  p_starts_on date, p_ends_on date, p_phases jsonb)
returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  perform app.require_role('editor');
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaigns (organization_id, workspace_id, name, description, color, starts_on, ends_on, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_name), p_description, lower(p_color),
    p_starts_on, p_ends_on, app.current_user_id())
  returning * into v;
  if p_phases is not null then
    perform app.save_campaign_phases(v.id, p_phases);
  end if;
  return app.campaign_json(v, true);
end
$$;

-- p_patch: the provided fields only; description, color and dates may be null.
create or replace function api.update_campaign(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  if v_patch ? 'name' then v.name := btrim(v_patch ->> 'name'); end if;
  if v_patch ? 'description' then v.description := v_patch ->> 'description'; end if;
  if v_patch ? 'color' then v.color := lower(v_patch ->> 'color'); end if;
  if v_patch ? 'startsOn' then v.starts_on := (v_patch ->> 'startsOn')::date; end if;
  if v_patch ? 'endsOn' then v.ends_on := (v_patch ->> 'endsOn')::date; end if;
  perform app.check_date_range(v.starts_on, v.ends_on);
  update app.campaigns c set name = v.name, description = v.description, color = v.color,
    starts_on = v.starts_on, ends_on = v.ends_on
  where c.id = p_id
  returning * into v;
  return app.campaign_json(v, true);
end
$$;

-- Deletes the campaign and its phases; its content stays, unassigned.
-- contentUnassigned counts the editions (what the campaign content page
-- listed), rootsUnassigned the content roots, ideas without editions included.
create or replace function api.delete_campaign(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
  v_editions int;
  v_roots int;
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_id);
  select count(*)::int into v_editions
  from app.content_items i join app.content_roots r on r.id = i.root_id
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id()
    and r.deleted_at is null and i.deleted_at is null;
  select count(*)::int into v_roots from app.content_roots r
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id() and r.deleted_at is null;
  update app.content_roots r set campaign_id = null, phase_id = null
  where r.campaign_id = p_id and r.workspace_id = app.current_workspace_id();
  delete from app.campaigns c where c.id = p_id;
  return jsonb_build_object('id', p_id, 'deleted', true, 'contentUnassigned', v_editions, 'rootsUnassigned', v_roots);
end
$$;

create or replace function api.list_campaign_phases(p_campaign_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.campaign_phases_json((app.campaign_visible(p_campaign_id)).id);
end
$$;

create or replace function api.create_campaign_phase(p_campaign_id uuid, p_name text, p_color text,
  p_starts_on date, p_ends_on date, p_position int)
returns jsonb
language plpgsql volatile
as $$
declare
  v_campaign app.campaigns;
  v app.campaign_phases;
begin
  perform app.require_role('editor');
  v_campaign := app.campaign_for_update(p_campaign_id);
  perform app.check_date_range(p_starts_on, p_ends_on);
  insert into app.campaign_phases (organization_id, workspace_id, campaign_id, name, color, starts_on, ends_on, position)
  values (app.current_organization_id(), app.current_workspace_id(), v_campaign.id, btrim(p_name), lower(p_color),
    p_starts_on, p_ends_on, 2147483647)
  returning * into v;
  perform app.place_campaign_phase(v_campaign.id, v.id, p_position);
  select * into v from app.campaign_phases p where p.id = v.id;
  return app.campaign_phase_json(v);
end
$$;

create or replace function app.campaign_phase_for_update(p_campaign_id uuid, p_phase_id uuid) returns app.campaign_phases
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
begin
  perform app.campaign_for_update(p_campaign_id);
  select * into v from app.campaign_phases p where p.id = p_phase_id and p.campaign_id = p_campaign_id for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No phase with this id in this campaign.',
      jsonb_build_object('campaignId', p_campaign_id, 'phaseId', p_phase_id));
  end if;
  return v;
end
$$;

create or replace function api.update_campaign_phase(p_campaign_id uuid, p_phase_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
  v_patch jsonb := coalesce(p_patch, '{}'::jsonb);
begin
  perform app.require_role('editor');
  v := app.campaign_phase_for_update(p_campaign_id, p_phase_id);
  if v_patch ? 'name' then v.name := btrim(v_patch ->> 'name'); end if;
  if v_patch ? 'color' then v.color := lower(v_patch ->> 'color'); end if;
  if v_patch ? 'startsOn' then v.starts_on := (v_patch ->> 'startsOn')::date; end if;
  if v_patch ? 'endsOn' then v.ends_on := (v_patch ->> 'endsOn')::date; end if;
  perform app.check_date_range(v.starts_on, v.ends_on);
  update app.campaign_phases p set name = v.name, color = v.color, starts_on = v.starts_on, ends_on = v.ends_on
  where p.id = v.id;
  if v_patch ? 'position' and v_patch ->> 'position' is not null then
    perform app.place_campaign_phase(p_campaign_id, v.id, (v_patch ->> 'position')::int);
  end if;
  select * into v from app.campaign_phases p where p.id = p_phase_id;
  return app.campaign_phase_json(v);
end
$$;

create or replace function api.delete_campaign_phase(p_campaign_id uuid, p_phase_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaign_phases;
  v_unassigned int;
begin
  perform app.require_role('editor');
  v := app.campaign_phase_for_update(p_campaign_id, p_phase_id);
  update app.content_roots r set phase_id = null
  where r.phase_id = v.id and r.workspace_id = app.current_workspace_id();
  get diagnostics v_unassigned = row_count;
  delete from app.campaign_phases p where p.id = v.id;
  perform app.place_campaign_phase(p_campaign_id, null, null);
  return jsonb_build_object('id', v.id, 'deleted', true, 'rootsUnassigned', v_unassigned);
end
$$;

create or replace function api.save_campaign_phases(p_campaign_id uuid, p_phases jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.campaigns;
begin
  perform app.require_role('editor');
  v := app.campaign_for_update(p_campaign_id);
  perform app.save_campaign_phases(v.id, p_phases);
  return app.campaign_json(v, true);
end
$$;

-- The campaign content page: the campaign's live editions, filtered,
-- ordered by their date (scheduled, else intended publish time, else
-- creation), then id. Returns { data, meta: { limit, offset, total, hasMore } }.
create or replace function api.list_campaign_content(p_campaign_id uuid, p_limit int, p_offset bigint,
  p_phase text, p_status text, p_platform text, p_sort_direction text)
returns jsonb
language plpgsql stable
as $$
declare
  v_campaign app.campaigns;
  v_phase uuid;
  v_none boolean := false;
  v_desc boolean := lower(coalesce(p_sort_direction, 'asc')) = 'desc';
  v_limit int := coalesce(p_limit, 100);
  v_offset bigint := coalesce(p_offset, 0);
  v_total bigint;
  v_items jsonb;
begin
  perform app.require_role('viewer');
  if v_limit not between 1 and 100 then
    perform app.raise(400, 'VALIDATION_FAILED', 'limit must be between 1 and 100.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.limit', 'code', 'range', 'message', 'must be between 1 and 100'))));
  end if;
  if v_offset not between 0 and 9007199254740991 then
    perform app.raise(400, 'VALIDATION_FAILED', 'offset must be between 0 and 9007199254740991.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.offset', 'code', 'range', 'message', 'must be between 0 and 9007199254740991'))));
  end if;
  if lower(coalesce(p_sort_direction, 'asc')) not in ('asc', 'desc') then
    perform app.raise(400, 'VALIDATION_FAILED', 'sortDirection must be asc or desc.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.sortDirection', 'code', 'enum', 'message', 'must be asc or desc'))));
  end if;
  if p_status is not null and p_status not in ('draft', 'pending_approval', 'rejected', 'scheduled', 'sent', 'failed', 'cancelled') then
    perform app.raise(400, 'VALIDATION_FAILED', 'Unknown status.',
      jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', 'query.status', 'code', 'enum', 'message', 'is not a content status'))));
  end if;
  v_campaign := app.campaign_visible(p_campaign_id);
  if nullif(p_phase, '') is not null then
    if lower(p_phase) = 'none' then
      v_none := true;
    else
      v_phase := p_phase::uuid;
      if not exists (select 1 from app.campaign_phases p where p.id = v_phase and p.campaign_id = v_campaign.id) then
        perform app.raise(404, 'NOT_FOUND', 'No phase with this id in this campaign.',
          jsonb_build_object('campaignId', v_campaign.id, 'phaseId', v_phase));
      end if;
    end if;
  end if;

  with editions as (
    select i.id, i.root_id, i.integration_id, g.platform, i.status, i.scheduled_at, i.intended_publish_at,
           i.sent_at, coalesce(i.caption, r.caption) as caption, r.title, r.organizational_title, r.phase_id,
           i.created_at, i.updated_at,
           coalesce(i.scheduled_at, i.intended_publish_at, i.created_at) as sort_at
    from app.content_items i
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
    where r.campaign_id = v_campaign.id
      and r.workspace_id = app.current_workspace_id() and i.workspace_id = app.current_workspace_id()
      and r.deleted_at is null and i.deleted_at is null
      and (not v_none or r.phase_id is null)
      and (v_phase is null or r.phase_id = v_phase)
      and (p_status is null or i.status = p_status)
      and (nullif(p_platform, '') is null or g.platform = p_platform)
  ),
  counted as (select e.*, count(*) over () as total from editions e),
  page as (
    select * from counted c
    order by case when not v_desc then c.sort_at end asc, case when not v_desc then c.id end asc,
             case when v_desc then c.sort_at end desc, case when v_desc then c.id end desc
    limit v_limit offset v_offset
  )
  select coalesce(jsonb_agg(jsonb_build_object(
           'id', p.id, 'rootId', p.root_id, 'integrationId', p.integration_id, 'platform', p.platform,
           'status', p.status, 'scheduledAt', p.scheduled_at, 'intendedPublishAt', p.intended_publish_at,
           'sentAt', p.sent_at, 'caption', p.caption, 'title', p.title, 'organizationalTitle', p.organizational_title,
           'phaseId', p.phase_id, 'createdAt', p.created_at, 'updatedAt', p.updated_at)
           order by case when not v_desc then p.sort_at end asc, case when not v_desc then p.id end asc,
                    case when v_desc then p.sort_at end desc, case when v_desc then p.id end desc), '[]'),
         max(p.total)
  into v_items, v_total
  from page p;
  if v_total is null then
    -- The page is empty (offset past the end, or nothing matches): count anyway.
    select count(*) into v_total
    from app.content_items i
    join app.content_roots r on r.id = i.root_id
    join app.integrations g on g.id = i.integration_id
    where r.campaign_id = v_campaign.id
      and r.workspace_id = app.current_workspace_id() and i.workspace_id = app.current_workspace_id()
      and r.deleted_at is null and i.deleted_at is null
      and (not v_none or r.phase_id is null)
      and (v_phase is null or r.phase_id = v_phase)
      and (p_status is null or i.status = p_status)
      and (nullif(p_platform, '') is null or g.platform = p_platform);
  end if;
  return jsonb_build_object('data', v_items,
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + jsonb_array_length(v_items) < v_total));
end
$$;

------------------------------------------------------------------------------
-- Execute grants for the functions of this file (new functions are
-- executable by PUBLIC until revoked).
------------------------------------------------------------------------------
do $$
declare
  f regprocedure;
begin
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where (n.nspname = 'api' and p.proname = any (array[
             'list_integrations', 'get_integration', 'integration_for_listing', 'create_integration', 'delete_integration',
             'list_taxonomy_terms', 'create_taxonomy_term', 'update_taxonomy_term', 'delete_taxonomy_term',
             'list_hashtag_groups', 'create_hashtag_group', 'update_hashtag_group', 'delete_hashtag_group',
             'list_campaigns', 'get_campaign', 'create_campaign', 'update_campaign', 'delete_campaign',
             'list_campaign_phases', 'create_campaign_phase', 'update_campaign_phase', 'delete_campaign_phase',
             'save_campaign_phases', 'list_campaign_content']))
       or (n.nspname = 'app' and p.proname = any (array[
             'check_date_range', 'like_escape', 'platform_rules_json', 'platform_capabilities_json', 'integration_json',
             'tg_content_items_check_integration', 'tg_taxonomy_normalize', 'normalize_hashtags', 'tg_hashtag_groups_normalize',
             'taxonomy_table', 'taxonomy_noun', 'hashtag_group_json', 'tg_campaign_phases_check_campaign',
             'tg_content_roots_check_campaign', 'campaign_phase_json', 'campaign_phases_json', 'campaign_json',
             'campaign_for_update', 'campaign_visible', 'place_campaign_phase', 'save_campaign_phases',
             'campaign_phase_for_update']))
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to pressroom_request, pressroom_definer', f);
  end loop;
end
$$;

--! split: 40-content.sql
-- Content (issue 3): the status machine, platform validation, versions, the
-- publish job, planning metadata, and the functions the content and
-- content-root routes call. Tables come from 10-planning-skeleton.sql.
--
-- Content status transitions (enforced by trigger content_items_20_guard,
-- whoever issues the INSERT or UPDATE):
--
--   from              to                  how
--   (none)            draft               POST content (intent draft or omitted)
--   (none)            scheduled           POST content (intent schedule / publish_now)
--   draft             scheduled           PATCH content/{id}/schedule (publish later)
--   scheduled         scheduled           reschedule (only scheduled_at changes)
--   scheduled         draft               POST content/{id}/revert-to-draft
--   scheduled         sent                the publishing engine
--   scheduled         failed              the publishing engine
--   failed            scheduled           retry (publishing engine)
--   draft, scheduled  cancelled           recurring occurrence / series cancel
--   draft             pending_approval    submitted for review (reviews)
--   pending_approval  draft               review withdrawn
--   pending_approval  scheduled           approved
--   pending_approval  rejected            changes requested
--   rejected          draft               reworked
--
-- Every other move is refused with PT409 INVALID_STATUS_TRANSITION.
-- Publishable fields (caption, thread, settings, media) change only in draft
-- or scheduled (PT400 INVALID_CONTENT_STATUS). A scheduled edition always
-- satisfies its platform's rules (constraint triggers *_50_check_publishable,
-- PT400 VALIDATION_FAILED with one entry per problem) and has exactly one live
-- job in pg-boss queue content.publish (trigger content_items_30_publish_job).

------------------------------------------------------------------------------
-- Columns and indexes
------------------------------------------------------------------------------
-- true: the edition's own media list (possibly empty) is what it publishes;
-- false: it publishes the root's media.
alter table app.content_items add column if not exists own_media boolean not null default false;

-- One live edition per channel of a root.
create unique index if not exists content_items_root_integration_key on app.content_items (root_id, integration_id)
  where deleted_at is null;
-- Tombstones for polling with `since`.
create index if not exists content_items_workspace_deleted_idx on app.content_items (workspace_id, deleted_at)
  where deleted_at is not null;
create index if not exists content_items_workspace_live_updated_idx on app.content_items (workspace_id, updated_at desc, id)
  where deleted_at is null;
-- Counts by status (the list's total, failed-count): index-only, with the
-- column the row-level-security policies read.
create index if not exists content_items_workspace_status_idx on app.content_items (workspace_id, status) include (organization_id)
  where deleted_at is null;
create index if not exists content_roots_workspace_live_idx on app.content_roots (workspace_id, updated_at desc, id)
  include (organization_id) where deleted_at is null;
create index if not exists content_roots_phase_id_idx on app.content_roots (phase_id);

------------------------------------------------------------------------------
-- Planning metadata: tags, pillars and formats assigned to a root.
------------------------------------------------------------------------------
create table if not exists app.content_root_tags (
  root_id uuid not null references app.content_roots (id) on delete cascade,
  tag_id uuid not null references app.tags (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (root_id, tag_id)
);
create index if not exists content_root_tags_tag_id_idx on app.content_root_tags (tag_id);
create index if not exists content_root_tags_workspace_id_idx on app.content_root_tags (workspace_id);
create index if not exists content_root_tags_organization_id_idx on app.content_root_tags (organization_id);

create table if not exists app.content_root_pillars (
  root_id uuid not null references app.content_roots (id) on delete cascade,
  pillar_id uuid not null references app.pillars (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (root_id, pillar_id)
);
create index if not exists content_root_pillars_pillar_id_idx on app.content_root_pillars (pillar_id);
create index if not exists content_root_pillars_workspace_id_idx on app.content_root_pillars (workspace_id);
create index if not exists content_root_pillars_organization_id_idx on app.content_root_pillars (organization_id);

create table if not exists app.content_root_formats (
  root_id uuid not null references app.content_roots (id) on delete cascade,
  format_id uuid not null references app.formats (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  created_at timestamptz not null default now(),
  primary key (root_id, format_id)
);
create index if not exists content_root_formats_format_id_idx on app.content_root_formats (format_id);
create index if not exists content_root_formats_workspace_id_idx on app.content_root_formats (workspace_id);
create index if not exists content_root_formats_organization_id_idx on app.content_root_formats (organization_id);

------------------------------------------------------------------------------
-- Versions: one row per change of an edition's publishable content (caption,
-- thread, settings, media; the root's caption and media where the edition
-- inherits them). Several changes in one transaction make one version.
------------------------------------------------------------------------------
create table if not exists app.content_versions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  content_item_id uuid not null references app.content_items (id) on delete cascade,
  version int not null check (version > 0),
  snapshot jsonb not null,
  source text not null check (source in ('create', 'update', 'root', 'restore')),
  restored_from int,
  xact xid8 not null default pg_current_xact_id(),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  unique (content_item_id, version)
);
create index if not exists content_versions_workspace_id_idx on app.content_versions (workspace_id);
create index if not exists content_versions_organization_id_idx on app.content_versions (organization_id);

-- History is append-only: a version changes only inside the transaction that
-- wrote it (several changes of one request make one version).
create or replace function app.tg_content_versions_guard() returns trigger
language plpgsql
as $$
begin
  if old.xact <> pg_current_xact_id() or new.content_item_id <> old.content_item_id
     or new.version <> old.version then
    perform app.raise(409, 'VERSION_IMMUTABLE', 'A recorded content version cannot be changed.',
      jsonb_build_object('contentId', old.content_item_id, 'version', old.version));
  end if;
  return new;
end
$$;
drop trigger if exists content_versions_10_guard on app.content_versions;
create trigger content_versions_10_guard before update on app.content_versions
  for each row execute function app.tg_content_versions_guard();

------------------------------------------------------------------------------
-- Row-level security for the new tables, as in the skeleton; and for every
-- content table a restrictive rule: a request without a role in the current
-- workspace sees and writes nothing, whatever context it forged.
------------------------------------------------------------------------------
do $$
declare
  t text;
  x text;
begin
  foreach t in array array['content_root_tags', 'content_root_pillars', 'content_root_formats', 'content_versions']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    -- Idempotent: the policies are made afresh.
    foreach x in array array['definer', 'worker', 'request_select', 'request_insert', 'request_update', 'request_delete',
                             'request_scope', 'request_role'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id())
                  and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I for delete to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_delete', t);
    -- As the skeleton's tables: even a forged workspace context reaches only the
    -- organization's workspaces the principal may really access.
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
  end loop;
  foreach t in array array['content_roots', 'content_root_media', 'content_items', 'content_item_media',
    'content_root_tags', 'content_root_pillars', 'content_root_formats', 'content_versions']
  loop
    execute format('drop policy if exists %I on app.%I', t || '_request_role', t);
    execute format($p$create policy %I on app.%I as restrictive to pressroom_request
      using (app.role_rank((select app.current_workspace_role())) >= 1)
      with check (app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_role', t);
  end loop;
end
$$;
grant select, insert, delete on app.content_root_tags, app.content_root_pillars, app.content_root_formats to pressroom_request;
-- Versions: never deleted by a request (they go with their edition).
grant select, insert, update on app.content_versions to pressroom_request;

------------------------------------------------------------------------------
-- Small helpers
--
-- Note: PL/pgSQL code here calls the SQL-language helpers that read tables
-- through queries (`select f() into v`, `return (select f())`), never as
-- bare expressions: a SQL function evaluated as a PL/pgSQL "simple
-- expression" keeps its plan, row-level security included, for the rest of
-- the transaction, which goes wrong when a transaction changes role (jobs,
-- tests).
------------------------------------------------------------------------------
-- The transition table above, as a predicate.
create or replace function app.content_transition_allowed(p_from text, p_to text) returns boolean
language sql immutable parallel safe
as $$
  select (p_from, p_to) in (
    ('draft', 'scheduled'), ('scheduled', 'scheduled'), ('scheduled', 'draft'), ('scheduled', 'sent'),
    ('scheduled', 'failed'), ('failed', 'scheduled'), ('draft', 'cancelled'), ('scheduled', 'cancelled'),
    ('draft', 'pending_approval'), ('pending_approval', 'draft'), ('pending_approval', 'scheduled'),
    ('pending_approval', 'rejected'), ('rejected', 'draft'))
$$;

-- Workflow status shown on list items (and filterable): the status as a
-- planner reads it. A scheduled edition whose time has come is `publishing`.
create or replace function app.content_workflow_status(p_status text, p_scheduled_at timestamptz) returns text
language sql stable parallel safe
as $$
  select case p_status
    when 'draft' then 'draft'
    when 'pending_approval' then 'in_review'
    when 'rejected' then 'changes_requested'
    when 'scheduled' then case when p_scheduled_at <= now() then 'publishing' else 'scheduled' end
    when 'sent' then 'published'
    when 'failed' then 'failed'
    when 'cancelled' then 'cancelled'
  end
$$;

-- Review lifecycle of an edition, as far as the content status tells it
-- (reviews fill in more later).
create or replace function app.content_review_lifecycle(p_status text) returns jsonb
language sql immutable parallel safe
as $$
  select case p_status
    when 'pending_approval' then jsonb_build_object('phase', 'review', 'state', 'pending', 'blocksPublishing', true)
    when 'rejected' then jsonb_build_object('phase', 'decided', 'state', 'changes_requested', 'blocksPublishing', true)
    else jsonb_build_object('phase', 'none', 'state', 'not_requested', 'blocksPublishing', false)
  end
$$;

create or replace function app.field_problem(p_field text, p_code text, p_message text) returns jsonb
language sql immutable parallel safe
as $$ select jsonb_build_object('field', p_field, 'code', p_code, 'message', p_message) $$;

create or replace function app.raise_field_problems(p_problems jsonb, p_message text default null, p_extra jsonb default '{}')
returns void
language plpgsql
as $$
begin
  if p_problems is not null and jsonb_array_length(p_problems) > 0 then
    perform app.raise(400, 'VALIDATION_FAILED',
      coalesce(p_message, 'The content breaks a rule; see details.fields.'),
      p_extra || jsonb_build_object('fields', p_problems));
  end if;
end
$$;

create or replace function app.jsonb_uuids(p jsonb) returns uuid[]
language sql immutable
as $$
  select case when p is null or jsonb_typeof(p) <> 'array' then null
    else array(select e::uuid from jsonb_array_elements_text(p) with ordinality as x (e, n) order by n) end
$$;

create or replace function app.raise_not_found(p_what text, p_id uuid) returns void
language plpgsql
as $$
begin
  perform app.raise(404, 'NOT_FOUND', format('No %s with this id in this workspace.', p_what),
    jsonb_build_object('id', p_id));
end
$$;

-- Media ids of an edition: its own list, or its root's.
create or replace function app.content_item_own_media_ids(p_item_id uuid) returns uuid[]
language sql stable
as $$ select coalesce(array_agg(media_id order by position), '{}') from app.content_item_media where content_item_id = p_item_id $$;

create or replace function app.content_root_media_ids(p_root_id uuid) returns uuid[]
language sql stable
as $$ select coalesce(array_agg(media_id order by position), '{}') from app.content_root_media where root_id = p_root_id $$;

create or replace function app.content_item_media_ids(p_item_id uuid, p_root_id uuid, p_own boolean) returns uuid[]
language sql stable
as $$
  select case when p_own then app.content_item_own_media_ids(p_item_id) else app.content_root_media_ids(p_root_id) end
$$;

-- Only the settings the platform declares (no stray keys, no secrets).
create or replace function app.sanitize_settings(p_platform text, p_settings jsonb) returns jsonb
language sql stable
as $$
  select coalesce(jsonb_object_agg(k, v), '{}')
  from jsonb_each(case when jsonb_typeof(p_settings) = 'object' then p_settings else '{}' end) s (k, v)
  where exists (select 1 from app.platforms p, jsonb_array_elements(p.required_settings) d
                where p.code = p_platform and d ->> 'name' = s.k)
$$;

------------------------------------------------------------------------------
-- Platform rules
------------------------------------------------------------------------------
-- Problems of a settings object for a platform: unknown keys, wrong types,
-- values outside the declared enum or length; with p_require, missing
-- required settings too.
create or replace function app.settings_problems(p_platform text, p_settings jsonb, p_prefix text, p_require boolean)
returns jsonb
language plpgsql stable
as $$
declare
  v_decl jsonb;
  v_out jsonb := '[]';
  v_key text;
  v_d jsonb;
  v_val jsonb;
begin
  select required_settings into v_decl from app.platforms where code = p_platform;
  v_decl := coalesce(v_decl, '[]');
  if p_settings is null then
    p_settings := '{}';
  end if;
  if jsonb_typeof(p_settings) <> 'object' then
    return jsonb_build_array(app.field_problem(p_prefix || 'settings', 'type', 'must be an object'));
  end if;
  for v_key, v_val in select key, value from jsonb_each(p_settings) loop
    select e into v_d from jsonb_array_elements(v_decl) e where e ->> 'name' = v_key;
    if v_d is null then
      v_out := v_out || app.field_problem(p_prefix || 'settings.' || v_key, 'unknown_setting',
        format('%s does not take a setting named %s.', p_platform, v_key));
      continue;
    end if;
    if jsonb_typeof(v_val) = 'null' then
      continue;
    end if;
    if coalesce(v_d ->> 'type', 'string') = 'string' and jsonb_typeof(v_val) <> 'string' then
      v_out := v_out || app.field_problem(p_prefix || 'settings.' || v_key, 'invalid_setting', 'must be a string');
    elsif v_d ? 'enum' and not ((v_d -> 'enum') @> jsonb_build_array(v_val)) then
      v_out := v_out || app.field_problem(p_prefix || 'settings.' || v_key, 'invalid_setting',
        format('must be one of %s', (select string_agg(x, ', ') from jsonb_array_elements_text(v_d -> 'enum') x)));
    elsif v_d ? 'maxLength' and length(v_val #>> '{}') > (v_d ->> 'maxLength')::int then
      v_out := v_out || app.field_problem(p_prefix || 'settings.' || v_key, 'too_long',
        format('must be at most %s characters', v_d ->> 'maxLength'));
    end if;
  end loop;
  if p_require then
    for v_d in select e from jsonb_array_elements(v_decl) e
               where not coalesce((e ->> 'optional')::boolean, false) loop
      if coalesce(btrim(p_settings ->> (v_d ->> 'name')), '') = '' then
        v_out := v_out || app.field_problem(p_prefix || 'settings.' || (v_d ->> 'name'), 'required_setting_missing',
          format('%s needs the setting %s (%s).', p_platform, v_d ->> 'name', coalesce(v_d ->> 'description', v_d ->> 'type')));
      end if;
    end loop;
  end if;
  return v_out;
end
$$;

-- Problems of a media reference list at write time: every id must be a media
-- item of the workspace that is not in the bin.
create or replace function app.media_ref_problems(p_workspace_id uuid, p_ids uuid[], p_field text) returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(app.field_problem(p_field || '.' || (x.n - 1),
           case when m.id is null then 'media_not_found' else 'media_deleted' end,
           case when m.id is null then 'no media item with this id in this workspace'
                else 'this media item is in the bin; restore it first' end) order by x.n), '[]')
  from unnest(coalesce(p_ids, '{}')) with ordinality as x (id, n)
  left join app.media_items m on m.id = x.id and m.workspace_id = p_workspace_id
  where m.id is null or m.state <> 'active'
$$;

-- Media rules of a platform applied to one list of media.
create or replace function app.media_rule_problems(p_platform app.platforms, p_workspace_id uuid, p_ids uuid[], p_field text)
returns jsonb
language plpgsql stable
as $$
declare
  r jsonb := p_platform.media_rules;
  v_out jsonb := '[]';
  v_n int := coalesce(cardinality(p_ids), 0);
  v_min int := coalesce((r ->> 'minItems')::int, 0);
  v_max int := coalesce((r ->> 'maxItems')::int, 2147483647);
  v_m record;
  v_videos int := 0;
  v_gifs int := 0;
  v_images int := 0;
  v_limit bigint;
begin
  if v_n = 0 and (coalesce((r ->> 'requiresMedia')::boolean, false) or v_min > 0) then
    v_out := v_out || app.field_problem(p_field, 'media_required',
      format('%s needs at least %s media item(s).', p_platform.name, greatest(v_min, 1)));
  elsif v_n < v_min then
    v_out := v_out || app.field_problem(p_field, 'too_few_media',
      format('%s needs at least %s media items; there are %s.', p_platform.name, v_min, v_n));
  end if;
  if v_n > v_max then
    v_out := v_out || app.field_problem(p_field, 'too_many_media',
      format('%s takes at most %s media items; there are %s.', p_platform.name, v_max, v_n));
  end if;
  for v_m in
    select x.n, m.id, m.type, m.file_size, m.state
    from unnest(coalesce(p_ids, '{}')) with ordinality as x (id, n)
    left join app.media_items m on m.id = x.id and m.workspace_id = p_workspace_id
    order by x.n
  loop
    if v_m.id is null then
      v_out := v_out || app.field_problem(p_field || '.' || (v_m.n - 1), 'media_not_found', 'no media item with this id in this workspace');
      continue;
    end if;
    if v_m.state <> 'active' then
      v_out := v_out || app.field_problem(p_field || '.' || (v_m.n - 1), 'media_deleted', 'this media item is in the bin');
    end if;
    if not coalesce((r -> 'kinds') @> to_jsonb(v_m.type), false) then
      v_out := v_out || app.field_problem(p_field || '.' || (v_m.n - 1), 'media_kind_not_allowed',
        format('%s does not take %s media.', p_platform.name, v_m.type));
    end if;
    v_limit := case when v_m.type = 'video' then (r ->> 'videoMaxBytes')::bigint else (r ->> 'imageMaxBytes')::bigint end;
    if v_limit is not null and v_limit > 0 and v_m.file_size > v_limit then
      v_out := v_out || app.field_problem(p_field || '.' || (v_m.n - 1), 'media_too_large',
        format('%s takes %s files of at most %s bytes; this one has %s.', p_platform.name, v_m.type, v_limit, v_m.file_size));
    end if;
    case v_m.type
      when 'video' then v_videos := v_videos + 1;
      when 'gif' then v_gifs := v_gifs + 1;
      else v_images := v_images + 1;
    end case;
  end loop;
  if r ? 'maxVideos' and v_videos > (r ->> 'maxVideos')::int then
    v_out := v_out || app.field_problem(p_field, 'too_many_videos',
      format('%s takes at most %s video(s) per post.', p_platform.name, r ->> 'maxVideos'));
  end if;
  if r ? 'maxGifs' and v_gifs > (r ->> 'maxGifs')::int then
    v_out := v_out || app.field_problem(p_field, 'too_many_gifs',
      format('%s takes at most %s GIF(s) per post.', p_platform.name, r ->> 'maxGifs'));
  end if;
  if r ? 'maxImages' and v_images > (r ->> 'maxImages')::int then
    v_out := v_out || app.field_problem(p_field, 'too_many_images',
      format('%s takes at most %s image(s) per post.', p_platform.name, r ->> 'maxImages'));
  end if;
  if not coalesce((r ->> 'mixedKinds')::boolean, true)
     and (sign(v_videos) + sign(v_gifs) + sign(v_images)) > 1 then
    v_out := v_out || app.field_problem(p_field, 'mixed_media_not_allowed',
      format('%s does not mix images, videos and GIFs in one post.', p_platform.name));
  end if;
  return v_out;
end
$$;

-- Every rule of the edition's platform that the edition, as it would be
-- published now, breaks. Empty array: publishable.
create or replace function app.content_item_problems(p_item_id uuid, p_prefix text default '') returns jsonb
language plpgsql stable
as $$
declare
  v record;
  v_platform app.platforms;
  v_out jsonb := '[]';
  v_caption text;
  v_media uuid[];
  v_msg jsonb;
  v_i int := 0;
begin
  select i.id, i.workspace_id, i.root_id, i.kind, i.caption, i.thread, i.settings, i.own_media,
         r.caption as root_caption, g.platform, g.status as integration_status, g.deleted_at as integration_deleted_at
  into v
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = p_item_id;
  if v.id is null then
    return '[]';
  end if;
  select * into v_platform from app.platforms where code = v.platform;
  if v.integration_deleted_at is not null or v.integration_status <> 'active' then
    v_out := v_out || app.field_problem(p_prefix || 'integrationId', 'integration_unavailable',
      'The channel is disconnected or deleted; reconnect it or choose another channel.');
  end if;
  -- Articles carry a body of their own; their rules belong to the articles
  -- engine. Only the channel is checked here.
  if v.kind = 'article' then
    return v_out;
  end if;
  v_caption := coalesce(v.caption, v.root_caption, '');
  select app.content_item_media_ids(v.id, v.root_id, v.own_media) into v_media;
  if length(v_caption) > v_platform.caption_max_length then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'caption_too_long',
      format('%s captions have at most %s characters; this one has %s.', v_platform.name,
             v_platform.caption_max_length, length(v_caption)));
  end if;
  if btrim(v_caption) = '' and cardinality(v_media) = 0 then
    v_out := v_out || app.field_problem(p_prefix || 'caption', 'content_empty', 'A post needs a caption or media.');
  end if;
  v_out := v_out || app.media_rule_problems(v_platform, v.workspace_id, v_media, p_prefix || 'mediaIds');
  if jsonb_array_length(v.thread) > 0 and not coalesce((v_platform.capabilities ->> 'threads')::boolean, false) then
    v_out := v_out || app.field_problem(p_prefix || 'thread', 'threads_not_supported',
      format('%s does not publish threads.', v_platform.name));
  end if;
  for v_msg in select e from jsonb_array_elements(v.thread) e loop
    if length(coalesce(v_msg ->> 'caption', '')) > v_platform.caption_max_length then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i || '.caption', 'caption_too_long',
        format('%s captions have at most %s characters.', v_platform.name, v_platform.caption_max_length));
    end if;
    if btrim(coalesce(v_msg ->> 'caption', '')) = '' and coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) = 0 then
      v_out := v_out || app.field_problem(p_prefix || 'thread.' || v_i, 'content_empty', 'A thread message needs a caption or media.');
    end if;
    if coalesce(jsonb_array_length(v_msg -> 'mediaIds'), 0) > 0 then
      -- Thread messages follow the same media rules, except that media is optional.
      v_out := v_out || (
        select coalesce(jsonb_agg(p), '[]') from jsonb_array_elements(
          app.media_rule_problems(v_platform, v.workspace_id, app.jsonb_uuids(v_msg -> 'mediaIds'),
                                  p_prefix || 'thread.' || v_i || '.mediaIds')) p
        where p ->> 'code' not in ('media_required', 'too_few_media'));
    end if;
    v_i := v_i + 1;
  end loop;
  v_out := v_out || app.settings_problems(v.platform, v.settings, p_prefix, true);
  return v_out;
end
$$;

-- Raises VALIDATION_FAILED listing every problem of the given scheduled
-- editions (each with its field prefix).
create or replace function app.assert_publishable(p_item_ids uuid[], p_prefixes text[]) returns void
language plpgsql stable
as $$
declare
  v_out jsonb := '[]';
  v_ids uuid[] := '{}';
  v_problems jsonb;
begin
  for i in 1 .. coalesce(cardinality(p_item_ids), 0) loop
    if exists (select 1 from app.content_items where id = p_item_ids[i] and status = 'scheduled' and deleted_at is null) then
      v_problems := app.content_item_problems(p_item_ids[i], coalesce(p_prefixes[i], ''));
      if jsonb_array_length(v_problems) > 0 then
        v_out := v_out || v_problems;
        v_ids := v_ids || p_item_ids[i];
      end if;
    end if;
  end loop;
  perform app.raise_field_problems(v_out, 'The content breaks its platform''s rules; see details.fields.',
    jsonb_build_object('contentIds', to_jsonb(v_ids)));
end
$$;

------------------------------------------------------------------------------
-- Versions
------------------------------------------------------------------------------
create or replace function app.content_snapshot(p_item_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'caption', i.caption,
    'effectiveCaption', coalesce(i.caption, r.caption),
    'thread', i.thread,
    'settings', i.settings,
    'ownMedia', i.own_media,
    'mediaIds', to_jsonb(app.content_item_own_media_ids(i.id)),
    'effectiveMediaIds', to_jsonb(app.content_item_media_ids(i.id, i.root_id, i.own_media)))
  from app.content_items i join app.content_roots r on r.id = i.root_id
  where i.id = p_item_id
$$;

-- What a version means for publishing: two snapshots with the same
-- effective content are the same version.
create or replace function app.snapshot_effective(p jsonb) returns jsonb
language sql immutable
as $$ select jsonb_build_object('c', p -> 'effectiveCaption', 't', p -> 'thread', 's', p -> 'settings', 'm', p -> 'effectiveMediaIds') $$;

-- Records the edition's current content as a version when it differs from
-- the last one; a second change in the same transaction amends the version
-- that transaction wrote. p_force records a version even without a change
-- (a restore always makes a new version). Returns the current version.
create or replace function app.record_content_version(p_item_id uuid, p_source text, p_restored_from int default null,
  p_force boolean default false)
returns int
language plpgsql volatile
as $$
declare
  v_item record;
  v_snap jsonb;
  v_last app.content_versions;
  v_next int;
begin
  select id, workspace_id, organization_id, version, deleted_at into v_item
  from app.content_items where id = p_item_id for update;
  if v_item.id is null or v_item.deleted_at is not null then
    return null;
  end if;
  select app.content_snapshot(p_item_id) into v_snap;
  select * into v_last from app.content_versions where content_item_id = p_item_id order by version desc limit 1;
  if v_last.id is not null and v_last.xact = pg_current_xact_id() then
    update app.content_versions
    set snapshot = v_snap,
        restored_from = coalesce(p_restored_from, restored_from),
        source = case when p_restored_from is not null then 'restore' else source end
    where id = v_last.id;
    return v_last.version;
  end if;
  if v_last.id is not null and not p_force
     and app.snapshot_effective(v_last.snapshot) = app.snapshot_effective(v_snap) then
    return v_last.version;
  end if;
  v_next := coalesce(v_last.version, 0) + 1;
  insert into app.content_versions (organization_id, workspace_id, content_item_id, version, snapshot, source,
    restored_from, created_by)
  values (v_item.organization_id, v_item.workspace_id, p_item_id, v_next, v_snap,
    case when v_last.id is null then 'create' else p_source end, p_restored_from, app.current_user_id());
  if v_item.version <> v_next then
    update app.content_items set version = v_next where id = p_item_id;
  end if;
  return v_next;
end
$$;

------------------------------------------------------------------------------
-- Triggers on app.content_items
------------------------------------------------------------------------------
-- 20: the status machine, immutable references, edits only while editable,
-- no scheduling in the past; freezes what was published.
create or replace function app.tg_content_items_guard() returns trigger
language plpgsql
as $$
declare
  v_root_caption text;
  v_becomes_live boolean;
begin
  if tg_op = 'INSERT' then
    if new.status not in ('draft', 'scheduled') then
      perform app.raise(409, 'INVALID_STATUS_TRANSITION',
        format('New content starts as draft or scheduled, not %s.', new.status),
        jsonb_build_object('from', null, 'to', new.status));
    end if;
    if not exists (select 1 from app.content_roots r where r.id = new.root_id and r.workspace_id = new.workspace_id
                   and r.organization_id = new.organization_id) then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('rootId', 'not_found', 'no content root with this id in this workspace')));
    end if;
    if not exists (select 1 from app.integrations g where g.id = new.integration_id and g.workspace_id = new.workspace_id
                   and g.deleted_at is null) then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('integrationId', 'integration_not_found',
        'no connected channel with this id in this workspace')));
    end if;
    new.publish_job_id := null;
    if new.status = 'scheduled' and new.scheduled_at < now() then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')));
    end if;
    return new;
  end if;

  if old.deleted_at is not null and new.deleted_at is not null then
    perform app.raise(409, 'CONTENT_DELETED', 'This content was deleted and cannot change.',
      jsonb_build_object('contentId', old.id));
  end if;
  if new.id <> old.id or new.root_id <> old.root_id or new.integration_id <> old.integration_id
     or new.workspace_id <> old.workspace_id or new.organization_id <> old.organization_id or new.kind <> old.kind then
    perform app.raise(400, 'IMMUTABLE_FIELD',
      'An edition''s root, channel, kind and workspace cannot change; create another edition instead.',
      jsonb_build_object('contentId', old.id));
  end if;
  if new.status <> old.status and not app.content_transition_allowed(old.status, new.status) then
    perform app.raise(409, 'INVALID_STATUS_TRANSITION',
      format('Content cannot move from %s to %s.', old.status, new.status),
      jsonb_build_object('contentId', old.id, 'from', old.status, 'to', new.status));
  end if;
  if (new.caption is distinct from old.caption or new.thread <> old.thread or new.settings <> old.settings
      or new.own_media <> old.own_media)
     and old.status not in ('draft', 'scheduled') then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft or scheduled content can be edited; this content is %s.', old.status),
      jsonb_build_object('contentId', old.id, 'status', old.status, 'allowedStatuses', jsonb_build_array('draft', 'scheduled')));
  end if;
  -- Published content keeps what it published, whatever happens to its root.
  if new.status = 'sent' and old.status <> 'sent' then
    new.sent_at := coalesce(new.sent_at, now());
    if new.caption is null then
      select caption into v_root_caption from app.content_roots where id = new.root_id;
      new.caption := coalesce(v_root_caption, '');
    end if;
    new.own_media := true;
  end if;
  v_becomes_live := new.status = 'scheduled' and new.deleted_at is null
    and (old.status <> 'scheduled' or old.deleted_at is not null or new.scheduled_at is distinct from old.scheduled_at);
  if v_becomes_live and new.scheduled_at < now() then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled')),
      'A time in the past cannot be scheduled.');
  end if;
  return new;
end
$$;
drop trigger if exists content_items_20_guard on app.content_items;
create trigger content_items_20_guard before insert or update on app.content_items
  for each row execute function app.tg_content_items_guard();

-- 30: exactly one live publish job per scheduled edition, written in the same
-- transaction as the change. SECURITY DEFINER (owned by pressroom_definer,
-- the one role that may write pg-boss's tables); as a trigger function it
-- cannot be called directly.
create or replace function app.tg_content_items_publish_job() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_live boolean := new.status = 'scheduled' and new.deleted_at is null;
  v_was boolean := tg_op = 'UPDATE' and old.status = 'scheduled' and old.deleted_at is null;
  v_state text;
  v_queue record;
  v_start timestamptz;
  v_job uuid;
begin
  -- Nobody but this trigger sets the job id.
  new.publish_job_id := case when tg_op = 'UPDATE' then old.publish_job_id end;
  if v_was and (not v_live or new.scheduled_at is distinct from old.scheduled_at) then
    if old.publish_job_id is not null then
      select state::text into v_state from pgboss.job where name = 'content.publish' and id = old.publish_job_id;
      if v_state = 'active' and new.status not in ('sent', 'failed') then
        perform app.raise(409, 'PUBLISHING_IN_PROGRESS',
          'This content is being published right now; wait for the outcome, then try again.',
          jsonb_build_object('contentId', old.id));
      end if;
      -- The last attempt may have reached the platform: its outcome is
      -- recorded first (resolve-publishing-result), so nothing is published twice.
      if new.status not in ('sent', 'failed') and exists (
           select 1 from app.publishing_states ps
           where ps.content_item_id = old.id and ps.state = 'awaiting_confirmation'
             and ps.job_id is not distinct from old.publish_job_id) then
        perform app.raise(409, 'PUBLISHING_AWAITS_CONFIRMATION',
          'The outcome of the last publish attempt is unknown; record it with resolve-publishing-result first.',
          jsonb_build_object('contentId', old.id));
      end if;
      update pgboss.job set state = 'cancelled', completed_on = now()
      where name = 'content.publish' and id = old.publish_job_id and state in ('created', 'retry');
    end if;
    -- A sent or failed edition keeps the id of the job that published it.
    if new.status not in ('sent', 'failed') then
      new.publish_job_id := null;
    end if;
  end if;
  if v_live and (not v_was or new.scheduled_at is distinct from old.scheduled_at) then
    select * into v_queue from pgboss.queue where name = 'content.publish';
    if v_queue.name is null then
      raise exception 'pg-boss queue content.publish is not installed (server/jobs/queues.ts installQueues)';
    end if;
    v_start := greatest(new.scheduled_at, now());
    v_job := gen_random_uuid();
    insert into pgboss.job (id, name, data, priority, start_after, singleton_key, expire_seconds, deletion_seconds,
      keep_until, retry_limit, retry_delay, retry_backoff, retry_delay_max, policy, dead_letter, heartbeat_seconds)
    values (v_job, 'content.publish',
      jsonb_build_object('contentId', new.id, 'workspaceId', new.workspace_id, 'version', new.version),
      0, v_start, new.id::text, v_queue.expire_seconds, v_queue.deletion_seconds,
      v_start + v_queue.retention_seconds * interval '1 second', v_queue.retry_limit, v_queue.retry_delay,
      v_queue.retry_backoff, v_queue.retry_delay_max, v_queue.policy, v_queue.dead_letter, v_queue.heartbeat_seconds);
    new.publish_job_id := v_job;
  end if;
  return new;
end
$$;
alter function app.tg_content_items_publish_job() owner to pressroom_definer;
drop trigger if exists content_items_30_publish_job on app.content_items;
create trigger content_items_30_publish_job before insert or update on app.content_items
  for each row execute function app.tg_content_items_publish_job();

-- 40: a published edition that inherited its root's media keeps a copy.
create or replace function app.tg_content_items_freeze_media() returns trigger
language plpgsql
as $$
begin
  insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
  select new.id, m.media_id, m.workspace_id, m.organization_id, m.position
  from app.content_root_media m where m.root_id = new.root_id
    and not exists (select 1 from app.content_item_media x where x.content_item_id = new.id);
  return null;
end
$$;
drop trigger if exists content_items_40_freeze_media on app.content_items;
create trigger content_items_40_freeze_media after update on app.content_items
  for each row when (new.status = 'sent' and old.status <> 'sent' and not old.own_media)
  execute function app.tg_content_items_freeze_media();

-- 50: a scheduled edition satisfies its platform's rules. Deferrable, so one
-- request may change caption and media in several statements and be checked
-- once (api functions defer, check with field names, then set immediate).
create or replace function app.tg_check_publishable() returns trigger
language plpgsql
as $$
declare
  v_ids uuid[];
  v_id uuid;
  v_problems jsonb;
begin
  if tg_table_name = 'content_items' then
    v_ids := array[new.id];
  elsif tg_table_name = 'content_item_media' then
    v_ids := array[case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end];
  elsif tg_table_name = 'content_roots' then
    v_ids := array(select id from app.content_items
                   where root_id = new.id and caption is null and status = 'scheduled' and deleted_at is null);
  elsif tg_table_name = 'content_root_media' then
    v_ids := array(select id from app.content_items
                   where root_id = case when tg_op = 'DELETE' then old.root_id else new.root_id end
                     and not own_media and status = 'scheduled' and deleted_at is null);
  end if;
  foreach v_id in array coalesce(v_ids, '{}') loop
    if exists (select 1 from app.content_items where id = v_id and status = 'scheduled' and deleted_at is null) then
      v_problems := app.content_item_problems(v_id, '');
      if jsonb_array_length(v_problems) > 0 then
        perform app.raise_field_problems(v_problems, 'Scheduled content must satisfy its platform''s rules; see details.fields.',
          jsonb_build_object('contentIds', jsonb_build_array(v_id)));
      end if;
    end if;
  end loop;
  return null;
end
$$;
drop trigger if exists content_items_50_check_publishable_insert on app.content_items;
create constraint trigger content_items_50_check_publishable_insert after insert on app.content_items
  deferrable initially immediate
  for each row when (new.status = 'scheduled' and new.deleted_at is null)
  execute function app.tg_check_publishable();
drop trigger if exists content_items_50_check_publishable_update on app.content_items;
create constraint trigger content_items_50_check_publishable_update after update on app.content_items
  deferrable initially immediate
  for each row when (new.status = 'scheduled' and new.deleted_at is null and (
    old.status <> new.status or old.deleted_at is not null or old.scheduled_at is distinct from new.scheduled_at
    or old.caption is distinct from new.caption or old.thread <> new.thread or old.settings <> new.settings
    or old.own_media <> new.own_media))
  execute function app.tg_check_publishable();

-- 60: versions.
create or replace function app.tg_content_items_record_version() returns trigger
language plpgsql
as $$
begin
  perform app.record_content_version(new.id, case when tg_op = 'INSERT' then 'create' else 'update' end);
  return null;
end
$$;
drop trigger if exists content_items_60_record_version_insert on app.content_items;
create trigger content_items_60_record_version_insert after insert on app.content_items
  for each row execute function app.tg_content_items_record_version();
drop trigger if exists content_items_60_record_version_update on app.content_items;
create trigger content_items_60_record_version_update after update on app.content_items
  for each row when (new.deleted_at is null and (old.caption is distinct from new.caption or old.thread <> new.thread
    or old.settings <> new.settings or old.own_media <> new.own_media))
  execute function app.tg_content_items_record_version();

------------------------------------------------------------------------------
-- Triggers on the media lists and the root
------------------------------------------------------------------------------
-- Media of an edition: same workspace, and only while the edition is
-- editable (our own triggers may freeze a published edition's media).
create or replace function app.tg_content_item_media_guard() returns trigger
language plpgsql
as $$
declare
  v_item record;
  v_item_id uuid := case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end;
begin
  select id, status, workspace_id, organization_id, deleted_at into v_item from app.content_items where id = v_item_id;
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
$$;
drop trigger if exists content_item_media_20_guard on app.content_item_media;
create trigger content_item_media_20_guard before insert or update or delete on app.content_item_media
  for each row execute function app.tg_content_item_media_guard();

create or replace function app.tg_content_root_media_guard() returns trigger
language plpgsql
as $$
begin
  if not exists (select 1 from app.content_roots r where r.id = new.root_id and r.workspace_id = new.workspace_id
                 and r.organization_id = new.organization_id)
     or not exists (select 1 from app.media_items m where m.id = new.media_id and m.workspace_id = new.workspace_id) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('mediaIds', 'media_not_found', 'no media item with this id in this workspace')));
  end if;
  return new;
end
$$;
drop trigger if exists content_root_media_20_guard on app.content_root_media;
create trigger content_root_media_20_guard before insert or update on app.content_root_media
  for each row execute function app.tg_content_root_media_guard();

-- A root stays in its workspace. (Campaign and phase consistency is
-- checked by content_roots_05_check_campaign of 20-integrations-taxonomy-campaigns.sql.)
create or replace function app.tg_content_roots_guard() returns trigger
language plpgsql
as $$
begin
  if new.workspace_id <> old.workspace_id or new.organization_id <> old.organization_id then
    perform app.raise(400, 'IMMUTABLE_FIELD', 'A content root cannot move to another workspace.',
      jsonb_build_object('rootId', old.id));
  end if;
  return new;
end
$$;
drop trigger if exists content_roots_20_guard on app.content_roots;
create trigger content_roots_20_guard before update on app.content_roots
  for each row execute function app.tg_content_roots_guard();

create or replace function app.tg_content_root_taxonomy_guard() returns trigger
language plpgsql
as $$
declare
  v_ref uuid;
  v_found boolean;
begin
  v_ref := case tg_table_name when 'content_root_tags' then (to_jsonb(new) ->> 'tag_id')::uuid
                              when 'content_root_pillars' then (to_jsonb(new) ->> 'pillar_id')::uuid
                              else (to_jsonb(new) ->> 'format_id')::uuid end;
  v_found := case tg_table_name
    when 'content_root_tags' then exists (select 1 from app.tags t where t.id = v_ref and t.workspace_id = new.workspace_id)
    when 'content_root_pillars' then exists (select 1 from app.pillars t where t.id = v_ref and t.workspace_id = new.workspace_id)
    else exists (select 1 from app.formats t where t.id = v_ref and t.workspace_id = new.workspace_id) end;
  if not v_found or not exists (select 1 from app.content_roots r where r.id = new.root_id and r.workspace_id = new.workspace_id
                                and r.organization_id = new.organization_id) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem(
      case tg_table_name when 'content_root_tags' then 'tagIds' when 'content_root_pillars' then 'pillarIds' else 'formatIds' end,
      'not_found', 'no such item in this workspace')));
  end if;
  return new;
end
$$;
drop trigger if exists content_root_tags_20_guard on app.content_root_tags;
create trigger content_root_tags_20_guard before insert or update on app.content_root_tags
  for each row execute function app.tg_content_root_taxonomy_guard();
drop trigger if exists content_root_pillars_20_guard on app.content_root_pillars;
create trigger content_root_pillars_20_guard before insert or update on app.content_root_pillars
  for each row execute function app.tg_content_root_taxonomy_guard();
drop trigger if exists content_root_formats_20_guard on app.content_root_formats;
create trigger content_root_formats_20_guard before insert or update on app.content_root_formats
  for each row execute function app.tg_content_root_taxonomy_guard();

-- A change of the root shows on its editions: versions for those that
-- inherit the caption, and updated_at for all (so `since` sees them).
create or replace function app.tg_content_roots_propagate() returns trigger
language plpgsql
as $$
declare
  v_id uuid;
begin
  if new.caption is distinct from old.caption then
    for v_id in select id from app.content_items where root_id = new.id and caption is null and deleted_at is null loop
      perform app.record_content_version(v_id, 'root');
    end loop;
  end if;
  update app.content_items set updated_at = now() where root_id = new.id and deleted_at is null;
  return null;
end
$$;
drop trigger if exists content_roots_60_propagate on app.content_roots;
create trigger content_roots_60_propagate after update on app.content_roots
  for each row execute function app.tg_content_roots_propagate();

create or replace function app.tg_content_root_media_record_versions() returns trigger
language plpgsql
as $$
declare
  v_id uuid;
begin
  for v_id in select id from app.content_items
              where root_id = case when tg_op = 'DELETE' then old.root_id else new.root_id end
                and not own_media and deleted_at is null loop
    perform app.record_content_version(v_id, 'root');
  end loop;
  return null;
end
$$;
drop trigger if exists content_root_media_60_record_versions on app.content_root_media;
create trigger content_root_media_60_record_versions after insert or update or delete on app.content_root_media
  for each row execute function app.tg_content_root_media_record_versions();

create or replace function app.tg_content_item_media_record_version() returns trigger
language plpgsql
as $$
begin
  perform app.record_content_version(case when tg_op = 'DELETE' then old.content_item_id else new.content_item_id end, 'update');
  return null;
end
$$;
drop trigger if exists content_item_media_60_record_version on app.content_item_media;
create trigger content_item_media_60_record_version after insert or update or delete on app.content_item_media
  for each row execute function app.tg_content_item_media_record_version();

drop trigger if exists content_item_media_50_check_publishable on app.content_item_media;
create constraint trigger content_item_media_50_check_publishable after insert or update or delete on app.content_item_media
  deferrable initially immediate
  for each row execute function app.tg_check_publishable();
drop trigger if exists content_roots_50_check_publishable on app.content_roots;
create constraint trigger content_roots_50_check_publishable after update on app.content_roots
  deferrable initially immediate
  for each row when (new.caption is distinct from old.caption)
  execute function app.tg_check_publishable();
drop trigger if exists content_root_media_50_check_publishable on app.content_root_media;
create constraint trigger content_root_media_50_check_publishable after insert or update or delete on app.content_root_media
  deferrable initially immediate
  for each row execute function app.tg_check_publishable();

-- API functions change content in several statements and check once.
create or replace function app.defer_content_checks() returns void
language plpgsql
as $$
begin
  set constraints app.content_items_50_check_publishable_insert, app.content_items_50_check_publishable_update,
    app.content_item_media_50_check_publishable, app.content_roots_50_check_publishable,
    app.content_root_media_50_check_publishable deferred;
end
$$;

create or replace function app.undefer_content_checks() returns void
language plpgsql
as $$
begin
  set constraints app.content_items_50_check_publishable_insert, app.content_items_50_check_publishable_update,
    app.content_item_media_50_check_publishable, app.content_roots_50_check_publishable,
    app.content_root_media_50_check_publishable immediate;
end
$$;

------------------------------------------------------------------------------
-- JSON shapes
------------------------------------------------------------------------------
-- Lists and the board build their JSON set-based, from a page of ids: every
-- table is read once per page (a helper called per row would re-run the
-- row-level-security sub-plans for every row).

-- Recurring metadata of roots, one row per root in a series
-- (50-recurring.sql replaces this with the real lookup).
create or replace function app.content_recurring_metadata_batch(p_root_ids uuid[]) returns table (root_id uuid, metadata jsonb)
language sql stable
as $$ select null::uuid, null::jsonb where false $$;

create or replace function app.content_recurring_metadata(p_root_id uuid) returns jsonb
language sql stable
as $$ select b.metadata from app.content_recurring_metadata_batch(array[p_root_id]) b $$;

create or replace function app.content_root_metadata_json(p_root_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'title', r.organizational_title,
    'campaignId', r.campaign_id,
    'phaseId', r.phase_id,
    'tagIds', to_jsonb(array(select tag_id from app.content_root_tags where root_id = r.id order by tag_id)),
    'pillarIds', to_jsonb(array(select pillar_id from app.content_root_pillars where root_id = r.id order by pillar_id)),
    'formatIds', to_jsonb(array(select format_id from app.content_root_formats where root_id = r.id order by format_id)))
  from app.content_roots r where r.id = p_root_id
$$;

-- A list item from values already read (no table access).
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
    'recurringMetadata', p_recurring)
  || case when p_review then jsonb_build_object('reviewLifecycle', app.content_review_lifecycle(i.status)) else '{}' end
$$;

-- List items for a page of edition ids, in order; deleted editions as
-- tombstones.
create or replace function app.content_list_items_json(p_ids uuid[], p_review boolean) returns jsonb
language plpgsql stable
as $$
begin
  -- PL/pgSQL, so the plan is prepared once per connection.
  return (
  with x as (select id, n from unnest(p_ids) with ordinality x (id, n)),
  rec as (select b.root_id, b.metadata from app.content_recurring_metadata_batch(
            array(select i.root_id from x join app.content_items i on i.id = x.id)) b)
  select coalesce(jsonb_agg(
    case when i.deleted_at is not null
      then jsonb_build_object('id', i.id, 'rootId', i.root_id, 'deleted', true, 'deletedAt', i.deleted_at)
      else app.content_list_item_json(i, r, g.platform,
             case when i.own_media then (select count(*) from app.content_item_media m where m.content_item_id = i.id)
                  else (select count(*) from app.content_root_media m where m.root_id = i.root_id) end::int,
             rec.metadata, p_review)
    end order by x.n), '[]')
  from x
  join app.content_items i on i.id = x.id
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  left join rec on rec.root_id = i.root_id);
end
$$;

create or replace function app.content_media_json(p_ids uuid[]) returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(jsonb_build_object(
      'id', m.id, 'type', m.type, 'filename', m.filename, 'contentType', m.content_type,
      'fileSize', m.file_size, 'width', m.width, 'height', m.height, 'durationMs', m.duration_ms,
      'altText', m.alt_text, 'state', m.state) order by x.n), '[]')
  from unnest(coalesce(p_ids, '{}')) with ordinality as x (id, n)
  join app.media_items m on m.id = x.id
$$;

create or replace function app.content_detail_json(p_id uuid) returns jsonb
language sql stable
as $$
  select app.content_list_item_json(i, r, g.platform, cardinality(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
           app.content_recurring_metadata(i.root_id), true) || jsonb_build_object(
    'integration', jsonb_build_object('id', g.id, 'platform', g.platform, 'connector', g.connector, 'name', g.name,
                                      'username', g.username, 'status', case when g.deleted_at is not null then 'deleted' else g.status end),
    'captionOverride', i.caption,
    'rootCaption', r.caption,
    'ownMedia', i.own_media,
    'mediaIds', to_jsonb(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
    'media', app.content_media_json(app.content_item_media_ids(i.id, i.root_id, i.own_media)),
    'thread', (select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                 'mediaIds', coalesce(e -> 'mediaIds', '[]'),
                 'media', app.content_media_json(app.jsonb_uuids(coalesce(e -> 'mediaIds', '[]')))) order by n), '[]')
               from jsonb_array_elements(i.thread) with ordinality t (e, n)),
    'settings', app.sanitize_settings(g.platform, i.settings),
    'metadata', app.content_root_metadata_json(r.id),
    'notes', r.notes #>> '{}',
    'platformPostId', i.platform_post_id)
  from app.content_items i
  join app.content_roots r on r.id = i.root_id
  join app.integrations g on g.id = i.integration_id
  where i.id = p_id
$$;

create or replace function app.content_edition_json(i app.content_items) returns jsonb
language sql stable
as $$ select jsonb_build_object('id', i.id, 'integrationId', i.integration_id, 'status', i.status, 'scheduledAt', i.scheduled_at) $$;

-- Mutation result: the root and the editions the call touched.
create or replace function app.content_mutation_json(p_root_id uuid, p_item_ids uuid[]) returns jsonb
language sql stable
as $$
  select jsonb_build_object('rootId', p_root_id,
    'editions', coalesce((select jsonb_agg(app.content_edition_json(i) order by x.n)
                          from unnest(p_item_ids) with ordinality x (id, n)
                          join app.content_items i on i.id = x.id), '[]'))
$$;

-- Roots (with their live editions) for a page of root ids, in order.
create or replace function app.content_roots_json(p_ids uuid[]) returns jsonb
language plpgsql stable
as $$
begin
  -- PL/pgSQL, so the plan is prepared once per connection; each table is
  -- read once for the whole page.
  return (
    with x as (select id, n from unnest(p_ids) with ordinality x (id, n)),
    rec as (select b.root_id, b.metadata from app.content_recurring_metadata_batch(p_ids) b),
    rm as (select m.root_id, array_agg(m.media_id order by m.position) as ids
           from app.content_root_media m where m.root_id = any (p_ids) group by m.root_id),
    tg as (select t.root_id, array_agg(t.tag_id order by t.tag_id) as ids
           from app.content_root_tags t where t.root_id = any (p_ids) group by t.root_id),
    pl as (select t.root_id, array_agg(t.pillar_id order by t.pillar_id) as ids
           from app.content_root_pillars t where t.root_id = any (p_ids) group by t.root_id),
    fm as (select t.root_id, array_agg(t.format_id order by t.format_id) as ids
           from app.content_root_formats t where t.root_id = any (p_ids) group by t.root_id),
    it as (select i.* from app.content_items i where i.root_id = any (p_ids) and i.deleted_at is null),
    im as (select m.content_item_id, array_agg(m.media_id order by m.position) as ids
           from app.content_item_media m where m.content_item_id in (select id from it where own_media)
           group by m.content_item_id),
    ed as (select it.root_id, jsonb_agg(jsonb_build_object(
               'id', it.id, 'integrationId', it.integration_id, 'platform', g.platform, 'kind', it.kind,
               'status', it.status, 'workflowStatus', app.content_workflow_status(it.status, it.scheduled_at),
               'scheduledAt', it.scheduled_at, 'intendedPublishAt', it.intended_publish_at,
               'caption', coalesce(it.caption, r.caption), 'captionOverride', it.caption,
               'mediaIds', to_jsonb(case when it.own_media then coalesce(im.ids, '{}') else coalesce(rm.ids, '{}') end),
               'version', it.version, 'updatedAt', it.updated_at) order by g.platform, it.created_at, it.id) as editions
           from it
           join app.content_roots r on r.id = it.root_id
           join app.integrations g on g.id = it.integration_id
           left join im on im.content_item_id = it.id
           left join rm on rm.root_id = it.root_id
           group by it.root_id)
    select coalesce(jsonb_agg(jsonb_build_object(
      'id', r.id,
      'title', r.title,
      'caption', r.caption,
      'organizationalTitle', r.organizational_title,
      'mediaIds', to_jsonb(coalesce(rm.ids, '{}')),
      'campaignId', r.campaign_id,
      'phaseId', r.phase_id,
      'metadata', jsonb_build_object('title', r.organizational_title, 'campaignId', r.campaign_id, 'phaseId', r.phase_id,
                    'tagIds', to_jsonb(coalesce(tg.ids, '{}')), 'pillarIds', to_jsonb(coalesce(pl.ids, '{}')),
                    'formatIds', to_jsonb(coalesce(fm.ids, '{}'))),
      'notes', r.notes #>> '{}',
      'recurringMetadata', rec.metadata,
      'createdAt', r.created_at,
      'updatedAt', r.updated_at,
      'editions', coalesce(ed.editions, '[]')) order by x.n), '[]')
    from x
    join app.content_roots r on r.id = x.id
    left join rm on rm.root_id = r.id
    left join tg on tg.root_id = r.id
    left join pl on pl.root_id = r.id
    left join fm on fm.root_id = r.id
    left join ed on ed.root_id = r.id
    left join rec on rec.root_id = r.id);
end
$$;

create or replace function app.content_root_json(p_root_id uuid) returns jsonb
language sql stable
as $$ select app.content_roots_json(array[p_root_id]) -> 0 $$;

------------------------------------------------------------------------------
-- Shared steps of the API functions
------------------------------------------------------------------------------
-- The live edition with this id in the current workspace, locked; 404 otherwise.
create or replace function app.content_item_for_update(p_id uuid) returns app.content_items
language plpgsql
as $$
declare
  v app.content_items;
begin
  select * into v from app.content_items
  where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null
  for update;
  if v.id is null then
    perform app.raise_not_found('content', p_id);
  end if;
  return v;
end
$$;

create or replace function app.require_content_status(v app.content_items, p_allowed text[]) returns void
language plpgsql
as $$
begin
  if not (v.status = any (p_allowed)) then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('This operation needs content that is %s; this content is %s.', array_to_string(p_allowed, ' or '), v.status),
      jsonb_build_object('contentId', v.id, 'status', v.status, 'allowedStatuses', to_jsonb(p_allowed)));
  end if;
end
$$;

-- Write-time problems of a channel-level content payload (caption, mediaIds,
-- thread, settings) for a platform; rules that apply at scheduling are not
-- checked here.
create or replace function app.content_payload_problems(p_platform text, p_payload jsonb, p_prefix text) returns jsonb
language plpgsql stable
as $$
declare
  v_out jsonb := '[]';
  v_msg jsonb;
  v_i int := 0;
begin
  if p_payload ? 'mediaIds' and jsonb_typeof(p_payload -> 'mediaIds') = 'array' then
    v_out := v_out || (select app.media_ref_problems(app.current_workspace_id(), app.jsonb_uuids(p_payload -> 'mediaIds'), p_prefix || 'mediaIds'));
  end if;
  if jsonb_typeof(p_payload -> 'thread') = 'array' then
    for v_msg in select e from jsonb_array_elements(p_payload -> 'thread') e loop
      v_out := v_out || (select app.media_ref_problems(app.current_workspace_id(), app.jsonb_uuids(coalesce(v_msg -> 'mediaIds', '[]')),
                                                       p_prefix || 'thread.' || v_i || '.mediaIds'));
      v_i := v_i + 1;
    end loop;
  end if;
  if p_payload ? 'settings' and p_platform is not null then
    v_out := v_out || app.settings_problems(p_platform, coalesce(p_payload -> 'settings', '{}'), p_prefix, false);
  end if;
  return v_out;
end
$$;

create or replace function app.content_normalize_thread(p jsonb) returns jsonb
language sql immutable
as $$
  select coalesce(jsonb_agg(jsonb_build_object('caption', coalesce(e ->> 'caption', ''),
                                               'mediaIds', coalesce(e -> 'mediaIds', '[]')) order by n), '[]')
  from jsonb_array_elements(case when jsonb_typeof(p) = 'array' then p else '[]' end) with ordinality t (e, n)
$$;

create or replace function app.replace_item_media(p_item app.content_items, p_ids uuid[]) returns void
language plpgsql
as $$
begin
  delete from app.content_item_media where content_item_id = p_item.id;
  insert into app.content_item_media (content_item_id, media_id, workspace_id, organization_id, position)
  select p_item.id, x.id, p_item.workspace_id, p_item.organization_id, (x.n - 1)::int
  from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n);
end
$$;

create or replace function app.replace_root_media(p_root_id uuid, p_ids uuid[]) returns void
language plpgsql
as $$
begin
  delete from app.content_root_media where root_id = p_root_id;
  insert into app.content_root_media (root_id, media_id, workspace_id, organization_id, position)
  select p_root_id, x.id, r.workspace_id, r.organization_id, (x.n - 1)::int
  from unnest(coalesce(p_ids, '{}')) with ordinality x (id, n)
  cross join app.content_roots r where r.id = p_root_id;
end
$$;

-- Problems of the planning references in a body (campaignId, phaseId,
-- tagIds, pillarIds, formatIds), looked up in the current workspace.
create or replace function app.planning_problems(p_body jsonb, p_current_campaign uuid default null) returns jsonb
language plpgsql stable
as $$
declare
  v_out jsonb := '[]';
  v_ws uuid := app.current_workspace_id();
  v_campaign uuid := case when p_body ? 'campaignId' then (p_body ->> 'campaignId')::uuid else p_current_campaign end;
  v_phase_campaign uuid;
begin
  if p_body ->> 'campaignId' is not null
     and not exists (select 1 from app.campaigns where id = (p_body ->> 'campaignId')::uuid and workspace_id = v_ws) then
    v_out := v_out || app.field_problem('campaignId', 'campaign_not_found', 'no campaign with this id in this workspace');
  end if;
  if p_body ->> 'phaseId' is not null then
    select campaign_id into v_phase_campaign from app.campaign_phases
    where id = (p_body ->> 'phaseId')::uuid and workspace_id = v_ws;
    if v_phase_campaign is null then
      v_out := v_out || app.field_problem('phaseId', 'phase_not_found', 'no campaign phase with this id in this workspace');
    elsif v_campaign is not null and v_phase_campaign <> v_campaign then
      v_out := v_out || app.field_problem('phaseId', 'phase_not_in_campaign', 'this phase belongs to another campaign');
    end if;
  end if;
  v_out := v_out || coalesce((
    select jsonb_agg(app.field_problem('tagIds.' || (x.n - 1), 'not_found', 'no tag with this id in this workspace') order by x.n)
    from unnest(app.jsonb_uuids(p_body -> 'tagIds')) with ordinality x (id, n)
    where not exists (select 1 from app.tags t where t.id = x.id and t.workspace_id = v_ws)), '[]');
  v_out := v_out || coalesce((
    select jsonb_agg(app.field_problem('pillarIds.' || (x.n - 1), 'not_found', 'no pillar with this id in this workspace') order by x.n)
    from unnest(app.jsonb_uuids(p_body -> 'pillarIds')) with ordinality x (id, n)
    where not exists (select 1 from app.pillars t where t.id = x.id and t.workspace_id = v_ws)), '[]');
  v_out := v_out || coalesce((
    select jsonb_agg(app.field_problem('formatIds.' || (x.n - 1), 'not_found', 'no format with this id in this workspace') order by x.n)
    from unnest(app.jsonb_uuids(p_body -> 'formatIds')) with ordinality x (id, n)
    where not exists (select 1 from app.formats t where t.id = x.id and t.workspace_id = v_ws)), '[]');
  return v_out;
end
$$;

-- Replaces the root's tags, pillars and formats named in the body (omitted
-- lists stay as they are).
create or replace function app.apply_root_taxonomy(p_root app.content_roots, p_body jsonb) returns void
language plpgsql
as $$
begin
  if p_body ? 'tagIds' then
    delete from app.content_root_tags where root_id = p_root.id;
    insert into app.content_root_tags (root_id, tag_id, workspace_id, organization_id)
    select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
    from unnest(coalesce(app.jsonb_uuids(p_body -> 'tagIds'), '{}')) x;
  end if;
  if p_body ? 'pillarIds' then
    delete from app.content_root_pillars where root_id = p_root.id;
    insert into app.content_root_pillars (root_id, pillar_id, workspace_id, organization_id)
    select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
    from unnest(coalesce(app.jsonb_uuids(p_body -> 'pillarIds'), '{}')) x;
  end if;
  if p_body ? 'formatIds' then
    delete from app.content_root_formats where root_id = p_root.id;
    insert into app.content_root_formats (root_id, format_id, workspace_id, organization_id)
    select distinct p_root.id, x, p_root.workspace_id, p_root.organization_id
    from unnest(coalesce(app.jsonb_uuids(p_body -> 'formatIds'), '{}')) x;
  end if;
end
$$;

-- Creates one edition of a root from a channel payload; returns its id.
create or replace function app.create_edition(p_root app.content_roots, p_channel jsonb, p_status text,
  p_scheduled_at timestamptz, p_intended_at timestamptz)
returns uuid
language plpgsql
as $$
declare
  v_item app.content_items;
begin
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, status, scheduled_at,
    intended_publish_at, caption, thread, settings, own_media, created_by)
  values (p_root.organization_id, p_root.workspace_id, p_root.id, (p_channel ->> 'integrationId')::uuid, p_status,
    p_scheduled_at, p_intended_at, p_channel ->> 'caption', app.content_normalize_thread(p_channel -> 'thread'),
    coalesce(nullif(p_channel -> 'settings', 'null'), '{}'), coalesce(jsonb_typeof(p_channel -> 'mediaIds') = 'array', false),
    app.current_user_id())
  returning * into v_item;
  if jsonb_typeof(p_channel -> 'mediaIds') = 'array' then
    perform app.replace_item_media(v_item, app.jsonb_uuids(p_channel -> 'mediaIds'));
  end if;
  return v_item.id;
end
$$;

------------------------------------------------------------------------------
-- API: content
------------------------------------------------------------------------------
create or replace function api.create_content(p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_channels jsonb := coalesce(p_body -> 'channels', '[]');
  v_scheduled_at timestamptz := (p_body ->> 'scheduledAt')::timestamptz;
  v_intended_at timestamptz := (p_body ->> 'intendedPublishAt')::timestamptz;
  v_problems jsonb := '[]';
  v_channel jsonb;
  v_i int := 0;
  v_platform text;
  v_root app.content_roots;
  v_ids uuid[] := '{}';
  v_prefixes text[] := '{}';
  v_status text;
  v_at timestamptz;
begin
  perform app.require_role('editor');
  if v_intent = 'schedule' and v_scheduled_at is null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'required', 'intent schedule needs scheduledAt');
  end if;
  if v_intent <> 'schedule' and v_scheduled_at is not null then
    v_problems := v_problems || app.field_problem('scheduledAt', 'not_allowed',
      'scheduledAt goes with intent schedule; a draft takes intendedPublishAt, publish_now publishes at once');
  end if;
  if v_intent = 'schedule' and v_scheduled_at < now() then
    v_problems := v_problems || app.field_problem('scheduledAt', 'in_past', 'a time in the past cannot be scheduled');
  end if;
  if v_intent <> 'draft' and v_intended_at is not null then
    v_problems := v_problems || app.field_problem('intendedPublishAt', 'not_allowed', 'intendedPublishAt is the planned time of a draft');
  end if;
  if v_intent <> 'draft' and jsonb_array_length(v_channels) = 0 then
    v_problems := v_problems || app.field_problem('channels', 'required', format('intent %s needs at least one channel', v_intent));
  end if;
  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    if v_intent = 'publish_now' then
      v_problems := v_problems || app.field_problem('recurrence', 'not_allowed', 'a recurring series is scheduled or drafted, not published now');
    elsif jsonb_array_length(v_channels) = 0 then
      v_problems := v_problems || app.field_problem('channels', 'required', 'a recurring series needs at least one channel');
    elsif v_intent = 'draft' and v_intended_at is null then
      v_problems := v_problems || app.field_problem('intendedPublishAt', 'required', 'a recurring series of drafts needs intendedPublishAt as its first time');
    end if;
  end if;
  v_problems := v_problems || (select app.media_ref_problems(app.current_workspace_id(), app.jsonb_uuids(p_body -> 'mediaIds'), 'mediaIds'));
  v_problems := v_problems || app.planning_problems(p_body);
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    select g.platform into v_platform from app.integrations g
    where g.id = (v_channel ->> 'integrationId')::uuid and g.workspace_id = app.current_workspace_id() and g.deleted_at is null;
    if v_platform is null then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'integration_not_found',
        'no connected channel with this id in this workspace');
    end if;
    if exists (select 1 from jsonb_array_elements(v_channels) with ordinality e (x, n)
               where x ->> 'integrationId' = v_channel ->> 'integrationId' and n - 1 < v_i) then
      v_problems := v_problems || app.field_problem('channels.' || v_i || '.integrationId', 'duplicate_channel',
        'a root has one edition per channel; this channel is listed twice');
    end if;
    v_problems := v_problems || app.content_payload_problems(v_platform, v_channel, 'channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.raise_field_problems(v_problems, 'The request is not valid; see details.fields.');

  insert into app.content_roots (organization_id, workspace_id, title, caption, organizational_title, notes,
    campaign_id, phase_id, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), p_body ->> 'title', p_body ->> 'caption',
    p_body ->> 'organizationalTitle', case when p_body ->> 'notes' is not null then to_jsonb(p_body ->> 'notes') end,
    coalesce((p_body ->> 'campaignId')::uuid,
             (select campaign_id from app.campaign_phases where id = (p_body ->> 'phaseId')::uuid)),
    (p_body ->> 'phaseId')::uuid, app.current_user_id())
  returning * into v_root;
  if jsonb_typeof(p_body -> 'mediaIds') = 'array' then
    perform app.replace_root_media(v_root.id, app.jsonb_uuids(p_body -> 'mediaIds'));
  end if;
  perform app.apply_root_taxonomy(v_root, p_body);

  if p_body ? 'recurrence' and p_body -> 'recurrence' <> 'null' then
    return app.create_recurring_series(v_root, p_body);
  end if;

  v_status := case v_intent when 'draft' then 'draft' else 'scheduled' end;
  v_at := case v_intent when 'schedule' then v_scheduled_at when 'publish_now' then now() end;
  perform app.defer_content_checks();
  v_i := 0;
  for v_channel in select e from jsonb_array_elements(v_channels) e loop
    v_ids := v_ids || app.create_edition(v_root, v_channel, v_status, v_at, v_intended_at);
    v_prefixes := v_prefixes || ('channels.' || v_i || '.');
    v_i := v_i + 1;
  end loop;
  perform app.assert_publishable(v_ids, v_prefixes);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v_root.id, v_ids));
end
$$;

-- The content list. Returns { items, meta }. The page is chosen by one
-- query on app.content_items (its indexes serve the default order and the
-- filters), then built set-based.
create or replace function api.list_content(p_query jsonb) returns jsonb
language plpgsql stable
as $$
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
  if v_status is null and v_workflow is null then
    v_live := v_live || $w$ and i.status in ('draft', 'scheduled', 'sent', 'failed')$w$;
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
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration;
  execute format('select array(select i.id from app.content_items i %s where %s order by %s limit $6 offset $7)',
                 v_join, v_where, v_order)
  into v_ids
  using app.current_workspace_id(), v_since, v_status, v_workflow, v_integration, v_limit, v_offset;
  return jsonb_build_object('items', (select app.content_list_items_json(v_ids, v_review)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total,
                               'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$$;

create or replace function api.content_failed_count() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return jsonb_build_object('count', (select count(*) from app.content_items
    where workspace_id = app.current_workspace_id() and status = 'failed' and deleted_at is null));
end
$$;

create or replace function api.content_pending_approval_count() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return jsonb_build_object('count', (select count(*) from app.content_items
    where workspace_id = app.current_workspace_id() and status = 'pending_approval' and deleted_at is null));
end
$$;

create or replace function api.get_content(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_items where id = p_id and workspace_id = app.current_workspace_id()
                 and deleted_at is null) then
    perform app.raise_not_found('content', p_id);
  end if;
  return (select app.content_detail_json(p_id));
end
$$;

create or replace function api.update_content(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  v_platform text;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
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

create or replace function api.delete_content(p_id uuid) returns void
language plpgsql volatile
as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  update app.content_items set deleted_at = now() where id = v.id;
end
$$;

create or replace function api.schedule_content(p_id uuid, p_scheduled_at timestamptz) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
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

create or replace function api.revert_content_to_draft(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  v_scope uuid[];
  v_expected uuid[];
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
  where r.id = (select i.root_id from app.content_items i where i.id = p_id and i.workspace_id = app.current_workspace_id())
  for update;
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['scheduled']);
  -- The scope: every scheduled edition of the root, locked.
  perform 1 from app.content_items where root_id = v.root_id and deleted_at is null for update;
  v_scope := array(select id from app.content_items
                   where root_id = v.root_id and status = 'scheduled' and deleted_at is null order by id);
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
  where id = any (v_scope);
  return (select app.content_mutation_json(v.root_id, v_scope));
end
$$;

create or replace function api.set_content_intended_publish_time(p_id uuid, p_at timestamptz) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['draft', 'pending_approval']);
  update app.content_items set intended_publish_at = p_at where id = v.id returning * into v;
  return jsonb_build_object('contentId', v.id, 'rootId', v.root_id, 'status', v.status,
    'intendedPublishAt', v.intended_publish_at, 'updatedAt', v.updated_at);
end
$$;

create or replace function api.update_content_metadata(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  v_root app.content_roots;
  v_campaign uuid;
  v_phase uuid;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  perform app.require_content_status(v, array['draft', 'scheduled', 'sent']);
  select * into v_root from app.content_roots where id = v.root_id for update;
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
$$;

create or replace function api.update_content_notes(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  v_root app.content_roots;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  update app.content_roots set notes = case when p_body ->> 'notes' is null then null else to_jsonb(p_body ->> 'notes') end
  where id = v.root_id returning * into v_root;
  return jsonb_build_object('contentId', v.id, 'rootId', v_root.id, 'notes', v_root.notes #>> '{}',
                            'updatedAt', v_root.updated_at);
end
$$;

create or replace function app.content_version_json(v app.content_versions, p_current int) returns jsonb
language sql stable
as $$
  select jsonb_build_object('version', v.version, 'current', v.version = p_current, 'source', v.source,
    'restoredFrom', v.restored_from, 'createdAt', v.created_at, 'createdBy', v.created_by,
    'caption', v.snapshot -> 'caption', 'effectiveCaption', v.snapshot -> 'effectiveCaption',
    'thread', v.snapshot -> 'thread', 'settings', v.snapshot -> 'settings', 'ownMedia', v.snapshot -> 'ownMedia',
    'mediaIds', v.snapshot -> 'mediaIds', 'effectiveMediaIds', v.snapshot -> 'effectiveMediaIds')
$$;

create or replace function api.list_content_versions(p_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v_current int;
begin
  perform app.require_role('viewer');
  select version into v_current from app.content_items
  where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null;
  if v_current is null then
    perform app.raise_not_found('content', p_id);
  end if;
  return (select coalesce(jsonb_agg(app.content_version_json(x, v_current) order by x.version desc), '[]')
          from app.content_versions x where x.content_item_id = p_id);
end
$$;

create or replace function api.restore_content_version(p_id uuid, p_version int, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.content_items;
  v_snap jsonb;
  v_missing jsonb;
  v_new int;
begin
  perform app.require_role('editor');
  v := app.content_item_for_update(p_id);
  select snapshot into v_snap from app.content_versions where content_item_id = v.id and version = p_version;
  if v_snap is null then
    perform app.raise(404, 'NOT_FOUND', format('Content %s has no version %s.', v.id, p_version),
      jsonb_build_object('contentId', v.id, 'version', p_version));
  end if;
  perform app.require_content_status(v, array['draft', 'scheduled']);
  if p_body ? 'expectedCurrentVersion' and (p_body ->> 'expectedCurrentVersion')::int <> v.version then
    perform app.raise(409, 'VERSION_CONFLICT',
      format('The content is at version %s, not %s; reload and retry.', v.version, p_body ->> 'expectedCurrentVersion'),
      jsonb_build_object('contentId', v.id, 'version', v.version, 'expectedCurrentVersion', p_body -> 'expectedCurrentVersion'));
  end if;
  select jsonb_agg(x) into v_missing
  from jsonb_array_elements_text(coalesce(v_snap -> 'mediaIds', '[]')) x
  where not exists (select 1 from app.media_items m where m.id = x::uuid and m.workspace_id = v.workspace_id);
  if v_missing is not null then
    perform app.raise(409, 'VERSION_MEDIA_UNAVAILABLE',
      'This version uses media that is no longer in the library; it cannot be restored.',
      jsonb_build_object('contentId', v.id, 'version', p_version, 'mediaIds', v_missing));
  end if;
  perform app.defer_content_checks();
  update app.content_items set
    caption = v_snap ->> 'caption',
    thread = coalesce(v_snap -> 'thread', '[]'),
    settings = coalesce(v_snap -> 'settings', '{}'),
    own_media = coalesce((v_snap ->> 'ownMedia')::boolean, false)
  where id = v.id returning * into v;
  perform app.replace_item_media(v, app.jsonb_uuids(coalesce(v_snap -> 'mediaIds', '[]')));
  v_new := app.record_content_version(v.id, 'restore', p_version, true);
  perform app.assert_publishable(array[v.id], array['']);
  perform app.undefer_content_checks();
  return (select app.content_mutation_json(v.root_id, array[v.id]))
    || jsonb_build_object('contentId', v.id, 'restoredFromVersion', p_version, 'version', v_new);
end
$$;

------------------------------------------------------------------------------
-- API: content roots
------------------------------------------------------------------------------
create or replace function api.list_content_roots(p_limit int, p_offset bigint) returns jsonb
language plpgsql stable
as $$
declare
  v_total bigint;
  v_ids uuid[];
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.content_roots
  where workspace_id = app.current_workspace_id() and deleted_at is null;
  v_ids := array(select r.id from app.content_roots r
                 where r.workspace_id = app.current_workspace_id() and r.deleted_at is null
                 order by r.updated_at desc, r.id desc
                 limit p_limit offset p_offset);
  return jsonb_build_object('items', (select app.content_roots_json(v_ids)),
    'meta', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
                               'hasMore', p_offset + cardinality(v_ids) < v_total));
end
$$;

create or replace function api.get_content_root(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.content_roots where id = p_id and workspace_id = app.current_workspace_id()
                 and deleted_at is null) then
    perform app.raise_not_found('content root', p_id);
  end if;
  return (select app.content_root_json(p_id));
end
$$;

create or replace function api.update_content_root(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v_root app.content_roots;
  v_ids uuid[];
begin
  perform app.require_role('editor');
  select * into v_root from app.content_roots
  where id = p_id and workspace_id = app.current_workspace_id() and deleted_at is null for update;
  if v_root.id is null then
    perform app.raise_not_found('content root', p_id);
  end if;
  perform app.raise_field_problems(app.media_ref_problems(v_root.workspace_id, app.jsonb_uuids(p_body -> 'mediaIds'), 'mediaIds'),
    'The request is not valid; see details.fields.');
  perform app.defer_content_checks();
  update app.content_roots set
    title = case when p_body ? 'title' then p_body ->> 'title' else title end,
    caption = case when p_body ? 'caption' then p_body ->> 'caption' else caption end,
    updated_at = now()
  where id = v_root.id returning * into v_root;
  if p_body ? 'mediaIds' then
    perform app.replace_root_media(v_root.id, coalesce(app.jsonb_uuids(p_body -> 'mediaIds'), '{}'));
  end if;
  v_ids := array(select id from app.content_items where root_id = v_root.id and status = 'scheduled' and deleted_at is null
                 order by id);
  perform app.assert_publishable(v_ids, array(select 'editions.' || x || '.' from unnest(v_ids) x));
  perform app.undefer_content_checks();
  return (select app.content_root_json(v_root.id));
end
$$;

------------------------------------------------------------------------------
-- Grants
------------------------------------------------------------------------------
-- Jobs (pressroom_worker) write content too (recurring occurrences, and the
-- publishing engine): the context helpers and app.raise that the content
-- triggers call must be theirs to execute.
grant execute on function app.raise(int, text, text, jsonb), app.current_user_id(), app.current_workspace_id(),
  app.current_organization_id(), app.current_workspace_role(), app.current_actor_kind(), app.role_rank(text)
  to pressroom_worker;

-- Functions of this file only (others' files grant their own): nobody but
-- our roles may call them; api.* only the request role.
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array[
        'tg_content_versions_guard', 'content_transition_allowed', 'content_workflow_status', 'content_review_lifecycle',
        'field_problem', 'raise_field_problems', 'jsonb_uuids', 'raise_not_found', 'content_item_own_media_ids',
        'content_root_media_ids', 'content_item_media_ids', 'sanitize_settings', 'settings_problems',
        'media_ref_problems', 'media_rule_problems', 'content_item_problems', 'assert_publishable',
        'content_snapshot', 'snapshot_effective', 'record_content_version', 'tg_content_items_guard',
        'tg_content_items_freeze_media', 'tg_check_publishable', 'tg_content_items_record_version',
        'tg_content_item_media_guard', 'tg_content_root_media_guard', 'tg_content_roots_guard',
        'tg_content_root_taxonomy_guard', 'tg_content_roots_propagate', 'tg_content_root_media_record_versions',
        'tg_content_item_media_record_version', 'defer_content_checks', 'undefer_content_checks',
        'content_recurring_metadata', 'content_recurring_metadata_batch', 'content_list_items_json', 'content_roots_json',
        'content_root_metadata_json', 'content_list_item_json',
        'content_media_json', 'content_detail_json', 'content_edition_json', 'content_mutation_json', 'content_root_json',
        'content_item_for_update', 'require_content_status', 'content_payload_problems', 'content_normalize_thread',
        'replace_item_media', 'replace_root_media', 'planning_problems', 'apply_root_taxonomy', 'create_edition',
        'content_version_json',
        'create_content', 'list_content', 'content_failed_count', 'content_pending_approval_count', 'get_content',
        'update_content', 'delete_content', 'schedule_content', 'revert_content_to_draft',
        'set_content_intended_publish_time', 'update_content_metadata', 'update_content_notes',
        'list_content_versions', 'restore_content_version', 'list_content_roots', 'get_content_root',
        'update_content_root'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'app' then
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request', f.sig);
    end if;
  end loop;
end
$$;

--! split: 50-recurring.sql
-- Recurring content (issue 3): a series repeats a template at a fixed local
-- wall-clock time in its time zone ("Mondays 09:00 Europe/Berlin" stays 09:00
-- in Berlin across daylight-saving changes). Each occurrence gets its own
-- root and editions, made ahead by app.materialize_series: at creation (in
-- the request) and by the hourly job content.recurring-materialize
-- (server/jobs/recurring.ts, as pressroom_worker).
--
-- Series status: active -> completed (count or until reached: every
-- occurrence made) -> cancelled; active -> cancelled.
-- Occurrence status: materialized (content made) | missed (its time had
-- passed when it came up; no content) | cancelled. "published" is read from
-- its editions (one was sent).

create table if not exists app.recurring_series (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  -- { frequency, interval, byWeekday: [MO..SU], count, until }
  rule jsonb not null check (rule ->> 'frequency' in ('daily', 'weekly', 'monthly')),
  timezone text not null,
  -- The first time; its wall-clock time in `timezone` is the series' time.
  anchor_at timestamptz not null,
  intent text not null check (intent in ('draft', 'schedule')),
  -- What each occurrence is made of: root fields, planning metadata, channels.
  template jsonb not null,
  status text not null default 'active' check (status in ('active', 'completed', 'cancelled')),
  version int not null default 1 check (version > 0),
  next_index int not null default 0 check (next_index >= 0),
  materialized_until timestamptz,
  cancelled_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists recurring_series_workspace_id_idx on app.recurring_series (workspace_id);
create index if not exists recurring_series_organization_id_idx on app.recurring_series (organization_id);
create index if not exists recurring_series_due_idx on app.recurring_series (materialized_until) where status = 'active';
drop trigger if exists recurring_series_10_set_updated_at on app.recurring_series;
create trigger recurring_series_10_set_updated_at before update on app.recurring_series
  for each row execute function app.tg_set_updated_at();

create table if not exists app.recurring_occurrences (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  series_id uuid not null references app.recurring_series (id) on delete cascade,
  occurrence_index int not null check (occurrence_index >= 0),
  starts_at timestamptz not null,
  root_id uuid references app.content_roots (id) on delete set null,
  status text not null check (status in ('materialized', 'missed', 'cancelled')),
  cancelled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (series_id, occurrence_index),
  check ((status = 'cancelled') = (cancelled_at is not null))
);
create unique index if not exists recurring_occurrences_root_id_key on app.recurring_occurrences (root_id);
create index if not exists recurring_occurrences_workspace_id_idx on app.recurring_occurrences (workspace_id);
create index if not exists recurring_occurrences_organization_id_idx on app.recurring_occurrences (organization_id);
drop trigger if exists recurring_occurrences_10_set_updated_at on app.recurring_occurrences;
create trigger recurring_occurrences_10_set_updated_at before update on app.recurring_occurrences
  for each row execute function app.tg_set_updated_at();

-- A cancelled occurrence or series stays cancelled; a series keeps its rule.
create or replace function app.tg_recurring_guard() returns trigger
language plpgsql
as $$
begin
  if tg_table_name = 'recurring_series' then
    -- A completed series (every occurrence made) may still be cancelled;
    -- a cancelled one is final.
    if (old.status = 'cancelled' and new.status <> 'cancelled') or (old.status = 'completed' and new.status = 'active') then
      perform app.raise(409, 'SERIES_ALREADY_CANCELLED', format('This series is %s for good.', old.status),
        jsonb_build_object('seriesId', old.id, 'status', old.status));
    end if;
    if new.rule <> old.rule or new.timezone <> old.timezone or new.anchor_at <> old.anchor_at
       or new.workspace_id <> old.workspace_id or new.version < old.version then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'A series'' rule, time zone, first time and workspace cannot change.',
        jsonb_build_object('seriesId', old.id));
    end if;
  else
    if old.status = 'cancelled' and new.status <> 'cancelled' then
      perform app.raise(409, 'OCCURRENCE_ALREADY_CANCELLED', 'This occurrence is cancelled for good.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
    if new.series_id <> old.series_id or new.occurrence_index <> old.occurrence_index or new.starts_at <> old.starts_at then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'An occurrence''s series, position and time cannot change.',
        jsonb_build_object('occurrenceId', old.id));
    end if;
  end if;
  return new;
end
$$;
drop trigger if exists recurring_series_20_guard on app.recurring_series;
create trigger recurring_series_20_guard before update on app.recurring_series
  for each row execute function app.tg_recurring_guard();
drop trigger if exists recurring_occurrences_20_guard on app.recurring_occurrences;
create trigger recurring_occurrences_20_guard before update on app.recurring_occurrences
  for each row execute function app.tg_recurring_guard();

do $$
declare
  t text;
  x text;
begin
  foreach t in array array['recurring_series', 'recurring_occurrences']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    -- Idempotent: the policies are made afresh.
    foreach x in array array['definer', 'worker', 'request_select', 'request_insert', 'request_update', 'request_delete',
                             'request_scope', 'request_role'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id())
                  and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I as restrictive to pressroom_request
      using (app.role_rank((select app.current_workspace_role())) >= 1)
      with check (app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_role', t);
    -- As the skeleton's tables: even a forged workspace context reaches only the
    -- organization's workspaces the principal may really access.
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
    execute format('grant select, insert, update on app.%I to pressroom_request', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
  end loop;
end
$$;

------------------------------------------------------------------------------
-- Expansion
------------------------------------------------------------------------------
-- Local wall-clock times of a rule from its first local time, in order,
-- numbered from 0; p_from skips the first ones, p_max bounds the answer.
-- count and until are the caller's business. Weekly: the weeks start on
-- Monday and the series' weeks are every `interval`-th week from the first
-- time's week; times before the first time are skipped. Monthly: the first
-- time's day of the month, the month's last day when it is shorter.
create or replace function app.recurrence_local_times(p_rule jsonb, p_anchor_local timestamp, p_from int, p_max int)
returns table (occurrence_index int, local_at timestamp)
language plpgsql immutable
as $$
declare
  v_freq text := p_rule ->> 'frequency';
  v_interval int := greatest(coalesce((p_rule ->> 'interval')::int, 1), 1);
  v_days int[];
  v_week date := date_trunc('week', p_anchor_local)::date;
  v_time time := p_anchor_local::time;
  v_period int := 0;
  v_idx int := 0;
  v_emitted int := 0;
  v_day int;
  v_at timestamp;
begin
  if p_max <= 0 then
    return;
  end if;
  if v_freq = 'weekly' then
    v_days := array(select distinct case d when 'MO' then 1 when 'TU' then 2 when 'WE' then 3 when 'TH' then 4
                                            when 'FR' then 5 when 'SA' then 6 when 'SU' then 7 end
                    from jsonb_array_elements_text(coalesce(p_rule -> 'byWeekday', '[]')) d order by 1);
    if cardinality(v_days) = 0 then
      v_days := array[extract(isodow from p_anchor_local)::int];
    end if;
  end if;
  while v_period < 100000 loop
    if v_freq = 'weekly' then
      foreach v_day in array v_days loop
        v_at := (v_week + v_period * v_interval * 7 + (v_day - 1)) + v_time;
        if v_at >= p_anchor_local then
          if v_idx >= p_from then
            occurrence_index := v_idx;
            local_at := v_at;
            return next;
            v_emitted := v_emitted + 1;
            if v_emitted >= p_max then
              return;
            end if;
          end if;
          v_idx := v_idx + 1;
        end if;
      end loop;
    else
      v_at := case v_freq
        when 'daily' then p_anchor_local + make_interval(days => v_period * v_interval)
        else p_anchor_local + make_interval(months => v_period * v_interval) end;
      if v_idx >= p_from then
        occurrence_index := v_idx;
        local_at := v_at;
        return next;
        v_emitted := v_emitted + 1;
        if v_emitted >= p_max then
          return;
        end if;
      end if;
      v_idx := v_idx + 1;
    end if;
    v_period := v_period + 1;
  end loop;
end
$$;

-- Instants of a series' occurrences from p_from: the local times read in the
-- series' time zone.
create or replace function app.series_occurrence_times(s app.recurring_series, p_from int, p_max int)
returns table (occurrence_index int, starts_at timestamptz)
language sql stable
as $$
  select t.occurrence_index, t.local_at at time zone s.timezone
  from app.recurrence_local_times(s.rule, s.anchor_at at time zone s.timezone, p_from, p_max) t
$$;

------------------------------------------------------------------------------
-- Materialization
------------------------------------------------------------------------------
-- A root for an occurrence, from the series template. p_lenient drops
-- references that went away since the series was made (a deleted campaign,
-- tag or media in the bin) instead of failing.
create or replace function app.create_occurrence_root(s app.recurring_series, p_lenient boolean) returns app.content_roots
language plpgsql
as $$
declare
  t jsonb := s.template;
  v_root app.content_roots;
  v_campaign uuid := (t ->> 'campaignId')::uuid;
  v_phase uuid := (t ->> 'phaseId')::uuid;
  v_media uuid[] := coalesce(app.jsonb_uuids(t -> 'mediaIds'), '{}');
  v_tax jsonb := jsonb_build_object('tagIds', coalesce(t -> 'tagIds', '[]'), 'pillarIds', coalesce(t -> 'pillarIds', '[]'),
                                    'formatIds', coalesce(t -> 'formatIds', '[]'));
begin
  if p_lenient then
    if not exists (select 1 from app.campaigns where id = v_campaign and workspace_id = s.workspace_id) then
      v_campaign := null;
    end if;
    if v_campaign is null or not exists (select 1 from app.campaign_phases where id = v_phase and campaign_id = v_campaign) then
      v_phase := null;
    end if;
    v_media := array(select x.id from unnest(v_media) with ordinality x (id, n)
                     join app.media_items m on m.id = x.id and m.workspace_id = s.workspace_id and m.state = 'active'
                     order by x.n);
    v_tax := jsonb_build_object(
      'tagIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'tagIds')) x
                               where exists (select 1 from app.tags g where g.id = x and g.workspace_id = s.workspace_id))),
      'pillarIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'pillarIds')) x
                               where exists (select 1 from app.pillars g where g.id = x and g.workspace_id = s.workspace_id))),
      'formatIds', to_jsonb(array(select x from unnest(app.jsonb_uuids(v_tax -> 'formatIds')) x
                               where exists (select 1 from app.formats g where g.id = x and g.workspace_id = s.workspace_id))));
  end if;
  insert into app.content_roots (organization_id, workspace_id, title, caption, organizational_title, notes,
    campaign_id, phase_id, created_by)
  values (s.organization_id, s.workspace_id, t ->> 'title', t ->> 'caption', t ->> 'organizationalTitle',
    case when t ->> 'notes' is not null then to_jsonb(t ->> 'notes') end, v_campaign, v_phase, s.created_by)
  returning * into v_root;
  perform app.replace_root_media(v_root.id, v_media);
  perform app.apply_root_taxonomy(v_root, v_tax);
  return v_root;
end
$$;

-- An occurrence's editions, one per template channel. Made as drafts, then
-- scheduled (intent schedule); in lenient mode (the job) an edition that
-- cannot be scheduled stays a draft with the reason in `error`, and a channel
-- that went away is skipped. Returns the edition ids.
create or replace function app.create_occurrence_editions(s app.recurring_series, p_root app.content_roots, p_starts_at timestamptz,
  p_lenient boolean)
returns uuid[]
language plpgsql
as $$
declare
  v_channel jsonb;
  v_id uuid;
  v_ids uuid[] := '{}';
  v_msg text;
begin
  for v_channel in select e from jsonb_array_elements(s.template -> 'channels') e loop
    if not p_lenient then
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
      if s.intent = 'schedule' then
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
      end if;
      v_ids := v_ids || v_id;
      continue;
    end if;
    begin
      v_id := app.create_edition(p_root, v_channel, 'draft', null, p_starts_at);
    exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
      -- The channel went away (deleted, or a rule of another area refuses it).
      continue;
    end;
    v_ids := v_ids || v_id;
    if s.intent = 'schedule' then
      begin
        update app.content_items set status = 'scheduled', scheduled_at = p_starts_at where id = v_id;
        if jsonb_array_length(app.content_item_problems(v_id, '')) > 0 then
          raise exception using errcode = 'PT400', message = 'The edition breaks its platform''s rules.',
            detail = 'VALIDATION_FAILED', hint = jsonb_build_object('fields', app.content_item_problems(v_id, ''))::text;
        end if;
      exception when sqlstate 'PT400' or sqlstate 'PT404' or sqlstate 'PT409' then
        get stacked diagnostics v_msg = message_text;
        update app.content_items set error = left('Could not be scheduled: ' || v_msg || coalesce(
          ' ' || (select string_agg(p ->> 'field' || ': ' || (p ->> 'message'), '; ')
                  from jsonb_array_elements(app.content_item_problems(v_id, '')) p), ''), 2000)
        where id = v_id;
      end;
    end if;
  end loop;
  return v_ids;
end
$$;

-- Makes the series' occurrences up to p_horizon ahead (and at least
-- p_min_ahead future ones), marks past ones missed, and completes the series
-- when its count or until is reached. p_first_root is the root the create
-- call made, used for the first occurrence. Returns the occurrences made.
create or replace function app.materialize_series(p_series_id uuid, p_lenient boolean, p_first_root uuid default null,
  p_horizon interval default interval '30 days', p_min_ahead int default 3)
returns jsonb
language plpgsql
as $$
declare
  s app.recurring_series;
  v_occ record;
  v_ahead int;
  v_root app.content_roots;
  v_made jsonb := '[]';
  v_occ_id uuid;
  v_next int;
  v_done boolean := false;
  v_first uuid := p_first_root;
  v_limit timestamptz := now() + p_horizon;
begin
  select * into s from app.recurring_series where id = p_series_id for update;
  if s.id is null or s.status <> 'active' then
    return v_made;
  end if;
  v_next := s.next_index;
  select count(*) into v_ahead from app.recurring_occurrences
  where series_id = s.id and status = 'materialized' and starts_at > now();
  for v_occ in select * from app.series_occurrence_times(s, s.next_index, 1000) loop
    if (s.rule ? 'count' and v_occ.occurrence_index >= (s.rule ->> 'count')::int)
       or (s.rule ? 'until' and v_occ.starts_at > (s.rule ->> 'until')::timestamptz) then
      v_done := true;
      exit;
    end if;
    exit when v_occ.starts_at > v_limit and v_ahead >= p_min_ahead;
    if v_occ.starts_at <= now() then
      insert into app.recurring_occurrences (organization_id, workspace_id, series_id, occurrence_index, starts_at, status)
      values (s.organization_id, s.workspace_id, s.id, v_occ.occurrence_index, v_occ.starts_at, 'missed')
      returning id into v_occ_id;
      v_made := v_made || jsonb_build_object('occurrenceId', v_occ_id, 'startsAt', v_occ.starts_at, 'rootId', null,
                                             'status', 'missed');
    else
      if v_first is not null then
        select * into v_root from app.content_roots where id = v_first;
        v_first := null;
      else
        v_root := app.create_occurrence_root(s, p_lenient);
      end if;
      insert into app.recurring_occurrences (organization_id, workspace_id, series_id, occurrence_index, starts_at, root_id, status)
      values (s.organization_id, s.workspace_id, s.id, v_occ.occurrence_index, v_occ.starts_at, v_root.id, 'materialized')
      returning id into v_occ_id;
      perform app.create_occurrence_editions(s, v_root, v_occ.starts_at, p_lenient);
      v_ahead := v_ahead + 1;
      v_made := v_made || jsonb_build_object('occurrenceId', v_occ_id, 'startsAt', v_occ.starts_at, 'rootId', v_root.id,
                                             'status', 'materialized');
    end if;
    v_next := v_occ.occurrence_index + 1;
  end loop;
  update app.recurring_series
  set next_index = v_next, materialized_until = v_limit,
      status = case when v_done then 'completed' else status end
  where id = s.id;
  return v_made;
end
$$;

-- The job: every active series whose horizon needs extending, each in its
-- own subtransaction (one broken series does not stop the others).
create or replace function app.materialize_due_series(p_horizon interval default interval '30 days') returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_series int := 0;
  v_made int := 0;
  v_failed int := 0;
  v_out jsonb;
begin
  for v_id in select id from app.recurring_series
              where status = 'active' and (materialized_until is null or materialized_until < now() + p_horizon - interval '1 hour')
              order by materialized_until nulls first, id
              limit 500 loop
    begin
      v_out := app.materialize_series(v_id, true, null, p_horizon);
      v_series := v_series + 1;
      v_made := v_made + jsonb_array_length(v_out);
    exception when others then
      v_failed := v_failed + 1;
      raise warning 'materializing recurring series % failed: %', v_id, sqlerrm;
    end;
  end loop;
  return jsonb_build_object('series', v_series, 'occurrences', v_made, 'failed', v_failed);
end
$$;

------------------------------------------------------------------------------
-- Creation (called by api.create_content when the body has `recurrence`)
------------------------------------------------------------------------------
create or replace function app.create_recurring_series(p_root app.content_roots, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  r jsonb := p_body -> 'recurrence';
  v_intent text := coalesce(p_body ->> 'intent', 'draft');
  v_anchor timestamptz := coalesce((p_body ->> 'scheduledAt')::timestamptz, (p_body ->> 'intendedPublishAt')::timestamptz);
  v_tz text := coalesce(r ->> 'timezone', (select timezone from app.workspaces where id = p_root.workspace_id));
  v_problems jsonb := '[]';
  v_rule jsonb;
  s app.recurring_series;
  v_made jsonb;
  v_first_ids uuid[];
  v_prefixes text[];
begin
  if not exists (select 1 from pg_timezone_names where name = v_tz) then
    v_problems := v_problems || app.field_problem('recurrence.timezone', 'invalid_timezone', format('%s is not an IANA time zone name', v_tz));
  end if;
  if r ? 'byWeekday' and r ->> 'frequency' <> 'weekly' then
    v_problems := v_problems || app.field_problem('recurrence.byWeekday', 'not_allowed', 'byWeekday goes with frequency weekly');
  end if;
  if r ? 'count' and r ? 'until' then
    v_problems := v_problems || app.field_problem('recurrence.until', 'not_allowed', 'a series ends by count or by until, not both');
  end if;
  if v_anchor <= now() then
    v_problems := v_problems || app.field_problem(case when v_intent = 'schedule' then 'scheduledAt' else 'intendedPublishAt' end,
      'in_past', 'a recurring series starts in the future');
  end if;
  if r ? 'until' and (r ->> 'until')::timestamptz < v_anchor then
    v_problems := v_problems || app.field_problem('recurrence.until', 'before_start', 'until is before the first time');
  end if;
  perform app.raise_field_problems(v_problems, 'The recurrence is not valid; see details.fields.');

  v_rule := jsonb_strip_nulls(jsonb_build_object('frequency', r ->> 'frequency',
    'interval', coalesce((r ->> 'interval')::int, 1), 'byWeekday', r -> 'byWeekday',
    'count', (r ->> 'count')::int, 'until', (r ->> 'until')::timestamptz));
  insert into app.recurring_series (organization_id, workspace_id, rule, timezone, anchor_at, intent, template, created_by)
  values (p_root.organization_id, p_root.workspace_id, v_rule, v_tz, v_anchor, v_intent,
    jsonb_strip_nulls(jsonb_build_object(
      'title', p_body -> 'title', 'caption', p_body -> 'caption', 'organizationalTitle', p_body -> 'organizationalTitle',
      'notes', p_body -> 'notes', 'mediaIds', p_body -> 'mediaIds', 'campaignId', p_root.campaign_id,
      'phaseId', p_root.phase_id, 'tagIds', p_body -> 'tagIds', 'pillarIds', p_body -> 'pillarIds',
      'formatIds', p_body -> 'formatIds', 'channels', p_body -> 'channels')),
    app.current_user_id())
  returning * into s;

  perform app.defer_content_checks();
  v_made := app.materialize_series(s.id, false, p_root.id);
  -- Every occurrence has the same content: the first one's problems, named
  -- by channel, stand for all (the deferred checks hold the others).
  v_first_ids := array(select i.id from app.content_items i
                       join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                         on (c.e ->> 'integrationId')::uuid = i.integration_id
                       where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  v_prefixes := array(select 'channels.' || (c.n - 1) || '.' from app.content_items i
                      join jsonb_array_elements(p_body -> 'channels') with ordinality c (e, n)
                        on (c.e ->> 'integrationId')::uuid = i.integration_id
                      where i.root_id = p_root.id and i.deleted_at is null order by c.n);
  perform app.assert_publishable(v_first_ids, v_prefixes);
  perform app.undefer_content_checks();
  select * into s from app.recurring_series where id = s.id;
  return (select app.content_mutation_json(p_root.id, v_first_ids))
    || jsonb_build_object('series', jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'occurrences', v_made));
end
$$;

------------------------------------------------------------------------------
-- recurringMetadata on list items, detail and roots
------------------------------------------------------------------------------
create or replace function app.recurring_occurrence_published(p_root_id uuid) returns boolean
language sql stable
as $$ select exists (select 1 from app.content_items where root_id = p_root_id and status = 'sent' and deleted_at is null) $$;

create or replace function app.content_recurring_metadata_batch(p_root_ids uuid[]) returns table (root_id uuid, metadata jsonb)
language sql stable
as $$
  with occ as (
    select o.id, o.series_id, o.occurrence_index, o.starts_at, o.root_id, o.status, s.version as series_version,
           s.status as series_status,
           exists (select 1 from app.content_items i where i.root_id = o.root_id and i.status = 'sent' and i.deleted_at is null) as published
    from app.recurring_occurrences o
    join app.recurring_series s on s.id = o.series_id
    where o.root_id = any (p_root_ids))
  select occ.root_id, jsonb_build_object(
    'seriesId', occ.series_id,
    'occurrenceId', occ.id,
    'seriesVersion', occ.series_version,
    'effectiveOccurrenceId', case
      when occ.status = 'materialized' and not occ.published then occ.id
      else (select n.id from app.recurring_occurrences n
            where n.series_id = occ.series_id and n.occurrence_index > occ.occurrence_index and n.status = 'materialized'
              and not exists (select 1 from app.content_items i where i.root_id = n.root_id and i.status = 'sent' and i.deleted_at is null)
            order by n.occurrence_index limit 1) end,
    'startsAt', occ.starts_at,
    'occurrenceStatus', case when occ.status = 'materialized' and occ.published then 'published' else occ.status end,
    'seriesStatus', occ.series_status)
  from occ
$$;

------------------------------------------------------------------------------
-- Cancelling
------------------------------------------------------------------------------
create or replace function app.require_series_version(s app.recurring_series, p_body jsonb) returns void
language plpgsql
as $$
begin
  if (p_body ->> 'seriesVersion')::int is distinct from s.version then
    perform app.raise(409, 'SERIES_VERSION_STALE',
      format('The series is at version %s, not %s; reload the content list and retry.', s.version, p_body ->> 'seriesVersion'),
      jsonb_build_object('seriesId', s.id, 'seriesVersion', s.version, 'expectedSeriesVersion', p_body -> 'seriesVersion'));
  end if;
end
$$;

-- Cancels the draft and scheduled editions of an occurrence (their jobs go
-- with them) and the occurrence. Returns { cancelled, kept } edition ids.
create or replace function app.cancel_occurrence(o app.recurring_occurrences) returns jsonb
language plpgsql
as $$
declare
  v_cancelled uuid[];
  v_kept uuid[];
begin
  if o.root_id is not null then
    perform 1 from app.content_items where root_id = o.root_id and deleted_at is null for update;
    v_cancelled := array(select id from app.content_items
                         where root_id = o.root_id and deleted_at is null and status in ('draft', 'scheduled') order by id);
    update app.content_items set status = 'cancelled' where id = any (v_cancelled);
    v_kept := array(select id from app.content_items
                    where root_id = o.root_id and deleted_at is null and status not in ('cancelled') order by id);
  end if;
  update app.recurring_occurrences set status = 'cancelled', cancelled_at = now() where id = o.id;
  return jsonb_build_object('cancelled', to_jsonb(coalesce(v_cancelled, '{}')), 'kept', to_jsonb(coalesce(v_kept, '{}')));
end
$$;

create or replace function api.cancel_recurring_occurrence(p_occurrence_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  o app.recurring_occurrences;
  s app.recurring_series;
  v_out jsonb;
begin
  perform app.require_role('editor');
  select * into o from app.recurring_occurrences
  where id = p_occurrence_id and workspace_id = app.current_workspace_id();
  if o.id is null then
    perform app.raise_not_found('recurring occurrence', p_occurrence_id);
  end if;
  select * into s from app.recurring_series where id = o.series_id for update;
  select * into o from app.recurring_occurrences where id = o.id for update;
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
$$;

create or replace function api.cancel_recurring_series(p_series_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  s app.recurring_series;
  v_from int;
  o app.recurring_occurrences;
  v_out jsonb;
  v_occurrences uuid[] := '{}';
  v_cancelled jsonb := '[]';
  v_kept jsonb := '[]';
begin
  perform app.require_role('editor');
  select * into s from app.recurring_series
  where id = p_series_id and workspace_id = app.current_workspace_id() for update;
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
           where series_id = s.id and occurrence_index >= v_from and status <> 'cancelled'
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
$$;

------------------------------------------------------------------------------
-- Grants (functions of this file only)
------------------------------------------------------------------------------
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array[
        'tg_recurring_guard', 'recurrence_local_times', 'series_occurrence_times', 'create_occurrence_root',
        'create_occurrence_editions', 'materialize_series', 'materialize_due_series', 'create_recurring_series',
        'recurring_occurrence_published', 'content_recurring_metadata_batch', 'require_series_version', 'cancel_occurrence',
        'cancel_recurring_occurrence', 'cancel_recurring_series'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'app' then
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request', f.sig);
    end if;
  end loop;
end
$$;
-- Only the job extends every workspace's series.
revoke execute on function app.materialize_due_series(interval) from pressroom_request, pressroom_definer;

--! split: 60-media.sql
-- Media library (issue 4): labels, label groups, label assignments, upload
-- sessions, usage history, the bytes waiting to be removed from storage, the
-- signing secret; the library's rules as constraints and triggers; the api.*
-- functions its routes call and the maintenance functions its jobs call.
-- Runs after 10-planning-skeleton.sql (media_folders, media_items and the
-- content tables that use media).
--
-- Idempotent: tables and indexes "if not exists", constraints and policies
-- guarded or dropped first, functions created or replaced, triggers dropped
-- first, so the file can run again.

------------------------------------------------------------------------------
-- Limits and supported formats
------------------------------------------------------------------------------
-- Spec limits: image (and GIF) up to 50 MB, video up to 512 MB (MiB).
create or replace function app.media_max_bytes(p_type text) returns bigint
language sql immutable parallel safe
as $$ select case p_type when 'video' then 536870912::bigint when 'image' then 52428800::bigint
                         when 'gif' then 52428800::bigint end $$;

-- The media type a declared content type announces (null: not supported).
-- The stored type is decided later from the bytes.
create or replace function app.media_type_for_content_type(p_content_type text) returns text
language sql immutable parallel safe
as $$
  select case lower(btrim(split_part(p_content_type, ';', 1)))
    when 'image/png' then 'image' when 'image/jpeg' then 'image' when 'image/jpg' then 'image'
    when 'image/webp' then 'image' when 'image/gif' then 'gif'
    when 'video/mp4' then 'video' when 'video/quicktime' then 'video' when 'video/webm' then 'video'
  end
$$;

create or replace function app.media_supported_content_types() returns jsonb
language sql immutable parallel safe
as $$ select '["image/png","image/jpeg","image/webp","image/gif","video/mp4","video/quicktime","video/webm"]'::jsonb $$;

-- A LIKE pattern matching p_text literally anywhere.
create or replace function app.media_contains_pattern(p_text text) returns text
language sql immutable parallel safe
as $$ select '%' || replace(replace(replace(p_text, '\', '\\'), '%', '\%'), '_', '\_') || '%' $$;

-- 400 VALIDATION_FAILED naming one field, as the HTTP layer's validation does.
create or replace function app.media_invalid(p_field text, p_code text, p_message text) returns void
language plpgsql
as $$
begin
  perform app.raise(400, 'VALIDATION_FAILED', format('%s %s.', p_field, p_message),
    jsonb_build_object('fields', jsonb_build_array(jsonb_build_object('field', p_field, 'code', p_code, 'message', p_message))));
end
$$;

------------------------------------------------------------------------------
-- The skeleton's media tables, tightened
------------------------------------------------------------------------------
do $$
begin
  -- Composite keys, so a row can only point at rows of its own workspace.
  if not exists (select 1 from pg_constraint where conname = 'media_folders_id_workspace_key') then
    alter table app.media_folders add constraint media_folders_id_workspace_key unique (id, workspace_id);
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_id_workspace_key') then
    alter table app.media_items add constraint media_items_id_workspace_key unique (id, workspace_id);
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_folders_parent_same_workspace_fkey') then
    alter table app.media_folders add constraint media_folders_parent_same_workspace_fkey
      foreign key (parent_id, workspace_id) references app.media_folders (id, workspace_id) on delete cascade;
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_folder_same_workspace_fkey') then
    alter table app.media_items add constraint media_items_folder_same_workspace_fkey
      foreign key (folder_id, workspace_id) references app.media_folders (id, workspace_id) on delete set null (folder_id);
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_file_size_limit') then
    alter table app.media_items add constraint media_items_file_size_limit
      check (file_size <= app.media_max_bytes(type));
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_measures_check') then
    alter table app.media_items add constraint media_items_measures_check
      check ((width is null or width > 0) and (height is null or height > 0) and (duration_ms is null or duration_ms >= 0));
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_checksum_check') then
    alter table app.media_items add constraint media_items_checksum_check
      check (checksum_sha256 is null or checksum_sha256 ~ '^[0-9a-f]{64}$');
  end if;
  -- Content that uses a media item lets go of it when the item is deleted
  -- for good (only binned items are, and scheduled content cannot hold
  -- binned media). A cascade rather than our own DELETE: the content guards
  -- allow changes to a published edition's media only from triggers.
  if exists (select 1 from pg_constraint where conname = 'content_item_media_media_id_fkey' and confdeltype <> 'c') then
    alter table app.content_item_media drop constraint content_item_media_media_id_fkey;
    alter table app.content_item_media add constraint content_item_media_media_id_fkey
      foreign key (media_id) references app.media_items (id) on delete cascade;
  end if;
  if exists (select 1 from pg_constraint where conname = 'content_root_media_media_id_fkey' and confdeltype <> 'c') then
    alter table app.content_root_media drop constraint content_root_media_media_id_fkey;
    alter table app.content_root_media add constraint content_root_media_media_id_fkey
      foreign key (media_id) references app.media_items (id) on delete cascade;
  end if;
  if not exists (select 1 from pg_constraint where conname = 'media_items_filename_check') then
    alter table app.media_items add constraint media_items_filename_check
      check (length(btrim(filename)) >= 1 and filename !~ '[[:cntrl:]/\\]');
  end if;
end
$$;

-- Sibling folders have distinct names (case-insensitively).
create unique index if not exists media_folders_sibling_name_key on app.media_folders
  (workspace_id, coalesce(parent_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name));
create index if not exists media_folders_parent_id_idx on app.media_folders (parent_id);

-- The media list's orders (createdAt has the skeleton's index), the "all
-- states" list, folder views and the bin purge.
create index if not exists media_items_workspace_filename_idx on app.media_items (workspace_id, state, lower(filename), id);
create index if not exists media_items_workspace_size_idx on app.media_items (workspace_id, state, file_size, id);
create index if not exists media_items_workspace_any_state_idx on app.media_items (workspace_id, created_at, id);
create index if not exists media_items_workspace_folder_idx on app.media_items (workspace_id, folder_id, state, created_at desc, id desc);
create index if not exists media_items_delete_after_idx on app.media_items (delete_after) where state = 'deleted';

------------------------------------------------------------------------------
-- New tables
------------------------------------------------------------------------------
create table if not exists app.media_label_groups (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 100),
  position int not null default 0 check (position >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (id, workspace_id)
);
create unique index if not exists media_label_groups_workspace_name_key on app.media_label_groups (workspace_id, lower(name));
create index if not exists media_label_groups_workspace_position_idx on app.media_label_groups (workspace_id, position, id);
create index if not exists media_label_groups_organization_id_idx on app.media_label_groups (organization_id);

-- A merged label is kept as a pointer to the label it was merged into; it
-- has no assignments and its name is free for a new label.
create table if not exists app.media_labels (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  group_id uuid,
  name text not null check (length(btrim(name)) between 1 and 100),
  color text check (color is null or color ~ '^#[0-9a-fA-F]{6}$'),
  merged_into_id uuid,
  merged_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (id, workspace_id),
  foreign key (group_id, workspace_id) references app.media_label_groups (id, workspace_id) on delete set null (group_id),
  -- Deleting a label deletes the labels merged into it (their aliases).
  foreign key (merged_into_id, workspace_id) references app.media_labels (id, workspace_id) on delete cascade,
  check ((merged_into_id is null) = (merged_at is null)),
  check (merged_into_id is distinct from id),
  check (merged_into_id is null or group_id is null)
);
create unique index if not exists media_labels_workspace_name_key on app.media_labels (workspace_id, lower(name))
  where merged_into_id is null;
create index if not exists media_labels_group_id_idx on app.media_labels (group_id);
create index if not exists media_labels_merged_into_id_idx on app.media_labels (merged_into_id);
create index if not exists media_labels_organization_id_idx on app.media_labels (organization_id);

create table if not exists app.media_item_labels (
  media_id uuid not null,
  label_id uuid not null,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  primary key (media_id, label_id),
  foreign key (media_id, workspace_id) references app.media_items (id, workspace_id) on delete cascade,
  foreign key (label_id, workspace_id) references app.media_labels (id, workspace_id) on delete cascade
);
create index if not exists media_item_labels_label_id_idx on app.media_item_labels (label_id, media_id);
create index if not exists media_item_labels_workspace_id_idx on app.media_item_labels (workspace_id);
create index if not exists media_item_labels_organization_id_idx on app.media_item_labels (organization_id);

-- One upload: the client PUTs its bytes to storage_key; completing it makes
-- the media item whose id is the session's id (so a retried completion finds
-- the same item and the same final storage key).
create table if not exists app.media_upload_sessions (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  folder_id uuid,
  filename text not null check (length(btrim(filename)) between 1 and 255 and filename !~ '[[:cntrl:]/\\]'),
  content_type text not null check (length(content_type) <= 255),
  declared_size bigint not null check (declared_size > 0),
  alt_text text check (alt_text is null or length(alt_text) <= 1500),
  storage_key text not null,
  state text not null default 'pending' check (state in ('pending', 'completed', 'aborted', 'expired')),
  media_id uuid references app.media_items (id) on delete set null,
  expires_at timestamptz not null,
  completed_at timestamptz,
  -- When the expiry job removed whatever was PUT to storage_key (after
  -- expires_at no signed upload URL works any more).
  upload_swept_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  foreign key (folder_id, workspace_id) references app.media_folders (id, workspace_id) on delete set null (folder_id),
  check ((state = 'completed') = (completed_at is not null)),
  check (declared_size <= app.media_max_bytes('video'))
);
create index if not exists media_upload_sessions_workspace_id_idx on app.media_upload_sessions (workspace_id, created_at);
create index if not exists media_upload_sessions_sweep_idx on app.media_upload_sessions (expires_at) where upload_swept_at is null;
create index if not exists media_upload_sessions_organization_id_idx on app.media_upload_sessions (organization_id);
create index if not exists media_upload_sessions_media_id_idx on app.media_upload_sessions (media_id);

-- Usage history: which content used a media item, and when. Written by
-- triggers on the content tables, whoever changes them.
create table if not exists app.media_usage_events (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  media_id uuid not null references app.media_items (id) on delete cascade,
  event text not null check (event in ('attached', 'detached', 'scheduled', 'unscheduled', 'published', 'failed')),
  via text not null check (via in ('edition', 'root')),
  content_item_id uuid,
  root_id uuid,
  content_status text,
  scheduled_at timestamptz,
  occurred_at timestamptz not null default clock_timestamp(),
  -- The writing transaction: a link added and removed in one transaction cancels out.
  xact_id xid8 not null default pg_current_xact_id()
);
create index if not exists media_usage_events_media_idx on app.media_usage_events (media_id, occurred_at desc, id desc);
create index if not exists media_usage_events_workspace_id_idx on app.media_usage_events (workspace_id);
create index if not exists media_usage_events_organization_id_idx on app.media_usage_events (organization_id);

-- Storage keys whose bytes must go: written in the same transaction that
-- removes the rows (or abandons an upload); the purge job deletes the bytes,
-- then the row. No foreign keys: the bytes outlive the rows.
create table if not exists app.media_storage_garbage (
  storage_key text primary key,
  workspace_id uuid not null,
  organization_id uuid not null,
  reason text not null check (reason in ('permanent_delete', 'bin_purge', 'upload_aborted', 'upload_expired', 'upload_swept')),
  created_at timestamptz not null default now()
);
create index if not exists media_storage_garbage_workspace_id_idx on app.media_storage_garbage (workspace_id);
create index if not exists media_storage_garbage_created_at_idx on app.media_storage_garbage (created_at);

-- Server-wide secrets (the storage signing secret when SIGNED_URL_SECRET is
-- not configured): readable by the definer only.
create table if not exists app.server_secrets (
  name text primary key,
  value bytea not null check (length(value) >= 32),
  created_at timestamptz not null default now()
);

------------------------------------------------------------------------------
-- Row-level security and grants
------------------------------------------------------------------------------
do $$
declare
  t text;
begin
  foreach t in array array['media_label_groups', 'media_labels', 'media_item_labels', 'media_upload_sessions',
                           'media_usage_events', 'media_storage_garbage', 'server_secrets']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    execute format('drop policy if exists %I on app.%I', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer', t);
  end loop;
  -- Tenant tables: the current workspace; writes need the editor role.
  foreach t in array array['media_label_groups', 'media_labels', 'media_item_labels', 'media_upload_sessions',
                           'media_usage_events', 'media_storage_garbage']
  loop
    execute format('drop policy if exists %I on app.%I', t || '_request_select', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format('drop policy if exists %I on app.%I', t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id())
                  and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_insert', t);
    execute format('drop policy if exists %I on app.%I', t || '_request_update', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format('drop policy if exists %I on app.%I', t || '_request_delete', t);
    execute format($p$create policy %I on app.%I for delete to pressroom_request
      using (workspace_id = (select app.current_workspace_id()) and app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_delete', t);
  end loop;
  -- Hardened scope (as 20-integrations-taxonomy-campaigns.sql does): the
  -- row's organization is the principal's and its workspace one the
  -- principal can really access, so a forged context reaches nothing.
  foreach t in array array['media_folders', 'media_items', 'media_label_groups', 'media_labels', 'media_item_labels',
                           'media_upload_sessions', 'media_usage_events', 'media_storage_garbage']
  loop
    execute format('drop policy if exists %I on app.%I', t || '_request_scope', t);
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and workspace_id = (select app.current_workspace_id()) and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
  end loop;
end
$$;

grant select, insert, update, delete on app.media_label_groups, app.media_labels, app.media_item_labels to pressroom_request;
grant select, insert, update on app.media_upload_sessions to pressroom_request;
grant select on app.media_usage_events to pressroom_request;
grant select, insert on app.media_storage_garbage to pressroom_request;
-- server_secrets: nothing for the request, worker or app roles.

------------------------------------------------------------------------------
-- Rules: folder depth
------------------------------------------------------------------------------
-- Root folders and one level of subfolders. The parent is locked, so two
-- concurrent moves cannot together build a third level.
create or replace function app.tg_media_folders_check_depth() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
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
  select * into v_parent from app.media_folders where id = new.parent_id for update;
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
$$;
drop trigger if exists media_folders_20_check_depth on app.media_folders;
create trigger media_folders_20_check_depth before insert or update of parent_id on app.media_folders
  for each row execute function app.tg_media_folders_check_depth();

------------------------------------------------------------------------------
-- Rules: the bin
------------------------------------------------------------------------------
-- Content editions (status scheduled, not deleted) that use a media item,
-- directly or through their root.
create or replace function app.media_scheduled_content_ids(p_media_id uuid) returns uuid[]
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select coalesce(array_agg(id order by id), '{}') from (
    select ci.id from app.content_item_media cim
    join app.content_items ci on ci.id = cim.content_item_id
    where cim.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null
    union
    select ci.id from app.content_root_media crm
    join app.content_items ci on ci.root_id = crm.root_id
    where crm.media_id = p_media_id and ci.status = 'scheduled' and ci.deleted_at is null) s
$$;

-- State machine (active <-> deleted), the scheduled-use rule, and the
-- fields measured from the bytes, which never change.
create or replace function app.tg_media_items_guard() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_ids uuid[];
begin
  if new.workspace_id <> old.workspace_id or new.organization_id <> old.organization_id
     or new.storage_key <> old.storage_key or new.file_size <> old.file_size or new.type <> old.type
     or new.content_type <> old.content_type or new.checksum_sha256 is distinct from old.checksum_sha256
     or new.width is distinct from old.width or new.height is distinct from old.height
     or new.duration_ms is distinct from old.duration_ms then
    perform app.raise(400, 'IMMUTABLE_FIELD',
      'A media item''s bytes, and what was measured from them, cannot change; upload a new item.',
      jsonb_build_object('mediaId', old.id));
  end if;
  if old.state = 'active' and new.state = 'deleted' then
    v_ids := app.media_scheduled_content_ids(new.id);
    if cardinality(v_ids) > 0 then
      perform app.raise(409, 'MEDIA_IN_USE',
        'This media is used by scheduled content; unschedule that content or take the media out of it first.',
        jsonb_build_object('mediaId', new.id, 'contentIds', to_jsonb(v_ids)));
    end if;
    new.deleted_at := coalesce(new.deleted_at, now());
  elsif old.state = 'deleted' and new.state = 'active' then
    new.deleted_at := null;
    new.delete_after := null;
  elsif old.state = 'deleted' and new.state = 'deleted' then
    new.deleted_at := old.deleted_at;
  end if;
  return new;
end
$$;
drop trigger if exists media_items_20_guard on app.media_items;
create trigger media_items_20_guard before update on app.media_items
  for each row execute function app.tg_media_items_guard();

-- Only binned items are deleted for good (a workspace or organization being
-- deleted takes everything with it).
create or replace function app.tg_media_items_guard_delete() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
begin
  if old.state <> 'deleted' and exists (
      select 1 from app.workspaces w join app.organizations o on o.id = w.organization_id
      where w.id = old.workspace_id) then
    perform app.raise(409, 'MEDIA_NOT_IN_BIN',
      'Only media in the bin can be deleted permanently; move it to the bin first.',
      jsonb_build_object('mediaId', old.id, 'state', old.state));
  end if;
  return old;
end
$$;
drop trigger if exists media_items_30_guard_delete on app.media_items;
create trigger media_items_30_guard_delete before delete on app.media_items
  for each row execute function app.tg_media_items_guard_delete();

-- The mirror of the scheduled-use rule: binned media cannot be put into
-- content, and content using binned media cannot be scheduled. Locking the
-- media rows (FOR SHARE) makes a concurrent binning wait and then see it.
create or replace function app.tg_content_media_link_not_binned() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_state text;
begin
  select state into v_state from app.media_items where id = new.media_id for share;
  if v_state = 'deleted' then
    perform app.raise(409, 'MEDIA_IN_BIN', 'This media item is in the bin; restore it before using it in content.',
      jsonb_build_object('mediaId', new.media_id));
  end if;
  return new;
end
$$;
drop trigger if exists content_item_media_60_media_not_binned on app.content_item_media;
create trigger content_item_media_60_media_not_binned before insert or update of media_id on app.content_item_media
  for each row execute function app.tg_content_media_link_not_binned();
drop trigger if exists content_root_media_60_media_not_binned on app.content_root_media;
create trigger content_root_media_60_media_not_binned before insert or update of media_id on app.content_root_media
  for each row execute function app.tg_content_media_link_not_binned();

create or replace function app.tg_content_items_media_not_binned() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_ids uuid[];
begin
  perform 1 from app.media_items m
  where m.id in (select media_id from app.content_item_media where content_item_id = new.id
                 union select media_id from app.content_root_media where root_id = new.root_id)
  for share of m;
  select coalesce(array_agg(m.id order by m.id), '{}') into v_ids from app.media_items m
  where m.state = 'deleted'
    and m.id in (select media_id from app.content_item_media where content_item_id = new.id
                 union select media_id from app.content_root_media where root_id = new.root_id);
  if cardinality(v_ids) > 0 then
    perform app.raise(409, 'MEDIA_IN_BIN', 'This content uses media that is in the bin; restore it or take it out of the content first.',
      jsonb_build_object('contentId', new.id, 'mediaIds', to_jsonb(v_ids)));
  end if;
  return new;
end
$$;
drop trigger if exists content_items_60_media_not_binned on app.content_items;
create trigger content_items_60_media_not_binned before update of status on app.content_items
  for each row when (new.status = 'scheduled' and old.status is distinct from 'scheduled')
  execute function app.tg_content_items_media_not_binned();

------------------------------------------------------------------------------
-- Rules: labels
------------------------------------------------------------------------------
-- Assignments only to labels that were not merged away.
create or replace function app.tg_media_item_labels_check_label() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_merged uuid;
begin
  select merged_into_id into v_merged from app.media_labels where id = new.label_id for key share;
  if v_merged is not null then
    perform app.raise(409, 'LABEL_MERGED', 'This label was merged into another; use that label.',
      jsonb_build_object('labelId', new.label_id, 'mergedIntoId', v_merged));
  end if;
  return new;
end
$$;
drop trigger if exists media_item_labels_20_check_label on app.media_item_labels;
create trigger media_item_labels_20_check_label before insert or update of label_id on app.media_item_labels
  for each row execute function app.tg_media_item_labels_check_label();

drop trigger if exists media_labels_10_set_updated_at on app.media_labels;
create trigger media_labels_10_set_updated_at before update on app.media_labels
  for each row execute function app.tg_set_updated_at();
drop trigger if exists media_label_groups_10_set_updated_at on app.media_label_groups;
create trigger media_label_groups_10_set_updated_at before update on app.media_label_groups
  for each row execute function app.tg_set_updated_at();
drop trigger if exists media_upload_sessions_10_set_updated_at on app.media_upload_sessions;
create trigger media_upload_sessions_10_set_updated_at before update on app.media_upload_sessions
  for each row execute function app.tg_set_updated_at();

------------------------------------------------------------------------------
-- Usage history, written by triggers on the content tables
------------------------------------------------------------------------------
-- A link added and removed in the same transaction (a reorder done as
-- delete + insert) cancels out instead of writing two events.
create or replace function app.media_usage_record(p_media_id uuid, p_event text, p_via text,
  p_content_item_id uuid, p_root_id uuid)
returns void
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_media record;
  v_status text;
  v_scheduled_at timestamptz;
  v_root uuid := p_root_id;
  v_opposite text := case p_event when 'attached' then 'detached' when 'detached' then 'attached' end;
begin
  -- Nothing to record while the media item, or its workspace, is being deleted.
  select m.workspace_id, m.organization_id into v_media from app.media_items m
  join app.workspaces w on w.id = m.workspace_id
  where m.id = p_media_id;
  if not found then
    return;
  end if;
  if p_content_item_id is not null then
    select ci.status, ci.scheduled_at, coalesce(v_root, ci.root_id) into v_status, v_scheduled_at, v_root
    from app.content_items ci where ci.id = p_content_item_id;
  end if;
  if v_opposite is not null then
    delete from app.media_usage_events
    where media_id = p_media_id and event = v_opposite and via = p_via and xact_id = pg_current_xact_id()
      and content_item_id is not distinct from p_content_item_id and root_id is not distinct from v_root;
    if found then
      return;
    end if;
  end if;
  insert into app.media_usage_events (organization_id, workspace_id, media_id, event, via, content_item_id, root_id,
    content_status, scheduled_at)
  values (v_media.organization_id, v_media.workspace_id, p_media_id, p_event, p_via, p_content_item_id,
    v_root, v_status, v_scheduled_at);
end
$$;

create or replace function app.tg_content_item_media_usage() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
begin
  if tg_op = 'INSERT' then
    perform app.media_usage_record(new.media_id, 'attached', 'edition', new.content_item_id, null);
  elsif tg_op = 'DELETE' then
    perform app.media_usage_record(old.media_id, 'detached', 'edition', old.content_item_id, null);
  elsif new.media_id is distinct from old.media_id or new.content_item_id is distinct from old.content_item_id then
    perform app.media_usage_record(old.media_id, 'detached', 'edition', old.content_item_id, null);
    perform app.media_usage_record(new.media_id, 'attached', 'edition', new.content_item_id, null);
  end if;
  return null;
end
$$;
drop trigger if exists content_item_media_61_media_usage on app.content_item_media;
create trigger content_item_media_61_media_usage after insert or update or delete on app.content_item_media
  for each row execute function app.tg_content_item_media_usage();

create or replace function app.tg_content_root_media_usage() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
begin
  if tg_op = 'INSERT' then
    perform app.media_usage_record(new.media_id, 'attached', 'root', null, new.root_id);
  elsif tg_op = 'DELETE' then
    perform app.media_usage_record(old.media_id, 'detached', 'root', null, old.root_id);
  elsif new.media_id is distinct from old.media_id or new.root_id is distinct from old.root_id then
    perform app.media_usage_record(old.media_id, 'detached', 'root', null, old.root_id);
    perform app.media_usage_record(new.media_id, 'attached', 'root', null, new.root_id);
  end if;
  return null;
end
$$;
drop trigger if exists content_root_media_61_media_usage on app.content_root_media;
create trigger content_root_media_61_media_usage after insert or update or delete on app.content_root_media
  for each row execute function app.tg_content_root_media_usage();

-- An edition that is scheduled, unscheduled, published or failed: one event
-- per media item it uses (its own and its root's).
create or replace function app.tg_content_items_media_usage() returns trigger
language plpgsql security definer
set search_path = pg_catalog, app
as $$
declare
  v_event text := case
    when new.status = 'scheduled' then 'scheduled'
    when new.status = 'sent' then 'published'
    when new.status = 'failed' then 'failed'
    when old.status = 'scheduled' then 'unscheduled'
  end;
  r record;
begin
  if v_event is null then
    return null;
  end if;
  for r in
    select media_id, 'edition' as via from app.content_item_media where content_item_id = new.id
    union
    select media_id, 'root' from app.content_root_media where root_id = new.root_id
  loop
    perform app.media_usage_record(r.media_id, v_event, r.via, new.id, new.root_id);
  end loop;
  return null;
end
$$;
drop trigger if exists content_items_61_media_usage on app.content_items;
create trigger content_items_61_media_usage after update of status on app.content_items
  for each row when (new.status is distinct from old.status)
  execute function app.tg_content_items_media_usage();

------------------------------------------------------------------------------
-- JSON shapes
------------------------------------------------------------------------------
-- The media record, given its labels and usage count.
create or replace function app.media_record_json(m app.media_items, p_labels jsonb, p_usage int) returns jsonb
language sql immutable
as $$
  select jsonb_build_object(
    'id', m.id,
    'type', m.type,
    'filename', m.filename,
    'contentType', m.content_type,
    'fileSize', m.file_size,
    'width', m.width,
    'height', m.height,
    'durationMs', m.duration_ms,
    'checksumSha256', m.checksum_sha256,
    'altText', m.alt_text,
    'isFavorite', m.is_favorite,
    'source', m.source,
    'state', m.state,
    'folderId', m.folder_id,
    'labels', coalesce(p_labels, '[]'),
    'usageCount', coalesce(p_usage, 0),
    'isUsed', coalesce(p_usage, 0) > 0,
    'deletedAt', m.deleted_at,
    'deleteAfter', m.delete_after,
    'createdBy', m.created_by,
    'createdAt', m.created_at,
    'updatedAt', m.updated_at)
$$;

-- Media records of many items in the given order, with their labels and
-- usage counts in one query each. SECURITY DEFINER with one access check and
-- explicit workspace filters instead of the row-level security of six
-- tables: each scoped table reference costs a call of
-- app.accessible_workspace_ids(), about as long as the rest of a page.
-- Only rows of the current workspace count, and only when the principal may
-- access it (a forged context gets no labels and no usage).
create or replace function app.media_json_list(p_rows app.media_items[]) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, app
as $$
declare
  v_ws uuid := app.current_workspace_id();
  v_ids uuid[];
  v_labels jsonb := '{}';
  v_usage jsonb := '{}';
begin
  if coalesce(cardinality(p_rows), 0) = 0 then
    return '[]';
  end if;
  if app.current_workspace_accessible() then
    v_ids := array(select (p_rows[i]).id from generate_subscripts(p_rows, 1) i where (p_rows[i]).workspace_id = v_ws);
    select coalesce(jsonb_object_agg(media_id, labels), '{}') into v_labels from (
      select x.media_id, jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name, 'color', l.color, 'groupId', l.group_id)
                                   order by lower(l.name), l.id) as labels
      from app.media_item_labels x join app.media_labels l on l.id = x.label_id
      where x.media_id = any (v_ids) and x.workspace_id = v_ws
      group by x.media_id) s;
    select coalesce(jsonb_object_agg(media_id, n), '{}') into v_usage from (
      select media_id, count(distinct root_id) as n from (
        select cim.media_id, ci.root_id from app.content_item_media cim
        join app.content_items ci on ci.id = cim.content_item_id
        where cim.media_id = any (v_ids) and cim.workspace_id = v_ws and ci.deleted_at is null
        union all
        select crm.media_id, crm.root_id from app.content_root_media crm
        join app.content_roots r on r.id = crm.root_id
        where crm.media_id = any (v_ids) and crm.workspace_id = v_ws and r.deleted_at is null) u
      group by media_id) s;
  end if;
  return (select jsonb_agg(app.media_record_json(p_rows[i], v_labels -> (p_rows[i]).id::text,
                                                 (v_usage ->> (p_rows[i]).id::text)::int) order by i)
          from generate_subscripts(p_rows, 1) i);
end
$$;

create or replace function app.media_json(m app.media_items) returns jsonb
language sql stable
as $$ select app.media_json_list(array[m]) -> 0 $$;

create or replace function app.media_folder_json(f app.media_folders) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', f.id,
    'name', f.name,
    'parentId', f.parent_id,
    'depth', case when f.parent_id is null then 0 else 1 end,
    'subfolderCount', (select count(*)::int from app.media_folders c where c.parent_id = f.id),
    'mediaCount', (select count(*)::int from app.media_items m
                   where m.workspace_id = f.workspace_id and m.folder_id = f.id and m.state = 'active'),
    'createdAt', f.created_at,
    'updatedAt', f.updated_at)
$$;

create or replace function app.media_label_json(l app.media_labels) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', l.id,
    'name', l.name,
    'color', l.color,
    'groupId', l.group_id,
    'mergedIntoId', l.merged_into_id,
    'mergedAt', l.merged_at,
    'mediaCount', (select count(*)::int from app.media_item_labels x join app.media_items m on m.id = x.media_id
                   where x.label_id = l.id and m.state = 'active'),
    'createdAt', l.created_at,
    'updatedAt', l.updated_at)
$$;

create or replace function app.media_label_group_json(g app.media_label_groups) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'id', g.id,
    'name', g.name,
    'position', g.position,
    'labelCount', (select count(*)::int from app.media_labels l where l.group_id = g.id and l.merged_into_id is null),
    'createdAt', g.created_at,
    'updatedAt', g.updated_at)
$$;

-- An upload session; the server adds uploadUrl, method and headers.
create or replace function app.media_upload_json(s app.media_upload_sessions) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'sessionId', s.id,
    'state', case when s.state = 'pending' and s.expires_at <= now() then 'expired' else s.state end,
    'filename', s.filename,
    'contentType', s.content_type,
    'size', s.declared_size,
    'folderId', s.folder_id,
    'mediaId', s.media_id,
    'expiresAt', s.expires_at,
    'completedAt', s.completed_at,
    'createdAt', s.created_at,
    'storageKey', s.storage_key)
$$;

------------------------------------------------------------------------------
-- Lookups used by the api functions
------------------------------------------------------------------------------
create or replace function app.media_item(p_id uuid, p_for_update boolean default false) returns app.media_items
language plpgsql
as $$
declare
  v app.media_items;
begin
  if p_for_update then
    select * into v from app.media_items where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into v from app.media_items where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media item with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

create or replace function app.media_folder(p_id uuid, p_field text default 'id') returns app.media_folders
language plpgsql
as $$
declare
  v app.media_folders;
begin
  select * into v from app.media_folders where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media folder with this id in this workspace.', jsonb_build_object(p_field, p_id));
  end if;
  return v;
end
$$;

create or replace function app.media_label(p_id uuid, p_for_update boolean default false) returns app.media_labels
language plpgsql
as $$
declare
  v app.media_labels;
begin
  if p_for_update then
    select * into v from app.media_labels where id = p_id and workspace_id = app.current_workspace_id() for update;
  else
    select * into v from app.media_labels where id = p_id and workspace_id = app.current_workspace_id();
  end if;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No media label with this id in this workspace.', jsonb_build_object('id', p_id));
  end if;
  return v;
end
$$;

create or replace function app.media_label_group(p_id uuid, p_field text default 'id') returns app.media_label_groups
language plpgsql
as $$
declare
  v app.media_label_groups;
begin
  select * into v from app.media_label_groups where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No label group with this id in this workspace.', jsonb_build_object(p_field, p_id));
  end if;
  return v;
end
$$;

-- Every label exists here and was not merged away (404 / 409 for the whole request).
create or replace function app.media_check_labels(p_label_ids uuid[]) returns void
language plpgsql
as $$
declare
  v_missing uuid[];
  v_merged jsonb;
begin
  select coalesce(array_agg(x order by x), '{}') into v_missing from unnest(p_label_ids) x
  where not exists (select 1 from app.media_labels l where l.id = x and l.workspace_id = app.current_workspace_id());
  if cardinality(v_missing) > 0 then
    perform app.raise(404, 'NOT_FOUND', 'No media label with these ids in this workspace.',
      jsonb_build_object('labelIds', to_jsonb(v_missing)));
  end if;
  select jsonb_agg(jsonb_build_object('labelId', l.id, 'mergedIntoId', l.merged_into_id) order by l.id) into v_merged
  from app.media_labels l where l.id = any (p_label_ids) and l.merged_into_id is not null;
  if v_merged is not null then
    perform app.raise(409, 'LABEL_MERGED', 'These labels were merged into others; use the labels they were merged into.',
      jsonb_build_object('labels', v_merged));
  end if;
end
$$;

create or replace function app.media_require_active(m app.media_items) returns void
language plpgsql
as $$
begin
  if m.state <> 'active' then
    perform app.raise(409, 'MEDIA_IN_BIN', 'This media item is in the bin; restore it first.',
      jsonb_build_object('mediaId', m.id, 'deleteAfter', m.delete_after));
  end if;
end
$$;

------------------------------------------------------------------------------
-- Upload sessions
------------------------------------------------------------------------------
create or replace function api.init_media_upload(p_filename text, p_content_type text, p_size bigint,
  p_folder_id uuid, p_alt_text text, p_ttl_seconds int)
returns jsonb
language plpgsql volatile
as $$
declare
  v_type text := app.media_type_for_content_type(p_content_type);
  v_id uuid := gen_random_uuid();
  v_session app.media_upload_sessions;
begin
  perform app.require_role('editor');
  if v_type is null then
    perform app.raise(415, 'UNSUPPORTED_MEDIA_FORMAT',
      format('%s is not a supported media format.', p_content_type),
      jsonb_build_object('field', 'body.contentType', 'contentType', p_content_type,
                         'supported', app.media_supported_content_types()));
  end if;
  if p_size > app.media_max_bytes(v_type) then
    perform app.raise(413, 'MEDIA_TOO_LARGE',
      format('A %s may be at most %s bytes; this one is %s bytes.', v_type, app.media_max_bytes(v_type), p_size),
      jsonb_build_object('field', 'body.size', 'type', v_type, 'size', p_size, 'maxBytes', app.media_max_bytes(v_type)));
  end if;
  if btrim(p_filename) = '' or p_filename ~ '[[:cntrl:]/\\]' then
    perform app.media_invalid('body.filename', 'invalid', 'must be a file name without slashes or control characters');
  end if;
  if p_folder_id is not null then
    perform app.media_folder(p_folder_id, 'folderId');
  end if;
  insert into app.media_upload_sessions (id, organization_id, workspace_id, folder_id, filename, content_type,
    declared_size, alt_text, storage_key, expires_at, created_by)
  values (v_id, app.current_organization_id(), app.current_workspace_id(), p_folder_id, btrim(p_filename),
    lower(btrim(p_content_type)), p_size, p_alt_text,
    format('uploads/%s/%s', app.current_workspace_id(), v_id),
    now() + make_interval(secs => p_ttl_seconds), app.current_user_id())
  returning * into v_session;
  return app.media_upload_json(v_session);
end
$$;

create or replace function api.get_media_upload(p_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v app.media_upload_sessions;
begin
  perform app.require_role('viewer');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  -- Only those who may upload get the (write) URL again.
  return app.media_upload_json(v) || jsonb_build_object('canUpload', app.role_rank(app.current_workspace_role()) >= 2);
end
$$;

-- First step of completing: locks the session (a second completion waits,
-- then finds it completed). Returns the media item when already completed,
-- else what the server needs to verify the bytes.
create or replace function api.begin_media_upload_completion(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_upload_sessions;
  v_media app.media_items;
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'completed' then
    select * into v_media from app.media_items where id = v.media_id;
    if v_media.id is null then
      perform app.raise(404, 'NOT_FOUND', 'The media item made from this upload was deleted permanently.',
        jsonb_build_object('sessionId', p_id));
    end if;
    return jsonb_build_object('state', 'completed', 'media', app.media_json(v_media));
  end if;
  if v.state = 'aborted' then
    perform app.raise(409, 'UPLOAD_SESSION_ABORTED', 'This upload was aborted; start a new one.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'expired' or v.expires_at <= now() then
    perform app.raise(410, 'UPLOAD_SESSION_EXPIRED',
      format('This upload session expired at %s; start a new one.', v.expires_at),
      jsonb_build_object('sessionId', p_id, 'expiresAt', v.expires_at));
  end if;
  return jsonb_build_object('state', 'pending', 'sessionId', v.id, 'uploadKey', v.storage_key,
    'finalKey', format('media/%s/%s', v.workspace_id, v.id), 'declaredSize', v.declared_size,
    'contentType', v.content_type, 'filename', v.filename, 'folderId', v.folder_id);
end
$$;

-- Second step: the server verified the bytes (p_facts: type, contentType,
-- fileSize, width, height, durationMs, checksumSha256, storageKey); makes
-- the media item and closes the session.
create or replace function api.complete_media_upload(p_id uuid, p_facts jsonb, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_upload_sessions;
  v_media app.media_items;
  v_type text := p_facts ->> 'type';
  v_size bigint := (p_facts ->> 'fileSize')::bigint;
  v_folder uuid;
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = app.current_workspace_id()
    and state = 'pending' for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No pending upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v_size > app.media_max_bytes(v_type) then
    perform app.raise(413, 'MEDIA_TOO_LARGE',
      format('A %s may be at most %s bytes; this one is %s bytes.', v_type, app.media_max_bytes(v_type), v_size),
      jsonb_build_object('type', v_type, 'size', v_size, 'maxBytes', app.media_max_bytes(v_type)));
  end if;
  v_folder := case when p_patch ? 'folderId' then (p_patch ->> 'folderId')::uuid else v.folder_id end;
  if v_folder is not null then
    perform app.media_folder(v_folder, 'folderId');
  end if;
  insert into app.media_items (id, organization_id, workspace_id, folder_id, type, filename, content_type, file_size,
    width, height, duration_ms, checksum_sha256, storage_key, alt_text, source, created_by)
  values (v.id, v.organization_id, v.workspace_id, v_folder, v_type, v.filename, p_facts ->> 'contentType', v_size,
    (p_facts ->> 'width')::int, (p_facts ->> 'height')::int, (p_facts ->> 'durationMs')::int,
    p_facts ->> 'checksumSha256', p_facts ->> 'storageKey',
    case when p_patch ? 'altText' then p_patch ->> 'altText' else v.alt_text end,
    'client_upload', v.created_by)
  returning * into v_media;
  update app.media_upload_sessions set state = 'completed', completed_at = now(), media_id = v_media.id
  where id = v.id;
  return app.media_json(v_media);
end
$$;

create or replace function api.abort_media_upload(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_upload_sessions;
begin
  perform app.require_role('editor');
  select * into v from app.media_upload_sessions where id = p_id and workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No upload session with this id in this workspace.', jsonb_build_object('sessionId', p_id));
  end if;
  if v.state = 'completed' then
    perform app.raise(409, 'UPLOAD_SESSION_COMPLETED', 'This upload was completed; delete the media item instead.',
      jsonb_build_object('sessionId', p_id, 'mediaId', v.media_id));
  end if;
  if v.state = 'pending' then
    update app.media_upload_sessions set state = 'aborted' where id = v.id returning * into v;
    -- The upload key, and the final key a refused completion may have left.
    insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
    values (v.storage_key, v.workspace_id, v.organization_id, 'upload_aborted'),
           (format('media/%s/%s', v.workspace_id, v.id), v.workspace_id, v.organization_id, 'upload_aborted')
    on conflict (storage_key) do nothing;
  end if;
  return app.media_upload_json(v);
end
$$;

------------------------------------------------------------------------------
-- Media items
------------------------------------------------------------------------------
create or replace function api.get_media(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.media_json(app.media_item(p_id));
end
$$;

-- What the server needs to sign a view or download URL.
create or replace function api.media_object(p_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v app.media_items;
begin
  perform app.require_role('viewer');
  v := app.media_item(p_id);
  return jsonb_build_object('id', v.id, 'storageKey', v.storage_key, 'contentType', v.content_type,
    'filename', v.filename, 'fileSize', v.file_size, 'state', v.state, 'checksumSha256', v.checksum_sha256);
end
$$;

-- p_patch: filename, altText (null clears), isFavorite, folderId (null: root).
create or replace function api.update_media(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  if p_patch ? 'filename' and (btrim(p_patch ->> 'filename') = '' or (p_patch ->> 'filename') ~ '[[:cntrl:]/\\]') then
    perform app.media_invalid('body.filename', 'invalid', 'must be a file name without slashes or control characters');
  end if;
  if p_patch ? 'folderId' and p_patch ->> 'folderId' is not null then
    perform app.media_folder((p_patch ->> 'folderId')::uuid, 'folderId');
  end if;
  update app.media_items set
    filename = case when p_patch ? 'filename' then btrim(p_patch ->> 'filename') else filename end,
    alt_text = case when p_patch ? 'altText' then p_patch ->> 'altText' else alt_text end,
    is_favorite = case when p_patch ? 'isFavorite' then (p_patch ->> 'isFavorite')::boolean else is_favorite end,
    folder_id = case when p_patch ? 'folderId' then (p_patch ->> 'folderId')::uuid else folder_id end
  where id = v.id
  returning * into v;
  return app.media_json(v);
end
$$;

-- Moves to the bin; an item already in the bin is answered as it is.
create or replace function api.delete_media(p_id uuid, p_retention_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  v := app.media_item(p_id, true);
  if v.state = 'active' then
    update app.media_items set state = 'deleted', deleted_at = now(),
      delete_after = now() + make_interval(secs => p_retention_seconds)
    where id = v.id
    returning * into v;
  end if;
  return app.media_json(v);
end
$$;

-- Back from the bin; an active item is answered as it is.
create or replace function api.restore_media(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  v := app.media_item(p_id, true);
  if v.state = 'deleted' then
    update app.media_items set state = 'active' where id = v.id returning * into v;
  end if;
  return app.media_json(v);
end
$$;

-- Removes a binned item for good; its links from content (drafts and past
-- posts; scheduled content cannot hold binned media), its labels and usage
-- history go with it by cascade; its bytes go to the purge job.
create or replace function app.media_destroy(m app.media_items, p_reason text) returns void
language plpgsql
as $$
begin
  delete from app.media_items where id = m.id;
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  values (m.storage_key, m.workspace_id, m.organization_id, p_reason)
  on conflict (storage_key) do nothing;
end
$$;

create or replace function api.delete_media_permanently(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  v := app.media_item(p_id, true);
  if v.state <> 'deleted' then
    perform app.raise(409, 'MEDIA_NOT_IN_BIN', 'Only media in the bin can be deleted permanently; move it to the bin first.',
      jsonb_build_object('mediaId', v.id, 'state', v.state));
  end if;
  perform app.media_destroy(v, 'permanent_delete');
  return jsonb_build_object('id', v.id, 'deleted', true);
end
$$;

create or replace function api.empty_media_bin() returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
  v_ids uuid[] := '{}';
begin
  perform app.require_role('editor');
  for v in select * from app.media_items where workspace_id = app.current_workspace_id() and state = 'deleted'
           order by deleted_at, id for update
  loop
    perform app.media_destroy(v, 'permanent_delete');
    v_ids := v_ids || v.id;
  end loop;
  return jsonb_build_object('deletedCount', cardinality(v_ids), 'ids', to_jsonb(v_ids));
end
$$;

-- Labels of one item.
create or replace function api.attach_media_labels(p_id uuid, p_label_ids uuid[]) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  perform app.media_check_labels(p_label_ids);
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select v.id, x, v.workspace_id, v.organization_id, app.current_user_id() from unnest(p_label_ids) x
  on conflict do nothing;
  return app.media_json(v);
end
$$;

create or replace function api.detach_media_label(p_id uuid, p_label_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  perform app.media_label(p_label_id);
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  delete from app.media_item_labels where media_id = v.id and label_id = p_label_id;
  return app.media_json(v);
end
$$;

create or replace function api.replace_media_labels(p_id uuid, p_label_ids uuid[]) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
begin
  perform app.require_role('editor');
  perform app.media_check_labels(p_label_ids);
  v := app.media_item(p_id, true);
  perform app.media_require_active(v);
  delete from app.media_item_labels where media_id = v.id and not (label_id = any (p_label_ids));
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select v.id, x, v.workspace_id, v.organization_id, app.current_user_id() from unnest(p_label_ids) x
  on conflict do nothing;
  return app.media_json(v);
end
$$;

-- One item of a bulk action; raises like the single routes do.
create or replace function app.media_bulk_one(p_action text, p_id uuid, p_args jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_items;
  v_labels uuid[];
begin
  case p_action
    when 'delete' then
      return api.delete_media(p_id, (p_args ->> 'retentionSeconds')::int);
    when 'restore' then
      return api.restore_media(p_id);
    when 'delete_forever' then
      perform api.delete_media_permanently(p_id);
      return null;
    when 'move' then
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      update app.media_items set folder_id = (p_args ->> 'folderId')::uuid where id = v.id returning * into v;
      return app.media_json(v);
    when 'label' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
      select v.id, x, v.workspace_id, v.organization_id, app.current_user_id() from unnest(v_labels) x
      on conflict do nothing;
      return app.media_json(v);
    when 'unlabel' then
      select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_args -> 'labelIds') x;
      v := app.media_item(p_id, true);
      perform app.media_require_active(v);
      delete from app.media_item_labels where media_id = v.id and label_id = any (v_labels);
      return app.media_json(v);
  end case;
end
$$;

-- Bulk actions: one result per id, in the order given; a refused id does not
-- spoil the others (each runs in its own subtransaction). Request-wide
-- problems (an unknown target folder or label) refuse the whole request.
create or replace function api.bulk_media(p_action text, p_ids uuid[], p_args jsonb default '{}') returns jsonb
language plpgsql volatile
as $$
declare
  v_id uuid;
  v_media jsonb;
  v_results jsonb := '[]';
  v_ok int := 0;
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
  v_details jsonb;
begin
  perform app.require_role('editor');
  if p_action not in ('delete', 'restore', 'delete_forever', 'move', 'label', 'unlabel') then
    perform app.raise(400, 'VALIDATION_FAILED', format('Unknown bulk action %s.', p_action));
  end if;
  if p_action = 'move' and p_args ->> 'folderId' is not null then
    perform app.media_folder((p_args ->> 'folderId')::uuid, 'folderId');
  end if;
  if p_action in ('label', 'unlabel') then
    perform app.media_check_labels(array(select x::uuid from jsonb_array_elements_text(p_args -> 'labelIds') x));
  end if;
  foreach v_id in array p_ids
  loop
    begin
      v_media := app.media_bulk_one(p_action, v_id, p_args);
      v_ok := v_ok + 1;
      v_results := v_results || jsonb_build_array(jsonb_build_object('id', v_id, 'ok', true, 'status', 200,
        'media', v_media, 'error', null));
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_message = message_text, v_detail = pg_exception_detail,
        v_hint = pg_exception_hint;
      if v_state !~ '^PT[0-9]{3}$' then
        raise;
      end if;
      begin
        v_details := nullif(v_hint, '')::jsonb;
      exception when others then
        v_details := null;
      end;
      v_results := v_results || jsonb_build_array(jsonb_build_object('id', v_id, 'ok', false,
        'status', substr(v_state, 3)::int, 'media', null,
        'error', jsonb_build_object('code', coalesce(nullif(v_detail, ''), 'ERROR'), 'message', v_message, 'details', v_details)));
    end;
  end loop;
  return jsonb_build_object('results', v_results, 'succeeded', v_ok, 'failed', cardinality(p_ids) - v_ok);
end
$$;

-- The media list. p_filters: folderId, rootOnly, labelIds, isUnlabeled,
-- type, search, isFavorite, isUsed, isUnused, state, sortBy, order, source.
-- p_after: {"k": [sort value, id]} from the previous page's cursor.
create or replace function api.list_media(p_filters jsonb, p_after jsonb, p_limit int) returns jsonb
language plpgsql stable
as $$
declare
  v_state text := coalesce(p_filters ->> 'state', 'active');
  v_sort text := coalesce(p_filters ->> 'sortBy', 'createdAt');
  v_desc boolean := coalesce(p_filters ->> 'order', 'desc') = 'desc';
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_expr text;
  v_cast text;
  v_where text := 'm.workspace_id = $1';
  v_labels uuid[];
  v_used_expr text := '(exists (select 1 from app.content_item_media cim join app.content_items ci on ci.id = cim.content_item_id
        where cim.media_id = m.id and ci.deleted_at is null)
     or exists (select 1 from app.content_root_media crm join app.content_roots cr on cr.id = crm.root_id
        where crm.media_id = m.id and cr.deleted_at is null))';
  v_rows app.media_items[];
  v_items jsonb;
  v_last app.media_items;
  v_has_more boolean;
  v_key jsonb;
begin
  perform app.require_role('viewer');
  if (p_filters ->> 'rootOnly')::boolean and p_filters ->> 'folderId' is not null then
    perform app.media_invalid('query.rootOnly', 'conflict', 'cannot be combined with folderId');
  end if;
  if (p_filters ->> 'isUnlabeled')::boolean and p_filters ? 'labelIds' then
    perform app.media_invalid('query.isUnlabeled', 'conflict', 'cannot be true together with labelIds');
  end if;
  if p_filters ? 'isUsed' and p_filters ? 'isUnused'
     and (p_filters ->> 'isUsed')::boolean = (p_filters ->> 'isUnused')::boolean then
    perform app.media_invalid('query.isUnused', 'conflict', 'contradicts isUsed');
  end if;
  case v_sort
    when 'createdAt' then v_expr := 'm.created_at'; v_cast := 'timestamptz';
    when 'filename' then v_expr := 'lower(m.filename)'; v_cast := 'text';
    when 'fileSize' then v_expr := 'm.file_size'; v_cast := 'bigint';
    else perform app.media_invalid('query.sortBy', 'enum', 'must be createdAt, filename or fileSize');
  end case;
  if v_state <> 'all' then
    v_where := v_where || ' and m.state = $2';
  end if;
  if p_filters ->> 'folderId' is not null then
    v_where := v_where || ' and m.folder_id = $3';
  end if;
  if (p_filters ->> 'rootOnly')::boolean then
    v_where := v_where || ' and m.folder_id is null';
  end if;
  if p_filters ? 'labelIds' then
    select array_agg(x::uuid) into v_labels from jsonb_array_elements_text(p_filters -> 'labelIds') x;
    v_where := v_where || ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id and x.label_id = any ($4))';
  end if;
  if p_filters ? 'isUnlabeled' then
    v_where := v_where || case when (p_filters ->> 'isUnlabeled')::boolean
      then ' and not exists (select 1 from app.media_item_labels x where x.media_id = m.id)'
      else ' and exists (select 1 from app.media_item_labels x where x.media_id = m.id)' end;
  end if;
  if p_filters ? 'type' then
    v_where := v_where || ' and m.type = $5';
  end if;
  if coalesce(p_filters ->> 'search', '') <> '' then
    v_where := v_where || ' and (m.filename ilike $6 or m.alt_text ilike $6)';
  end if;
  if p_filters ? 'isFavorite' then
    v_where := v_where || ' and m.is_favorite = $7';
  end if;
  if p_filters ? 'isUsed' then
    v_where := v_where || case when (p_filters ->> 'isUsed')::boolean then ' and ' else ' and not ' end || v_used_expr;
  elsif p_filters ? 'isUnused' then
    v_where := v_where || case when (p_filters ->> 'isUnused')::boolean then ' and not ' else ' and ' end || v_used_expr;
  end if;
  if p_filters ? 'source' then
    v_where := v_where || ' and m.source = $8';
  end if;
  if p_after is not null then
    v_where := v_where || format(' and (%s, m.id) %s ($9::%s, $10::uuid)', v_expr, case when v_desc then '<' else '>' end, v_cast);
  end if;
  execute format('select array(select m from app.media_items m where %s order by %s %s, m.id %s limit $11)',
                 v_where, v_expr, case when v_desc then 'desc' else 'asc' end, case when v_desc then 'desc' else 'asc' end)
    into v_rows
    using app.current_workspace_id(), v_state, (p_filters ->> 'folderId')::uuid, v_labels, p_filters ->> 'type',
          app.media_contains_pattern(coalesce(p_filters ->> 'search', '')), (p_filters ->> 'isFavorite')::boolean,
          p_filters ->> 'source', p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid, v_limit + 1;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
  end if;
  v_items := app.media_json_list(v_rows);
  if v_has_more then
    v_last := v_rows[v_limit];
    v_key := jsonb_build_array(case v_sort when 'createdAt' then to_jsonb(v_last.created_at)
                                           when 'filename' then to_jsonb(lower(v_last.filename))
                                           else to_jsonb(v_last.file_size) end, v_last.id);
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', v_has_more, 'last', v_key);
end
$$;

create or replace function api.list_media_usage_history(p_id uuid, p_after jsonb, p_limit int) returns jsonb
language plpgsql stable
as $$
declare
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_items jsonb;
  v_count int;
begin
  perform app.require_role('viewer');
  perform app.media_item(p_id);
  select coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'event', e.event, 'via', e.via,
           'contentId', e.content_item_id, 'rootId', e.root_id, 'contentStatus', e.content_status,
           'scheduledAt', e.scheduled_at, 'occurredAt', e.occurred_at) order by e.occurred_at desc, e.id desc), '[]'),
         count(*)
    into v_items, v_count
  from (select * from app.media_usage_events e
        where e.media_id = p_id and e.workspace_id = app.current_workspace_id()
          and (p_after is null or (e.occurred_at, e.id) < ((p_after -> 'k' ->> 0)::timestamptz, (p_after -> 'k' ->> 1)::uuid))
        order by e.occurred_at desc, e.id desc
        limit v_limit + 1) e;
  if v_count > v_limit then
    v_items := v_items - v_limit;
    return jsonb_build_object('items', v_items, 'hasMore', true,
      'last', jsonb_build_array(v_items -> (v_limit - 1) -> 'occurredAt', v_items -> (v_limit - 1) -> 'id'));
  end if;
  return jsonb_build_object('items', v_items, 'hasMore', false, 'last', null);
end
$$;

------------------------------------------------------------------------------
-- Folders
------------------------------------------------------------------------------
create or replace function app.media_folder_name_taken(p_name text) returns void
language plpgsql
as $$
begin
  perform app.raise(409, 'FOLDER_NAME_TAKEN', format('A folder named %s already exists here.', p_name),
    jsonb_build_object('field', 'name', 'name', p_name));
end
$$;

create or replace function api.create_media_folder(p_name text, p_parent_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_folders;
begin
  perform app.require_role('editor');
  if p_parent_id is not null then
    perform app.media_folder(p_parent_id, 'parentId');
  end if;
  begin
    insert into app.media_folders (organization_id, workspace_id, parent_id, name)
    values (app.current_organization_id(), app.current_workspace_id(), p_parent_id, btrim(p_name))
    returning * into v;
  exception when unique_violation then
    perform app.media_folder_name_taken(btrim(p_name));
  end;
  return app.media_folder_json(v);
end
$$;

-- p_parent: null (all folders), 'root', or a folder id. Ordered by name.
create or replace function api.list_media_folders(p_parent text, p_after jsonb, p_limit int) returns jsonb
language plpgsql stable
as $$
declare
  v_limit int := least(greatest(coalesce(p_limit, 50), 1), 100);
  v_parent uuid;
  v_rows app.media_folders[];
  v_has_more boolean;
  v_last app.media_folders;
begin
  perform app.require_role('viewer');
  if p_parent is not null and p_parent <> 'root' then
    v_parent := (app.media_folder(p_parent::uuid, 'parentId')).id;
  end if;
  select array(
    select f from app.media_folders f
    where f.workspace_id = app.current_workspace_id()
      and (p_parent is null or (p_parent = 'root' and f.parent_id is null) or f.parent_id = v_parent)
      and (p_after is null or (lower(f.name), f.id) > (p_after -> 'k' ->> 0, (p_after -> 'k' ->> 1)::uuid))
    order by lower(f.name), f.id
    limit v_limit + 1) into v_rows;
  v_has_more := cardinality(v_rows) > v_limit;
  if v_has_more then
    v_rows := v_rows[1:v_limit];
    v_last := v_rows[v_limit];
  end if;
  return jsonb_build_object(
    'items', (select coalesce(jsonb_agg(app.media_folder_json(v_rows[i]) order by i), '[]') from generate_subscripts(v_rows, 1) i),
    'hasMore', v_has_more,
    'last', case when v_has_more then jsonb_build_array(lower(v_last.name), v_last.id) end);
end
$$;

create or replace function api.get_media_folder(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.media_folder_json(app.media_folder(p_id));
end
$$;

create or replace function api.update_media_folder(p_id uuid, p_name text) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_folders;
begin
  perform app.require_role('editor');
  v := app.media_folder(p_id);
  begin
    update app.media_folders set name = btrim(p_name) where id = v.id returning * into v;
  exception when unique_violation then
    perform app.media_folder_name_taken(btrim(p_name));
  end;
  return app.media_folder_json(v);
end
$$;

-- Deletes the folder and its subfolders; their media moves to the library
-- root (binned media too), nothing else is deleted.
create or replace function api.delete_media_folder(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_folders;
  v_sub int;
  v_moved int;
begin
  perform app.require_role('editor');
  v := app.media_folder(p_id);
  select count(*) into v_sub from app.media_folders where parent_id = v.id;
  update app.media_items set folder_id = null
  where workspace_id = v.workspace_id and folder_id in (select id from app.media_folders where id = v.id or parent_id = v.id);
  get diagnostics v_moved = row_count;
  delete from app.media_folders where id = v.id;
  return jsonb_build_object('id', v.id, 'deleted', true, 'subfoldersDeleted', v_sub, 'mediaMovedToRoot', v_moved);
end
$$;

create or replace function api.media_folder_path(p_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v app.media_folders;
  v_parent app.media_folders;
begin
  perform app.require_role('viewer');
  v := app.media_folder(p_id);
  if v.parent_id is null then
    return jsonb_build_array(app.media_folder_json(v));
  end if;
  select * into v_parent from app.media_folders where id = v.parent_id;
  return jsonb_build_array(app.media_folder_json(v_parent), app.media_folder_json(v));
end
$$;

-- Target: the root (null) or a root folder; the trigger refuses deeper nesting.
create or replace function api.move_media_folder(p_id uuid, p_parent_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_folders;
begin
  perform app.require_role('editor');
  v := app.media_folder(p_id);
  if p_parent_id is not null then
    perform app.media_folder(p_parent_id, 'parentId');
  end if;
  begin
    update app.media_folders set parent_id = p_parent_id where id = v.id returning * into v;
  exception when unique_violation then
    perform app.media_folder_name_taken(v.name);
  end;
  return app.media_folder_json(v);
end
$$;

------------------------------------------------------------------------------
-- Labels
------------------------------------------------------------------------------
create or replace function app.media_label_name_taken(p_name text) returns void
language plpgsql
as $$
begin
  perform app.raise(409, 'LABEL_NAME_TAKEN', format('A label named %s already exists.', p_name),
    jsonb_build_object('field', 'name', 'name', p_name));
end
$$;

create or replace function api.create_media_label(p_name text, p_color text, p_group_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_labels;
begin
  perform app.require_role('editor');
  if p_group_id is not null then
    perform app.media_label_group(p_group_id, 'groupId');
  end if;
  begin
    insert into app.media_labels (organization_id, workspace_id, group_id, name, color, created_by)
    values (app.current_organization_id(), app.current_workspace_id(), p_group_id, btrim(p_name), lower(p_color),
            app.current_user_id())
    returning * into v;
  exception when unique_violation then
    perform app.media_label_name_taken(btrim(p_name));
  end;
  return app.media_label_json(v);
end
$$;

-- p_group: null (every group), '' (ungrouped only) or a group id.
create or replace function api.list_media_labels(p_group text, p_include_merged boolean, p_search text) returns jsonb
language plpgsql stable
as $$
declare
  v_group uuid;
begin
  perform app.require_role('viewer');
  if nullif(p_group, '') is not null then
    v_group := (app.media_label_group(p_group::uuid, 'groupId')).id;
  end if;
  return (
    select coalesce(jsonb_agg(app.media_label_json(l) order by lower(l.name), l.id), '[]')
    from app.media_labels l
    where l.workspace_id = app.current_workspace_id()
      and (coalesce(p_include_merged, false) or l.merged_into_id is null)
      and (p_group is null or (p_group = '' and l.group_id is null) or l.group_id = v_group)
      and (coalesce(p_search, '') = '' or l.name ilike app.media_contains_pattern(p_search)));
end
$$;

create or replace function api.get_media_label(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.media_label_json(app.media_label(p_id));
end
$$;

-- Usage counts per label (merged labels aside), most used first.
create or replace function api.media_label_usage() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return (
    select coalesce(jsonb_agg(jsonb_build_object('labelId', l.id, 'name', l.name, 'groupId', l.group_id,
             'mediaCount', c.active, 'binnedMediaCount', c.binned, 'lastAssignedAt', c.last_at)
           order by c.active desc, lower(l.name), l.id), '[]')
    from app.media_labels l
    cross join lateral (
      select count(*) filter (where m.state = 'active')::int as active,
             count(*) filter (where m.state = 'deleted')::int as binned,
             max(x.created_at) as last_at
      from app.media_item_labels x join app.media_items m on m.id = x.media_id
      where x.label_id = l.id) c
    where l.workspace_id = app.current_workspace_id() and l.merged_into_id is null);
end
$$;

-- What needs tidying: unused labels, empty groups, labels whose names
-- differ only in case, spacing or punctuation, and how much media is labeled.
create or replace function api.media_label_health() returns jsonb
language plpgsql stable
as $$
declare
  v_ws uuid := app.current_workspace_id();
begin
  perform app.require_role('viewer');
  return jsonb_build_object(
    'labelCount', (select count(*)::int from app.media_labels where workspace_id = v_ws and merged_into_id is null),
    'groupCount', (select count(*)::int from app.media_label_groups where workspace_id = v_ws),
    'ungroupedLabelCount', (select count(*)::int from app.media_labels
                            where workspace_id = v_ws and merged_into_id is null and group_id is null),
    'mergedLabelCount', (select count(*)::int from app.media_labels where workspace_id = v_ws and merged_into_id is not null),
    'unusedLabels', (select coalesce(jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name) order by lower(l.name), l.id), '[]')
                     from app.media_labels l
                     where l.workspace_id = v_ws and l.merged_into_id is null
                       and not exists (select 1 from app.media_item_labels x join app.media_items m on m.id = x.media_id
                                       where x.label_id = l.id and m.state = 'active')),
    'emptyGroups', (select coalesce(jsonb_agg(jsonb_build_object('id', g.id, 'name', g.name) order by g.position, g.id), '[]')
                    from app.media_label_groups g
                    where g.workspace_id = v_ws
                      and not exists (select 1 from app.media_labels l where l.group_id = g.id and l.merged_into_id is null)),
    'similarLabels', (select coalesce(jsonb_agg(jsonb_build_object('key', s.key, 'labels', s.labels) order by s.key), '[]')
                      from (select regexp_replace(lower(l.name), '[^[:alnum:]]+', '', 'g') as key,
                                   jsonb_agg(jsonb_build_object('id', l.id, 'name', l.name) order by lower(l.name), l.id) as labels
                            from app.media_labels l
                            where l.workspace_id = v_ws and l.merged_into_id is null
                            group by 1 having count(*) > 1) s),
    'media', (select jsonb_build_object('total', t.total, 'labeled', l.labeled, 'unlabeled', t.total - l.labeled)
              from (select count(*)::int as total from app.media_items m where m.workspace_id = v_ws and m.state = 'active') t,
                   (select count(distinct x.media_id)::int as labeled from app.media_item_labels x
                    join app.media_items m on m.id = x.media_id
                    where x.workspace_id = v_ws and m.state = 'active') l));
end
$$;

-- p_patch: name, color (null clears), groupId (null: ungrouped).
create or replace function api.update_media_label(p_id uuid, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_labels;
begin
  perform app.require_role('editor');
  v := app.media_label(p_id, true);
  if v.merged_into_id is not null then
    perform app.raise(409, 'LABEL_MERGED', 'This label was merged into another; change that label instead.',
      jsonb_build_object('labelId', v.id, 'mergedIntoId', v.merged_into_id));
  end if;
  if p_patch ? 'groupId' and p_patch ->> 'groupId' is not null then
    perform app.media_label_group((p_patch ->> 'groupId')::uuid, 'groupId');
  end if;
  begin
    update app.media_labels set
      name = case when p_patch ? 'name' then btrim(p_patch ->> 'name') else name end,
      color = case when p_patch ? 'color' then lower(p_patch ->> 'color') else color end,
      group_id = case when p_patch ? 'groupId' then (p_patch ->> 'groupId')::uuid else group_id end
    where id = v.id
    returning * into v;
  exception when unique_violation then
    perform app.media_label_name_taken(btrim(p_patch ->> 'name'));
  end;
  return app.media_label_json(v);
end
$$;

create or replace function api.delete_media_label(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_labels;
  v_detached int;
begin
  perform app.require_role('editor');
  v := app.media_label(p_id, true);
  select count(*) into v_detached from app.media_item_labels where label_id = v.id;
  delete from app.media_labels where id = v.id;
  return jsonb_build_object('id', v.id, 'deleted', true, 'detachedFromMediaCount', v_detached);
end
$$;

-- Merges the source label into the target: the source's media get the
-- target label, the source becomes an alias pointing at the target.
create or replace function api.merge_media_labels(p_source_id uuid, p_target_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v_source app.media_labels;
  v_target app.media_labels;
begin
  perform app.require_role('editor');
  if p_source_id = p_target_id then
    perform app.media_invalid('body.targetLabelId', 'same_label', 'must differ from the source label');
  end if;
  -- Lock both in id order, so two opposite merges cannot deadlock.
  perform 1 from app.media_labels where id in (p_source_id, p_target_id) and workspace_id = app.current_workspace_id()
    order by id for update;
  v_source := app.media_label(p_source_id);
  select * into v_target from app.media_labels where id = p_target_id and workspace_id = app.current_workspace_id();
  if v_target.id is null then
    perform app.raise(404, 'NOT_FOUND', 'No target label with this id in this workspace.', jsonb_build_object('targetLabelId', p_target_id));
  end if;
  if v_source.merged_into_id is not null then
    perform app.raise(409, 'LABEL_MERGED', 'The source label was already merged.',
      jsonb_build_object('labelId', v_source.id, 'mergedIntoId', v_source.merged_into_id));
  end if;
  if v_target.merged_into_id is not null then
    perform app.raise(409, 'LABEL_MERGED', 'The target label was merged into another; merge into that label.',
      jsonb_build_object('labelId', v_target.id, 'mergedIntoId', v_target.merged_into_id));
  end if;
  insert into app.media_item_labels (media_id, label_id, workspace_id, organization_id, created_by)
  select x.media_id, v_target.id, x.workspace_id, x.organization_id, app.current_user_id()
  from app.media_item_labels x where x.label_id = v_source.id
  on conflict do nothing;
  delete from app.media_item_labels where label_id = v_source.id;
  -- Earlier aliases of the source now point at the target.
  update app.media_labels set merged_into_id = v_target.id where merged_into_id = v_source.id;
  update app.media_labels set merged_into_id = v_target.id, merged_at = now(), group_id = null
  where id = v_source.id
  returning * into v_source;
  return app.media_label_json(v_source);
end
$$;

------------------------------------------------------------------------------
-- Label groups
------------------------------------------------------------------------------
create or replace function app.media_label_group_name_taken(p_name text) returns void
language plpgsql
as $$
begin
  perform app.raise(409, 'LABEL_GROUP_NAME_TAKEN', format('A label group named %s already exists.', p_name),
    jsonb_build_object('field', 'name', 'name', p_name));
end
$$;

create or replace function app.media_label_groups_json() returns jsonb
language sql stable
as $$
  select coalesce(jsonb_agg(app.media_label_group_json(g) order by g.position, g.id), '[]')
  from app.media_label_groups g where g.workspace_id = app.current_workspace_id()
$$;

-- New groups go last.
create or replace function api.create_media_label_group(p_name text) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_label_groups;
begin
  perform app.require_role('editor');
  perform pg_advisory_xact_lock(hashtext('media_label_groups:' || app.current_workspace_id()::text));
  begin
    insert into app.media_label_groups (organization_id, workspace_id, name, position)
    values (app.current_organization_id(), app.current_workspace_id(), btrim(p_name),
            coalesce((select max(position) + 1 from app.media_label_groups where workspace_id = app.current_workspace_id()), 0))
    returning * into v;
  exception when unique_violation then
    perform app.media_label_group_name_taken(btrim(p_name));
  end;
  return app.media_label_group_json(v);
end
$$;

create or replace function api.list_media_label_groups() returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.media_label_groups_json();
end
$$;

create or replace function api.get_media_label_group(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  return app.media_label_group_json(app.media_label_group(p_id));
end
$$;

create or replace function api.update_media_label_group(p_id uuid, p_name text) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_label_groups;
begin
  perform app.require_role('editor');
  v := app.media_label_group(p_id);
  begin
    update app.media_label_groups set name = btrim(p_name) where id = v.id returning * into v;
  exception when unique_violation then
    perform app.media_label_group_name_taken(btrim(p_name));
  end;
  return app.media_label_group_json(v);
end
$$;

-- p_ids must name every group of the workspace exactly once (a stale list
-- is refused rather than half applied).
create or replace function api.reorder_media_label_groups(p_ids uuid[]) returns jsonb
language plpgsql volatile
as $$
declare
  v_current uuid[];
  v_missing uuid[];
  v_unknown uuid[];
begin
  perform app.require_role('editor');
  perform pg_advisory_xact_lock(hashtext('media_label_groups:' || app.current_workspace_id()::text));
  select coalesce(array_agg(id order by id), '{}') into v_current
  from app.media_label_groups where workspace_id = app.current_workspace_id();
  select coalesce(array_agg(x order by x), '{}') into v_missing from unnest(v_current) x where not (x = any (p_ids));
  select coalesce(array_agg(x order by x), '{}') into v_unknown from unnest(p_ids) x where not (x = any (v_current));
  if cardinality(v_missing) > 0 or cardinality(v_unknown) > 0 then
    perform app.raise(409, 'LABEL_GROUPS_CHANGED',
      'groupIds must list every label group of the workspace exactly once; reload the groups and retry.',
      jsonb_build_object('missingGroupIds', to_jsonb(v_missing), 'unknownGroupIds', to_jsonb(v_unknown)));
  end if;
  update app.media_label_groups g set position = (u.ord - 1)::int
  from unnest(p_ids) with ordinality u (id, ord)
  where g.id = u.id and g.position is distinct from (u.ord - 1)::int;
  return app.media_label_groups_json();
end
$$;

-- Moves labels into a group, or out of any group (p_group_id null).
create or replace function api.move_media_labels_to_group(p_group_id uuid, p_label_ids uuid[]) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if p_group_id is not null then
    perform app.media_label_group(p_group_id);
  end if;
  perform app.media_check_labels(p_label_ids);
  update app.media_labels set group_id = p_group_id
  where id = any (p_label_ids) and workspace_id = app.current_workspace_id() and group_id is distinct from p_group_id;
  return (select coalesce(jsonb_agg(app.media_label_json(l) order by lower(l.name), l.id), '[]')
          from app.media_labels l where l.id = any (p_label_ids));
end
$$;

-- p_labels: 'ungroup' keeps the group's labels without a group, 'delete'
-- deletes them (and their assignments).
create or replace function api.delete_media_label_group(p_id uuid, p_labels text) returns jsonb
language plpgsql volatile
as $$
declare
  v app.media_label_groups;
  v_count int;
begin
  perform app.require_role('editor');
  v := app.media_label_group(p_id);
  if p_labels not in ('ungroup', 'delete') then
    perform app.media_invalid('body.labels', 'enum', 'must be ungroup or delete');
  end if;
  select count(*) into v_count from app.media_labels where group_id = v.id and merged_into_id is null;
  if p_labels = 'delete' then
    delete from app.media_labels where group_id = v.id;
  end if;
  delete from app.media_label_groups where id = v.id;
  return jsonb_build_object('id', v.id, 'deleted', true, 'labels', p_labels, 'labelCount', v_count);
end
$$;

------------------------------------------------------------------------------
-- Storage: called by the server's login role (pressroom_app) outside any
-- request transaction, for the signed URLs it serves itself.
------------------------------------------------------------------------------
-- The signing secret when SIGNED_URL_SECRET is not configured: the first
-- process stores its random candidate, every process reads the same value.
create or replace function api.storage_signing_secret(p_candidate bytea) returns bytea
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v bytea;
begin
  insert into app.server_secrets (name, value) values ('storage.signing', p_candidate) on conflict (name) do nothing;
  select value into v from app.server_secrets where name = 'storage.signing';
  return v;
end
$$;

-- Whether a signed upload URL may still receive bytes.
create or replace function api.storage_upload_session(p_id uuid) returns jsonb
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select jsonb_build_object('sessionId', s.id, 'state', s.state, 'storageKey', s.storage_key,
    'declaredSize', s.declared_size, 'contentType', s.content_type, 'expiresAt', s.expires_at,
    'expired', s.expires_at <= now())
  from app.media_upload_sessions s where s.id = p_id
$$;

-- The object behind a signed view or download URL (null once deleted for good).
create or replace function api.storage_media_object(p_id uuid) returns jsonb
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select jsonb_build_object('id', m.id, 'storageKey', m.storage_key, 'contentType', m.content_type,
    'filename', m.filename, 'fileSize', m.file_size, 'checksumSha256', m.checksum_sha256)
  from app.media_items m where m.id = p_id
$$;

------------------------------------------------------------------------------
-- Maintenance (jobs, as pressroom_worker)
------------------------------------------------------------------------------
-- Deletes binned items whose deleteAfter has passed (oldest first, at most
-- p_limit); their bytes are queued in media_storage_garbage. An item still
-- used by scheduled content (only a DBA could have made that) is skipped.
create or replace function app.media_purge_bin(p_limit int default 500) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v app.media_items;
  v_purged int := 0;
  v_skipped int := 0;
begin
  for v in select * from app.media_items where state = 'deleted' and delete_after <= now()
           order by delete_after, id limit p_limit for update skip locked
  loop
    if cardinality(app.media_scheduled_content_ids(v.id)) > 0 then
      v_skipped := v_skipped + 1;
      continue;
    end if;
    perform app.media_destroy(v, 'bin_purge');
    v_purged := v_purged + 1;
  end loop;
  return jsonb_build_object('purged', v_purged, 'skipped', v_skipped);
end
$$;

-- Upload sessions past their expiry: pending ones become expired; whatever
-- was PUT to their upload key (the bytes of an abandoned upload, or a stray
-- PUT after completion) is queued for removal. Closed sessions are kept 7
-- days (so a late second completion still answers), then forgotten.
create or replace function app.media_expire_upload_sessions(p_limit int default 1000) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_expired int;
  v_swept int;
  v_forgotten int;
begin
  update app.media_upload_sessions set state = 'expired'
  where id in (select id from app.media_upload_sessions where state = 'pending' and expires_at <= now()
               order by expires_at limit p_limit for update skip locked);
  get diagnostics v_expired = row_count;
  with swept as (
    update app.media_upload_sessions set upload_swept_at = now()
    where id in (select id from app.media_upload_sessions where upload_swept_at is null and expires_at <= now()
                 order by expires_at limit p_limit for update skip locked)
    returning id, state, storage_key, workspace_id, organization_id)
  insert into app.media_storage_garbage (storage_key, workspace_id, organization_id, reason)
  select storage_key, workspace_id, organization_id, 'upload_swept' from swept
  union all
  -- Never completed: the final key a refused completion may have left.
  select format('media/%s/%s', workspace_id, id), workspace_id, organization_id, 'upload_expired' from swept
  where state <> 'completed'
  on conflict (storage_key) do nothing;
  get diagnostics v_swept = row_count;
  delete from app.media_upload_sessions where expires_at <= now() - interval '7 days' and upload_swept_at is not null;
  get diagnostics v_forgotten = row_count;
  return jsonb_build_object('expired', v_expired, 'keysQueued', v_swept, 'forgotten', v_forgotten);
end
$$;

-- Storage keys to delete (oldest first); the job deletes the bytes, then
-- calls app.media_garbage_done with the keys it removed.
create or replace function app.media_garbage_batch(p_limit int default 500) returns text[]
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select coalesce(array_agg(storage_key order by created_at, storage_key), '{}')
  from (select storage_key, created_at from app.media_storage_garbage order by created_at, storage_key limit p_limit) g
$$;

create or replace function app.media_garbage_done(p_keys text[]) returns int
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v int;
begin
  -- A key that a live item or pending upload still uses is never removed.
  delete from app.media_storage_garbage g where g.storage_key = any (p_keys);
  get diagnostics v = row_count;
  return v;
end
$$;

-- Keys that may not be deleted although queued (a row still points at them).
create or replace function app.media_keys_in_use(p_keys text[]) returns text[]
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select coalesce(array_agg(k), '{}') from unnest(p_keys) k
  where exists (select 1 from app.media_items m where m.storage_key = k)
     or exists (select 1 from app.media_upload_sessions s where s.storage_key = k and s.state = 'pending' and s.expires_at > now())
$$;

------------------------------------------------------------------------------
-- Ownership and execute grants
------------------------------------------------------------------------------
do $$
declare
  f regprocedure;
begin
  -- Security-definer functions belong to the definer role.
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where p.prosecdef and ((n.nspname = 'app' and p.proname = any (array[
             'tg_media_folders_check_depth', 'media_scheduled_content_ids', 'tg_media_items_guard',
             'tg_media_items_guard_delete', 'tg_content_media_link_not_binned', 'tg_content_items_media_not_binned',
             'tg_media_item_labels_check_label', 'media_usage_record', 'tg_content_item_media_usage',
             'tg_content_root_media_usage', 'tg_content_items_media_usage', 'media_purge_bin',
             'media_expire_upload_sessions', 'media_garbage_batch', 'media_garbage_done', 'media_keys_in_use',
             'media_json_list']))
       or (n.nspname = 'api' and p.proname = any (array['storage_signing_secret', 'storage_upload_session', 'storage_media_object'])))
  loop
    execute format('alter function %s owner to pressroom_definer', f);
  end loop;
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where (n.nspname = 'api' and p.proname = any (array[
             'init_media_upload', 'get_media_upload', 'begin_media_upload_completion', 'complete_media_upload',
             'abort_media_upload', 'get_media', 'media_object', 'update_media', 'delete_media', 'restore_media',
             'delete_media_permanently', 'empty_media_bin', 'attach_media_labels', 'detach_media_label',
             'replace_media_labels', 'bulk_media', 'list_media', 'list_media_usage_history',
             'create_media_folder', 'list_media_folders', 'get_media_folder', 'update_media_folder', 'delete_media_folder',
             'media_folder_path', 'move_media_folder', 'create_media_label', 'list_media_labels', 'get_media_label',
             'media_label_usage', 'media_label_health', 'update_media_label', 'delete_media_label', 'merge_media_labels',
             'create_media_label_group', 'list_media_label_groups', 'get_media_label_group', 'update_media_label_group',
             'reorder_media_label_groups', 'move_media_labels_to_group', 'delete_media_label_group']))
       or (n.nspname = 'app' and p.proname = any (array[
             'media_max_bytes', 'media_type_for_content_type', 'media_supported_content_types', 'media_contains_pattern',
             'media_invalid', 'media_scheduled_content_ids', 'tg_media_folders_check_depth', 'tg_media_items_guard',
             'tg_media_items_guard_delete', 'tg_content_media_link_not_binned', 'tg_content_items_media_not_binned',
             'tg_media_item_labels_check_label', 'media_usage_record', 'tg_content_item_media_usage',
             'tg_content_root_media_usage', 'tg_content_items_media_usage', 'media_json',
             'media_record_json', 'media_json_list',
             'media_folder_json', 'media_label_json', 'media_label_group_json', 'media_upload_json', 'media_item',
             'media_folder', 'media_label', 'media_label_group', 'media_check_labels', 'media_require_active',
             'media_destroy', 'media_bulk_one', 'media_folder_name_taken', 'media_label_name_taken',
             'media_label_group_name_taken', 'media_label_groups_json']))
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f);
  end loop;
  -- The server's login role, outside request transactions: signed URLs.
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'api' and p.proname = any (array['storage_signing_secret', 'storage_upload_session', 'storage_media_object'])
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to pressroom_app', f);
  end loop;
  -- The jobs.
  for f in
    select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = 'app' and p.proname = any (array['media_purge_bin', 'media_expire_upload_sessions',
                                                       'media_garbage_batch', 'media_garbage_done', 'media_keys_in_use'])
  loop
    execute format('revoke all on function %s from public', f);
    execute format('grant execute on function %s to pressroom_worker', f);
  end loop;
end
$$;

--! split: 70-publishing.sql
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
             and (select app.current_workspace_accessible())
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

--! split: 80-articles.sql
-- Articles (issue 5, "Articles"): long-form drafts for platforms whose
-- capabilities.canPublishArticles is true (platform x). An article is a
-- content item of kind 'article' with its own root, so its contentId works on
-- every content lifecycle route (schedule, revert-to-draft, delete, ...); its
-- title, body and cover live in app.articles, its inline images (body order)
-- in app.article_images.
--
-- Rules held here, whoever writes (trigger articles_20_guard and friends):
--   * title 1-200 characters; body at most 2,000,000 characters of stored HTML
--     (the request takes at most 1,000,000; sanitizing may lengthen it, as
--     <br> becomes <br />), at
--     most 100,000 characters of text (character_count, computed by the server
--     from the sanitized body: see server/articles/text.ts), at most 20 images;
--   * every inline image (<img data-media-id="...">, read from the body itself)
--     and the cover is a still image (type 'image', not 'gif' or 'video') of
--     at most 5 MB, active in the workspace's media library;
--   * title, body and cover change only while the article is a draft
--     (PT400 INVALID_CONTENT_STATUS);
--   * body_version counts body changes: nobody sets it by hand; it goes up by
--     one whenever body_html changes. api.update_article refuses a body
--     replacement whose expectedBodyVersion is stale (PT409 POST_BODY_CHANGED).
-- Idempotent: it is rerun whole whenever it changes.

create table if not exists app.articles (
  content_item_id uuid primary key references app.content_items (id) on delete cascade,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  title text not null constraint articles_title_length check (char_length(title) between 1 and 200),
  body_html text not null default '' constraint articles_body_html_length check (char_length(body_html) <= 2000000),
  body_version int not null default 1 check (body_version >= 1),
  character_count int not null default 0 constraint articles_character_count check (character_count between 0 and 100000),
  cover_media_id uuid references app.media_items (id),
  platform_draft_article_id text check (platform_draft_article_id is null or length(platform_draft_article_id) <= 500),
  platform_draft_url text check (platform_draft_url is null or length(platform_draft_url) <= 2048),
  platform_draft_sent_at timestamptz,
  platform_draft_fingerprint text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index if not exists articles_workspace_id_idx on app.articles (workspace_id) include (organization_id);
create index if not exists articles_organization_id_idx on app.articles (organization_id);
create index if not exists articles_cover_media_id_idx on app.articles (cover_media_id);

create table if not exists app.article_images (
  content_item_id uuid not null references app.articles (content_item_id) on delete cascade,
  position int not null constraint article_images_position check (position between 0 and 19),
  media_id uuid not null references app.media_items (id),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  primary key (content_item_id, position)
);
create index if not exists article_images_media_id_idx on app.article_images (media_id);
create index if not exists article_images_workspace_id_idx on app.article_images (workspace_id) include (organization_id);
create index if not exists article_images_organization_id_idx on app.article_images (organization_id);

drop trigger if exists articles_10_set_updated_at on app.articles;
create trigger articles_10_set_updated_at before update on app.articles
  for each row execute function app.tg_set_updated_at();

------------------------------------------------------------------------------
-- Row-level security, as for the content tables.
------------------------------------------------------------------------------
do $$
declare
  t text;
  x text;
begin
  foreach t in array array['articles', 'article_images']
  loop
    execute format('alter table app.%I enable row level security', t);
    execute format('alter table app.%I force row level security', t);
    foreach x in array array['definer', 'worker', 'request_select', 'request_insert', 'request_update', 'request_delete',
                             'request_scope', 'request_role'] loop
      execute format('drop policy if exists %I on app.%I', t || '_' || x, t);
    end loop;
    execute format('create policy %I on app.%I to pressroom_definer using (true) with check (true)', t || '_definer', t);
    execute format('create policy %I on app.%I to pressroom_worker using (true) with check (true)', t || '_worker', t);
    execute format('create policy %I on app.%I for select to pressroom_request using (workspace_id = (select app.current_workspace_id()))', t || '_request_select', t);
    execute format($p$create policy %I on app.%I for insert to pressroom_request
      with check (workspace_id = (select app.current_workspace_id())
                  and organization_id = (select app.current_organization_id()))$p$, t || '_request_insert', t);
    execute format($p$create policy %I on app.%I for update to pressroom_request
      using (workspace_id = (select app.current_workspace_id()))
      with check (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_update', t);
    execute format($p$create policy %I on app.%I for delete to pressroom_request
      using (workspace_id = (select app.current_workspace_id()))$p$, t || '_request_delete', t);
    execute format($p$create policy %I on app.%I as restrictive for all to pressroom_request
      using (organization_id = (select app.current_organization_id())
             and (select app.current_workspace_accessible()))
      with check (organization_id = (select app.current_organization_id())
                  and (select app.current_workspace_accessible()))$p$, t || '_request_scope', t);
    -- Viewers read; editors and managers write.
    execute format($p$create policy %I on app.%I as restrictive to pressroom_request
      using (app.role_rank((select app.current_workspace_role())) >= 1)
      with check (app.role_rank((select app.current_workspace_role())) >= 2)$p$, t || '_request_role', t);
    execute format('grant select, insert, update, delete on app.%I to pressroom_definer, pressroom_worker', t);
  end loop;
end
$$;
grant select, delete on app.articles, app.article_images to pressroom_request;
grant insert (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  on app.articles to pressroom_request;
grant update (title, body_html, character_count, cover_media_id, platform_draft_article_id, platform_draft_url,
  platform_draft_sent_at, platform_draft_fingerprint) on app.articles to pressroom_request;
grant insert on app.article_images to pressroom_request;

------------------------------------------------------------------------------
-- Rules
------------------------------------------------------------------------------
-- Largest still image an article may carry (cover or inline), in bytes.
create or replace function app.article_image_max_bytes() returns bigint
language sql immutable parallel safe
as $$ select 5242880::bigint $$;

create or replace function app.article_max_images() returns int
language sql immutable parallel safe
as $$ select 20 $$;

-- The data-media-id values of the body's <img> tags, in body order (as text:
-- a value that is not a UUID is a problem, not an error; null: an img
-- without one).
create or replace function app.article_body_media_refs(p_body text) returns text[]
language sql immutable parallel safe
as $$
  select coalesce(array_agg(substring(m[1] from 'data-media-id="([^"]*)"') order by n), '{}')
  from regexp_matches(coalesce(p_body, ''), '<img(\s[^>]*)?>', 'gi') with ordinality as x (m, n)
$$;

create or replace function app.is_uuid(p text) returns boolean
language sql immutable parallel safe
as $$ select p ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' $$;

-- Problems of one media reference for an article (cover or inline image):
-- not in the workspace's library, in the bin, not a still image, too large.
create or replace function app.article_media_problem(p_workspace_id uuid, p_ref text, p_field text) returns jsonb
language plpgsql stable
as $$
declare
  v record;
begin
  if p_ref is null or p_ref = '' then
    return app.field_problem(p_field, 'media_id_required', 'every img needs data-media-id naming a still image of the media library');
  end if;
  if not app.is_uuid(p_ref) then
    return app.field_problem(p_field, 'media_not_found', 'data-media-id must name a media item (a UUID) of this workspace');
  end if;
  select m.id, m.type, m.file_size, m.state into v
  from app.media_items m where m.id = p_ref::uuid and m.workspace_id = p_workspace_id;
  if v.id is null then
    return app.field_problem(p_field, 'media_not_found', 'no media item with this id in this workspace');
  elsif v.state <> 'active' then
    return app.field_problem(p_field, 'media_deleted', 'this media item is in the bin; restore it first');
  elsif v.type <> 'image' then
    return app.field_problem(p_field, 'media_not_still_image',
      format('articles take still images only (not %s)', case when v.type = 'gif' then 'a GIF' else 'a ' || v.type end));
  elsif v.file_size > app.article_image_max_bytes() then
    return app.field_problem(p_field, 'media_too_large',
      format('article images are at most 5 MB (5242880 bytes); this one has %s bytes', v.file_size));
  end if;
  return null;
end
$$;

-- Every media problem of an article: its inline images (read from the body)
-- and its cover. Empty array: fine.
create or replace function app.article_media_problems(p_workspace_id uuid, p_body text, p_cover uuid) returns jsonb
language plpgsql stable
as $$
declare
  v_out jsonb := '[]';
  v_refs text[];
  v_p jsonb;
  v_i int;
begin
  select app.article_body_media_refs(p_body) into v_refs;
  if cardinality(v_refs) > app.article_max_images() then
    v_out := v_out || app.field_problem('bodyHtml', 'too_many_images',
      format('an article has at most %s images; this body has %s', app.article_max_images(), cardinality(v_refs)));
  end if;
  for v_i in 1 .. coalesce(cardinality(v_refs), 0) loop
    select app.article_media_problem(p_workspace_id, v_refs[v_i], 'bodyHtml.images.' || (v_i - 1)) into v_p;
    if v_p is not null then
      v_out := v_out || v_p;
    end if;
  end loop;
  if p_cover is not null then
    select app.article_media_problem(p_workspace_id, p_cover::text, 'coverMediaId') into v_p;
    if v_p is not null then
      v_out := v_out || v_p;
    end if;
  end if;
  return v_out;
end
$$;

-- Problems of the integration an article is for.
create or replace function app.article_integration_problems(p_workspace_id uuid, p_integration_id uuid) returns jsonb
language plpgsql stable
as $$
declare
  v record;
begin
  select g.id, g.status, g.platform, coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false) as can
  into v
  from app.integrations g join app.platforms p on p.code = g.platform
  where g.id = p_integration_id and g.workspace_id = p_workspace_id and g.deleted_at is null;
  if v.id is null then
    return jsonb_build_array(app.field_problem('integrationId', 'integration_not_found',
      'no connected channel with this id in this workspace'));
  elsif not v.can then
    return jsonb_build_array(app.field_problem('integrationId', 'articles_not_supported',
      format('%s does not publish articles; choose a channel whose content.canPublishArticles is true', v.platform)));
  elsif v.status <> 'active' then
    return jsonb_build_array(app.field_problem('integrationId', 'integration_unavailable',
      'the channel is disconnected; reconnect it or choose another channel'));
  end if;
  return '[]';
end
$$;

------------------------------------------------------------------------------
-- Triggers
------------------------------------------------------------------------------
-- 20: the article belongs to an article content item of its workspace; the
-- content changes only while a draft; body_version counts body changes; the
-- media rules hold; the image list follows the body.
create or replace function app.tg_articles_guard() returns trigger
language plpgsql
as $$
declare
  v_item record;
  v_problems jsonb;
begin
  select i.id, i.kind, i.status, i.workspace_id, i.organization_id, i.deleted_at into v_item
  from app.content_items i where i.id = new.content_item_id;
  if tg_op = 'INSERT' then
    if v_item.id is null or v_item.kind <> 'article' or v_item.workspace_id <> new.workspace_id
       or v_item.organization_id <> new.organization_id then
      perform app.raise(400, 'VALIDATION_FAILED', 'An article belongs to a content item of kind article in its workspace.',
        jsonb_build_object('fields', jsonb_build_array(app.field_problem('contentId', 'not_an_article',
          'no article content item with this id in this workspace'))));
    end if;
    new.body_version := 1;
  else
    if new.content_item_id <> old.content_item_id or new.workspace_id <> old.workspace_id
       or new.organization_id <> old.organization_id then
      perform app.raise(400, 'IMMUTABLE_FIELD', 'An article''s content item and workspace cannot change.',
        jsonb_build_object('contentId', old.content_item_id));
    end if;
    new.body_version := old.body_version + case when new.body_html is distinct from old.body_html then 1 else 0 end;
    new.created_at := old.created_at;
  end if;
  if tg_op = 'UPDATE' and v_item.deleted_at is not null then
    perform app.raise(409, 'CONTENT_DELETED', 'This content was deleted and cannot change.',
      jsonb_build_object('contentId', old.content_item_id));
  end if;
  if (tg_op = 'INSERT' or new.title <> old.title or new.body_html <> old.body_html
      or new.cover_media_id is distinct from old.cover_media_id or new.character_count <> old.character_count)
     and v_item.status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s. Revert it to draft first.', v_item.status),
      jsonb_build_object('contentId', new.content_item_id, 'status', v_item.status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  if tg_op = 'INSERT' or new.body_html <> old.body_html or new.cover_media_id is distinct from old.cover_media_id then
    select app.article_media_problems(new.workspace_id, new.body_html, new.cover_media_id) into v_problems;
    perform app.raise_field_problems(v_problems, 'The article breaks a rule; see details.fields.');
  end if;
  return new;
end
$$;
drop trigger if exists articles_20_guard on app.articles;
create trigger articles_20_guard before insert or update on app.articles
  for each row execute function app.tg_articles_guard();

-- 30: app.article_images mirrors the body's images (body order).
create or replace function app.tg_articles_sync_images() returns trigger
language plpgsql
as $$
begin
  delete from app.article_images where content_item_id = new.content_item_id;
  insert into app.article_images (content_item_id, position, media_id, organization_id, workspace_id)
  select new.content_item_id, n - 1, ref::uuid, new.organization_id, new.workspace_id
  from unnest(app.article_body_media_refs(new.body_html)) with ordinality as x (ref, n);
  return null;
end
$$;
drop trigger if exists articles_30_sync_images on app.articles;
drop trigger if exists articles_30_sync_images_insert on app.articles;
create trigger articles_30_sync_images_insert after insert on app.articles
  for each row execute function app.tg_articles_sync_images();
drop trigger if exists articles_30_sync_images_update on app.articles;
create trigger articles_30_sync_images_update after update on app.articles
  for each row when (old.body_html is distinct from new.body_html)
  execute function app.tg_articles_sync_images();

-- The image list is written only by the trigger above (through the body):
-- a direct write must still name a still image of at most 5 MB of the
-- workspace and belong to a draft article. (Deletes follow the body or a
-- cascade and are not guarded.)
create or replace function app.tg_article_images_guard() returns trigger
language plpgsql
as $$
declare
  v_status text;
  v_p jsonb;
begin
  select i.status into v_status from app.content_items i where i.id = new.content_item_id;
  if v_status is not null and v_status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s.', v_status),
      jsonb_build_object('status', v_status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  select app.article_media_problem(new.workspace_id, new.media_id::text, 'bodyHtml.images.' || new.position) into v_p;
  if v_p is not null then
    perform app.raise_field_problems(jsonb_build_array(v_p), 'The article breaks a rule; see details.fields.');
  end if;
  return new;
end
$$;
drop trigger if exists article_images_20_guard on app.article_images;
create trigger article_images_20_guard before insert or update on app.article_images
  for each row execute function app.tg_article_images_guard();

------------------------------------------------------------------------------
-- JSON
------------------------------------------------------------------------------
-- A media reference of an article. storageKey, contentType and filename are
-- for the server, which turns them into a signed view URL (`url`) and drops
-- them before answering.
create or replace function app.article_media_json(p_media_id uuid) returns jsonb
language sql stable
as $$
  select jsonb_build_object('mediaId', m.id, 'url', null, 'altText', m.alt_text,
    'storageKey', m.storage_key, 'contentType', m.content_type, 'filename', m.filename)
  from app.media_items m where m.id = p_media_id
$$;

create or replace function app.article_json(p_id uuid, p_detail boolean) returns jsonb
language sql stable
as $$
  select jsonb_build_object(
    'contentId', i.id,
    'rootId', i.root_id,
    'title', a.title,
    'status', i.status,
    'workflowStatus', app.content_workflow_status(i.status, i.scheduled_at),
    'editable', i.status = 'draft',
    'destination', jsonb_build_object(
      'integrationId', g.id, 'platform', g.platform, 'username', g.username, 'name', g.name,
      'canPublishArticles', coalesce((p.capabilities ->> 'canPublishArticles')::boolean, false)),
    'cover', case when a.cover_media_id is null then null else app.article_media_json(a.cover_media_id) end,
    'scheduledAt', i.scheduled_at,
    'sentAt', i.sent_at,
    'permalink', i.permalink,
    'platformDraft', case when a.platform_draft_article_id is null then null
      else jsonb_build_object('articleId', a.platform_draft_article_id, 'sentAt', a.platform_draft_sent_at) end,
    'updatedAt', greatest(a.updated_at, i.updated_at))
  || case when p_detail then jsonb_build_object(
    'bodyHtml', a.body_html,
    'bodyVersion', a.body_version::text,
    'images', coalesce((select jsonb_agg(app.article_media_json(x.media_id) order by x.position)
                        from app.article_images x where x.content_item_id = a.content_item_id), '[]'),
    'characterCount', a.character_count,
    'error', case when i.status = 'failed' then i.error end)
  else '{}'::jsonb end
  from app.articles a
  join app.content_items i on i.id = a.content_item_id
  join app.integrations g on g.id = i.integration_id
  join app.platforms p on p.code = g.platform
  where a.content_item_id = p_id
$$;

-- The article of the current workspace (live), locked for update when asked.
create or replace function app.article_for(p_id uuid, p_lock boolean) returns app.articles
language plpgsql
as $$
declare
  v app.articles;
begin
  if p_lock then
    perform 1 from app.content_items i
    where i.id = p_id and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and i.kind = 'article'
    for update;
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null
    for update of a;
  else
    select a.* into v from app.articles a
    join app.content_items i on i.id = a.content_item_id
    where a.content_item_id = p_id and a.workspace_id = app.current_workspace_id() and i.deleted_at is null;
  end if;
  if v.content_item_id is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$$;

------------------------------------------------------------------------------
-- API
------------------------------------------------------------------------------
-- p_body: { integrationId, title, bodyHtml (sanitized by the server),
-- characterCount, coverMediaId?, problems? (the server's findings on the
-- body: structure, text length) }.
create or replace function api.create_article(p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v_ws uuid;
  v_org uuid;
  v_integration uuid := (p_body ->> 'integrationId')::uuid;
  v_title text := p_body ->> 'title';
  v_html text := coalesce(p_body ->> 'bodyHtml', '');
  v_count int := coalesce((p_body ->> 'characterCount')::int, 0);
  v_cover uuid := (p_body ->> 'coverMediaId')::uuid;
  v_problems jsonb := coalesce(p_body -> 'problems', '[]');
  v_root uuid;
  v_item uuid;
begin
  perform app.require_role('editor');
  select app.current_workspace_id(), app.current_organization_id() into v_ws, v_org;
  v_problems := v_problems || (select app.article_integration_problems(v_ws, v_integration));
  if v_title is null or char_length(v_title) not between 1 and 200 then
    v_problems := v_problems || app.field_problem('title', 'length', 'a title has 1 to 200 characters');
  end if;
  v_problems := v_problems || (select app.article_media_problems(v_ws, v_html, v_cover));
  perform app.raise_field_problems(v_problems, 'The article is not valid; see details.fields.');
  insert into app.content_roots (organization_id, workspace_id, title, created_by)
  values (v_org, v_ws, v_title, app.current_user_id())
  returning id into v_root;
  insert into app.content_items (organization_id, workspace_id, root_id, integration_id, kind, status, created_by)
  values (v_org, v_ws, v_root, v_integration, 'article', 'draft', app.current_user_id())
  returning id into v_item;
  insert into app.articles (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  values (v_item, v_org, v_ws, v_title, v_html, v_count, v_cover);
  return (select app.article_json(v_item, true));
end
$$;

create or replace function api.list_articles(p_limit int, p_offset bigint) returns jsonb
language plpgsql stable
as $$
declare
  v_ws uuid;
  v_total bigint;
  v_items jsonb;
begin
  perform app.require_role('viewer');
  select app.current_workspace_id() into v_ws;
  select count(*) into v_total
  from app.articles a join app.content_items i on i.id = a.content_item_id
  where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null;
  select coalesce(jsonb_agg(app.article_json(x.id, false) order by x.changed desc, x.id desc), '[]') into v_items
  from (
    select a.content_item_id as id, greatest(a.updated_at, i.updated_at) as changed
    from app.articles a join app.content_items i on i.id = a.content_item_id
    where a.workspace_id = v_ws and i.workspace_id = v_ws and i.deleted_at is null
    order by changed desc, id desc
    limit p_limit offset p_offset
  ) x;
  return jsonb_build_object('articles', v_items,
    'pagination', jsonb_build_object('limit', p_limit, 'offset', p_offset, 'total', v_total,
      'hasMore', p_offset + jsonb_array_length(v_items) < v_total));
end
$$;

create or replace function api.get_article(p_id uuid) returns jsonb
language plpgsql stable
as $$
begin
  perform app.require_role('viewer');
  perform app.article_for(p_id, false);
  return jsonb_build_object('article', (select app.article_json(p_id, true)));
end
$$;

-- p_body: { title?, bodyHtml? (sanitized), characterCount? (with bodyHtml),
-- expectedBodyVersion?, coverMediaId? (null removes the cover), problems? }.
create or replace function api.update_article(p_id uuid, p_body jsonb) returns jsonb
language plpgsql volatile
as $$
declare
  v app.articles;
  v_status text;
  v_problems jsonb := coalesce(p_body -> 'problems', '[]');
  v_cover uuid;
begin
  perform app.require_role('editor');
  v := app.article_for(p_id, true);
  select status into v_status from app.content_items where id = p_id;
  if v_status <> 'draft' then
    perform app.raise(400, 'INVALID_CONTENT_STATUS',
      format('Only draft articles can be edited; this article is %s. Revert it to draft first.', v_status),
      jsonb_build_object('contentId', p_id, 'status', v_status, 'allowedStatuses', jsonb_build_array('draft')));
  end if;
  if p_body ? 'bodyHtml' and not p_body ? 'expectedBodyVersion' then
    v_problems := v_problems || app.field_problem('expectedBodyVersion', 'required',
      'replacing the body needs expectedBodyVersion (the bodyVersion you edited)');
  end if;
  if p_body ? 'title' and char_length(coalesce(p_body ->> 'title', '')) not between 1 and 200 then
    v_problems := v_problems || app.field_problem('title', 'length', 'a title has 1 to 200 characters');
  end if;
  v_cover := case when p_body ? 'coverMediaId' then (p_body ->> 'coverMediaId')::uuid else v.cover_media_id end;
  if p_body ? 'bodyHtml' or (p_body ? 'coverMediaId' and v_cover is not null) then
    v_problems := v_problems || (select coalesce(jsonb_agg(e), '[]') from jsonb_array_elements(
      app.article_media_problems(v.workspace_id, case when p_body ? 'bodyHtml' then p_body ->> 'bodyHtml' else '' end,
        case when p_body ? 'coverMediaId' then v_cover end)) e);
  end if;
  perform app.raise_field_problems(v_problems, 'The article is not valid; see details.fields.');
  if p_body ? 'expectedBodyVersion' and p_body ->> 'expectedBodyVersion' <> v.body_version::text then
    perform app.raise(409, 'POST_BODY_CHANGED',
      'The article body changed since the version you edited; get the article, merge, and send its bodyVersion.',
      jsonb_build_object('contentId', p_id, 'expectedBodyVersion', p_body ->> 'expectedBodyVersion',
        'currentBodyVersion', v.body_version::text));
  end if;
  update app.articles
  set title = case when p_body ? 'title' then p_body ->> 'title' else title end,
      body_html = case when p_body ? 'bodyHtml' then p_body ->> 'bodyHtml' else body_html end,
      character_count = case when p_body ? 'bodyHtml' then coalesce((p_body ->> 'characterCount')::int, 0) else character_count end,
      cover_media_id = v_cover
  where content_item_id = p_id;
  if p_body ? 'title' then
    update app.content_roots set title = p_body ->> 'title' where id = (select root_id from app.content_items where id = p_id);
  end if;
  return jsonb_build_object('article', (select app.article_json(p_id, true)));
end
$$;

-- What sending the article to the platform's drafts takes: the article (with
-- its media for signing), the integration, the fingerprint of the content,
-- and the draft already made when the content has not changed since.
create or replace function api.begin_article_platform_draft(p_id uuid) returns jsonb
language plpgsql volatile
as $$
declare
  v app.articles;
  v_fp text;
  v_integration jsonb;
begin
  perform app.require_role('editor');
  v := app.article_for(p_id, true);
  v_fp := md5(jsonb_build_array(v.title, v.body_html, v.cover_media_id)::text);
  select app.article_integration_ref(p_id) into v_integration;
  return jsonb_build_object(
    'contentId', p_id,
    'fingerprint', v_fp,
    'existing', case when v.platform_draft_fingerprint = v_fp and v.platform_draft_article_id is not null
      then jsonb_build_object('articleId', v.platform_draft_article_id, 'draftUrl', v.platform_draft_url) end,
    'article', (select app.article_json(p_id, true)),
    'integration', v_integration);
end
$$;

create or replace function api.record_article_platform_draft(p_id uuid, p_article_id text, p_draft_url text, p_fingerprint text)
returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  perform app.article_for(p_id, true);
  update app.articles
  set platform_draft_article_id = p_article_id,
      platform_draft_url = p_draft_url,
      platform_draft_sent_at = now(),
      platform_draft_fingerprint = p_fingerprint
  where content_item_id = p_id;
  return jsonb_build_object('contentId', p_id, 'articleId', p_article_id, 'draftUrl', p_draft_url);
end
$$;

-- The integration of an article as a connector needs it, secret included:
-- SECURITY DEFINER (the request role may not read webhook_secret), so it
-- checks itself that the caller is an editor of the article's workspace.
create or replace function app.article_integration_ref(p_id uuid) returns jsonb
language plpgsql stable security definer
set search_path = pg_catalog, app
as $$
declare
  v_ws uuid := app.current_workspace_id();
  v jsonb;
begin
  if v_ws is null or app.role_rank(app.current_workspace_role()) < 2
     or not app.current_workspace_accessible() then
    perform app.raise(403, 'ROLE_REQUIRED', 'This operation needs the editor role in this workspace.',
      jsonb_build_object('requiredRole', 'editor', 'role', app.current_workspace_role()));
  end if;
  select jsonb_build_object(
    'id', g.id, 'connector', g.connector, 'platform', g.platform, 'name', g.name, 'username', g.username,
    'status', g.status, 'deleted', g.deleted_at is not null,
    'settings', g.settings, 'capabilities', app.platform_capabilities_json(g.platform),
    'webhookUrl', g.webhook_url, 'webhookSecret', g.webhook_secret)
  into v
  from app.content_items i join app.integrations g on g.id = i.integration_id
  where i.id = p_id and i.workspace_id = v_ws and i.kind = 'article' and i.deleted_at is null;
  if v is null then
    perform app.raise_not_found('article', p_id);
  end if;
  return v;
end
$$;
alter function app.article_integration_ref(uuid) owner to pressroom_definer;

------------------------------------------------------------------------------
-- Grants: functions of this file only.
------------------------------------------------------------------------------
do $$
declare
  f record;
begin
  for f in
    select p.oid::regprocedure as sig, n.nspname, p.proname
    from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname in ('app', 'api') and p.prokind = 'f'
      and p.proname = any (array[
        'article_image_max_bytes', 'article_max_images', 'article_body_media_refs', 'is_uuid', 'article_media_problem',
        'article_media_problems', 'article_integration_problems', 'tg_articles_guard', 'tg_articles_sync_images',
        'tg_article_images_guard', 'article_media_json', 'article_json', 'article_for', 'article_integration_ref',
        'create_article', 'list_articles', 'get_article', 'update_article', 'begin_article_platform_draft',
        'record_article_platform_draft'])
  loop
    execute format('revoke execute on function %s from public', f.sig);
    if f.nspname = 'app' and f.proname = 'article_integration_ref' then
      execute format('grant execute on function %s to pressroom_request', f.sig);
    elsif f.nspname = 'app' then
      execute format('grant execute on function %s to pressroom_request, pressroom_definer, pressroom_worker', f.sig);
    else
      execute format('grant execute on function %s to pressroom_request', f.sig);
    end if;
  end loop;
end
$$;
