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
