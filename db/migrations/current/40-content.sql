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
