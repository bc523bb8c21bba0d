--! Previous: sha1:8f42d60b00a336a0a3323c774ad41ba532d548bd
--! Hash: sha1:508883f02a41cffef3c66a76049ffd017c1432d7
--! Message: workbench v2

--! split: 13a-workbench-tables.sql
-- Workbench (the /v2 spreadsheet planner), part 1 of 3: its tables and the
-- fractional ordering keys. Pages hold sections, sections hold rows; a row is
-- a post-to-be, backed by a content root once it has content (caption,
-- channels, media or planning metadata), which it edits through the content
-- functions (13b-workbench-api.sql). Positions are fractional keys (text in
-- the "C" collation): a move writes one row and never renumbers; a rebalance
-- rewrites a container's keys short. Two moves into one container are
-- serialized by app.workbench_lock, and a unique constraint per container
-- backs it, so no position is lost or duplicated.

------------------------------------------------------------------------------
-- Fractional keys
------------------------------------------------------------------------------

-- The key digits, in ascending "C" collation order.
create function app.workbench_key_digits() returns text
language sql immutable parallel safe as $$ select '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz' $$;
comment on function app.workbench_key_digits() is 'The 62 digits of workbench ordering keys, in ascending "C" collation order.';

-- A key strictly between p_a and p_b (null: the start or the end), the
-- midpoint of the two as base-62 fractions. Keys never end in the smallest
-- digit, so there is always room before any key.
create function app.workbench_key_between(p_a text, p_b text) returns text
language plpgsql immutable parallel safe as $$
declare
  d constant text := app.workbench_key_digits();
  a text := coalesce(p_a, '');
  b text := p_b;
  v_prefix text := '';
  n int;
  da int;
  db int;
begin
  if b is not null and a collate "C" >= b collate "C" then
    raise exception 'workbench_key_between: % is not before %', a, b;
  end if;
  if a ~ '0$' or b ~ '0$' or a !~ '^[0-9A-Za-z]*$' or b !~ '^[0-9A-Za-z]+$' then
    raise exception 'workbench_key_between: not a key: % or %', a, b;
  end if;
  loop
    if b is not null then
      n := 0;
      while n < length(b) and coalesce(nullif(substr(a, n + 1, 1), ''), '0') = substr(b, n + 1, 1) loop
        n := n + 1;
      end loop;
      if n > 0 then
        v_prefix := v_prefix || left(b, n);
        a := substr(a, n + 1);
        b := substr(b, n + 1);
      end if;
    end if;
    da := case when a = '' then 0 else strpos(d, left(a, 1)) - 1 end;
    db := case when b is null then 62 else strpos(d, left(b, 1)) - 1 end;
    if db - da > 1 then
      return v_prefix || substr(d, round((da + db) / 2.0)::int + 1, 1);
    end if;
    if b is not null and length(b) > 1 then
      return v_prefix || left(b, 1);
    end if;
    v_prefix := v_prefix || substr(d, da + 1, 1);
    a := substr(a, 2);
    b := null;
  end loop;
end
$$;
comment on function app.workbench_key_between(text, text) is 'A workbench ordering key strictly between two keys (null: open end), the midpoint of the two as base-62 fractions.';

-- p_n keys in order strictly between p_a and p_b, spread by bisection, so
-- n keys are about log62(n) + 1 digits longer than their bounds.
create function app.workbench_keys_between(p_a text, p_b text, p_n int) returns text[]
language plpgsql immutable parallel safe as $$
declare
  v_mid text;
  v_left int;
begin
  if p_n <= 0 then
    return '{}';
  end if;
  v_mid := app.workbench_key_between(p_a, p_b);
  if p_n = 1 then
    return array[v_mid];
  end if;
  v_left := (p_n - 1) / 2;
  return app.workbench_keys_between(p_a, v_mid, v_left) || v_mid || app.workbench_keys_between(v_mid, p_b, p_n - 1 - v_left);
end
$$;
comment on function app.workbench_keys_between(text, text, int) is 'n ordering keys in ascending order between two keys (null: open end), spread by bisection to keep them short.';

-- Keys longer than this make the next write rebalance its container.
create function app.workbench_key_max_length() returns int
language sql immutable parallel safe as $$ select 24 $$;
comment on function app.workbench_key_max_length() is 'Workbench ordering keys longer than this are rebalanced (app.workbench_rebalance_section, _page, _pages) by the write that made one.';

-- Serializes ordering writes into one container (the workspace's list of
-- pages, a page's sections, a section's rows) until the transaction ends.
create function app.workbench_lock(variadic p_ids uuid[]) returns void
language sql as $$
  select pg_advisory_xact_lock(hashtextextended('workbench:' || x::text, 0))
  from (select distinct x from unnest(p_ids) x where x is not null order by 1) s
$$;
comment on function app.workbench_lock(uuid[]) is 'Takes the transaction-scoped ordering lock of each container id (workspace for pages, page for sections, section for rows), in id order so two writers never deadlock.';

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------

create table app.workbench_pages (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 160),
  description text check (description is null or length(description) <= 5000),
  archived_at timestamptz,
  position text collate "C" not null check (position ~ '^[0-9A-Za-z]*[1-9A-Za-z]$'),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workbench_pages_position_key unique (workspace_id, position) deferrable initially immediate
);
comment on table app.workbench_pages is 'A workbench page (a planning sheet): name, description, archived or not, and its place among the workspace''s pages (a fractional key, unique per workspace). Holds sections, which hold rows. Tenant policies of app.apply_tenant_policies (writes need editor).';
create index workbench_pages_organization_id_idx on app.workbench_pages (organization_id);
create trigger workbench_pages_10_set_updated_at before update on app.workbench_pages
  for each row execute function app.tg_set_updated_at();

create table app.workbench_sections (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  page_id uuid not null references app.workbench_pages (id) on delete cascade,
  name text not null check (length(btrim(name)) between 1 and 160),
  color text check (color is null or color ~ '^#[0-9a-fA-F]{6}$'),
  collapsed boolean not null default false,
  position text collate "C" not null check (position ~ '^[0-9A-Za-z]*[1-9A-Za-z]$'),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workbench_sections_id_page_key unique (id, page_id),
  constraint workbench_sections_position_key unique (page_id, position) deferrable initially immediate
);
comment on table app.workbench_sections is 'A section of a workbench page (a group of rows): name, color, collapsed, and its place in the page (a fractional key, unique per page). Moving it to another page carries its rows (foreign key workbench_rows_section_page_fkey, on update cascade). Trigger workbench_sections_20_same_workspace keeps it in its page''s workspace. Tenant policies of app.apply_tenant_policies (writes need editor).';
create index workbench_sections_organization_id_idx on app.workbench_sections (organization_id);
create index workbench_sections_workspace_id_idx on app.workbench_sections (workspace_id);
create trigger workbench_sections_10_set_updated_at before update on app.workbench_sections
  for each row execute function app.tg_set_updated_at();

create table app.workbench_rows (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  page_id uuid not null,
  section_id uuid not null,
  position text collate "C" not null check (position ~ '^[0-9A-Za-z]*[1-9A-Za-z]$'),
  title text check (title is null or length(title) <= 500),
  notes text check (notes is null or length(notes) <= 10000),
  planned_at timestamptz,
  planned_on date,
  content_root_id uuid references app.content_roots (id) on delete set null,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint workbench_rows_planned_check check (planned_at is null or planned_on is null),
  constraint workbench_rows_section_page_fkey foreign key (section_id, page_id)
    references app.workbench_sections (id, page_id) on update cascade on delete cascade,
  constraint workbench_rows_position_key unique (section_id, position) deferrable initially immediate,
  constraint workbench_rows_content_root_key unique (content_root_id)
);
comment on table app.workbench_rows is 'A workbench row (a planned post): title, notes, a planned date and time (planned_at) or date only (planned_on), its place in its section (a fractional key, unique per section), and the content root that holds its caption, media, channels (editions) and planning metadata once it has content (one row per root). Its status is derived from the root''s editions (app.workbench_row_status). Trigger workbench_rows_20_same_workspace keeps section and root in the row''s workspace. Tenant policies of app.apply_tenant_policies (writes need editor).';
create index workbench_rows_organization_id_idx on app.workbench_rows (organization_id);
create index workbench_rows_workspace_id_idx on app.workbench_rows (workspace_id, planned_at);
create index workbench_rows_page_idx on app.workbench_rows (page_id);
create trigger workbench_rows_10_set_updated_at before update on app.workbench_rows
  for each row execute function app.tg_set_updated_at();

-- A section lives in its page's workspace; a row in its section's, with a root of its own workspace.
create function app.tg_workbench_sections_same_workspace() returns trigger
language plpgsql as $$
begin
  if not exists (select 1 from app.workbench_pages p where p.id = new.page_id and p.workspace_id = new.workspace_id) then
    perform app.raise(404, 'NOT_FOUND', 'No workbench page with this id in this workspace.', jsonb_build_object('id', new.page_id));
  end if;
  return new;
end
$$;
comment on function app.tg_workbench_sections_same_workspace() is 'Trigger workbench_sections_20_same_workspace: a section''s page is of its workspace (404 NOT_FOUND).';
create trigger workbench_sections_20_same_workspace before insert or update of page_id, workspace_id on app.workbench_sections
  for each row execute function app.tg_workbench_sections_same_workspace();

create function app.tg_workbench_rows_same_workspace() returns trigger
language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.workspace_id = old.workspace_id and new.section_id = old.section_id
     and new.content_root_id is not distinct from old.content_root_id then
    return new;
  end if;
  if not exists (select 1 from app.workbench_sections s where s.id = new.section_id and s.workspace_id = new.workspace_id) then
    perform app.raise(404, 'NOT_FOUND', 'No workbench section with this id in this workspace.', jsonb_build_object('id', new.section_id));
  end if;
  if new.content_root_id is not null
     and not exists (select 1 from app.content_roots r where r.id = new.content_root_id and r.workspace_id = new.workspace_id) then
    perform app.raise(404, 'NOT_FOUND', 'No content root with this id in this workspace.', jsonb_build_object('id', new.content_root_id));
  end if;
  return new;
end
$$;
comment on function app.tg_workbench_rows_same_workspace() is 'Trigger workbench_rows_20_same_workspace: a row''s section and content root are of its workspace (404 NOT_FOUND).';
create trigger workbench_rows_20_same_workspace before insert or update of section_id, content_root_id, workspace_id on app.workbench_rows
  for each row execute function app.tg_workbench_rows_same_workspace();

select app.apply_tenant_policies('app.workbench_pages');
select app.apply_tenant_policies('app.workbench_sections');
select app.apply_tenant_policies('app.workbench_rows');
grant select, delete on app.workbench_pages, app.workbench_sections, app.workbench_rows to pressroom_api;
grant select, insert, update, delete on app.workbench_pages, app.workbench_sections, app.workbench_rows to pressroom_definer, pressroom_worker;
select app.grant_api_columns('app.workbench_pages', array['insert', 'update']);
select app.grant_api_columns('app.workbench_sections', array['insert', 'update']);
select app.grant_api_columns('app.workbench_rows', array['insert', 'update']);

grant execute on function app.workbench_key_digits(), app.workbench_key_between(text, text),
  app.workbench_keys_between(text, text, int), app.workbench_key_max_length(), app.workbench_lock(uuid[])
  to pressroom_api, pressroom_definer, pressroom_worker;

--! split: 13b-workbench-api.sql
-- Workbench (the /v2 spreadsheet planner), part 2 of 3: pages, sections and
-- rows. A row's caption, media, channels and planning metadata live on its
-- content root and editions, written through the content functions
-- (api.create_content, api.update_content_root, api.delete_content,
-- api.schedule_content, api.set_content_intended_publish_time,
-- app.create_edition, app.planning_problems, app.apply_root_taxonomy), so
-- every content rule (status machine, platform rules, versions, review)
-- holds in the workbench too. Ordering uses app.workbench_key_between under
-- app.workbench_lock (13a-workbench-tables.sql).

------------------------------------------------------------------------------
-- Helpers
------------------------------------------------------------------------------

-- The error a bulk item or an import line answers, from a caught exception:
-- PTxyz as the HTTP layer maps it (db/ERRORS.md), the client errors of
-- server/http/errors.ts by their codes; anything else is raised again (a
-- bug or a concurrency failure aborts the whole request).
create function app.workbench_error_json(p_state text, p_message text, p_detail text, p_hint text) returns jsonb
language plpgsql as $$
declare
  v_details jsonb;
