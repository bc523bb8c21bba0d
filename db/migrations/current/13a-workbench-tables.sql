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
