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