begin
  if p_state ~ '^PT[0-9]{3}$' then
    begin
      v_details := nullif(p_hint, '')::jsonb;
    exception when others then
      v_details := null;
    end;
    return jsonb_build_object('status', substr(p_state, 3)::int, 'code', p_detail, 'message', p_message, 'details', v_details);
  end if;
  if p_state in ('23505', '23503') then
    return jsonb_build_object('status', 409, 'code', 'CONFLICT', 'message', p_message, 'details', null);
  end if;
  if p_state in ('23514', '23502') or p_state like '22%' then
    return jsonb_build_object('status', 400, 'code', 'VALIDATION_FAILED', 'message', p_message, 'details', null);
  end if;
  raise exception using errcode = p_state, message = p_message, detail = coalesce(p_detail, ''), hint = coalesce(p_hint, '');
end
$$;
comment on function app.workbench_error_json(text, text, text, text) is 'The {status, code, message, details} of a caught client error (PTxyz, constraint and data errors) for one bulk item or import line; any other error is raised again.';

-- A scheduledAt value: a date only (YYYY-MM-DD) or a date and time.
create function app.workbench_planned(p_value text, out planned_at timestamptz, out planned_on date)
language plpgsql stable as $$
begin
  if p_value is null then
    return;
  elsif p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
    planned_on := p_value::date;
  else
    planned_at := p_value::timestamptz;
  end if;
end
$$;
comment on function app.workbench_planned(text) is 'Splits a row''s scheduledAt into a date and time (planned_at) or a date only (planned_on).';

-- The status of a row from the aggregates of its root's live editions.
create function app.workbench_status_of(p_has_root boolean, p_editions bigint, p_any_failed boolean, p_any_pending boolean,
                                        p_any_rejected boolean, p_all_sent boolean, p_all_scheduled_or_sent boolean,
                                        p_all_cancelled boolean) returns text
language sql immutable parallel safe as $$
  select case
    when not coalesce(p_has_root, false) then 'idea'
    when coalesce(p_editions, 0) = 0 then 'draft'
    when p_any_failed then 'failed'
    when p_any_pending then 'pending_approval'
    when p_any_rejected then 'rejected'
    when p_all_sent then 'sent'
    when p_all_scheduled_or_sent then 'scheduled'
    when p_all_cancelled then 'cancelled'
    else 'draft' end
$$;
comment on function app.workbench_status_of(boolean, bigint, boolean, boolean, boolean, boolean, boolean, boolean) is 'A workbench row''s status from its root''s live editions: idea (no content), draft, pending_approval, rejected, scheduled (every edition scheduled or sent), sent, failed, cancelled.';

-- The status of one row's root (filters and exports use the same aggregates in their own statement).
create function app.workbench_row_status(p_root_id uuid) returns text
language sql stable as $$
  select app.workbench_status_of(exists (select 1 from app.content_roots r where r.id = p_root_id and r.deleted_at is null),
    count(i.id), bool_or(i.status = 'failed'), bool_or(i.status = 'pending_approval'), bool_or(i.status = 'rejected'),
    bool_and(i.status = 'sent'), bool_and(i.status in ('scheduled', 'sent')), bool_and(i.status = 'cancelled'))
  from app.content_items i
  where i.root_id = p_root_id and i.deleted_at is null
$$;
comment on function app.workbench_row_status(uuid) is 'The derived status of the row backed by this content root (app.workbench_status_of over its live editions).';

-- Rows as the API answers them (WorkbenchRow), in the order of the ids, in
-- one statement: a page of 2,000 rows evaluates the tenant policies once.
create function app.workbench_rows_json(p_ids uuid[]) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(jsonb_build_object(
    'id', w.id, 'pageId', w.page_id, 'sectionId', w.section_id, 'position', w.position,
    'title', w.title, 'notes', w.notes,
    'scheduledAt', coalesce(to_jsonb(w.planned_at), to_jsonb(w.planned_on::text)),
    'contentRootId', r.id,
    'caption', r.caption,
    'mediaIds', coalesce(media.ids, '[]'),
    'channels', coalesce(ed.channels, '[]'),
    'editions', coalesce(ed.editions, '[]'),
    'tagIds', coalesce(tags.ids, '[]'),
    'pillarId', pillar.id,
    'formatId', format.id,
    'campaignId', r.campaign_id,
    'status', app.workbench_status_of(r.id is not null, ed.n, ed.any_failed, ed.any_pending, ed.any_rejected, ed.all_sent,
                                      ed.all_scheduled_or_sent, ed.all_cancelled),
    'createdAt', w.created_at, 'updatedAt', w.updated_at) order by x.n), '[]')
  from unnest(p_ids) with ordinality x (id, n)
  join app.workbench_rows w on w.id = x.id
  left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null
  left join lateral (select jsonb_agg(m.media_id order by m.position) ids from app.content_root_media m where m.root_id = r.id) media on true
  left join lateral (
    select count(*) n,
      jsonb_agg(i.integration_id order by g.created_at, g.id) channels,
      jsonb_agg(app.content_edition_json(i) order by g.created_at, g.id) editions,
      bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
      bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
      bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
    from app.content_items i join app.integrations g on g.id = i.integration_id
    where i.root_id = r.id and i.deleted_at is null) ed on true
  left join lateral (select jsonb_agg(t.tag_id order by t.tag_id) ids from app.content_root_tags t where t.root_id = r.id) tags on true
  left join lateral (select p.pillar_id id from app.content_root_pillars p where p.root_id = r.id order by p.created_at, p.pillar_id limit 1) pillar on true
  left join lateral (select f.format_id id from app.content_root_formats f where f.root_id = r.id order by f.created_at, f.format_id limit 1) format on true
$$;
comment on function app.workbench_rows_json(uuid[]) is 'Workbench rows as the API answers them (WorkbenchRow), in the order of the ids given: their own fields and their root''s caption, media, channels, editions, planning metadata and derived status, in one statement.';

-- Bulk results: each successful item's rowId replaced by the row's JSON, all rows in one statement.
create function app.workbench_fill_rows(p_results jsonb[]) returns jsonb
language sql stable as $$
  with made as (
    select j ->> 'id' as id, j
    from jsonb_array_elements(app.workbench_rows_json(
      array(select (r ->> 'rowId')::uuid from unnest(p_results) r where r ? 'rowId'))) j)
  select coalesce(jsonb_agg(case when u.r ? 'rowId' then (u.r - 'rowId') || jsonb_build_object('row', made.j) else u.r end order by u.n), '[]')
  from unnest(p_results) with ordinality u (r, n)
  left join made on made.id = u.r ->> 'rowId'
$$;
comment on function app.workbench_fill_rows(jsonb[]) is 'The results of a bulk operation with each rowId replaced by the row as the API answers it, built in one statement.';

create function app.workbench_row_json(w app.workbench_rows) returns jsonb
language sql stable as $$ select app.workbench_rows_json(array[w.id]) -> 0 $$;
comment on function app.workbench_row_json(app.workbench_rows) is 'One workbench row as the API answers it (app.workbench_rows_json).';

create function app.workbench_section_json(s app.workbench_sections) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', s.id, 'pageId', s.page_id, 'name', s.name, 'color', s.color, 'collapsed', s.collapsed,
    'position', s.position, 'rowCount', (select count(*) from app.workbench_rows w where w.section_id = s.id),
    'createdAt', s.created_at, 'updatedAt', s.updated_at)
$$;
comment on function app.workbench_section_json(app.workbench_sections) is 'A workbench section as the API answers it (WorkbenchSection).';

create function app.workbench_page_json(p app.workbench_pages) returns jsonb
language sql stable as $$
  select jsonb_build_object('id', p.id, 'name', p.name, 'description', p.description, 'archived', p.archived_at is not null,
    'archivedAt', p.archived_at, 'position', p.position,
    'sectionCount', (select count(*) from app.workbench_sections s where s.page_id = p.id),
    'rowCount', (select count(*) from app.workbench_rows w where w.page_id = p.id),
    'createdAt', p.created_at, 'updatedAt', p.updated_at)
$$;
comment on function app.workbench_page_json(app.workbench_pages) is 'A workbench page as the API answers it (WorkbenchPage), with its section and row counts.';

-- The page, section or row with this id in the current workspace, or 404.
create function app.workbench_page_for_update(p_id uuid) returns app.workbench_pages
language plpgsql as $$
declare
  v app.workbench_pages;
begin
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  return v;
end
$$;
comment on function app.workbench_page_for_update(uuid) is 'Locks and returns a workbench page of the current workspace; 404 NOT_FOUND otherwise.';

create function app.workbench_section_for_update(p_id uuid) returns app.workbench_sections
language plpgsql as $$
declare
  v app.workbench_sections;
begin
  select * into v from app.workbench_sections where id = p_id and workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise_not_found('workbench section', p_id);
  end if;
  return v;
end
$$;
comment on function app.workbench_section_for_update(uuid) is 'Locks and returns a workbench section of the current workspace; 404 NOT_FOUND otherwise.';

create function app.workbench_row_for_update(p_id uuid) returns app.workbench_rows
language plpgsql as $$
declare
  v app.workbench_rows;
begin
  select * into v from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id() for update;
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  return v;
end
$$;
comment on function app.workbench_row_for_update(uuid) is 'Locks and returns a workbench row of the current workspace; 404 NOT_FOUND otherwise.';

------------------------------------------------------------------------------
-- Ordering: one slot between neighbours; rebalance when keys grow long
------------------------------------------------------------------------------

-- Rewrites the keys of one container (rows of a section, sections of a page,
-- pages of a workspace) evenly and short, keeping the order. One statement:
-- the unique constraints are deferrable, checked at its end.
create function app.workbench_rebalance(p_kind text, p_container uuid) returns int
language plpgsql as $$
declare
  v_n int;
begin
  if p_kind = 'rows' then
    select count(*) into v_n from app.workbench_rows where section_id = p_container;
    update app.workbench_rows w set position = k.keys[o.n]
    from (select id, row_number() over (order by position, id) n from app.workbench_rows where section_id = p_container) o,
         (select app.workbench_keys_between(null, null, v_n) keys) k
    where w.id = o.id and w.position <> k.keys[o.n];
  elsif p_kind = 'sections' then
    select count(*) into v_n from app.workbench_sections where page_id = p_container;
    update app.workbench_sections s set position = k.keys[o.n]
    from (select id, row_number() over (order by position, id) n from app.workbench_sections where page_id = p_container) o,
         (select app.workbench_keys_between(null, null, v_n) keys) k
    where s.id = o.id and s.position <> k.keys[o.n];
  elsif p_kind = 'pages' then
    select count(*) into v_n from app.workbench_pages where workspace_id = p_container;
    update app.workbench_pages p set position = k.keys[o.n]
    from (select id, row_number() over (order by position, id) n from app.workbench_pages where workspace_id = p_container) o,
         (select app.workbench_keys_between(null, null, v_n) keys) k
    where p.id = o.id and p.position <> k.keys[o.n];
  else
    raise exception 'workbench_rebalance: unknown kind %', p_kind;
  end if;
  return v_n;
end
$$;
comment on function app.workbench_rebalance(text, uuid) is 'Rewrites the ordering keys of a container (rows of a section, sections of a page, pages of a workspace) evenly spaced and short, order kept; the caller holds app.workbench_lock on the container.';

-- The neighbours' keys of a slot: after p_after, before p_before, or at the
-- end; p_exclude (the item being moved) is not a neighbour.
create function app.workbench_neighbours(p_kind text, p_container uuid, p_after uuid, p_before uuid, p_exclude uuid,
                                         out a text, out b text)
language plpgsql stable as $$
declare
  v_ref text;
  v_field text := case when p_after is not null then 'afterId' else 'beforeId' end;
  v_sql_items text := case p_kind
    when 'rows' then 'select id, position from app.workbench_rows where section_id = $1'
    when 'sections' then 'select id, position from app.workbench_sections where page_id = $1'
    when 'pages' then 'select id, position from app.workbench_pages where workspace_id = $1' end;
begin
  if p_after is not null and p_before is not null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('beforeId', 'not_allowed', 'give afterId or beforeId, not both')));
  end if;
  if p_exclude is not null and (p_after = p_exclude or p_before = p_exclude) then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem(v_field, 'self', 'an item is not placed next to itself')));
  end if;
  if coalesce(p_after, p_before) is not null then
    execute format('select position from (%s) x where id = $2', v_sql_items) into v_ref using p_container, coalesce(p_after, p_before);
    if v_ref is null then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem(v_field, 'not_found',
        'no item with this id in the target ' || case p_kind when 'rows' then 'section' when 'sections' then 'page' else 'workspace' end)));
    end if;
  end if;
  if p_after is not null then
    a := v_ref;
    execute format('select min(position) from (%s) x where position > $2 and id is distinct from $3', v_sql_items)
      into b using p_container, v_ref, p_exclude;
  elsif p_before is not null then
    b := v_ref;
    execute format('select max(position) from (%s) x where position < $2 and id is distinct from $3', v_sql_items)
      into a using p_container, v_ref, p_exclude;
  else
    execute format('select max(position) from (%s) x where id is distinct from $2', v_sql_items)
      into a using p_container, p_exclude;
  end if;
end
$$;
comment on function app.workbench_neighbours(text, uuid, uuid, uuid, uuid) is 'The keys either side of a slot in a container: after one item, before one, or at the end (400 VALIDATION_FAILED for an item not in the container, both given, or the moved item itself).';

-- A key for one item placed in a container (under its lock); rebalances the
-- container first when the key would be too long.
create function app.workbench_slot(p_kind text, p_container uuid, p_after uuid, p_before uuid, p_exclude uuid) returns text
language plpgsql as $$
declare
  n record;
  v_key text;
begin
  select * into n from app.workbench_neighbours(p_kind, p_container, p_after, p_before, p_exclude);
  v_key := app.workbench_key_between(n.a, n.b);
  if length(v_key) > app.workbench_key_max_length() then
    perform app.workbench_rebalance(p_kind, p_container);
    select * into n from app.workbench_neighbours(p_kind, p_container, p_after, p_before, p_exclude);
    v_key := app.workbench_key_between(n.a, n.b);
  end if;
  return v_key;
end
$$;
comment on function app.workbench_slot(text, uuid, uuid, uuid, uuid) is 'The ordering key of one item placed in a container (after, before, or at the end), rebalancing the container when the key would exceed app.workbench_key_max_length().';

-- n keys at the end of a container (bulk appends), rebalancing when long.
create function app.workbench_append_keys(p_kind text, p_container uuid, p_n int) returns text[]
language plpgsql as $$
declare
  n record;
  v_keys text[];
begin
  select * into n from app.workbench_neighbours(p_kind, p_container, null, null, null);
  v_keys := app.workbench_keys_between(n.a, null, p_n);
  if exists (select 1 from unnest(v_keys) k where length(k) > app.workbench_key_max_length()) then
    perform app.workbench_rebalance(p_kind, p_container);
    select * into n from app.workbench_neighbours(p_kind, p_container, null, null, null);
    v_keys := app.workbench_keys_between(n.a, null, p_n);
  end if;
  return v_keys;
end
$$;
comment on function app.workbench_append_keys(text, uuid, int) is 'n ordering keys at the end of a container, in order (bulk create, import, pull, moving a section''s rows).';

------------------------------------------------------------------------------
-- A row's content: through the content functions
------------------------------------------------------------------------------

-- Problems of a row body's channels (integration ids of this workspace, no repeats).
create function app.workbench_channel_problems(p_channels jsonb) returns jsonb
language sql stable as $$
  select coalesce(jsonb_agg(p order by n), '[]') from (
    select x.n, case
      when not exists (select 1 from app.integrations g where g.id = x.id and g.workspace_id = app.current_workspace_id() and g.deleted_at is null)
        then app.field_problem('channels.' || (x.n - 1), 'integration_not_found', 'no connected channel with this id in this workspace')
      when exists (select 1 from unnest(app.jsonb_uuids(p_channels)) with ordinality y (id, m) where y.id = x.id and y.m < x.n)
        then app.field_problem('channels.' || (x.n - 1), 'duplicate_channel', 'this channel is listed twice')
      end p
    from unnest(app.jsonb_uuids(p_channels)) with ordinality x (id, n)) q
  where p is not null
$$;
comment on function app.workbench_channel_problems(jsonb) is 'Field problems of a workbench row''s channels: an id that is no live integration of the workspace, or a repeat.';

-- The planning part of a row body as the content functions take it
-- (tagIds, pillarIds, formatIds, campaignId).
create function app.workbench_planning_body(p_body jsonb) returns jsonb
language sql immutable as $$
  select (case when p_body ? 'tagIds' then jsonb_build_object('tagIds', coalesce(nullif(p_body -> 'tagIds', 'null'), '[]')) else '{}' end)
      || (case when p_body ? 'pillarId' then jsonb_build_object('pillarIds',
            case when p_body ->> 'pillarId' is null then '[]'::jsonb else jsonb_build_array(p_body -> 'pillarId') end) else '{}' end)
      || (case when p_body ? 'formatId' then jsonb_build_object('formatIds',
            case when p_body ->> 'formatId' is null then '[]'::jsonb else jsonb_build_array(p_body -> 'formatId') end) else '{}' end)
      || (case when p_body ? 'campaignId' then jsonb_build_object('campaignId', p_body -> 'campaignId') else '{}' end)
$$;
comment on function app.workbench_planning_body(jsonb) is 'A workbench row body''s tags, pillar, format and campaign in the shape of the content functions (tagIds, pillarIds, formatIds, campaignId).';

-- A row's first content: a draft root through api.create_content when the
-- body has any content (caption, channels, media, planning metadata); its id,
-- or null when the body has none.
create function app.workbench_first_content(p_title text, p_planned_at timestamptz, p_body jsonb) returns uuid
language plpgsql as $$
declare
  v_channels uuid[] := coalesce(app.jsonb_uuids(p_body -> 'channels'), '{}');
begin
  if not (p_body ->> 'caption' is not null or cardinality(v_channels) > 0
          or jsonb_array_length(coalesce(nullif(p_body -> 'mediaIds', 'null'), '[]')) > 0
          or jsonb_array_length(coalesce(nullif(p_body -> 'tagIds', 'null'), '[]')) > 0
          or p_body ->> 'pillarId' is not null or p_body ->> 'formatId' is not null or p_body ->> 'campaignId' is not null) then
    return null;
  end if;
  if cardinality(v_channels) > 0 then
    perform app.raise_field_problems(app.workbench_channel_problems(p_body -> 'channels'), 'The request is not valid; see details.fields.');
  end if;
  return (api.create_content(jsonb_strip_nulls(jsonb_build_object(
    'intent', 'draft', 'organizationalTitle', p_title, 'caption', p_body ->> 'caption',
    'mediaIds', nullif(p_body -> 'mediaIds', 'null'),
    'channels', (select coalesce(jsonb_agg(jsonb_build_object('integrationId', c) order by n), '[]')
                 from unnest(v_channels) with ordinality x (c, n)),
    'intendedPublishAt', p_planned_at)) || jsonb_strip_nulls(app.workbench_planning_body(p_body))) ->> 'rootId')::uuid;
end
$$;
comment on function app.workbench_first_content(text, timestamptz, jsonb) is 'A workbench row''s first content: a draft content root made by api.create_content from the body''s caption, channels, media and planning metadata; null when the body has none.';

-- Applies the content fields of a row body (caption, mediaIds, channels,
-- tagIds, pillarId, formatId, campaignId, and scheduledAt to the editions)
-- through the content functions: a row without a root gets one from
-- api.create_content (a draft) as soon as it has content.
create function app.workbench_apply_content(p_row app.workbench_rows, p_body jsonb) returns app.workbench_rows
language plpgsql as $$
declare
  v_root app.content_roots;
  v_planning jsonb := app.workbench_planning_body(p_body);
  v_channels uuid[] := coalesce(app.jsonb_uuids(p_body -> 'channels'), '{}');
  v_item app.content_items;
  v_id uuid;
  v_i int;
  v_platform text;
begin
  if p_row.content_root_id is not null then
    select * into v_root from app.content_roots where id = p_row.content_root_id and deleted_at is null for update;
  end if;
  if v_root.id is null then
    v_id := app.workbench_first_content(p_row.title, p_row.planned_at, p_body);
    if v_id is not null then
      update app.workbench_rows set content_root_id = v_id where id = p_row.id returning * into p_row;
    end if;
    return p_row;
  end if;
  if p_body ? 'channels' then
    perform app.raise_field_problems(app.workbench_channel_problems(p_body -> 'channels'), 'The request is not valid; see details.fields.');
  end if;

  if p_body ? 'caption' or p_body ? 'mediaIds' then
    perform api.update_content_root(v_root.id,
      (case when p_body ? 'caption' then jsonb_build_object('caption', p_body -> 'caption') else '{}' end)
      || (case when p_body ? 'mediaIds' then jsonb_build_object('mediaIds', coalesce(nullif(p_body -> 'mediaIds', 'null'), '[]')) else '{}' end));
  end if;
  if v_planning <> '{}' then
    perform app.raise_field_problems(app.planning_problems(v_planning, v_root.campaign_id), 'The request is not valid; see details.fields.');
    if v_planning ? 'campaignId' then
      update app.content_roots set campaign_id = (v_planning ->> 'campaignId')::uuid,
        phase_id = case when (v_planning ->> 'campaignId')::uuid is distinct from campaign_id then null else phase_id end,
        updated_at = now()
      where id = v_root.id returning * into v_root;
    end if;
    perform app.apply_root_taxonomy(v_root, v_planning);
  end if;
  if p_body ? 'channels' then
    -- Editions of channels no longer listed go (drafts and scheduled only).
    for v_item in select * from app.content_items
                  where root_id = v_root.id and deleted_at is null and integration_id <> all (v_channels)
                  order by created_at, id loop
      perform app.require_content_status(v_item, array['draft', 'scheduled']);
      perform api.delete_content(v_item.id);
    end loop;
    -- New channels get a draft edition, as api.create_content makes them.
    v_i := 0;
    foreach v_id in array v_channels loop
      if not exists (select 1 from app.content_items where root_id = v_root.id and integration_id = v_id and deleted_at is null) then
        select platform into v_platform from app.integrations where id = v_id;
        perform app.raise_field_problems(
          app.content_payload_problems(v_platform, jsonb_build_object('integrationId', v_id), 'channels.' || v_i || '.'),
          'The request is not valid; see details.fields.');
        perform app.create_edition(v_root, jsonb_build_object('integrationId', v_id), 'draft', null, p_row.planned_at);
      end if;
      v_i := v_i + 1;
    end loop;
  end if;
  if p_body ? 'scheduledAt' then
    -- The planned time goes to the editions: drafts' intended time, scheduled ones rescheduled.
    for v_item in select * from app.content_items where root_id = v_root.id and deleted_at is null order by created_at, id loop
      if v_item.status in ('draft', 'pending_approval') and v_item.intended_publish_at is distinct from p_row.planned_at then
        perform api.set_content_intended_publish_time(v_item.id, p_row.planned_at);
      elsif v_item.status = 'scheduled' and p_row.planned_at is not null and v_item.scheduled_at <> p_row.planned_at then
        perform api.schedule_content(v_item.id, p_row.planned_at);
      end if;
    end loop;
  end if;
  return p_row;
end
$$;
comment on function app.workbench_apply_content(app.workbench_rows, jsonb) is 'Writes a workbench row body''s caption, media, channels, planning metadata and planned time to the row''s content root and editions through the content functions (api.create_content for a row''s first content, api.update_content_root, api.delete_content, app.create_edition, api.set_content_intended_publish_time, api.schedule_content), so their rules hold.';

-- Inserts one row at a given key and applies its content.
create function app.workbench_insert_row(p_section app.workbench_sections, p_position text, p_body jsonb) returns app.workbench_rows
language plpgsql as $$
declare
  v app.workbench_rows;
  pl record;
begin
  select * into pl from app.workbench_planned(p_body ->> 'scheduledAt');
  -- The content first, so the row is written once, with its root.
  insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, notes, planned_at, planned_on,
    content_root_id, created_by)
  values (p_section.organization_id, p_section.workspace_id, p_section.page_id, p_section.id, p_position,
    p_body ->> 'title', p_body ->> 'notes', pl.planned_at, pl.planned_on,
    app.workbench_first_content(p_body ->> 'title', pl.planned_at, p_body), app.current_user_id())
  returning * into v;
  return v;
end
$$;
comment on function app.workbench_insert_row(app.workbench_sections, text, jsonb) is 'Inserts a workbench row at an ordering key in a section, with its first content from app.workbench_first_content.';

-- Changes one row: its own fields, then its content.
create function app.workbench_update_row(p_id uuid, p_body jsonb) returns app.workbench_rows
language plpgsql as $$
declare
  v app.workbench_rows;
  pl record;
begin
  v := app.workbench_row_for_update(p_id);
  select * into pl from app.workbench_planned(p_body ->> 'scheduledAt');
  update app.workbench_rows set
    title = case when p_body ? 'title' then p_body ->> 'title' else title end,
    notes = case when p_body ? 'notes' then p_body ->> 'notes' else notes end,
    planned_at = case when p_body ? 'scheduledAt' then pl.planned_at else planned_at end,
    planned_on = case when p_body ? 'scheduledAt' then pl.planned_on else planned_on end
  where id = v.id returning * into v;
  if p_body ? 'title' and v.content_root_id is not null then
    update app.content_roots set organizational_title = v.title, updated_at = now()
    where id = v.content_root_id and deleted_at is null and organizational_title is distinct from v.title;
  end if;
  return app.workbench_apply_content(v, p_body);
end
$$;
comment on function app.workbench_update_row(uuid, jsonb) is 'Changes a workbench row''s title, notes and planned time and writes its content fields through app.workbench_apply_content; the title is the root''s organizational title.';

------------------------------------------------------------------------------
-- Pages
------------------------------------------------------------------------------

create function api.list_workbench_pages(p_query jsonb) returns jsonb
language plpgsql stable as $$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 100);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_state text := coalesce(p_query ->> 'state', 'active');
  v_ids uuid[];
  v_total bigint;
begin
  perform app.require_role('viewer');
  select count(*) into v_total from app.workbench_pages p
  where p.workspace_id = app.current_workspace_id()
    and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null));
  v_ids := array(select p.id from app.workbench_pages p
                 where p.workspace_id = app.current_workspace_id()
                   and (v_state = 'all' or (v_state = 'archived') = (p.archived_at is not null))
                 order by p.position, p.id limit v_limit offset v_offset);
  return jsonb_build_object(
    'items', coalesce((select jsonb_agg(app.workbench_page_json(p) order by x.n) from unnest(v_ids) with ordinality x (id, n)
                       join app.workbench_pages p on p.id = x.id), '[]'),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$$;
comment on function api.list_workbench_pages(jsonb) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/pages (listWorkbenchPages_v2). The workspace''s pages in their order, active (default), archived or all, with limit (default 100), offset, total and hasMore. Requires the viewer role.';

create function api.create_workbench_page(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
  v_sections jsonb := coalesce(nullif(p_body -> 'sections', 'null'), jsonb_build_array(jsonb_build_object('name', 'Unsorted')));
  v_keys text[];
  v_s jsonb;
  v_n int := 0;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(app.current_workspace_id());
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (app.current_organization_id(), app.current_workspace_id(), btrim(p_body ->> 'name'), p_body ->> 'description',
          app.workbench_slot('pages', app.current_workspace_id(), (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null),
          app.current_user_id())
  returning * into v;
  v_keys := app.workbench_keys_between(null, null, jsonb_array_length(v_sections));
  for v_s in select e from jsonb_array_elements(v_sections) e loop
    v_n := v_n + 1;
    insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
    values (v.organization_id, v.workspace_id, v.id, btrim(v_s ->> 'name'), v_s ->> 'color', coalesce((v_s ->> 'collapsed')::boolean, false), v_keys[v_n]);
  end loop;
  return app.workbench_page_json(v) || jsonb_build_object('sections',
    (select coalesce(jsonb_agg(app.workbench_section_json(s) order by s.position), '[]') from app.workbench_sections s where s.page_id = v.id));
end
$$;
comment on function api.create_workbench_page(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages (createWorkbenchPage_v2). Creates a page at the end of the list (or after/before a page) with the sections given, or one section "Unsorted". Requires the editor role; 400 VALIDATION_FAILED.';

create function api.get_workbench_page(p_id uuid, p_query jsonb) returns jsonb
language plpgsql stable as $$
declare
  v app.workbench_pages;
  v_limit int := coalesce((p_query ->> 'limit')::int, 500);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_ids uuid[];
  v_total bigint;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  select count(*) into v_total from app.workbench_rows where page_id = v.id;
  v_ids := array(select w.id from app.workbench_rows w join app.workbench_sections s on s.id = w.section_id
                 where w.page_id = v.id order by s.position, w.position limit v_limit offset v_offset);
  return jsonb_build_object(
    'page', app.workbench_page_json(v)
      || jsonb_build_object('sections', (select coalesce(jsonb_agg(app.workbench_section_json(s) order by s.position), '[]')
                                         from app.workbench_sections s where s.page_id = v.id))
      || jsonb_build_object('rows', app.workbench_rows_json(v_ids)),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$$;
comment on function api.get_workbench_page(uuid, jsonb) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/pages/{pageId} (getWorkbenchPage_v2). A page with all its sections and a page of its rows in sheet order (section, then row), limit (default 500, at most 2000) and offset over the rows. Requires the viewer role; 404 NOT_FOUND.';

create function api.update_workbench_page(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
begin
  perform app.require_role('editor');
  v := app.workbench_page_for_update(p_id);
  update app.workbench_pages set
    name = case when p_body ? 'name' then btrim(p_body ->> 'name') else name end,
    description = case when p_body ? 'description' then p_body ->> 'description' else description end
  where id = v.id returning * into v;
  return app.workbench_page_json(v);
end
$$;
comment on function api.update_workbench_page(uuid, jsonb) is 'Serves PATCH /v2/workspaces/{workspaceId}/workbench/pages/{pageId} (updateWorkbenchPage_v2). Changes a page''s name or description. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.set_workbench_page_archived(p_id uuid, p_archived boolean) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
begin
  perform app.require_role('editor');
  v := app.workbench_page_for_update(p_id);
  update app.workbench_pages set archived_at = case when p_archived then coalesce(archived_at, now()) end
  where id = v.id returning * into v;
  return app.workbench_page_json(v);
end
$$;
comment on function api.set_workbench_page_archived(uuid, boolean) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/archive and /unarchive (archiveWorkbenchPage_v2, unarchiveWorkbenchPage_v2). Archives or restores a page (archiving again keeps the first time). Requires the editor role; 404 NOT_FOUND.';

create function api.delete_workbench_page(p_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
  v_rows bigint;
  v_sections bigint;
begin
  perform app.require_role('editor');
  v := app.workbench_page_for_update(p_id);
  select count(*) into v_rows from app.workbench_rows where page_id = v.id;
  select count(*) into v_sections from app.workbench_sections where page_id = v.id;
  delete from app.workbench_pages where id = v.id;
  return jsonb_build_object('id', v.id, 'sectionsDeleted', v_sections, 'rowsDeleted', v_rows);
end
$$;
comment on function api.delete_workbench_page(uuid) is 'Serves DELETE /v2/workspaces/{workspaceId}/workbench/pages/{pageId} (deleteWorkbenchPage_v2). Deletes a page with its sections and rows; the rows'' content stays (in /v1, and can be pulled in again). Requires the editor role; 404 NOT_FOUND.';

create function api.duplicate_workbench_page(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
  v_new app.workbench_pages;
  s app.workbench_sections;
  v_section uuid;
begin
  perform app.require_role('editor');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  perform app.workbench_lock(app.current_workspace_id());
  insert into app.workbench_pages (organization_id, workspace_id, name, description, position, created_by)
  values (v.organization_id, v.workspace_id, coalesce(btrim(p_body ->> 'name'), left(v.name, 153) || ' (copy)'), v.description,
          app.workbench_slot('pages', v.workspace_id, v.id, null, null), app.current_user_id())
  returning * into v_new;
  for s in select * from app.workbench_sections where page_id = v.id order by position loop
    insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
    values (s.organization_id, s.workspace_id, v_new.id, s.name, s.color, s.collapsed, s.position)
    returning id into v_section;
    insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, notes, planned_at, planned_on, created_by)
    select w.organization_id, w.workspace_id, v_new.id, v_section, w.position, w.title, w.notes, w.planned_at, w.planned_on, app.current_user_id()
    from app.workbench_rows w where w.section_id = s.id;
  end loop;
  return app.workbench_page_json(v_new);
end
$$;
comment on function api.duplicate_workbench_page(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/duplicate (duplicateWorkbenchPage_v2). A deep copy of a page''s sections and rows (title, notes, planned time, order) placed after it, without content: the copies are ideas with no root. Requires the editor role; 404 NOT_FOUND.';

create function api.move_workbench_page(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(app.current_workspace_id());
  v := app.workbench_page_for_update(p_id);
  update app.workbench_pages
  set position = app.workbench_slot('pages', v.workspace_id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
  where id = v.id returning * into v;
  return app.workbench_page_json(v);
end
$$;
comment on function api.move_workbench_page(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/move (moveWorkbenchPage_v2). Places a page after or before another, or at the end; writes one key. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.rebalance_workbench_page(p_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.workbench_pages;
  s uuid;
  v_rows int := 0;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_id);
  v := app.workbench_page_for_update(p_id);
  perform app.workbench_rebalance('sections', v.id);
  for s in select id from app.workbench_sections where page_id = v.id order by id loop
    perform app.workbench_lock(s);
    v_rows := v_rows + app.workbench_rebalance('rows', s);
  end loop;
  return jsonb_build_object('pageId', v.id,
    'sections', (select count(*) from app.workbench_sections where page_id = v.id), 'rows', v_rows,
    'maxKeyLength', greatest((select max(length(position)) from app.workbench_sections where page_id = v.id),
                             (select max(length(position)) from app.workbench_rows where page_id = v.id), 0));
end
$$;
comment on function api.rebalance_workbench_page(uuid) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/rebalance (rebalanceWorkbenchPage_v2). Rewrites the ordering keys of a page''s sections and rows short and evenly spaced, order kept. Requires the editor role; 404 NOT_FOUND.';

------------------------------------------------------------------------------
-- Sections
------------------------------------------------------------------------------

create function api.list_workbench_sections(p_page_id uuid) returns jsonb
language plpgsql stable as $$
begin
  perform app.require_role('viewer');
  if not exists (select 1 from app.workbench_pages where id = p_page_id and workspace_id = app.current_workspace_id()) then
    perform app.raise_not_found('workbench page', p_page_id);
  end if;
  return (select coalesce(jsonb_agg(app.workbench_section_json(s) order by s.position), '[]') from app.workbench_sections s where s.page_id = p_page_id);
end
$$;
comment on function api.list_workbench_sections(uuid) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/sections (listWorkbenchSections_v2). A page''s sections in order, with row counts. Requires the viewer role; 404 NOT_FOUND.';

create function api.create_workbench_section(p_page_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_sections;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_page_id);
  perform app.workbench_page_for_update(p_page_id);
  insert into app.workbench_sections (organization_id, workspace_id, page_id, name, color, collapsed, position)
  values (app.current_organization_id(), app.current_workspace_id(), p_page_id, btrim(p_body ->> 'name'), p_body ->> 'color',
          coalesce((p_body ->> 'collapsed')::boolean, false),
          app.workbench_slot('sections', p_page_id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null))
  returning * into v;
  return app.workbench_section_json(v);
end
$$;
comment on function api.create_workbench_section(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/sections (createWorkbenchSection_v2). Adds a section at the end of a page, or after/before a section. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.update_workbench_section(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_sections;
begin
  perform app.require_role('editor');
  v := app.workbench_section_for_update(p_id);
  update app.workbench_sections set
    name = case when p_body ? 'name' then btrim(p_body ->> 'name') else name end,
    color = case when p_body ? 'color' then p_body ->> 'color' else color end,
    collapsed = case when p_body ? 'collapsed' then (p_body ->> 'collapsed')::boolean else collapsed end
  where id = v.id returning * into v;
  return app.workbench_section_json(v);
end
$$;
comment on function api.update_workbench_section(uuid, jsonb) is 'Serves PATCH /v2/workspaces/{workspaceId}/workbench/sections/{sectionId} (updateWorkbenchSection_v2). Changes a section''s name, color or collapsed flag. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.delete_workbench_section(p_id uuid, p_query jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_sections;
  t app.workbench_sections;
  v_mode text := p_query ->> 'rows';
  v_target uuid := (p_query ->> 'targetSectionId')::uuid;
  v_n int;
  v_keys text[];
begin
  perform app.require_role('editor');
  if v_mode is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('rows', 'required',
      'say what becomes of the section''s rows: rows=move with targetSectionId, or rows=delete')));
  elsif v_mode = 'move' and v_target is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'required', 'rows=move needs targetSectionId')));
  elsif v_mode = 'delete' and v_target is not null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'not_allowed', 'targetSectionId goes with rows=move')));
  elsif v_target = p_id then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'self', 'rows cannot move to the section being deleted')));
  end if;
  perform app.workbench_lock(p_id, v_target);
  v := app.workbench_section_for_update(p_id);
  select count(*) into v_n from app.workbench_rows where section_id = v.id;
  if v_mode = 'move' then
    select * into t from app.workbench_sections where id = v_target and workspace_id = app.current_workspace_id() for update;
    if t.id is null then
      perform app.raise_field_problems(jsonb_build_array(app.field_problem('targetSectionId', 'not_found', 'no workbench section with this id in this workspace')));
    end if;
    v_keys := app.workbench_append_keys('rows', t.id, v_n);
    update app.workbench_rows w set section_id = t.id, page_id = t.page_id, position = v_keys[o.n]
    from (select id, row_number() over (order by position) n from app.workbench_rows where section_id = v.id) o
    where w.id = o.id;
  end if;
  delete from app.workbench_sections where id = v.id;
  return jsonb_build_object('id', v.id, 'rowsMoved', case when v_mode = 'move' then v_n else 0 end,
    'rowsDeleted', case when v_mode = 'delete' then v_n else 0 end, 'targetSectionId', v_target);
end
$$;
comment on function api.delete_workbench_section(uuid, jsonb) is 'Serves DELETE /v2/workspaces/{workspaceId}/workbench/sections/{sectionId} (deleteWorkbenchSection_v2). Deletes a section; its rows move to the end of another section in order (rows=move, targetSectionId) or are deleted (rows=delete; their content stays). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.move_workbench_section(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_sections;
  v_page uuid;
  v_target uuid := (p_body ->> 'pageId')::uuid;
begin
  perform app.require_role('editor');
  select page_id into v_page from app.workbench_sections where id = p_id and workspace_id = app.current_workspace_id();
  perform app.workbench_lock(v_page, v_target);
  v := app.workbench_section_for_update(p_id);
  if v_target is null or v_target = v.page_id then
    v_target := v.page_id;
  else
    perform app.workbench_page_for_update(v_target);
  end if;
  update app.workbench_sections
  set page_id = v_target,
      position = app.workbench_slot('sections', v_target, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
  where id = v.id returning * into v;
  return app.workbench_section_json(v);
end
$$;
comment on function api.move_workbench_section(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/sections/{sectionId}/move and /move-to-page (moveWorkbenchSection_v2, moveWorkbenchSectionToPage_v2). Places a section after or before another, or at the end, in its page or in another page (pageId), with its rows; writes one key. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

------------------------------------------------------------------------------
-- Rows
------------------------------------------------------------------------------

create function api.list_workbench_rows(p_query jsonb) returns jsonb
language plpgsql stable as $$
declare
  v_limit int := coalesce((p_query ->> 'limit')::int, 100);
  v_offset bigint := coalesce((p_query ->> 'offset')::bigint, 0);
  v_page uuid := (p_query ->> 'pageId')::uuid;
  v_section uuid := (p_query ->> 'sectionId')::uuid;
  v_status text := p_query ->> 'status';
  v_channel uuid := (p_query ->> 'channel')::uuid;
  v_tag uuid := (p_query ->> 'tagId')::uuid;
  v_from timestamptz := (p_query ->> 'from')::timestamptz;
  v_to timestamptz := (p_query ->> 'to')::timestamptz;
  v_tz text;
  v_ids uuid[];
  v_total bigint;
begin
  perform app.require_role('viewer');
  if v_from is not null and v_to is not null and v_from > v_to then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('to', 'before_from', 'to is before from')));
  end if;
  select timezone into v_tz from app.workspaces where id = app.current_workspace_id();
  with hits as (
    select w.id, row_number() over (order by p.position, s.position, w.position) n
    from app.workbench_rows w
    join app.workbench_sections s on s.id = w.section_id
    join app.workbench_pages p on p.id = w.page_id
    left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null
    left join lateral (
      select count(*) n, bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
        bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
        bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
      from app.content_items i where i.root_id = r.id and i.deleted_at is null and v_status is not null) st on true
    where w.workspace_id = app.current_workspace_id()
      and (v_page is null or w.page_id = v_page)
      and (v_section is null or w.section_id = v_section)
      and (v_status is null or app.workbench_status_of(r.id is not null, st.n, st.any_failed, st.any_pending, st.any_rejected,
                                                        st.all_sent, st.all_scheduled_or_sent, st.all_cancelled) = v_status)
      and (v_channel is null or exists (select 1 from app.content_items i
                                        where i.root_id = r.id and i.deleted_at is null and i.integration_id = v_channel))
      and (v_tag is null or exists (select 1 from app.content_root_tags t where t.root_id = w.content_root_id and t.tag_id = v_tag))
      and (v_from is null or coalesce(w.planned_at, (w.planned_on + time '23:59:59.999') at time zone v_tz) >= v_from)
      and (v_to is null or coalesce(w.planned_at, w.planned_on::timestamp at time zone v_tz) < v_to)
      and ((v_from is null and v_to is null) or w.planned_at is not null or w.planned_on is not null))
  select (select count(*) from hits),
         array(select id from hits order by n limit v_limit offset v_offset)
  into v_total, v_ids;
  return jsonb_build_object('items', app.workbench_rows_json(v_ids),
    'meta', jsonb_build_object('limit', v_limit, 'offset', v_offset, 'total', v_total, 'hasMore', v_offset + cardinality(v_ids) < v_total));
end
$$;
comment on function api.list_workbench_rows(jsonb) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/rows (listWorkbenchRows_v2). Rows in sheet order, filtered by page, section, derived status, channel, tag and planned time range [from, to) (a date-only row counts for its whole day in the workspace''s time zone), with limit (default 100), offset, total and hasMore. Requires the viewer role; 400 VALIDATION_FAILED.';

create function api.get_workbench_row(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  v app.workbench_rows;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  return app.workbench_row_json(v);
end
$$;
comment on function api.get_workbench_row(uuid) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/rows/{rowId} (getWorkbenchRow_v2). One row with its content. Requires the viewer role; 404 NOT_FOUND.';

create function api.create_workbench_row(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  s app.workbench_sections;
  v app.workbench_rows;
  v_section uuid := (p_body ->> 'sectionId')::uuid;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(v_section);
  s := app.workbench_section_for_update(v_section);
  v := app.workbench_insert_row(s, app.workbench_slot('rows', s.id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, null), p_body);
  return app.workbench_row_json(v);
end
$$;
comment on function api.create_workbench_row(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows (createWorkbenchRow_v2). Adds a row at the end of a section (or after/before a row); with a caption, channels, media or planning metadata it gets a draft content root through api.create_content. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED (content rules), 409 MEDIA_IN_BIN.';

create function api.bulk_create_workbench_rows(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_items jsonb := p_body -> 'rows';
  v_sections uuid[];
  v_keys jsonb := '{}';
  v_used jsonb := '{}';
  v_sid uuid;
  s app.workbench_sections;
  v_item jsonb;
  v_n int := 0;
  v_k int;
  v app.workbench_rows;
  v_results jsonb[] := '{}';
  v_ok int := 0;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  v_sections := array(select distinct (e ->> 'sectionId')::uuid from jsonb_array_elements(v_items) e order by 1);
  perform app.workbench_lock(variadic v_sections);
  -- Keys for each section's new rows, in request order, at its end.
  foreach v_sid in array v_sections loop
    select * into s from app.workbench_sections where id = v_sid and workspace_id = app.current_workspace_id() for update;
    if s.id is not null then
      v_keys := v_keys || jsonb_build_object(v_sid::text, to_jsonb(app.workbench_append_keys('rows', v_sid,
        (select count(*)::int from jsonb_array_elements(v_items) e where (e ->> 'sectionId')::uuid = v_sid))));
      v_used := v_used || jsonb_build_object(v_sid::text, 0);
    end if;
  end loop;
  for v_item in select e from jsonb_array_elements(v_items) e loop
    begin
      v_sid := (v_item ->> 'sectionId')::uuid;
      if not v_keys ? v_sid::text then
        perform app.raise_not_found('workbench section', v_sid);
      end if;
      select * into s from app.workbench_sections where id = v_sid;
      v_k := (v_used ->> v_sid::text)::int;
      v_used := jsonb_set(v_used, array[v_sid::text], to_jsonb(v_k + 1));
      v := app.workbench_insert_row(s, v_keys -> v_sid::text ->> v_k, v_item);
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'ok', true, 'rowId', v.id, 'error', null));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'ok', false, 'row', null,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint)));
    end;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$$;
comment on function api.bulk_create_workbench_rows(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/bulk-create (bulkCreateWorkbenchRows_v2). Creates up to 1,000 rows, each as createWorkbenchRow_v2 would, appended to their sections in request order; each row is created or answered with its own error (partial success). Requires the editor role.';

create function api.update_workbench_row(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_rows;
begin
  perform app.require_role('editor');
  v := app.workbench_update_row(p_id, p_body);
  -- A statement of its own: its snapshot sees what the update wrote.
  return app.workbench_row_json(v);
end
$$;
comment on function api.update_workbench_row(uuid, jsonb) is 'Serves PATCH /v2/workspaces/{workspaceId}/workbench/rows/{rowId} (updateWorkbenchRow_v2). Changes a row''s title, notes and planned time, and its caption, media, channels and planning metadata through the content functions (api.update_content_root, api.delete_content, app.create_edition, api.schedule_content, ...). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED, 400 INVALID_CONTENT_STATUS, 409 MEDIA_IN_BIN.';

create function api.bulk_update_workbench_rows(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_item jsonb;
  v_n int := 0;
  v_ok int := 0;
  v app.workbench_rows;
  v_results jsonb[] := '{}';
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  for v_item in select e from jsonb_array_elements(p_body -> 'rows') e loop
    begin
      v := app.workbench_update_row((v_item ->> 'id')::uuid, v_item - 'id');
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'id', v_item ->> 'id', 'ok', true, 'rowId', v.id, 'error', null));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'id', v_item ->> 'id', 'ok', false, 'row', null,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint)));
    end;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$$;
comment on function api.bulk_update_workbench_rows(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/bulk-update (bulkUpdateWorkbenchRows_v2). Changes up to 1,000 rows, each as updateWorkbenchRow_v2 would; one result per row (partial success). Requires the editor role.';

create function api.delete_workbench_row(p_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.workbench_rows;
begin
  perform app.require_role('editor');
  v := app.workbench_row_for_update(p_id);
  delete from app.workbench_rows where id = v.id;
  return jsonb_build_object('id', v.id, 'contentRootId', v.content_root_id);
end
$$;
comment on function api.delete_workbench_row(uuid) is 'Serves DELETE /v2/workspaces/{workspaceId}/workbench/rows/{rowId} (deleteWorkbenchRow_v2). Removes a row from the workbench; its content stays (in /v1, and can be pulled in again). Requires the editor role; 404 NOT_FOUND.';

create function api.bulk_delete_workbench_rows(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_id uuid;
  v_n int := 0;
  v_ok int := 0;
  v_results jsonb[] := '{}';
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  for v_id in select (e #>> '{}')::uuid from jsonb_array_elements(p_body -> 'rowIds') e loop
    begin
      perform api.delete_workbench_row(v_id);
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'id', v_id, 'ok', true, 'error', null));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, jsonb_build_object('index', v_n, 'id', v_id, 'ok', false,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint)));
    end;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$$;
comment on function api.bulk_delete_workbench_rows(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/bulk-delete (bulkDeleteWorkbenchRows_v2). Removes up to 1,000 rows; one result per id (partial success); content stays. Requires the editor role.';

create function api.move_workbench_row(p_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v app.workbench_rows;
  t app.workbench_sections;
  v_from uuid;
  v_to uuid := (p_body ->> 'sectionId')::uuid;
begin
  perform app.require_role('editor');
  select section_id into v_from from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id();
  perform app.workbench_lock(v_from, v_to);
  v := app.workbench_row_for_update(p_id);
  if v.section_id is distinct from v_from then
    -- It moved while this waited for the lock: take the lock of where it is now too.
    perform app.workbench_lock(v.section_id);
  end if;
  if v_to is null then
    v_to := v.section_id;
  end if;
  select * into t from app.workbench_sections where id = v_to and workspace_id = app.current_workspace_id();
  if t.id is null then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('sectionId', 'not_found', 'no workbench section with this id in this workspace')));
  end if;
  update app.workbench_rows
  set section_id = t.id, page_id = t.page_id,
      position = app.workbench_slot('rows', t.id, (p_body ->> 'afterId')::uuid, (p_body ->> 'beforeId')::uuid, v.id)
  where id = v.id returning * into v;
  return app.workbench_row_json(v);
end
$$;
comment on function api.move_workbench_row(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/{rowId}/move (moveWorkbenchRow_v2). Places a row after or before another row, or at the end, of its section or another (sectionId, any page); writes one key, under the ordering lock of both sections, so concurrent moves never lose or duplicate a position. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';

create function api.duplicate_workbench_row(p_id uuid) returns jsonb
language plpgsql as $$
declare
  v app.workbench_rows;
  s app.workbench_sections;
  v_new app.workbench_rows;
  v_root app.content_roots;
  v_body jsonb;
begin
  perform app.require_role('editor');
  select * into v from app.workbench_rows where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench row', p_id);
  end if;
  perform app.workbench_lock(v.section_id);
  s := app.workbench_section_for_update(v.section_id);
  select * into v_root from app.content_roots where id = v.content_root_id and deleted_at is null;
  v_body := jsonb_build_object('title', v.title, 'notes', v.notes,
    'scheduledAt', coalesce(to_jsonb(v.planned_at), to_jsonb(v.planned_on::text)));
  if v_root.id is not null then
    v_body := v_body || jsonb_build_object('caption', v_root.caption,
      'mediaIds', to_jsonb(app.content_root_media_ids(v_root.id)),
      'channels', coalesce((select jsonb_agg(i.integration_id order by g.created_at, g.id) from app.content_items i
                            join app.integrations g on g.id = i.integration_id
                            where i.root_id = v_root.id and i.deleted_at is null), '[]'),
      'tagIds', coalesce((select jsonb_agg(t.tag_id) from app.content_root_tags t where t.root_id = v_root.id), '[]'),
      'pillarId', (select p.pillar_id from app.content_root_pillars p where p.root_id = v_root.id order by p.created_at, p.pillar_id limit 1),
      'formatId', (select f.format_id from app.content_root_formats f where f.root_id = v_root.id order by f.created_at, f.format_id limit 1),
      'campaignId', v_root.campaign_id);
  end if;
  v_new := app.workbench_insert_row(s, app.workbench_slot('rows', s.id, v.id, null, null), v_body);
  return app.workbench_row_json(v_new);
end
$$;
comment on function api.duplicate_workbench_row(uuid) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/{rowId}/duplicate (duplicateWorkbenchRow_v2). A copy of a row placed after it; with content, a new draft root (api.create_content) with the same caption, media, channels and planning metadata (editions'' own captions are not copied). Requires the editor role; 404 NOT_FOUND.';

create function api.pull_content_into_workbench(p_body jsonb) returns jsonb
language plpgsql as $$
declare
  s app.workbench_sections;
  v_refs jsonb := '[]';
  v_ref jsonb;
  v_root app.content_roots;
  v_keys text[];
  v_n int := 0;
  v_ok int := 0;
  v_results jsonb[] := '{}';
  v_row app.workbench_rows;
  v_existing uuid;
  v_at timestamptz;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  v_refs := coalesce((select jsonb_agg(jsonb_build_object('rootId', e #>> '{}')) from jsonb_array_elements(p_body -> 'rootIds') e), '[]')
         || coalesce((select jsonb_agg(jsonb_build_object('contentId', e #>> '{}')) from jsonb_array_elements(p_body -> 'contentIds') e), '[]');
  if jsonb_array_length(v_refs) = 0 then
    perform app.raise_field_problems(jsonb_build_array(app.field_problem('rootIds', 'required', 'give rootIds or contentIds')));
  end if;
  perform app.workbench_lock((p_body ->> 'sectionId')::uuid);
  s := app.workbench_section_for_update((p_body ->> 'sectionId')::uuid);
  v_keys := app.workbench_append_keys('rows', s.id, jsonb_array_length(v_refs));
  for v_ref in select e from jsonb_array_elements(v_refs) e loop
    begin
      if v_ref ? 'contentId' then
        select r.* into v_root from app.content_items i join app.content_roots r on r.id = i.root_id
        where i.id = (v_ref ->> 'contentId')::uuid and i.workspace_id = app.current_workspace_id() and i.deleted_at is null and r.deleted_at is null;
        if v_root.id is null then
          perform app.raise_not_found('content', (v_ref ->> 'contentId')::uuid);
        end if;
      else
        select * into v_root from app.content_roots r
        where r.id = (v_ref ->> 'rootId')::uuid and r.workspace_id = app.current_workspace_id() and r.deleted_at is null;
        if v_root.id is null then
          perform app.raise_not_found('content root', (v_ref ->> 'rootId')::uuid);
        end if;
      end if;
      select id into v_existing from app.workbench_rows where content_root_id = v_root.id;
      if v_existing is not null then
        perform app.raise(409, 'ALREADY_IN_WORKBENCH', 'This content already has a row in the workbench.',
          jsonb_build_object('rootId', v_root.id, 'rowId', v_existing));
      end if;
      v_at := (select min(coalesce(i.scheduled_at, i.intended_publish_at)) from app.content_items i
               where i.root_id = v_root.id and i.deleted_at is null);
      insert into app.workbench_rows (organization_id, workspace_id, page_id, section_id, position, title, planned_at, content_root_id, created_by)
      values (s.organization_id, s.workspace_id, s.page_id, s.id, v_keys[v_n + 1],
              left(coalesce(v_root.organizational_title, v_root.title), 500), v_at, v_root.id, app.current_user_id())
      returning * into v_row;
      v_results := array_append(v_results, (v_ref || jsonb_build_object('index', v_n, 'ok', true, 'rowId', v_row.id, 'error', null)));
      v_ok := v_ok + 1;
    exception when others then
      get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
      v_results := array_append(v_results, (v_ref || jsonb_build_object('index', v_n, 'ok', false, 'row', null,
        'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint))));
    end;
    v_root := null;
    v_existing := null;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('succeeded', v_ok, 'failed', v_n - v_ok, 'results', app.workbench_fill_rows(v_results));
end
$$;
comment on function api.pull_content_into_workbench(jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/rows/pull (pullContentIntoWorkbench_v2). Makes a row at the end of a section for each content root (rootIds) or edition''s root (contentIds) made through /v1; one result per reference (partial success): 404 NOT_FOUND, 409 ALREADY_IN_WORKBENCH (a root has at most one row). Requires the editor role.';

--! split: 13c-workbench-bulk.sql
-- Workbench (the /v2 spreadsheet planner), part 3 of 3: bulk scheduling and
-- CSV. Both dry runs execute the real path (api.schedule_content for each
-- row and channel; app.workbench_insert_row for each CSV line) inside a
-- subtransaction that is rolled back, so every rule of scheduling and of
-- content, and any added later to those functions (a review policy), applies
-- to the dry run without being repeated here.

-- The sentinel a dry run raises to roll its subtransaction back.
-- SQLSTATE ZW001 never leaves these functions.

------------------------------------------------------------------------------
-- Bulk scheduling
------------------------------------------------------------------------------

create function api.schedule_workbench_rows(p_body jsonb, p_dry_run boolean) returns jsonb
language plpgsql as $$
declare
  v_row_id uuid;
  v app.workbench_rows;
  v_item app.content_items;
  v_n int := 0;
  v_row_results jsonb;
  v_results jsonb[] := '{}';
  v_e jsonb;
  v_failed boolean;
  v_rows_ok int := 0;
  v_channels_ok int := 0;
  v_channels_failed int := 0;
  v_state text; v_msg text; v_detail text; v_hint text;
  v_err jsonb;
begin
  perform app.require_role('editor');
  for v_row_id in select (e #>> '{}')::uuid from jsonb_array_elements(p_body -> 'rowIds') e loop
    v_row_results := '[]';
    v_failed := false;
    begin
      select * into v from app.workbench_rows where id = v_row_id and workspace_id = app.current_workspace_id();
      if v.id is null then
        perform app.raise_not_found('workbench row', v_row_id);
      end if;
      if v.content_root_id is null or not exists (select 1 from app.content_roots where id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CONTENT', 'This row has no content to schedule; give it a caption or media and channels.',
          jsonb_build_object('rowId', v.id));
      end if;
      if v.planned_at is null then
        perform app.raise(400, 'ROW_TIME_REQUIRED', 'This row has no date and time to schedule at (a date alone is a plan, not a time).',
          jsonb_build_object('rowId', v.id, 'scheduledAt', v.planned_on));
      end if;
      if not exists (select 1 from app.content_items where root_id = v.content_root_id and deleted_at is null) then
        perform app.raise(400, 'ROW_HAS_NO_CHANNELS', 'This row has no channel to schedule on.', jsonb_build_object('rowId', v.id));
      end if;
      for v_item in select i.* from app.content_items i join app.integrations g on g.id = i.integration_id
                    where i.root_id = v.content_root_id and i.deleted_at is null order by g.created_at, g.id loop
        begin
          -- The content route's own path: status, time, platform rules, review, publish job.
          perform api.schedule_content(v_item.id, v.planned_at);
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', case when p_dry_run then 'valid' else 'scheduled' end, 'error', null);
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_row_results := v_row_results || jsonb_build_object('rowId', v.id, 'contentId', v_item.id, 'integrationId', v_item.integration_id,
            'outcome', 'failed', 'error', app.workbench_error_json(v_state, v_msg, v_detail, v_hint));
          v_failed := true;
        end;
      end loop;
      if v_failed or p_dry_run then
        raise exception using errcode = 'ZW001', message = 'workbench dry run or failed row: roll back';
      end if;
    exception
      when sqlstate 'ZW001' then
        null;
      when others then
        get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
        v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
        v_row_results := jsonb_build_array(jsonb_build_object('rowId', v_row_id, 'contentId', null, 'integrationId', null,
          'outcome', 'failed', 'error', v_err));
        v_failed := true;
    end;
    if v_failed then
      -- The row's other channels were rolled back with it: a row is scheduled whole or not at all.
      v_row_results := (select jsonb_agg(case when r ->> 'outcome' = 'scheduled' then r || '{"outcome": "not_scheduled"}' else r end)
                        from jsonb_array_elements(v_row_results) r);
    else
      v_rows_ok := v_rows_ok + 1;
    end if;
    v_channels_ok := v_channels_ok + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' in ('scheduled', 'valid'));
    v_channels_failed := v_channels_failed + (select count(*) from jsonb_array_elements(v_row_results) r where r ->> 'outcome' = 'failed');
    for v_e in select jsonb_array_elements(v_row_results) loop
      v_results := array_append(v_results, v_e);
    end loop;
    v_n := v_n + 1;
  end loop;
  return jsonb_build_object('dryRun', p_dry_run, 'rows', v_n, 'rowsOk', v_rows_ok, 'rowsFailed', v_n - v_rows_ok,
    'channelsOk', v_channels_ok, 'channelsFailed', v_channels_failed, 'results', to_jsonb(v_results));
end
$$;
comment on function api.schedule_workbench_rows(jsonb, boolean) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/schedule and /schedule/validate (scheduleWorkbenchRows_v2, validateWorkbenchSchedule_v2). For up to 1,000 rows, schedules each edition of the row''s root at the row''s date and time through api.schedule_content, one result per row and channel; a row is scheduled whole or not at all (its own error: 404 NOT_FOUND, 400 ROW_HAS_NO_CONTENT, ROW_TIME_REQUIRED, ROW_HAS_NO_CHANNELS, or each channel''s error from the content rules). The dry run runs the same path in a subtransaction rolled back, so it answers what scheduling would, writing nothing. Requires the editor role.';

------------------------------------------------------------------------------
-- CSV export
------------------------------------------------------------------------------

-- A time as the CSV shows it: in the workspace's zone, with its offset.
create function app.workbench_csv_time(p_at timestamptz, p_tz text) returns text
language sql stable as $$
  select to_char(p_at at time zone p_tz, 'YYYY-MM-DD"T"HH24:MI:SS')
    || case when o = 0 then 'Z'
            else (case when o < 0 then '-' else '+' end) || to_char(make_interval(secs => abs(o)), 'HH24:MI') end
  from (select extract(epoch from (p_at at time zone p_tz) - (p_at at time zone 'UTC'))::int o) x
$$;
comment on function app.workbench_csv_time(timestamptz, text) is 'A time as workbench CSV writes it: local time of the zone with its UTC offset (2026-03-01T09:30:00+01:00).';

create function app.workbench_csv_columns() returns text[]
language sql immutable as $$
  select array['id', 'section', 'title', 'caption', 'channels', 'scheduled_at', 'tags', 'pillar', 'format', 'campaign',
               'media_ids', 'notes', 'status']
$$;
comment on function app.workbench_csv_columns() is 'The columns of a workbench CSV export, in order; an import maps the same headers (id and status are read-only and ignored).';

create function api.export_workbench_page(p_id uuid) returns jsonb
language plpgsql stable as $$
declare
  v app.workbench_pages;
  v_tz text;
begin
  perform app.require_role('viewer');
  select * into v from app.workbench_pages where id = p_id and workspace_id = app.current_workspace_id();
  if v.id is null then
    perform app.raise_not_found('workbench page', p_id);
  end if;
  select timezone into v_tz from app.workspaces where id = v.workspace_id;
  return jsonb_build_object('pageId', v.id, 'pageName', v.name, 'timeZone', v_tz,
    'header', to_jsonb(app.workbench_csv_columns()),
    'records', coalesce((
      select jsonb_agg(jsonb_build_array(
        w.id, s.name, coalesce(w.title, ''), coalesce(r.caption, ''),
        coalesce((select string_agg(g.name, '; ' order by g.created_at, g.id) from app.content_items i
                  join app.integrations g on g.id = i.integration_id
                  where i.root_id = r.id and i.deleted_at is null), ''),
        coalesce(app.workbench_csv_time(w.planned_at, v_tz), w.planned_on::text, ''),
        coalesce((select string_agg(t.name, '; ' order by t.name) from app.content_root_tags rt join app.tags t on t.id = rt.tag_id
                  where rt.root_id = r.id), ''),
        coalesce((select p.name from app.content_root_pillars rp join app.pillars p on p.id = rp.pillar_id
                  where rp.root_id = r.id order by rp.created_at, rp.pillar_id limit 1), ''),
        coalesce((select f.name from app.content_root_formats rf join app.formats f on f.id = rf.format_id
                  where rf.root_id = r.id order by rf.created_at, rf.format_id limit 1), ''),
        coalesce((select c.name from app.campaigns c where c.id = r.campaign_id), ''),
        coalesce((select string_agg(m.media_id::text, '; ' order by m.position) from app.content_root_media m where m.root_id = r.id), ''),
        coalesce(w.notes, ''),
        app.workbench_status_of(r.id is not null, st.n, st.any_failed, st.any_pending, st.any_rejected, st.all_sent,
                                st.all_scheduled_or_sent, st.all_cancelled)) order by s.position, w.position)
      from app.workbench_rows w
      join app.workbench_sections s on s.id = w.section_id
      left join app.content_roots r on r.id = w.content_root_id and r.deleted_at is null
      left join lateral (
        select count(*) n, bool_or(i.status = 'failed') any_failed, bool_or(i.status = 'pending_approval') any_pending,
          bool_or(i.status = 'rejected') any_rejected, bool_and(i.status = 'sent') all_sent,
          bool_and(i.status in ('scheduled', 'sent')) all_scheduled_or_sent, bool_and(i.status = 'cancelled') all_cancelled
        from app.content_items i where i.root_id = r.id and i.deleted_at is null) st on true
      where w.page_id = v.id), '[]'));
end
$$;
comment on function api.export_workbench_page(uuid) is 'Serves GET /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/export (exportWorkbenchPage_v2). A page''s rows in sheet order as CSV records (columns of app.workbench_csv_columns: channels, tags, pillar, format and campaign by name, times in the workspace''s zone with their offset); the route writes them as CSV. Requires the viewer role; 404 NOT_FOUND.';

------------------------------------------------------------------------------
-- CSV import
------------------------------------------------------------------------------

-- Which column a CSV header names (case, spaces, _ and - ignored), or null.
create function app.workbench_csv_column(p_header text) returns text
language sql immutable as $$
  select case lower(regexp_replace(coalesce(p_header, ''), '[\s_-]+', '', 'g'))
    when 'section' then 'section'
    when 'title' then 'title' when 'name' then 'title'
    when 'caption' then 'caption' when 'text' then 'caption' when 'copy' then 'caption'
    when 'channels' then 'channels' when 'channel' then 'channels'
    when 'scheduledat' then 'scheduledAt' when 'date' then 'scheduledAt' when 'publishat' then 'scheduledAt'
    when 'datetime' then 'scheduledAt' when 'when' then 'scheduledAt'
    when 'tags' then 'tags' when 'tag' then 'tags'
    when 'pillar' then 'pillar'
    when 'format' then 'format'
    when 'campaign' then 'campaign'
    when 'notes' then 'notes' when 'note' then 'notes'
    when 'mediaids' then 'mediaIds' when 'media' then 'mediaIds'
    when 'id' then '-' when 'rowid' then '-' when 'status' then '-'
  end
$$;
comment on function app.workbench_csv_column(text) is 'The workbench field a CSV header names (case, spaces, underscores and hyphens ignored; a few synonyms), ''-'' for the read-only export columns id and status, null for an unknown header.';

-- A CSV time: a date; a local date and time in the zone; or with an offset.
create function app.workbench_csv_parse_time(p_value text, p_tz text, out planned_at timestamptz, out planned_on date, out ok boolean)
language plpgsql stable as $$
begin
  ok := true;
  if p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
    planned_on := p_value::date;
  elsif p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?$' then
    planned_at := p_value::timestamp at time zone p_tz;
  elsif p_value ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|z|[+-][0-9]{2}(:?[0-9]{2})?)$' then
    planned_at := p_value::timestamptz;
  else
    ok := false;
  end if;
exception when others then
  planned_at := null;
  planned_on := null;
  ok := false;
end
$$;
comment on function app.workbench_csv_parse_time(text, text) is 'A CSV scheduled_at: YYYY-MM-DD (a date only), a local date and time read in the workspace''s zone, or a date and time with Z or an offset; ok is false for anything else or an impossible date.';

-- The ids a CSV cell names (separated by ; | or ,), by id or by name
-- (case-insensitive) among the workspace's rows of one kind.
create function app.workbench_csv_resolve(p_kind text, p_cell text, p_field text, out ids uuid[], out problems jsonb)
language plpgsql stable as $$
declare
  v_token text;
  v_matches uuid[];
  v_sql text := case p_kind
    when 'channels' then 'select id, name from app.integrations where workspace_id = $1 and deleted_at is null'
    when 'tags' then 'select id, name from app.tags where workspace_id = $1'
    when 'pillar' then 'select id, name from app.pillars where workspace_id = $1'
    when 'format' then 'select id, name from app.formats where workspace_id = $1'
    when 'campaign' then 'select id, name from app.campaigns where workspace_id = $1' end;
begin
  ids := '{}';
  problems := '[]';
  for v_token in select btrim(t) from regexp_split_to_table(coalesce(p_cell, ''), '[;|,]') t where btrim(t) <> '' loop
    if p_kind = 'media' then
      if v_token ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        ids := ids || v_token::uuid;
      else
        problems := problems || app.field_problem(p_field, 'invalid_media_id', format('%s is not a media id', left(v_token, 80)));
      end if;
      continue;
    end if;
    execute format('select array_agg(id) from (%s) x where x.id::text = lower($2) or lower(btrim(x.name)) = lower($2)', v_sql)
      into v_matches using app.current_workspace_id(), v_token;
    if v_matches is null then
      problems := problems || app.field_problem(p_field, 'not_found', format('no %s named %s in this workspace', p_kind, left(v_token, 80)));
    elsif cardinality(v_matches) > 1 then
      problems := problems || app.field_problem(p_field, 'ambiguous', format('%s names more than one %s; use its id', left(v_token, 80), p_kind));
    elsif not v_matches[1] = any (ids) then
      ids := ids || v_matches[1];
    end if;
  end loop;
end
$$;
comment on function app.workbench_csv_resolve(text, text, text) is 'The ids named in a CSV cell (separated by ; | or ,) of channels, tags, a pillar, format or campaign, by id or case-insensitive name, with a field problem per unknown or ambiguous name; media by id only.';

create function api.import_workbench_csv(p_page_id uuid, p_body jsonb) returns jsonb
language plpgsql as $$
declare
  v_page app.workbench_pages;
  v_tz text;
  v_dry boolean := coalesce((p_body ->> 'dryRun')::boolean, false);
  v_partial boolean := coalesce((p_body ->> 'allowPartial')::boolean, false);
  v_header jsonb := p_body -> 'header';
  v_cols text[] := '{}';
  v_ignored jsonb := '[]';
  v_col text;
  v_i int;
  v_line jsonb;
  v_fields jsonb;
  v_get jsonb;
  v_errors jsonb;
  v_warnings jsonb;
  v_body jsonb;
  t record;
  r record;
  v_section uuid;
  v_default_section uuid;
  v_new_sections jsonb := '[]';
  v_plan jsonb[] := '{}';
  v_warnings_by_line jsonb;
  v_results jsonb[] := '{}';
  v_keys jsonb := '{}';
  v_used jsonb := '{}';
  v_created uuid[] := '{}';
  v_row app.workbench_rows;
  v_ok int := 0;
  v_bad int := 0;
  v_dupes int := 0;
  v_p jsonb;
  v_k int;
  v_report jsonb;
  v_err jsonb;
  v_state text; v_msg text; v_detail text; v_hint text;
begin
  perform app.require_role('editor');
  perform app.workbench_lock(p_page_id);
  v_page := app.workbench_page_for_update(p_page_id);
  select timezone into v_tz from app.workspaces where id = v_page.workspace_id;
  if jsonb_array_length(p_body -> 'lines') > 10000 then
    perform app.raise(400, 'CSV_TOO_LARGE', 'A CSV import takes at most 10,000 lines; split the file.',
      jsonb_build_object('lines', jsonb_array_length(p_body -> 'lines'), 'max', 10000));
  end if;
  -- Columns by header.
  for v_i in 0 .. jsonb_array_length(v_header) - 1 loop
    v_col := app.workbench_csv_column(v_header ->> v_i);
    if v_col is null then
      v_ignored := v_ignored || to_jsonb(v_header ->> v_i);
      v_col := '-';
    elsif v_col <> '-' and v_col = any (v_cols) then
      perform app.raise(400, 'CSV_HEADER_INVALID', format('Two columns map to %s.', v_col),
        jsonb_build_object('column', v_col, 'header', v_header));
    end if;
    v_cols := v_cols || v_col;
  end loop;
  if not ('title' = any (v_cols) or 'caption' = any (v_cols)) then
    perform app.raise(400, 'CSV_HEADER_INVALID', 'The header needs a title or a caption column.',
      jsonb_build_object('header', v_header, 'columns', to_jsonb(app.workbench_csv_columns())));
  end if;

  begin
    -- Pass 1: each line to a row body, or its errors.
    for v_line in select e from jsonb_array_elements(p_body -> 'lines') e loop
      v_fields := v_line -> 'fields';
      v_errors := '[]';
      v_warnings := '[]';
      v_section := null;
      v_body := '{}';
      if jsonb_array_length(v_fields) <> cardinality(v_cols) then
        v_errors := jsonb_build_array(app.field_problem(null, 'column_count',
          format('%s fields where the header has %s columns', jsonb_array_length(v_fields), cardinality(v_cols))));
      else
        v_get := '{}';
        for v_i in 1 .. cardinality(v_cols) loop
          if v_cols[v_i] <> '-' then
            v_get := v_get || jsonb_build_object(v_cols[v_i], nullif(btrim(v_fields ->> (v_i - 1)), ''));
          end if;
        end loop;
        if v_get ->> 'title' is null and v_get ->> 'caption' is null then
          v_errors := v_errors || app.field_problem('title', 'required', 'a line needs a title or a caption');
        end if;
        v_body := jsonb_strip_nulls(jsonb_build_object('title', v_get ->> 'title', 'caption', v_get ->> 'caption', 'notes', v_get ->> 'notes'));
        if v_get ->> 'scheduledAt' is not null then
          select * into t from app.workbench_csv_parse_time(v_get ->> 'scheduledAt', v_tz);
          if not t.ok then
            v_errors := v_errors || app.field_problem('scheduled_at', 'invalid_date',
              'not a date (YYYY-MM-DD) or a date and time (YYYY-MM-DD HH:MM, in the workspace''s time zone or with an offset)');
          else
            v_body := v_body || jsonb_build_object('scheduledAt', coalesce(to_jsonb(t.planned_at), to_jsonb(t.planned_on::text)));
          end if;
        end if;
        if v_get ->> 'channels' is not null then
          select * into r from app.workbench_csv_resolve('channels', v_get ->> 'channels', 'channels');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('channels', to_jsonb(r.ids));
        end if;
        if v_get ->> 'tags' is not null then
          select * into r from app.workbench_csv_resolve('tags', v_get ->> 'tags', 'tags');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('tagIds', to_jsonb(r.ids));
        end if;
        foreach v_col in array array['pillar', 'format', 'campaign'] loop
          if v_get ->> v_col is not null then
            select * into r from app.workbench_csv_resolve(v_col, v_get ->> v_col, v_col);
            if cardinality(r.ids) > 1 then
              v_errors := v_errors || app.field_problem(v_col, 'too_many', format('one %s per line', v_col));
            end if;
            v_errors := v_errors || r.problems;
            v_body := v_body || jsonb_build_object(v_col || 'Id', r.ids[1]);
          end if;
        end loop;
        if v_get ->> 'mediaIds' is not null then
          select * into r from app.workbench_csv_resolve('media', v_get ->> 'mediaIds', 'media_ids');
          v_errors := v_errors || r.problems;
          v_body := v_body || jsonb_build_object('mediaIds', to_jsonb(r.ids));
        end if;
        -- The section, by name (made at the page's end when new), else the page's first.
        if v_get ->> 'section' is not null then
          select id into v_section from app.workbench_sections
          where page_id = v_page.id and lower(btrim(name)) = lower(v_get ->> 'section') order by position limit 1;
          if v_section is null and length(v_get ->> 'section') > 160 then
            v_errors := v_errors || app.field_problem('section', 'too_long', 'a section name has at most 160 characters');
          elsif v_section is null then
            insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
            values (v_page.organization_id, v_page.workspace_id, v_page.id, v_get ->> 'section',
                    app.workbench_slot('sections', v_page.id, null, null, null))
            returning id into v_section;
            v_new_sections := v_new_sections || to_jsonb(v_get ->> 'section');
          end if;
        else
          if v_default_section is null then
            select id into v_default_section from app.workbench_sections where page_id = v_page.id order by position limit 1;
            if v_default_section is null then
              insert into app.workbench_sections (organization_id, workspace_id, page_id, name, position)
              values (v_page.organization_id, v_page.workspace_id, v_page.id, 'Imported', app.workbench_slot('sections', v_page.id, null, null, null))
              returning id into v_default_section;
              v_new_sections := v_new_sections || to_jsonb('Imported'::text);
            end if;
          end if;
          v_section := v_default_section;
        end if;
      end if;
      v_plan := array_append(v_plan, jsonb_build_object('line', v_line -> 'line', 'sectionId', v_section, 'body', v_body,
        'errors', v_errors));
    end loop;

    -- Possible duplicates, in one pass: the same caption (trimmed, any case) on a
    -- same channel within 24 hours of an earlier line, or of the workspace's content.
    with cand as (
      select u.n, (u.p ->> 'line')::int as line, lower(btrim(u.p -> 'body' ->> 'caption')) as cap, ch::uuid as ch,
             coalesce(pl.planned_at, pl.planned_on::timestamp at time zone v_tz) as at
      from unnest(v_plan) with ordinality u (p, n)
      cross join lateral app.workbench_planned(u.p -> 'body' ->> 'scheduledAt') pl
      cross join lateral jsonb_array_elements_text(coalesce(u.p -> 'body' -> 'channels', '[]')) ch
      where jsonb_array_length(u.p -> 'errors') = 0 and u.p -> 'body' ->> 'caption' is not null and u.p -> 'body' ? 'scheduledAt'),
    existing as (
      select i.id, i.integration_id, lower(btrim(coalesce(i.caption, cr.caption))) as cap,
             coalesce(i.scheduled_at, i.intended_publish_at) as at
      from app.content_items i join app.content_roots cr on cr.id = i.root_id
      where i.workspace_id = v_page.workspace_id and i.deleted_at is null and cr.deleted_at is null
        and coalesce(i.scheduled_at, i.intended_publish_at) is not null),
    hits as (
      select distinct on (b.n, a.line) b.n, 0 as kind, a.line as sort,
        jsonb_build_object('code', 'possible_duplicate', 'line', a.line, 'contentId', null,
          'message', format('same caption on a same channel within 24 hours as line %s', a.line)) as w
      from cand a join cand b on b.cap = a.cap and b.ch = a.ch and a.n < b.n and abs(extract(epoch from b.at - a.at)) < 86400
      union all
      select distinct on (c.n, e.id) c.n, 1, 0,
        jsonb_build_object('code', 'possible_duplicate', 'line', null, 'contentId', e.id,
          'message', 'same caption on a same channel within 24 hours as existing content')
      from cand c join existing e on e.cap = c.cap and e.integration_id = c.ch
        and e.at between c.at - interval '24 hours' and c.at + interval '24 hours')
    select jsonb_object_agg(n::text, ws) into v_warnings_by_line
    from (select n, jsonb_agg(w order by kind, sort) ws from hits group by n) g;

    -- Keys at the end of each section, for the lines that may become rows.
    for v_section in select distinct (p ->> 'sectionId')::uuid from unnest(v_plan) p
                     where jsonb_array_length(p -> 'errors') = 0 order by 1 loop
      perform app.workbench_lock(v_section);
      v_keys := v_keys || jsonb_build_object(v_section::text, to_jsonb(app.workbench_append_keys('rows', v_section,
        (select count(*)::int from unnest(v_plan) p where jsonb_array_length(p -> 'errors') = 0 and (p ->> 'sectionId')::uuid = v_section))));
      v_used := v_used || jsonb_build_object(v_section::text, 0);
    end loop;

    -- Pass 2: each line through the row path (content rules included), in its own subtransaction.
    v_i := 0;
    foreach v_p in array v_plan loop
      v_i := v_i + 1;
      v_errors := v_p -> 'errors';
      v_warnings := coalesce(v_warnings_by_line -> v_i::text, '[]');
      v_row := null;
      if jsonb_array_length(v_errors) = 0 then
        begin
          v_k := (v_used ->> (v_p ->> 'sectionId'))::int;
          v_used := jsonb_set(v_used, array[v_p ->> 'sectionId'], to_jsonb(v_k + 1));
          v_row := app.workbench_insert_row((select s from app.workbench_sections s where s.id = (v_p ->> 'sectionId')::uuid),
                                            v_keys -> (v_p ->> 'sectionId') ->> v_k, v_p -> 'body');
        exception when others then
          get stacked diagnostics v_state = returned_sqlstate, v_msg = message_text, v_detail = pg_exception_detail, v_hint = pg_exception_hint;
          v_err := app.workbench_error_json(v_state, v_msg, v_detail, v_hint);
          v_errors := coalesce(v_err -> 'details' -> 'fields',
            jsonb_build_array(jsonb_build_object('field', null, 'code', v_err ->> 'code', 'message', v_err ->> 'message')));
          v_row := null;
        end;
      end if;
      if jsonb_array_length(v_errors) = 0 then
        v_ok := v_ok + 1;
      else
        v_bad := v_bad + 1;
      end if;
      if jsonb_array_length(v_warnings) > 0 then
        v_dupes := v_dupes + 1;
      end if;
      v_results := array_append(v_results, jsonb_build_object('line', v_p -> 'line', 'ok', jsonb_array_length(v_errors) = 0,
        'rowId', case when not v_dry then v_row.id end, 'errors', v_errors, 'warnings', v_warnings));
    end loop;

    v_report := jsonb_build_object('dryRun', v_dry, 'allowPartial', v_partial, 'lines', v_ok + v_bad,
      'valid', v_ok, 'invalid', v_bad, 'imported', case when v_dry or (v_bad > 0 and not v_partial) then 0 else v_ok end,
      'possibleDuplicates', v_dupes, 'newSections', v_new_sections, 'ignoredColumns', v_ignored, 'results', to_jsonb(v_results));
    if v_dry or (v_bad > 0 and not v_partial) then
      raise exception using errcode = 'ZW001', message = 'workbench import dry run or refused: roll back';
    end if;
  exception when sqlstate 'ZW001' then
    null;
  end;
  if not v_dry and v_bad > 0 and not v_partial then
    perform app.raise(400, 'CSV_IMPORT_INVALID',
      format('%s of %s lines have errors; nothing was imported. Fix them, or send allowPartial to import the valid lines.', v_bad, v_ok + v_bad),
      jsonb_build_object('invalid', v_bad, 'valid', v_ok,
        'lines', (select coalesce(jsonb_agg(q.x), '[]')
                  from (select x from unnest(v_results) x where not (x ->> 'ok')::boolean limit 100) q)));
  end if;
  return v_report;
end
$$;
comment on function api.import_workbench_csv(uuid, jsonb) is 'Serves POST /v2/workspaces/{workspaceId}/workbench/pages/{pageId}/import and /import/validate (importWorkbenchCsv_v2, validateWorkbenchCsvImport_v2). Maps the parsed CSV''s columns by header, reads each line (times in the workspace''s zone or with an offset; channels, tags, pillar, format, campaign by name or id), flags possible duplicates (same caption on a same channel within 24 hours, in the file or the workspace), and creates each line''s row through app.workbench_insert_row (content rules included) in its own subtransaction; one result per line with its line number. A dry run rolls everything back; a commit with invalid lines imports nothing (400 CSV_IMPORT_INVALID) unless allowPartial. Requires the editor role; 404 NOT_FOUND, 400 CSV_HEADER_INVALID, 400 CSV_TOO_LARGE.';

select app.harden_api_functions();

grant execute on function
  app.workbench_error_json(text, text, text, text), app.workbench_planned(text), app.workbench_row_status(uuid),
  app.workbench_status_of(boolean, bigint, boolean, boolean, boolean, boolean, boolean, boolean),
  app.workbench_row_json(app.workbench_rows), app.workbench_rows_json(uuid[]), app.workbench_fill_rows(jsonb[]), app.workbench_section_json(app.workbench_sections),
  app.workbench_page_json(app.workbench_pages), app.workbench_page_for_update(uuid), app.workbench_section_for_update(uuid),
  app.workbench_row_for_update(uuid), app.workbench_rebalance(text, uuid), app.workbench_neighbours(text, uuid, uuid, uuid, uuid),
  app.workbench_slot(text, uuid, uuid, uuid, uuid), app.workbench_append_keys(text, uuid, int),
  app.workbench_channel_problems(jsonb), app.workbench_planning_body(jsonb), app.workbench_apply_content(app.workbench_rows, jsonb), app.workbench_first_content(text, timestamptz, jsonb),
  app.workbench_insert_row(app.workbench_sections, text, jsonb), app.workbench_update_row(uuid, jsonb),
  app.workbench_csv_time(timestamptz, text), app.workbench_csv_columns(), app.workbench_csv_column(text),
  app.workbench_csv_parse_time(text, text), app.workbench_csv_resolve(text, text, text),
  app.tg_workbench_sections_same_workspace(), app.tg_workbench_rows_same_workspace()
  to pressroom_api, pressroom_definer, pressroom_worker;
