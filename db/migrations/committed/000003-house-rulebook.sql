--! Previous: sha1:63440360acc9d4beb334a3daf3323fa4f6f93441
--! Hash: sha1:2e63ce44744d6ada69295248c1de82d877242422
--! Message: house rulebook

--! split: 10-api-role-and-helpers.sql
-- The API role and the helpers every area uses to declare its tables.
--
-- Roles after this migration (db/README.md, "Roles"):
--   pressroom_request  what a request transaction runs as. It may use the
--                      schema api and execute its functions, and nothing else:
--                      no table, no function of app.
--   pressroom_api      owner of the api functions, which are security definer
--                      (app.harden_api_functions). It holds the column-listed
--                      grants on app tables and is the role the tenant
--                      policies (app.apply_tenant_policies) apply to, so every
--                      api function still runs under row-level security with
--                      the request's context (pressroom.* settings).
--   pressroom_definer  owner of the few functions that must see across
--                      tenants (sign-in, the gate, the publishing engine's
--                      records). Bypasses tenant policies by its own policy.
--   pressroom_worker   what jobs run as: the publishing engine and the purges.
do $$
begin
  if not exists (select 1 from pg_roles where rolname = 'pressroom_api') then
    create role pressroom_api nologin noinherit;
  end if;
end
$$;
-- The migrating role hands api functions to pressroom_api.
grant pressroom_api to :DATABASE_OWNER;
grant usage on schema app, api to pressroom_api;
grant create on schema api to pressroom_api;

------------------------------------------------------------------------------
-- app.apply_tenant_policies: the one way a tenant table gets its policies.
------------------------------------------------------------------------------
create function app.apply_tenant_policies(
  p_table regclass,
  p_commands text[] default array['select', 'insert', 'update', 'delete'],
  p_write_role text default 'editor'
) returns void
language plpgsql
set search_path = pg_catalog
as $$
declare
  v_name text := (select relname from pg_class where oid = p_table);
  v_policy record;
  v_write int := app.role_rank(p_write_role);
  v_scope text := $s$organization_id = (select app.current_organization_id())
      and workspace_id = (select app.current_workspace_id())
      and app.role_rank((select app.current_workspace_role())) >= 1
      and (select app.current_workspace_accessible())$s$;
  v_role text;
begin
  if v_write = 0 then
    raise exception 'apply_tenant_policies: unknown write role %', p_write_role;
  end if;
  if exists (select 1 from unnest(p_commands) c where c not in ('select', 'insert', 'update', 'delete')) then
    raise exception 'apply_tenant_policies: commands are select, insert, update, delete; got %', p_commands;
  end if;
  v_role := format('app.role_rank((select app.current_workspace_role())) >= %s', v_write);
  execute format('alter table %s enable row level security', p_table);
  execute format('alter table %s force row level security', p_table);
  -- Exactly these policies: whatever the table had is dropped first.
  for v_policy in select polname from pg_policy where polrelid = p_table loop
    execute format('drop policy %I on %s', v_policy.polname, p_table);
  end loop;
  execute format('create policy %I on %s to pressroom_definer using (true) with check (true)', v_name || '_definer', p_table);
  execute format('create policy %I on %s to pressroom_worker using (true) with check (true)', v_name || '_worker', p_table);
  -- The tenant scope: the row is of the context's organization and workspace,
  -- the caller has a role there, and the principal may really use that
  -- workspace (so a forged context reaches nothing).
  execute format('create policy %I on %s as restrictive for all to pressroom_api using (%s) with check (%s)',
    v_name || '_api_scope', p_table, v_scope, v_scope);
  if 'select' = any (p_commands) then
    execute format('create policy %I on %s for select to pressroom_api using (true)', v_name || '_api_select', p_table);
  end if;
  if 'insert' = any (p_commands) then
    execute format('create policy %I on %s for insert to pressroom_api with check (%s)', v_name || '_api_insert', p_table, v_role);
  end if;
  if 'update' = any (p_commands) then
    -- A row the caller can see but may not change fails WITH CHECK (42501),
    -- rather than being skipped without a word.
    execute format('create policy %I on %s for update to pressroom_api using (true) with check (%s)',
      v_name || '_api_update', p_table, v_role);
  end if;
  if 'delete' = any (p_commands) then
    execute format('create policy %I on %s for delete to pressroom_api using (%s)', v_name || '_api_delete', p_table, v_role);
  end if;
  execute format('grant select, insert, update, delete on %s to pressroom_definer, pressroom_worker', p_table);
end
$$;
comment on function app.apply_tenant_policies(regclass, text[], text) is
  'Gives a tenant table (one with organization_id and workspace_id) exactly its policies: definer and worker see all; '
  'pressroom_api is held to the request''s organization, workspace and role by a restrictive scope policy, reads with '
  'any role and writes the listed commands with p_write_role or above. Drops every other policy of the table. '
  'The catalog test tests/db/07-catalog.test.sql checks every tenant table against it.';

------------------------------------------------------------------------------
-- app.grant_api_columns: column-listed insert and update for pressroom_api.
------------------------------------------------------------------------------
-- Grants insert and update on every column of the table except those listed
-- (and, for update, the row's identity and tenancy, which never change).
-- Columns added later are granted by nobody until a migration says so.
create function app.grant_api_columns(
  p_table regclass,
  p_privileges text[],
  p_except text[] default '{}'
) returns void
language plpgsql
set search_path = pg_catalog
as $$
declare
  v_privilege text;
  v_columns text;
  v_never_updated text[] := array['id', 'organization_id', 'workspace_id', 'created_at', 'created_by'];
begin
  foreach v_privilege in array p_privileges loop
    if v_privilege not in ('insert', 'update') then
      raise exception 'grant_api_columns: privileges are insert and update; got %', v_privilege;
    end if;
    select string_agg(quote_ident(attname), ', ' order by attnum) into v_columns
    from pg_attribute
    where attrelid = p_table and attnum > 0 and not attisdropped and attgenerated = ''
      and attname <> all (p_except)
      and (v_privilege = 'insert' or attname <> all (v_never_updated));
    if v_columns is not null then
      execute format('grant %s (%s) on %s to pressroom_api', v_privilege, v_columns, p_table);
    end if;
  end loop;
end
$$;
comment on function app.grant_api_columns(regclass, text[], text[]) is
  'Grants pressroom_api insert and/or update on every column of a table but the listed ones (update never covers '
  'id, organization_id, workspace_id, created_at, created_by). Engine-only columns are listed in p_except.';

------------------------------------------------------------------------------
-- app.harden_api_functions: every api function runs as pressroom_api.
------------------------------------------------------------------------------
-- Run at the end of every migration that adds api functions (see
-- db/README.md). An invoker api function becomes security definer, owned by
-- pressroom_api, with a pinned search_path; execute goes to pressroom_request
-- (and pressroom_api, for api functions calling one another) and to nobody
-- else. Functions owned by pressroom_definer keep their owner and grants.
create function app.harden_api_functions() returns int
language plpgsql
set search_path = pg_catalog
as $$
declare
  v record;
  v_count int := 0;
begin
  for v in
    select p.oid::regprocedure as fn, p.prosecdef, pg_get_userbyid(p.proowner) as owner
    from pg_proc p
    where p.pronamespace = 'api'::regnamespace and p.prokind = 'f'
  loop
    if v.owner <> 'pressroom_definer' then
      if v.owner <> 'pressroom_api' then
        execute format('alter function %s owner to pressroom_api', v.fn);
      end if;
      if not v.prosecdef then
        execute format('alter function %s security definer', v.fn);
      end if;
      execute format('alter function %s set search_path = pg_catalog, public, pg_temp', v.fn);
      execute format('grant execute on function %s to pressroom_request, pressroom_api', v.fn);
      v_count := v_count + 1;
    end if;
    -- Definer-owned api functions keep the grants their migration gave them.
    execute format('revoke all on function %s from public', v.fn);
  end loop;
  -- Functions of app are granted by their migration to the roles that need
  -- them, never to PUBLIC.
  for v in select p.oid::regprocedure as fn from pg_proc p where p.pronamespace = 'app'::regnamespace loop
    execute format('revoke execute on function %s from public', v.fn);
  end loop;
  return v_count;
end
$$;
comment on function app.harden_api_functions() is
  'Makes every api function not owned by pressroom_definer a security definer function owned by pressroom_api with '
  'search_path pinned, executable by pressroom_request and pressroom_api only; and takes execute on app functions '
  'from PUBLIC. Every migration that adds functions ends by calling it; tests/db/07-catalog.test.sql fails when '
  'one was missed.';

--! split: 20-tenant-policies.sql
-- Row-level security of every tenant table, declared in one place.
--
-- A tenant table has organization_id and workspace_id. Each gets exactly the
-- policies app.apply_tenant_policies gives (10-api-role-and-helpers.sql): the
-- earlier migrations spelled them in copied loops that had drifted (the
-- articles scope had lost its workspace term; the role check was permissive
-- in some tables and restrictive in others). The second argument lists the
-- commands pressroom_api may run at all; writes need the editor role.
-- tests/db/07-catalog.test.sql checks that every table with a workspace_id is
-- either listed here or one of the foundation tables named below.

-- Integrations (connected accounts): soft-deleted, never deleted by a request.
select app.apply_tenant_policies('app.integrations', array['select', 'insert', 'update']);

-- Taxonomy and campaigns.
select app.apply_tenant_policies('app.tags');
select app.apply_tenant_policies('app.pillars');
select app.apply_tenant_policies('app.formats');
select app.apply_tenant_policies('app.hashtag_groups');
select app.apply_tenant_policies('app.campaigns');
select app.apply_tenant_policies('app.campaign_phases');

-- Content: roots, editions, their media and planning links, versions.
select app.apply_tenant_policies('app.content_roots');
select app.apply_tenant_policies('app.content_root_media');
select app.apply_tenant_policies('app.content_items');
select app.apply_tenant_policies('app.content_item_media');
select app.apply_tenant_policies('app.content_root_tags', array['select', 'insert', 'delete']);
select app.apply_tenant_policies('app.content_root_pillars', array['select', 'insert', 'delete']);
select app.apply_tenant_policies('app.content_root_formats', array['select', 'insert', 'delete']);
-- Versions are history: written by triggers, never deleted by a request.
select app.apply_tenant_policies('app.content_versions', array['select', 'insert', 'update']);

-- Recurring series and their occurrences: cancelled, never deleted.
select app.apply_tenant_policies('app.recurring_series', array['select', 'insert', 'update']);
select app.apply_tenant_policies('app.recurring_occurrences', array['select', 'insert', 'update']);

-- Media library.
select app.apply_tenant_policies('app.media_folders');
select app.apply_tenant_policies('app.media_items');
select app.apply_tenant_policies('app.media_label_groups');
select app.apply_tenant_policies('app.media_labels');
select app.apply_tenant_policies('app.media_item_labels');
select app.apply_tenant_policies('app.media_upload_sessions', array['select', 'insert', 'update']);
select app.apply_tenant_policies('app.media_storage_garbage', array['select', 'insert']);
-- Usage history is written by definer triggers only.
select app.apply_tenant_policies('app.media_usage_events', array['select']);

-- Publishing: written by the engine (pressroom_worker) and its definer
-- functions only; requests read.
select app.apply_tenant_policies('app.publish_attempts', array['select']);
select app.apply_tenant_policies('app.publishing_states', array['select']);
select app.apply_tenant_policies('app.published_captions', array['select']);
select app.apply_tenant_policies('app.sandbox_posts', array['select']);

-- Articles.
select app.apply_tenant_policies('app.articles');
select app.apply_tenant_policies('app.article_images', array['select', 'insert', 'delete']);

-- Foundation tables keep their own policies (identity is organization-wide,
-- and membership, keys and idempotency have rules of their own, see
-- db/README.md); they now apply to pressroom_api instead of the request role.
do $$
declare
  v record;
begin
  for v in
    select pol.polname, pol.polrelid::regclass as tbl,
           array(select case when r.rolname = 'pressroom_request' then 'pressroom_api' else quote_ident(r.rolname) end
                 from pg_roles r where r.oid = any (pol.polroles)) as roles
    from pg_policy pol
    where 'pressroom_request'::regrole = any (pol.polroles)
  loop
    execute format('alter policy %I on %s to %s', v.polname, v.tbl, array_to_string(v.roles, ', '));
    if v.polname like '%\_request%' then
      execute format('alter policy %I on %s rename to %I', v.polname, v.tbl, replace(v.polname, '_request', '_api'));
    end if;
  end loop;
end
$$;

--! split: 30-grants.sql
-- Privileges: the request role reaches api functions only; pressroom_api
-- holds column-listed grants; engine-only columns are granted to nobody.
--
-- Before this migration pressroom_request could use the schema app, execute
-- its functions, and had whole-table insert, update and delete on the
-- planning tables, so a request role (a DBA testing rules in psql) could mark
-- content sent or write a permalink. Now:
--   * pressroom_request: usage on api, execute on api functions. Nothing else.
--   * pressroom_api: the privileges the request role had, with insert and
--     update listed column by column, minus the engine-only columns.
--   * engine-only columns (content_items.sent_at, permalink, platform_post_id,
--     publish_job_id) are written by pressroom_worker and by definer
--     functions of the publishing engine only (40-engine-only.sql adds the
--     status rule).

------------------------------------------------------------------------------
-- Functions of app: executable by the roles that run rules, never by PUBLIC
-- or the request role.
------------------------------------------------------------------------------
do $$
declare
  v record;
begin
  for v in
    select p.oid::regprocedure as fn,
           p.proacl is null or has_function_privilege('pressroom_request', p.oid, 'execute') as for_api
    from pg_proc p
    where p.pronamespace = 'app'::regnamespace and p.prokind = 'f'
  loop
    -- The publishing engine's own functions (claim, record, purges) were never
    -- the request role's and do not become pressroom_api's.
    if v.for_api then
      execute format('grant execute on function %s to pressroom_api', v.fn);
    end if;
    execute format('revoke execute on function %s from public, pressroom_request', v.fn);
  end loop;
end
$$;
grant execute on all functions in schema app to pressroom_definer, pressroom_worker;
-- Functions created later are executable by PUBLIC until revoked (a per-schema
-- default privilege cannot take back the global one): app.harden_api_functions,
-- which ends every migration, revokes it, and tests/db/07-catalog.test.sql
-- checks that no app function is PUBLIC's.

------------------------------------------------------------------------------
-- Tables of app
------------------------------------------------------------------------------
-- Foundation tables: their column-listed grants move to pressroom_api as they were.
do $$
declare
  v record;
begin
  for v in
    select table_name, privilege_type, string_agg(quote_ident(column_name), ', ') as columns
    from information_schema.column_privileges
    where grantee = 'pressroom_request' and table_schema = 'app'
      and table_name in ('organizations', 'users', 'sessions', 'workspaces', 'workspace_members',
                         'api_keys', 'api_key_workspaces', 'idempotency_keys')
    group by table_name, privilege_type
  loop
    execute format('grant %s (%s) on app.%I to pressroom_api', v.privilege_type, v.columns, v.table_name);
  end loop;
  for v in
    select table_name, privilege_type
    from information_schema.role_table_grants
    where grantee = 'pressroom_request' and table_schema = 'app' and privilege_type in ('DELETE', 'TRUNCATE')
      and table_name in ('organizations', 'users', 'sessions', 'workspaces', 'workspace_members',
                         'api_keys', 'api_key_workspaces', 'idempotency_keys')
  loop
    execute format('grant %s on app.%I to pressroom_api', v.privilege_type, v.table_name);
  end loop;
end
$$;

-- Reference data.
grant select on app.platforms to pressroom_api;

-- Tenant tables: read everything but secrets; write the listed columns.
grant select (id, organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, created_by, created_at, updated_at, deleted_at) on app.integrations to pressroom_api;
grant insert (organization_id, workspace_id, connector, platform, name, username, status, settings,
  webhook_url, webhook_secret, created_by) on app.integrations to pressroom_api;
grant update (name, username, status, settings, deleted_at) on app.integrations to pressroom_api;

grant select on app.tags, app.pillars, app.formats, app.hashtag_groups, app.campaigns, app.campaign_phases,
  app.content_roots, app.content_root_media, app.content_items, app.content_item_media,
  app.content_root_tags, app.content_root_pillars, app.content_root_formats, app.content_versions,
  app.recurring_series, app.recurring_occurrences,
  app.media_folders, app.media_items, app.media_label_groups, app.media_labels, app.media_item_labels,
  app.media_upload_sessions, app.media_storage_garbage, app.media_usage_events,
  app.publish_attempts, app.publishing_states, app.published_captions, app.sandbox_posts,
  app.articles, app.article_images
  to pressroom_api;

select app.grant_api_columns(t, array['insert', 'update'])
from unnest(array['app.tags', 'app.pillars', 'app.formats', 'app.hashtag_groups', 'app.campaigns',
  'app.campaign_phases', 'app.content_roots', 'app.content_root_media', 'app.content_item_media',
  'app.content_versions', 'app.recurring_series', 'app.recurring_occurrences', 'app.media_folders',
  'app.media_items', 'app.media_label_groups', 'app.media_labels', 'app.media_item_labels',
  'app.media_upload_sessions']::regclass[]) t;
select app.grant_api_columns(t, array['insert'])
from unnest(array['app.content_root_tags', 'app.content_root_pillars', 'app.content_root_formats',
  'app.media_storage_garbage', 'app.article_images']::regclass[]) t;
-- Editions: everything but what the publishing engine records.
select app.grant_api_columns('app.content_items', array['insert', 'update'],
  array['sent_at', 'permalink', 'platform_post_id', 'publish_job_id']);
-- Articles: the draft columns as the request functions write them.
grant insert (content_item_id, organization_id, workspace_id, title, body_html, character_count, cover_media_id)
  on app.articles to pressroom_api;
grant update (title, body_html, character_count, cover_media_id, platform_draft_article_id, platform_draft_url,
  platform_draft_sent_at, platform_draft_fingerprint) on app.articles to pressroom_api;

grant delete on app.tags, app.pillars, app.formats, app.hashtag_groups, app.campaigns, app.campaign_phases,
  app.content_roots, app.content_root_media, app.content_items, app.content_item_media,
  app.content_root_tags, app.content_root_pillars, app.content_root_formats,
  app.media_folders, app.media_items, app.media_label_groups, app.media_labels, app.media_item_labels,
  app.articles, app.article_images
  to pressroom_api;

------------------------------------------------------------------------------
-- The request role: api only.
------------------------------------------------------------------------------
revoke all on all tables in schema app from pressroom_request;
revoke all on schema app from pressroom_request;

--! split: 40-engine-only.sql
-- What only the publishing engine may write.
--
-- The status machine (app.content_transition_allowed, enforced by trigger
-- content_items_20_status_machine) allows scheduled -> sent and
-- scheduled -> failed, but only the engine makes those moves: the worker
-- (pressroom_worker) and the engine's definer functions (app.publish_record,
-- app.publishing_resolve, owned by pressroom_definer). A request, and a DBA
-- acting as pressroom_api or pressroom_request, is refused with 42501, as it
-- is for the engine-only columns (sent_at, permalink, platform_post_id,
-- publish_job_id), which 30-grants.sql grants to nobody but the engine.
-- A request may clear the last publishing error (retry does) but not write one.

create function app.is_request_role() returns boolean
language sql stable parallel safe
set search_path = pg_catalog
as $$ select current_user in ('pressroom_api', 'pressroom_request') $$;
comment on function app.is_request_role() is
  'True when the statement runs as a request (pressroom_api inside api functions, or pressroom_request).';
grant execute on function app.is_request_role() to pressroom_api, pressroom_definer, pressroom_worker;

create function app.tg_content_items_engine_only() returns trigger
language plpgsql
set search_path = pg_catalog
as $$
begin
  if not app.is_request_role() then
    return new;
  end if;
  if new.status in ('sent', 'failed') and new.status is distinct from old.status then
    raise exception using errcode = '42501',
      message = format('Only the publishing engine marks content %s.', new.status),
      detail = 'ENGINE_ONLY';
  end if;
  if new.error is not null and new.error is distinct from old.error then
    raise exception using errcode = '42501',
      message = 'Only the publishing engine records a publishing error.',
      detail = 'ENGINE_ONLY';
  end if;
  return new;
end
$$;
comment on function app.tg_content_items_engine_only() is
  'Refuses a request''s move of an edition to sent or failed, and a request''s write of its publishing error (42501).';
create trigger content_items_15_engine_only before update of status, error on app.content_items
  for each row execute function app.tg_content_items_engine_only();

--! split: 50-trigger-names.sql
-- Triggers and trigger functions named for what they do.
--
-- Fifteen triggers were named "guard", and tg_content_item_media_usage sat
-- beside tg_content_items_media_usage. A trigger is named
-- <table>_<order>_<what it does>; its function tg_<table>_<what it does>.
-- Triggers refer to their function by identity, so renaming changes no rule.

alter function app.tg_api_keys_guard() rename to tg_api_keys_immutable_once_issued;
alter trigger api_keys_10_guard on app.api_keys rename to api_keys_10_immutable_once_issued;

alter function app.tg_article_images_guard() rename to tg_article_images_check_image;
alter trigger article_images_20_guard on app.article_images rename to article_images_20_check_image;

alter function app.tg_articles_guard() rename to tg_articles_draft_only_and_media_rules;
alter trigger articles_20_guard on app.articles rename to articles_20_draft_only_and_media_rules;

alter function app.tg_content_items_guard() rename to tg_content_items_status_machine;
alter trigger content_items_20_guard on app.content_items rename to content_items_20_status_machine;

alter function app.tg_content_item_media_guard() rename to tg_content_item_media_same_workspace_while_editable;
alter trigger content_item_media_20_guard on app.content_item_media
  rename to content_item_media_20_same_workspace_while_editable;

alter function app.tg_content_root_media_guard() rename to tg_content_root_media_same_workspace;
alter trigger content_root_media_20_guard on app.content_root_media rename to content_root_media_20_same_workspace;

alter function app.tg_content_root_taxonomy_guard() rename to tg_content_root_taxonomy_same_workspace;
alter trigger content_root_tags_20_guard on app.content_root_tags rename to content_root_tags_20_same_workspace;
alter trigger content_root_pillars_20_guard on app.content_root_pillars rename to content_root_pillars_20_same_workspace;
alter trigger content_root_formats_20_guard on app.content_root_formats rename to content_root_formats_20_same_workspace;

alter function app.tg_content_roots_guard() rename to tg_content_roots_stay_in_workspace;
alter trigger content_roots_20_guard on app.content_roots rename to content_roots_20_stay_in_workspace;

alter function app.tg_content_versions_guard() rename to tg_content_versions_append_only;
alter trigger content_versions_10_guard on app.content_versions rename to content_versions_10_append_only;

alter function app.tg_media_items_guard() rename to tg_media_items_bin_rule_and_measured_fields;
alter trigger media_items_20_guard on app.media_items rename to media_items_20_bin_rule_and_measured_fields;

alter function app.tg_media_items_guard_delete() rename to tg_media_items_delete_only_binned;
alter trigger media_items_30_guard_delete on app.media_items rename to media_items_30_delete_only_binned;

alter function app.tg_recurring_guard() rename to tg_recurring_cancel_is_final;
alter trigger recurring_series_20_guard on app.recurring_series rename to recurring_series_20_cancel_is_final;
alter trigger recurring_occurrences_20_guard on app.recurring_occurrences rename to recurring_occurrences_20_cancel_is_final;

-- Media usage history: one function per event source.
alter function app.tg_content_items_media_usage() rename to tg_content_items_usage_on_status_change;
alter trigger content_items_61_media_usage on app.content_items rename to content_items_61_usage_on_status_change;
alter function app.tg_content_item_media_usage() rename to tg_content_item_media_usage_on_list_change;
alter trigger content_item_media_61_media_usage on app.content_item_media
  rename to content_item_media_61_usage_on_list_change;
alter function app.tg_content_root_media_usage() rename to tg_content_root_media_usage_on_list_change;
alter trigger content_root_media_61_media_usage on app.content_root_media
  rename to content_root_media_61_usage_on_list_change;

--! split: 60-slow-work-outside-transactions.sql
-- Slow work outside request transactions.
--
-- Three routes do slow work between their checks and their record: completing
-- an upload streams and hashes up to 512 MB, editing a published caption and
-- sending an article to the platform's drafts call a connector (a webhook with
-- a 15 s timeout). They now run as the publish worker does
-- (server/jobs/publish.ts): claim in one short transaction, do the slow work
-- outside any transaction, record in another (the pipeline's phased routes,
-- server/http/pipeline.ts). This file holds:
--
--   app.work_claims                 one live claim per piece of work: a second
--                                   request sees it and answers 409 *_IN_PROGRESS;
--                                   a claim lapses at claimed_until, so work that
--                                   died with its process can be claimed again
--   app.work_claim, app.work_claim_take
--                                   take a claim; give it up (or consume it)
--   api.claim_* / api.finish_*      the first and last transaction of each route
--   api.release_work_claim          gives a claim up after the slow step failed
--   api.sandbox_edit_caption        the sandbox platform's memory, written by a
--                                   request (replaces routes calling
--                                   app.sandbox_edit_caption_for_request)
--   app.media_expire_upload_sessions, api.abort_media_upload
--                                   replaced: they leave a session alone while its
--                                   completion is claimed (they used to wait on the
--                                   row lock the whole completion held)
--
-- Nothing here relies on current_user: the caller is the request context set
-- by the pipeline (app.current_workspace_id(), app.require_role).

------------------------------------------------------------------------------
-- Claims
------------------------------------------------------------------------------
create table if not exists app.work_claims (
  kind text not null check (kind in ('media_upload_completion', 'published_caption_edit', 'article_platform_draft')),
  subject_id uuid not null,
  organization_id uuid not null references app.organizations (id) on delete cascade,
  workspace_id uuid not null references app.workspaces (id) on delete cascade,
  token uuid not null,
  request_id text,
  claimed_until timestamptz not null,
  claimed_at timestamptz not null default clock_timestamp(),
  primary key (kind, subject_id)
);
create index if not exists work_claims_workspace_id_idx on app.work_claims (workspace_id);
create index if not exists work_claims_organization_id_idx on app.work_claims (organization_id);

-- Written only through the definer functions below; requests read their
-- workspace's claims (db/README.md, "Tenant policies").
select app.apply_tenant_policies('app.work_claims', array['select']);
grant select on app.work_claims to pressroom_api;
comment on table app.work_claims is
  'Slow work a request has claimed (the phased routes of server/http/pipeline.ts): one live claim per (kind, subject); it lapses at claimed_until.';

-- Claims (kind, subject) for the caller's workspace for p_seconds; the token,
-- or null while another claim is live. The caller has checked the subject.
create or replace function app.work_claim(p_kind text, p_subject uuid, p_seconds int) returns uuid
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_token uuid := gen_random_uuid();
  v_got uuid;
begin
  if app.current_workspace_id() is null or app.current_organization_id() is null then
    perform app.raise(403, 'WORKSPACE_REQUIRED', 'This operation needs a workspace.');
  end if;
  insert into app.work_claims as c (kind, subject_id, organization_id, workspace_id, token, request_id, claimed_until)
  values (p_kind, p_subject, app.current_organization_id(), app.current_workspace_id(), v_token,
          nullif(current_setting('pressroom.request_id', true), ''),
          clock_timestamp() + make_interval(secs => greatest(p_seconds, 1)))
  on conflict (kind, subject_id) do update
    set organization_id = excluded.organization_id, workspace_id = excluded.workspace_id, token = excluded.token,
        request_id = excluded.request_id, claimed_until = excluded.claimed_until, claimed_at = clock_timestamp()
    where c.claimed_until <= clock_timestamp()
  returning token into v_got;
  return v_got;
end
$$;
alter function app.work_claim(text, uuid, int) owner to pressroom_definer;
comment on function app.work_claim(text, uuid, int) is
  'Claims slow work (kind, subject) for the caller''s workspace for p_seconds; returns the token, or null while another claim is live.';

-- Gives a claim up (the work was recorded, or failed): true when the token
-- was still the claim's.
create or replace function app.work_claim_take(p_kind text, p_subject uuid, p_token uuid) returns boolean
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_n int;
begin
  delete from app.work_claims
  where kind = p_kind and subject_id = p_subject and token = p_token and workspace_id = app.current_workspace_id();
  get diagnostics v_n = row_count;
  return v_n > 0;
end
$$;
alter function app.work_claim_take(text, uuid, uuid) owner to pressroom_definer;
comment on function app.work_claim_take(text, uuid, uuid) is
  'Removes the claim (kind, subject) when p_token is still its token (in the caller''s workspace); true when it was.';

-- Whether (kind, subject) has a live claim (for the functions that must leave it alone).
create or replace function app.work_claim_live(p_kind text, p_subject uuid) returns boolean
language sql stable security definer
set search_path = pg_catalog, app
as $$
  select exists (select 1 from app.work_claims
                 where kind = p_kind and subject_id = p_subject and claimed_until > clock_timestamp())
$$;
alter function app.work_claim_live(text, uuid) owner to pressroom_definer;
comment on function app.work_claim_live(text, uuid) is
  'Whether slow work (kind, subject) is claimed by a request right now.';

revoke execute on function app.work_claim(text, uuid, int), app.work_claim_take(text, uuid, uuid),
  app.work_claim_live(text, uuid) from public;
grant execute on function app.work_claim(text, uuid, int), app.work_claim_take(text, uuid, uuid),
  app.work_claim_live(text, uuid) to pressroom_api, pressroom_definer, pressroom_worker;

create or replace function api.release_work_claim(p_kind text, p_subject uuid, p_claim uuid) returns boolean
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  return app.work_claim_take(p_kind, p_subject, p_claim);
end
$$;
comment on function api.release_work_claim(text, uuid, uuid) is
  'Gives up a claim taken by api.claim_* after the slow step failed, so a retry can claim again; true when the claim was still held.';

------------------------------------------------------------------------------
-- Completing an upload (POST media/uploads/{sessionId}/complete)
------------------------------------------------------------------------------
create or replace function api.claim_media_upload_completion(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  -- The checks of api.begin_media_upload_completion, under its row lock (held
  -- only by this short transaction now).
  v := api.begin_media_upload_completion(p_id);
  if v ->> 'state' = 'completed' then
    return v;
  end if;
  v_claim := app.work_claim('media_upload_completion', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'Another request is completing this upload; retry in a moment to get its media item.',
      jsonb_build_object('sessionId', p_id));
  end if;
  return v || jsonb_build_object('claim', v_claim);
end
$$;
comment on function api.claim_media_upload_completion(uuid, int) is
  'First step of completing an upload: the checks, then a claim for p_claim_seconds (409 UPLOAD_COMPLETION_IN_PROGRESS while another is live); returns the completed item, or what the server needs to verify the bytes plus the claim.';

create or replace function api.finish_media_upload_completion(p_id uuid, p_claim uuid, p_facts jsonb, p_patch jsonb) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('media_upload_completion', p_id, p_claim) then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'This completion took too long and another request took it over; retry to get the media item.',
      jsonb_build_object('sessionId', p_id));
  end if;
  return api.complete_media_upload(p_id, p_facts, p_patch);
end
$$;
comment on function api.finish_media_upload_completion(uuid, uuid, jsonb, jsonb) is
  'Last step of completing an upload: consumes the claim of api.claim_media_upload_completion and makes the media item from the verified facts (api.complete_media_upload).';

-- Replaced: pending sessions whose completion is claimed are neither expired
-- nor swept (their bytes are being verified under the final key).
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
  where id in (select s.id from app.media_upload_sessions s where s.state = 'pending' and s.expires_at <= now()
                 and not app.work_claim_live('media_upload_completion', s.id)
               order by s.expires_at limit p_limit for update skip locked);
  get diagnostics v_expired = row_count;
  with swept as (
    update app.media_upload_sessions set upload_swept_at = now()
    where id in (select s.id from app.media_upload_sessions s where s.upload_swept_at is null and s.expires_at <= now()
                   and not (s.state = 'pending' and app.work_claim_live('media_upload_completion', s.id))
                 order by s.expires_at limit p_limit for update skip locked)
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
comment on function app.media_expire_upload_sessions(int) is
  'Expires pending upload sessions past their expiry and queues their keys for deletion, leaving alone sessions whose completion is claimed.';

-- Replaced: a session whose completion is claimed cannot be aborted (its
-- bytes are being verified); the caller retries once it is done.
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
  if v.state = 'pending' and app.work_claim_live('media_upload_completion', v.id) then
    perform app.raise(409, 'UPLOAD_COMPLETION_IN_PROGRESS',
      'A request is completing this upload; it cannot be aborted now.', jsonb_build_object('sessionId', p_id));
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
comment on function api.abort_media_upload(uuid) is
  'Aborts a pending upload session (409 UPLOAD_COMPLETION_IN_PROGRESS while a completion is claimed) and queues its keys for deletion.';

------------------------------------------------------------------------------
-- Editing a published caption (PATCH content/{id}/published-caption)
------------------------------------------------------------------------------
create or replace function api.claim_published_caption_edit(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  v := api.published_caption_target(p_id);
  v_claim := app.work_claim('published_caption_edit', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'CAPTION_EDIT_IN_PROGRESS',
      'Another request is editing this published caption; retry once it is done.', jsonb_build_object('contentId', p_id));
  end if;
  -- The connector needs the webhook secret, which requests cannot read: the
  -- definer function checks the caller again.
  return v || jsonb_build_object('claim', v_claim,
    'webhookSecret', case when v ->> 'connector' = 'webhook' then app.published_caption_secret(p_id) end);
end
$$;
comment on function api.claim_published_caption_edit(uuid, int) is
  'First step of editing a published caption: the checks of api.published_caption_target, a claim for p_claim_seconds (409 CAPTION_EDIT_IN_PROGRESS while another is live), and what the connector needs (the webhook secret included).';

create or replace function api.finish_published_caption_edit(p_id uuid, p_claim uuid, p_caption text) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('published_caption_edit', p_id, p_claim) then
    perform app.raise(409, 'CAPTION_EDIT_IN_PROGRESS',
      'This caption edit took too long and another request took it over.', jsonb_build_object('contentId', p_id));
  end if;
  return api.record_published_caption(p_id, p_caption);
end
$$;
comment on function api.finish_published_caption_edit(uuid, uuid, text) is
  'Last step of editing a published caption: consumes the claim of api.claim_published_caption_edit and records the caption the platform took.';

create or replace function api.sandbox_edit_caption(p_integration_id uuid, p_platform_post_id text, p_caption text) returns boolean
language sql volatile
as $$
  select app.sandbox_edit_caption_for_request(p_integration_id, p_platform_post_id, p_caption)
$$;
comment on function api.sandbox_edit_caption(uuid, text, text) is
  'The sandbox platform takes a caption edit from a request (an editor of the integration''s workspace); false when it has no such post.';

------------------------------------------------------------------------------
-- Sending an article to the platform's drafts (POST articles/{id}/platform-draft)
------------------------------------------------------------------------------
create or replace function api.claim_article_platform_draft(p_id uuid, p_claim_seconds int) returns jsonb
language plpgsql volatile
as $$
declare
  v jsonb;
  v_claim uuid;
begin
  v := api.begin_article_platform_draft(p_id);
  if jsonb_typeof(v -> 'existing') = 'object' then
    return v;
  end if;
  if coalesce((v -> 'integration' ->> 'deleted')::boolean, false) or v -> 'integration' ->> 'status' is distinct from 'active' then
    perform app.raise(409, 'INTEGRATION_UNAVAILABLE',
      'The article''s channel is disconnected or deleted; reconnect it first.',
      jsonb_build_object('integrationId', v -> 'integration' -> 'id'));
  end if;
  v_claim := app.work_claim('article_platform_draft', p_id, p_claim_seconds);
  if v_claim is null then
    perform app.raise(409, 'PLATFORM_DRAFT_IN_PROGRESS',
      'Another request is sending this article to the platform''s drafts; retry once it is done.', jsonb_build_object('contentId', p_id));
  end if;
  return v || jsonb_build_object('claim', v_claim);
end
$$;
comment on function api.claim_article_platform_draft(uuid, int) is
  'First step of a platform draft: the checks of api.begin_article_platform_draft, the draft already made for unchanged content, or a claim for p_claim_seconds (409 PLATFORM_DRAFT_IN_PROGRESS while another is live).';

create or replace function api.finish_article_platform_draft(p_id uuid, p_claim uuid, p_article_id text, p_draft_url text,
  p_fingerprint text) returns jsonb
language plpgsql volatile
as $$
begin
  perform app.require_role('editor');
  if not app.work_claim_take('article_platform_draft', p_id, p_claim) then
    perform app.raise(409, 'PLATFORM_DRAFT_IN_PROGRESS',
      'This platform draft took too long and another request took it over.', jsonb_build_object('contentId', p_id));
  end if;
  return api.record_article_platform_draft(p_id, p_article_id, p_draft_url, p_fingerprint);
end
$$;
comment on function api.finish_article_platform_draft(uuid, uuid, text, text, text) is
  'Last step of a platform draft: consumes the claim of api.claim_article_platform_draft and records the draft the platform made.';

-- The api functions of this file run as pressroom_api and are executable by
-- pressroom_request once 90-harden-api-functions.sql has run.

--! split: 65-comments.sql
-- Catalog comments: the rulebook readable from the database itself.
--
-- Every table of the schemas app and audit (the monthly partitions of
-- audit.api_calls, made by a job, aside) and every function of the schema api
-- gets a `comment on`. A table's comment says what a row is, its tenancy, and
-- the policies and triggers that guard it. An api function's comment starts
-- with the operation it serves (`Serves <METHOD> <path> (<operationId>).`, as
-- in openapi.yaml), or names its caller in the server when it serves no single
-- route (server/http/pipeline.ts, server/storage/router.ts and signing.ts),
-- then says what it does, the role it requires and the notable errors it
-- raises (the codes of db/ERRORS.md).
--
-- Comments only: no rule changes here. Signatures are those of db/schema.sql.

------------------------------------------------------------------------------
-- Identity and access
------------------------------------------------------------------------------
comment on table app.organizations is
  'A customer organization: the tenant every other row belongs to, with its plan (trial, basic, standard, premium; '
  'a trial needs trial_ends_at, and api.gate refuses an ended trial with 401 PLAN_REQUIRED). A request reads only its '
  'own organization (policy organizations_api_select); rows are written by api.signup and the set-plan admin command.';
comment on table app.users is
  'A person with an account in exactly one organization, with an organization role (owner, admin, member) and a '
  'status (an active user has a password hash, an invited one has none). Emails are unique on the server, ignoring case '
  '(index users_email_key). A request sees its organization''s users (policy users_api_select) and may only add invited '
  'members without a password (policy users_api_insert, used by api.add_member).';
comment on table app.sessions is
  'A signed-in session of a user: only the SHA-256 of its token (token_hash), its expiry and its revocation. In the '
  'user''s organization (foreign key sessions_user_same_organization); a request sees and revokes only its own user''s '
  'sessions (policies sessions_api_select, sessions_api_update). Made by api.signup and api.create_session; '
  'app.purge_expired deletes them a day after they expire or are revoked.';
comment on table app.workspaces is
  'A workspace of an organization: the tenancy unit of integrations, planning, content and media, with its IANA time '
  'zone (checked by trigger workspaces_20_check_timezone, 400 INVALID_TIMEZONE). A request sees only the workspaces '
  'its principal may use (policy workspaces_api_select); made by api.signup and api.create_workspace.';
comment on table app.workspace_members is
  'A user''s role (viewer, editor, manager) in one workspace of the user''s organization. Written by managers of the '
  'workspace only (policy workspace_members_api_write); a membership''s workspace and user never change (trigger '
  'workspace_members_20_immutable) and every workspace keeps a manager (constraint trigger '
  'workspace_members_30_keep_manager, 409 LAST_MANAGER).';
comment on table app.api_keys is
  'An API key of an organization: its SHA-256 (key_hash) and visible prefix, never the key itself, and the role it '
  'grants, capped at every call by its creator''s current role. Only a user with a session creates keys (policy '
  'api_keys_api_insert) and revokes the keys they may administer (policy api_keys_api_update); trigger '
  'api_keys_10_immutable_once_issued keeps hash, prefix and organization fixed and revocation final (409 KEY_REVOKED).';
comment on table app.api_key_workspaces is
  'A workspace granted to an API key; key and workspace are of the same organization (foreign keys '
  'api_key_workspaces_key_same_organization, api_key_workspaces_workspace_same_organization). A request may grant only '
  'workspaces it manages (policy api_key_workspaces_api_insert) and reads its organization''s grants.';
comment on table app.idempotency_keys is
  'One Idempotency-Key per workspace, principal, method and route: the request body''s hash while the first request '
  'is in flight, then its recorded status and answer, replayed for 24 hours (api.idempotency_begin, '
  'api.idempotency_finish, api.idempotency_release). A request reaches only its own principal''s keys in its workspace '
  '(policy idempotency_keys_api); app.purge_expired deletes expired rows.';
comment on table app.rate_limit_counters is
  'Hits per bucket (a workspace, a principal, or an anonymous client), rate-limit class (read, write, expensive) and '
  'minute, counted by app.rate_limit_hit from api.gate so that limits hold across API processes. Not tenant data: '
  'unlogged, reached by pressroom_definer only (policy rate_limit_counters_definer); app.purge_expired drops old windows.';

comment on function api.signup(text,text,text,text,bytea,integer,boolean,text,integer) is
  'Serves POST /v1/auth/signup (signup_v1). Creates an organization on the given plan, its owner, a first workspace '
  '(the owner as manager) and a session; open while no organization exists, or when the server allows sign-up. '
  'Anonymous, owned by pressroom_definer. Raises 403 SIGNUP_CLOSED and 409 EMAIL_TAKEN.';
comment on function api.login_lookup(text) is
  'Serves POST /v1/auth/sessions (createSession_v1), first step. Returns the user id and stored password hash of the '
  'active user with this email (the KDF runs in the server); no row when there is none. Anonymous, owned by '
  'pressroom_definer.';
comment on function api.create_session(uuid,text,bytea,integer) is
  'Serves POST /v1/auth/sessions (createSession_v1), second step. Opens a session for the user once the server has '
  'verified the password against the hash it was given; a hash changed in between refuses with 401 '
  'INVALID_CREDENTIALS. Anonymous, owned by pressroom_definer; only the token''s SHA-256 is stored.';
comment on function api.end_current_session() is
  'Serves DELETE /v1/auth/sessions/current (endSession_v1). Revokes the session the call was made with. Requires a '
  'session token (403 SESSION_REQUIRED for an API key); 404 NOT_FOUND when it is already ended.';
comment on function api.list_workspaces() is
  'Serves GET /v1/workspaces (listWorkspaces_v1). The workspaces of the caller''s organization that the principal '
  '(user or API key) may use, each with the principal''s role there. Any authenticated caller.';
comment on function api.create_workspace(text,text) is
  'Serves POST /v1/workspaces (createWorkspace_v1). Creates a workspace (time zone UTC unless given) with the caller '
  'as manager. Requires a session of an organization owner or admin (403 SESSION_REQUIRED, 403 ROLE_REQUIRED); owned '
  'by pressroom_definer. An unknown time zone is refused by trigger workspaces_20_check_timezone (400 INVALID_TIMEZONE).';
comment on function api.list_members() is
  'Serves GET /v1/workspaces/{workspaceId}/members (listMembers_v1). The members of the workspace with their roles. '
  'Requires the manager role.';
comment on function api.add_member(text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/members (addMember_v1). Adds a user of the organization to the workspace '
  'with a role, inviting a new user of the organization when the email is unknown. Requires the manager role; raises '
  '409 ALREADY_MEMBER and 409 EMAIL_TAKEN (the email belongs to another organization).';
comment on function api.update_member(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/members/{userId} (updateMember_v1). Changes a member''s role. Requires the '
  'manager role; 404 NOT_FOUND, and 409 LAST_MANAGER from trigger workspace_members_30_keep_manager when the last '
  'manager would be demoted.';
comment on function api.remove_member(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/members/{userId} (removeMember_v1). Removes a member from the workspace. '
  'Requires the manager role; 404 NOT_FOUND, and 409 LAST_MANAGER from trigger workspace_members_30_keep_manager.';
comment on function api.create_api_key(text,uuid[],text,timestamp with time zone,text,bytea) is
  'Serves POST /v1/workspaces/{workspaceId}/api-keys (createApiKey_v1). Records a new key (its SHA-256 and prefix, made '
  'by the server) granted the listed workspaces with a role (editor unless given). Requires a session and the manager '
  'role; every granted workspace must be one the caller manages (403 WORKSPACE_FORBIDDEN); 400 VALIDATION_FAILED for '
  'an expiresAt in the past.';
comment on function api.list_api_keys() is
  'Serves GET /v1/workspaces/{workspaceId}/api-keys (listApiKeys_v1). The active (not revoked, not expired) keys the '
  'caller may administer, without their secrets. Requires a session and the manager role.';
comment on function api.revoke_api_key(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/api-keys/{id} (revokeApiKey_v1). Revokes a key the caller may administer; '
  'revocation takes effect on the key''s next call and is final. Requires a session and the manager role; 404 '
  'NOT_FOUND for an unknown, foreign or already revoked key.';
comment on function api.gate(bytea,uuid,text,integer,text,text) is
  'Called by the request pipeline (server/http/pipeline.ts) before every /v1 operation, outside the request''s '
  'transaction. Authenticates the bearer credential (session token or API key, by SHA-256), checks the organization''s '
  'plan against the operation''s minimum, the principal''s access to the workspace and its rate limit (anonymous routes '
  'by client bucket), and returns the principal, workspace role and rate state, with an error object instead of '
  'raising (401 UNAUTHENTICATED, KEY_REVOKED, KEY_EXPIRED, PLAN_REQUIRED; 403 WORKSPACE_FORBIDDEN; 429 RATE_LIMITED). '
  'Owned by pressroom_definer.';
comment on function api.idempotency_begin(text,text,text,bytea) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key, before '
  'the handler. Claims the key for this workspace, principal, method and route, or answers replay with the recorded '
  'status and body; an expired record or a dead claim is taken afresh. Raises 422 IDEMPOTENCY_KEY_REUSED (another '
  'request body) and 409 IDEMPOTENCY_KEY_IN_USE (the first request is still running).';
comment on function api.idempotency_finish(text,text,text,integer,jsonb) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key: records '
  'the status and answer of the claimed key, in the request''s own transaction on success or right after a refusal, '
  'so that retries replay it.';
comment on function api.idempotency_release(text,text,text) is
  'Called by the request pipeline (server/http/pipeline.ts) for every operation that takes an Idempotency-Key when it '
  'ended with a 5xx: forgets the in-flight claim so the client may retry with the same key.';

------------------------------------------------------------------------------
-- Integrations
------------------------------------------------------------------------------
comment on table app.platforms is
  'Reference data, one row per social platform (x, linkedin, instagram, ...): caption length, media rules, required '
  'settings and capabilities (boards, video categories, articles, published-caption edits), against which content is '
  'checked when it is scheduled. Not tenant data: every role may read it (policy platforms_read); migrations write it.';
comment on table app.integrations is
  'A connected account (channel) of a workspace: its connector (sandbox or webhook), platform, name and settings; a '
  'webhook integration also keeps its URL and signing secret, which pressroom_api may insert but never read. Tenant '
  'policies of app.apply_tenant_policies (select, insert, update; writes need editor, the api functions manager); '
  'never deleted by a request: api.delete_integration sets deleted_at.';

comment on function api.list_integrations() is
  'Serves GET /v1/workspaces/{workspaceId}/integrations (listIntegrations_v1). The workspace''s integrations that are '
  'not deleted, without secrets. Requires the viewer role.';
comment on function api.get_integration(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id} (getIntegration_v1). One integration with its platform''s '
  'publishing rules, without its secret. Requires the viewer role; 404 NOT_FOUND, also once deleted.';
comment on function api.create_integration(text,text,text,text,jsonb,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/integrations (createIntegration_v1). Connects an account through a '
  'connector that needs no OAuth (sandbox, or webhook whose URL the server resolved and checked before this call) and '
  'normalizes its settings. Requires the manager role; raises 400 UNKNOWN_CONNECTOR, UNKNOWN_PLATFORM, INVALID_SETTINGS, '
  'INVALID_WEBHOOK_URL and VALIDATION_FAILED.';
comment on function api.delete_integration(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/integrations/{id} (deleteIntegration_v1). Soft delete: sets deleted_at '
  'and status disconnected; afterwards every route answers 404. Requires the manager role; refused with 409 '
  'INTEGRATION_HAS_SCHEDULED_CONTENT while editions are scheduled on it; 404 NOT_FOUND.';
comment on function api.integration_for_listing(uuid,text) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/boards (listIntegrationBoards_v1) and GET '
  '/v1/workspaces/{workspaceId}/integrations/{id}/video-categories (listIntegrationVideoCategories_v1). What the '
  'connector needs to list boards or video categories (never the secret). Requires the viewer role; 404 NOT_FOUND, and '
  '404 NOT_SUPPORTED when the platform has no such list.';

------------------------------------------------------------------------------
-- Taxonomy and campaigns
------------------------------------------------------------------------------
comment on table app.tags is
  'A tag of a workspace, assigned to content roots (app.content_root_tags); names unique per workspace ignoring case '
  '(index tags_workspace_name_key), trimmed and colors lowered by trigger tags_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.pillars is
  'A content pillar of a workspace, assigned to content roots (app.content_root_pillars); names unique per workspace '
  'ignoring case (index pillars_workspace_name_key), normalized by trigger pillars_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.formats is
  'A content format of a workspace, assigned to content roots (app.content_root_formats); names unique per workspace '
  'ignoring case (index formats_workspace_name_key), normalized by trigger formats_20_normalize. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.hashtag_groups is
  'A named set of up to 100 hashtags of a workspace; names unique per workspace ignoring case (index '
  'hashtag_groups_workspace_name_key); trigger hashtag_groups_20_normalize trims the name and normalizes the hashtags '
  '(400 INVALID_HASHTAG). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.campaigns is
  'A campaign of a workspace (name, description, color, optional date range with start not after end) that content '
  'roots may belong to; deleting it unassigns its content (api.delete_campaign). Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.campaign_phases is
  'An ordered phase of a campaign, in the campaign''s workspace. Trigger campaign_phases_05_check_campaign refuses a '
  'campaign of another workspace (404 CAMPAIGN_NOT_FOUND), a move to another campaign (400 IMMUTABLE_FIELD) and a 51st '
  'phase (409 PHASE_LIMIT_REACHED). Tenant policies of app.apply_tenant_policies (writes need editor).';

comment on function api.list_taxonomy_terms(text) is
  'Serves GET /v1/workspaces/{workspaceId}/tags (listTags_v1), GET /v1/workspaces/{workspaceId}/pillars (listPillars_v1) '
  'and GET /v1/workspaces/{workspaceId}/formats (listFormats_v1), by p_kind. The workspace''s terms of that kind, by '
  'name. Requires the viewer role.';
comment on function api.create_taxonomy_term(text,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/tags (createTag_v1), POST /v1/workspaces/{workspaceId}/pillars '
  '(createPillar_v1) and POST /v1/workspaces/{workspaceId}/formats (createFormat_v1), by p_kind. Creates a term. '
  'Requires the editor role; 409 NAME_TAKEN (names compared ignoring case, trimmed).';
comment on function api.update_taxonomy_term(text,uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/tags/{id} (updateTag_v1), PATCH /v1/workspaces/{workspaceId}/pillars/{id} '
  '(updatePillar_v1) and PATCH /v1/workspaces/{workspaceId}/formats/{id} (updateFormat_v1), by p_kind. Changes the '
  'provided fields (name, color; color may be null). Requires the editor role; 404 NOT_FOUND, 409 NAME_TAKEN.';
comment on function api.delete_taxonomy_term(text,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/tags/{id} (deleteTag_v1), DELETE /v1/workspaces/{workspaceId}/pillars/{id} '
  '(deletePillar_v1) and DELETE /v1/workspaces/{workspaceId}/formats/{id} (deleteFormat_v1), by p_kind. Deletes the '
  'term and its assignments to content roots. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_hashtag_groups() is
  'Serves GET /v1/workspaces/{workspaceId}/hashtag-groups (listHashtagGroups_v1). The workspace''s hashtag groups, by '
  'name. Requires the viewer role.';
comment on function api.create_hashtag_group(text,text[]) is
  'Serves POST /v1/workspaces/{workspaceId}/hashtag-groups (createHashtagGroup_v1). Creates a hashtag group. Requires '
  'the editor role; 409 NAME_TAKEN, and 400 INVALID_HASHTAG from trigger hashtag_groups_20_normalize.';
comment on function api.update_hashtag_group(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/hashtag-groups/{id} (updateHashtagGroup_v1). Changes the provided name '
  'and/or hashtags. Requires the editor role; 404 NOT_FOUND, 409 NAME_TAKEN, 400 INVALID_HASHTAG.';
comment on function api.delete_hashtag_group(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/hashtag-groups/{id} (deleteHashtagGroup_v1). Deletes a hashtag group. '
  'Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_campaigns(text,boolean) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns (listCampaigns_v1). The workspace''s campaigns by start date and '
  'name, optionally filtered by a name search and with their phases. Requires the viewer role.';
comment on function api.get_campaign(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id} (getCampaign_v1). One campaign with its phases. Requires the '
  'viewer role; 404 NOT_FOUND.';
comment on function api.create_campaign(text,text,text,date,date,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/campaigns (createCampaign_v1). Creates a campaign, with its phases when '
  'given. Requires the editor role; 400 VALIDATION_FAILED (end before start), 409 PHASE_LIMIT_REACHED.';
comment on function api.update_campaign(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/campaigns/{id} (updateCampaign_v1). Changes the provided fields '
  '(description, color and dates may be null). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED (end '
  'before start).';
comment on function api.delete_campaign(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/campaigns/{id} (deleteCampaign_v1). Deletes the campaign and its phases; '
  'its content stays, unassigned, and the answer counts the editions and roots unassigned. Requires the editor role; '
  '404 NOT_FOUND.';
comment on function api.list_campaign_phases(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id}/phases (listCampaignPhases_v1). The campaign''s phases in '
  'order. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.create_campaign_phase(uuid,text,text,date,date,integer) is
  'Serves POST /v1/workspaces/{workspaceId}/campaigns/{id}/phases (createCampaignPhase_v1). Adds a phase at a position '
  '(last unless given). Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED (end before start), 409 '
  'PHASE_LIMIT_REACHED from trigger campaign_phases_05_check_campaign.';
comment on function api.save_campaign_phases(uuid,jsonb) is
  'Serves PUT /v1/workspaces/{workspaceId}/campaigns/{id}/phases (saveCampaignPhases_v1). Replaces the campaign''s phases '
  'with the list given, in its order: listed ids are updated, entries without id created, the others deleted. Requires '
  'the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED, 400 PHASE_NOT_IN_CAMPAIGN, 409 PHASE_LIMIT_REACHED.';
comment on function api.update_campaign_phase(uuid,uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/campaigns/{id}/phases/{phaseId} (updateCampaignPhase_v1). Changes the '
  'provided fields of a phase and moves it when position is given. Requires the editor role; 404 NOT_FOUND, 400 '
  'VALIDATION_FAILED (end before start).';
comment on function api.delete_campaign_phase(uuid,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/campaigns/{id}/phases/{phaseId} (deleteCampaignPhase_v1). Deletes a phase, '
  'unassigns its content roots from it and closes the gap in the order. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_campaign_content(uuid,integer,bigint,text,text,text,text) is
  'Serves GET /v1/workspaces/{workspaceId}/campaigns/{id}/content (listCampaignContent_v1). The campaign''s live '
  'editions, filtered by phase (or none), status and platform, ordered by scheduled, else intended, else creation time; '
  'returns a page with limit, offset, total and hasMore. Requires the viewer role; 404 NOT_FOUND, 400 '
  'VALIDATION_FAILED for page bounds, sort direction or status.';

------------------------------------------------------------------------------
-- Content
------------------------------------------------------------------------------
comment on table app.content_roots is
  'A content root (the idea): title, caption, notes, campaign and phase, shared by its editions (one per channel). '
  'Trigger content_roots_05_check_campaign keeps campaign and phase in the workspace and consistent '
  '(404 CAMPAIGN_NOT_FOUND, 400 PHASE_NOT_IN_CAMPAIGN); content_roots_20_stay_in_workspace refuses a move; '
  'content_roots_50_check_publishable re-checks scheduled editions that inherit the caption; content_roots_60_propagate '
  'records their versions. Tenant policies of app.apply_tenant_policies (writes need editor); deletion is soft.';
comment on table app.content_items is
  'An edition: a root''s content on one channel (integration), a post or an article, with its own caption, thread, '
  'settings and media or the root''s; at most one live edition per root and channel. Its status moves are checked by '
  'trigger content_items_20_status_machine (409 INVALID_STATUS_TRANSITION, 409 CONTENT_DELETED); only the publishing '
  'engine marks it sent or failed (content_items_15_engine_only, 42501) or writes sent_at, permalink, platform_post_id '
  'and publish_job_id (no grant to pressroom_api); content_items_30_publish_job keeps exactly one pg-boss job per '
  'scheduled edition; content_items_50_check_publishable_* validate scheduled content against the platform''s rules; '
  'content_items_60_record_version_* record versions. Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.content_root_media is
  'A media item of a content root, in position order, used by the editions that do not have their own media. Trigger '
  'content_root_media_20_same_workspace keeps root and media in one workspace; content_root_media_60_media_not_binned '
  'refuses binned media (409 MEDIA_IN_BIN); content_root_media_50_check_publishable re-checks scheduled editions. '
  'Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.content_item_media is
  'A media item of an edition, in position order (frozen from the root''s media by trigger '
  'content_items_40_freeze_media when the edition is made). Trigger content_item_media_20_same_workspace_while_editable '
  'allows changes only while the edition is draft or scheduled and keeps media in its workspace; '
  'content_item_media_60_media_not_binned refuses binned media (409 MEDIA_IN_BIN). Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.content_root_tags is
  'A tag assigned to a content root. Trigger content_root_tags_20_same_workspace keeps tag and root in one workspace '
  '(400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need editor).';
comment on table app.content_root_pillars is
  'A pillar assigned to a content root. Trigger content_root_pillars_20_same_workspace keeps pillar and root in one '
  'workspace (400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need '
  'editor).';
comment on table app.content_root_formats is
  'A format assigned to a content root. Trigger content_root_formats_20_same_workspace keeps format and root in one '
  'workspace (400 VALIDATION_FAILED). Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need '
  'editor).';
comment on table app.content_versions is
  'One version of an edition''s publishable content (caption, thread, settings, media, and the root''s where the edition '
  'inherits them), numbered per edition; several changes in one transaction make one version. Written by the content '
  'triggers; trigger content_versions_10_append_only refuses any change after its transaction (409 VERSION_IMMUTABLE). '
  'Tenant policies of app.apply_tenant_policies (select, insert, update; never deleted by a request).';

comment on function api.create_content(jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content (createContent_v1). Creates a root with one edition per channel, '
  'by intent: draft, schedule (at scheduledAt) or publish_now; with recurrence, a recurring series instead. Validates '
  'every channel against its platform''s rules before scheduling. Requires the editor role; 400 VALIDATION_FAILED with '
  'details.fields (times, channels, media, platform rules), 409 MEDIA_IN_BIN, 409 INTEGRATION_DELETED.';
comment on function api.list_content(jsonb) is
  'Serves GET /v1/workspaces/{workspaceId}/content (listContent_v1). A page of editions filtered by status, workflow '
  'statuses and integration, sorted as asked; with since, the editions changed after it and tombstones of those '
  'deleted after it. Returns items and meta (limit, offset, total, hasMore). Requires the viewer role.';
comment on function api.get_content(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content/{id} (getContent_v1). One live edition with its root, media, '
  'planning metadata and publishing state. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_content(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id} (updateContent_v1). Changes a draft or scheduled edition''s '
  'caption, thread, settings or own media, re-validating scheduled content. Requires the editor role; 404 NOT_FOUND, '
  '400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 MEDIA_IN_BIN.';
comment on function api.delete_content(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/content/{id} (deleteContent_v1). Soft-deletes an edition (a tombstone for '
  'since polling), cancelling its publish job. Requires the editor role; 404 NOT_FOUND, 409 PUBLISHING_IN_PROGRESS and '
  '409 PUBLISHING_AWAITS_CONFIRMATION from trigger content_items_30_publish_job.';
comment on function api.schedule_content(uuid,timestamp with time zone) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/schedule (scheduleContent_v1). Schedules or reschedules a '
  'draft or scheduled edition at a future time, validated against its platform''s rules; the publish job follows in the '
  'same transaction. Requires the editor role; 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED (time in the past, '
  'platform rules), 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION.';
comment on function api.revert_content_to_draft(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/revert-to-draft (revertContentToDraft_v1). Moves every '
  'scheduled edition of the edition''s root back to draft, keeping the time as intended publish time. Requires the '
  'editor role; 400 INVALID_CONTENT_STATUS (not scheduled), 409 REVERT_SCOPE_STALE when expectedRootPostId and '
  'expectedRootEditionIds no longer match, 409 PUBLISHING_IN_PROGRESS, 409 PUBLISHING_AWAITS_CONFIRMATION.';
comment on function api.set_content_intended_publish_time(uuid,timestamp with time zone) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/intended-publish-time (setContentIntendedPublishTime_v1). Sets '
  'or clears the planned time of a draft or pending-approval edition. Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS.';
comment on function api.update_content_metadata(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/metadata (updateContentMetadata_v1). Changes the planning '
  'metadata of the edition''s root: organizational title, campaign and phase, tags, pillars and formats. Requires the '
  'editor role and a draft, scheduled or sent edition; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 '
  'VALIDATION_FAILED, 400 PHASE_NOT_IN_CAMPAIGN.';
comment on function api.update_content_notes(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/notes (updateContentNotes_v1). Sets or clears the internal '
  'notes of the edition''s root, in any status. Requires the editor role; 404 NOT_FOUND.';
comment on function api.list_content_versions(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content/{contentId}/versions (listContentVersions_v1). The edition''s '
  'versions, newest first, marking the current one. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.restore_content_version(uuid,integer,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{contentId}/versions/{version}/restore (restoreContentVersion_v1). '
  'Restores a draft or scheduled edition''s caption, thread, settings and media from a version, recording a new '
  'version. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 409 VERSION_CONFLICT (stale '
  'expectedCurrentVersion), 409 VERSION_MEDIA_UNAVAILABLE, 400 VALIDATION_FAILED.';
comment on function api.content_failed_count() is
  'Serves GET /v1/workspaces/{workspaceId}/content/failed-count (getContentFailedCount_v1). The number of live failed '
  'editions of the workspace. Requires the viewer role.';
comment on function api.content_pending_approval_count() is
  'Serves GET /v1/workspaces/{workspaceId}/content/pending-approval-count (getContentPendingApprovalCount_v1). The '
  'number of live editions awaiting approval in the workspace. Requires the viewer role.';
comment on function api.list_content_roots(integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/content-roots (listContentRoots_v1). A page of live roots with their '
  'editions, most recently changed first, with limit, offset, total and hasMore. Requires the viewer role.';
comment on function api.get_content_root(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/content-roots/{id} (getContentRoot_v1). One live root with its editions and '
  'media. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_content_root(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content-roots/{id} (updateContentRoot_v1). Changes a root''s title, caption '
  'or media, which editions without their own inherit; its scheduled editions are re-validated. Requires the editor '
  'role; 404 NOT_FOUND, 400 VALIDATION_FAILED (details.fields per edition), 409 MEDIA_IN_BIN.';

------------------------------------------------------------------------------
-- Recurring
------------------------------------------------------------------------------
comment on table app.recurring_series is
  'A recurring series of a workspace: its rule (daily, weekly, monthly), time zone and first time (the wall-clock time '
  'kept across daylight-saving changes), intent (draft or schedule) and template, materialized ahead by a job '
  '(app.materialize_due_series). Trigger recurring_series_20_cancel_is_final keeps the rule, zone and first time fixed '
  'and cancellation final (409 SERIES_ALREADY_CANCELLED). Tenant policies of app.apply_tenant_policies (select, insert, '
  'update; never deleted by a request).';
comment on table app.recurring_occurrences is
  'One occurrence of a recurring series, by index and time, with the content root made for it (at most one). Trigger '
  'recurring_occurrences_20_cancel_is_final keeps series, index and time fixed and cancellation final (409 '
  'OCCURRENCE_ALREADY_CANCELLED). Tenant policies of app.apply_tenant_policies (select, insert, update; never deleted '
  'by a request).';

comment on function api.cancel_recurring_occurrence(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/recurring-occurrences/{occurrenceId}/cancel '
  '(cancelRecurringOccurrence_v1). Cancels one occurrence and its draft and scheduled editions, and bumps the series '
  'version. Requires the editor role; 404 NOT_FOUND, 409 SERIES_VERSION_STALE, 409 OCCURRENCE_ALREADY_CANCELLED, 409 '
  'OCCURRENCE_ALREADY_PUBLISHED.';
comment on function api.cancel_recurring_series(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/recurring-series/{seriesId}/cancel (cancelRecurringSeries_v1). '
  'Cancels the series from an occurrence on (by default the first unpublished one): those occurrences and their '
  'draft and scheduled editions; published ones are kept. Requires the editor role; 404 NOT_FOUND, 409 '
  'SERIES_VERSION_STALE, 409 SERIES_ALREADY_CANCELLED.';

------------------------------------------------------------------------------
-- Media
------------------------------------------------------------------------------
comment on table app.media_folders is
  'A media folder of a workspace, at the root or inside a root folder (two levels at most, trigger '
  'media_folders_20_check_depth, 409 FOLDER_DEPTH_EXCEEDED); sibling names unique ignoring case (index '
  'media_folders_sibling_name_key). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_items is
  'A media item of a workspace (image, video or GIF): the bytes'' storage key and what was measured from them, name, '
  'alt text, folder, and state active or deleted (in the bin until delete_after). Trigger '
  'media_items_20_bin_rule_and_measured_fields keeps the bytes'' facts fixed (400 IMMUTABLE_FIELD) and refuses binning '
  'media used by scheduled content (409 MEDIA_IN_USE); media_items_30_delete_only_binned lets only binned items be '
  'deleted (409 MEDIA_NOT_IN_BIN). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_label_groups is
  'An ordered group of media labels in a workspace; names unique per workspace ignoring case (index '
  'media_label_groups_workspace_name_key). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_labels is
  'A media label of a workspace, optionally in a group; a merged label stays as a pointer to the label it was merged '
  'into (merged_into_id), with no group and no assignments, and its name is free again (index '
  'media_labels_workspace_name_key covers live labels only). Tenant policies of app.apply_tenant_policies (writes need '
  'editor).';
comment on table app.media_item_labels is
  'A label assigned to a media item of the same workspace. Trigger media_item_labels_20_check_label refuses a merged '
  'label (409 LABEL_MERGED). Tenant policies of app.apply_tenant_policies (writes need editor).';
comment on table app.media_upload_sessions is
  'One upload of a workspace: the client PUTs its bytes to storage_key through a signed URL until expires_at; '
  'completing it makes the media item whose id is the session''s id (so a retried completion finds the same item). '
  'State pending, completed, aborted or expired. Tenant policies of app.apply_tenant_policies (select, insert, update; '
  'writes need editor).';
comment on table app.media_usage_events is
  'Usage history of a media item: attached, detached, scheduled, unscheduled or published, via an edition or a root. '
  'Written only by the definer triggers content_items_61_usage_on_status_change, '
  'content_item_media_61_usage_on_list_change and content_root_media_61_usage_on_list_change. Tenant policies of '
  'app.apply_tenant_policies (select only for requests).';
comment on table app.media_storage_garbage is
  'A storage key whose bytes must go, written in the transaction that removes the media row or abandons an upload; '
  'the purge job deletes the bytes, then the row. No foreign keys: the bytes outlive the rows. Tenant policies of '
  'app.apply_tenant_policies (select, insert for requests).';
comment on table app.server_secrets is
  'A server-wide secret by name, such as the storage URL signing secret (storage.signing) when SIGNED_URL_SECRET is not '
  'set. Not tenant data: only pressroom_definer reads or writes it (policy server_secrets_definer), through '
  'api.storage_signing_secret.';

comment on function api.init_media_upload(text,text,bigint,uuid,text,integer) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload (initMediaUpload_v1). Opens an upload session for a file of a '
  'declared type and size, optionally into a folder; the server adds the signed upload URL. Requires the editor role; '
  '415 UNSUPPORTED_MEDIA_FORMAT, 413 MEDIA_TOO_LARGE, 400 VALIDATION_FAILED (file name), 404 NOT_FOUND (folder).';
comment on function api.get_media_upload(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/upload/{sessionId} (getMediaUpload_v1). One upload session, saying '
  'whether the caller may upload (editor or above) so that only they get the upload URL again. Requires the viewer '
  'role; 404 NOT_FOUND.';
comment on function api.begin_media_upload_completion(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete (completeMediaUpload_v1), first step. '
  'Locks the session; returns the media item when already completed, else what the server needs to verify the bytes. '
  'Requires the editor role; 404 NOT_FOUND, 409 UPLOAD_SESSION_ABORTED, 410 UPLOAD_SESSION_EXPIRED.';
comment on function api.complete_media_upload(uuid,jsonb,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/complete (completeMediaUpload_v1), second step. '
  'With the facts the server measured from the bytes (type, size, dimensions, duration, checksum, final key), makes '
  'the media item and closes the session. Requires the editor role; 404 NOT_FOUND (no pending session, or folder), 413 '
  'MEDIA_TOO_LARGE.';
comment on function api.abort_media_upload(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/upload/{sessionId}/abort (abortMediaUpload_v1). Aborts a pending '
  'upload and queues its storage keys for the purge job. Requires the editor role; 404 NOT_FOUND, 409 '
  'UPLOAD_SESSION_COMPLETED.';
comment on function api.list_media(jsonb,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media (listMedia_v1). A keyset page of media items filtered by folder, '
  'labels, type, search, favorite, use, state and source, sorted by creation time, file name or size; the server turns '
  'the last key into a signed cursor. Requires the viewer role; 400 VALIDATION_FAILED for contradicting filters.';
comment on function api.get_media(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id} (getMedia_v1). One media item with its labels and use. Requires '
  'the viewer role; 404 NOT_FOUND.';
comment on function api.media_object(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id}/view-url (getMediaViewUrl_v1) and GET '
  '/v1/workspaces/{workspaceId}/media/{id}/download-url (getMediaDownloadUrl_v1). What the server needs to sign a view '
  'or download URL of a media item. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.update_media(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/{id} (updateMedia_v1). Changes an active item''s file name, alt text, '
  'favorite flag or folder. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_BIN, 400 VALIDATION_FAILED.';
comment on function api.delete_media(uuid,integer) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id} (deleteMedia_v1). Moves an item to the bin for the retention '
  'period; an item already in the bin is answered as it is. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_USE '
  'from trigger media_items_20_bin_rule_and_measured_fields.';
comment on function api.restore_media(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/{id}/restore (restoreMedia_v1). Brings an item back from the bin; an '
  'active item is answered as it is. Requires the editor role; 404 NOT_FOUND.';
comment on function api.delete_media_permanently(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id}/permanent (deleteMediaPermanently_v1). Deletes a binned item for '
  'good and queues its bytes for the purge job. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_NOT_IN_BIN.';
comment on function api.empty_media_bin() is
  'Serves POST /v1/workspaces/{workspaceId}/media/bin/empty (emptyMediaBin_v1). Deletes every binned item of the '
  'workspace for good and queues their bytes for the purge job. Requires the editor role.';
comment on function api.bulk_media(text,uuid[],jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/media/bulk-delete (bulkDeleteMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-restore (bulkRestoreMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-delete-forever (bulkDeleteMediaForever_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-move (bulkMoveMedia_v1), '
  'POST /v1/workspaces/{workspaceId}/media/bulk-label (bulkLabelMedia_v1) and '
  'POST /v1/workspaces/{workspaceId}/media/bulk-unlabel (bulkUnlabelMedia_v1), by p_action. One result per id in the '
  'order given, each in its own subtransaction so a refused id does not spoil the others. Requires the editor role; '
  'an unknown action, folder or label refuses the whole request (400 VALIDATION_FAILED, 404 NOT_FOUND, 409 LABEL_MERGED).';
comment on function api.list_media_usage_history(uuid,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media/{id}/usage-history (listMediaUsageHistory_v1). A keyset page of the '
  'item''s usage events, newest first. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.attach_media_labels(uuid,uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/{id}/labels (attachMediaLabels_v1). Adds labels to an active item. '
  'Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 MEDIA_IN_BIN.';
comment on function api.replace_media_labels(uuid,uuid[]) is
  'Serves PUT /v1/workspaces/{workspaceId}/media/{id}/labels (replaceMediaLabels_v1). Sets an active item''s labels to '
  'exactly the list. Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 MEDIA_IN_BIN.';
comment on function api.detach_media_label(uuid,uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/{id}/labels/{labelId} (detachMediaLabel_v1). Takes a label off an '
  'active item. Requires the editor role; 404 NOT_FOUND, 409 MEDIA_IN_BIN.';
comment on function api.list_media_folders(text,jsonb,integer) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders (listMediaFolders_v1). A keyset page of folders by name: all, '
  'root folders (p_parent ''root'') or the subfolders of one. Requires the viewer role; 404 NOT_FOUND (parent).';
comment on function api.create_media_folder(text,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/folders (createMediaFolder_v1). Creates a folder at the root or in a '
  'root folder. Requires the editor role; 404 NOT_FOUND (parent), 409 FOLDER_NAME_TAKEN, 409 FOLDER_DEPTH_EXCEEDED.';
comment on function api.get_media_folder(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders/{id} (getMediaFolder_v1). One folder. Requires the viewer '
  'role; 404 NOT_FOUND.';
comment on function api.update_media_folder(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/folders/{id} (updateMediaFolder_v1). Renames a folder. Requires the '
  'editor role; 404 NOT_FOUND, 409 FOLDER_NAME_TAKEN.';
comment on function api.delete_media_folder(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/folders/{id} (deleteMediaFolder_v1). Deletes a folder and its '
  'subfolders; their media (binned media too) moves to the library root, nothing else is deleted. Requires the editor '
  'role; 404 NOT_FOUND.';
comment on function api.media_folder_path(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/folders/{id}/path (getMediaFolderPath_v1). The folder''s path from the '
  'root: its parent, if any, then the folder. Requires the viewer role; 404 NOT_FOUND.';
comment on function api.move_media_folder(uuid,uuid) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/folders/{id}/move (moveMediaFolder_v1). Moves a folder to the root '
  '(null) or into a root folder. Requires the editor role; 404 NOT_FOUND, 409 FOLDER_NAME_TAKEN, 409 '
  'FOLDER_DEPTH_EXCEEDED from trigger media_folders_20_check_depth.';
comment on function api.list_media_labels(text,boolean,text) is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels (listMediaLabels_v1). The labels by name: of every group, '
  'ungrouped only (p_group '''') or of one group; merged labels on request; optional name search. Requires the viewer '
  'role; 404 NOT_FOUND (group).';
comment on function api.create_media_label(text,text,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/labels (createMediaLabel_v1). Creates a label, optionally in a group. '
  'Requires the editor role; 404 NOT_FOUND (group), 409 LABEL_NAME_TAKEN.';
comment on function api.get_media_label(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/{id} (getMediaLabel_v1). One label. Requires the viewer role; '
  '404 NOT_FOUND.';
comment on function api.update_media_label(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/labels/{id} (updateMediaLabel_v1). Changes a label''s name, color '
  '(null clears) or group (null: ungrouped). Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED, 409 '
  'LABEL_NAME_TAKEN.';
comment on function api.delete_media_label(uuid) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/labels/{id} (deleteMediaLabel_v1). Deletes a label, its assignments '
  'and the labels merged into it, answering how many items it was taken off. Requires the editor role; 404 NOT_FOUND.';
comment on function api.merge_media_labels(uuid,uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/media/labels/{id}/merge (mergeMediaLabels_v1). Merges the source label into '
  'the target: the source''s media get the target label and the source (and its earlier aliases) points at the target. '
  'Requires the editor role; 400 VALIDATION_FAILED (same label), 404 NOT_FOUND, 409 LABEL_MERGED.';
comment on function api.media_label_usage() is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/usage (getMediaLabelUsage_v1). Usage counts per live label '
  '(active and binned media, last assignment), most used first. Requires the viewer role.';
comment on function api.media_label_health() is
  'Serves GET /v1/workspaces/{workspaceId}/media/labels/health (getMediaLabelHealth_v1). What needs tidying: unused '
  'labels, empty groups, labels whose names differ only in case, spacing or punctuation, and how much media is '
  'labeled. Requires the viewer role.';
comment on function api.list_media_label_groups() is
  'Serves GET /v1/workspaces/{workspaceId}/media/label-groups (listMediaLabelGroups_v1). The label groups in their '
  'order. Requires the viewer role.';
comment on function api.create_media_label_group(text) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups (createMediaLabelGroup_v1). Creates a group, placed '
  'last. Requires the editor role; 409 LABEL_GROUP_NAME_TAKEN.';
comment on function api.get_media_label_group(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/media/label-groups/{id} (getMediaLabelGroup_v1). One label group. Requires '
  'the viewer role; 404 NOT_FOUND.';
comment on function api.update_media_label_group(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/media/label-groups/{id} (updateMediaLabelGroup_v1). Renames a group. '
  'Requires the editor role; 404 NOT_FOUND, 409 LABEL_GROUP_NAME_TAKEN.';
comment on function api.delete_media_label_group(uuid,text) is
  'Serves DELETE /v1/workspaces/{workspaceId}/media/label-groups/{id} (deleteMediaLabelGroup_v1). Deletes a group; '
  'p_labels ''ungroup'' keeps its labels without a group, ''delete'' deletes them and their assignments. Requires the '
  'editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED.';
comment on function api.reorder_media_label_groups(uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups/reorder (reorderMediaLabelGroups_v1). Sets the order of '
  'the groups; the list must name every group of the workspace exactly once, else 409 LABEL_GROUPS_CHANGED (a stale '
  'list is refused rather than half applied). Requires the editor role.';
comment on function api.move_media_labels_to_group(uuid,uuid[]) is
  'Serves POST /v1/workspaces/{workspaceId}/media/label-groups/{id}/labels (moveMediaLabelsToGroup_v1) and POST '
  '/v1/workspaces/{workspaceId}/media/label-groups/ungroup-labels (ungroupMediaLabels_v1, p_group_id null). Moves '
  'labels into a group, or out of any group. Requires the editor role; 404 NOT_FOUND, 409 LABEL_MERGED.';
comment on function api.storage_upload_session(uuid) is
  'Called by the storage router (server/storage/router.ts) for PUT /storage/v1/uploads/{sessionId}, outside any '
  'request transaction, once the URL''s signature is checked: whether the upload may still receive bytes (state, '
  'expiry, declared size and type); null for no such session. Owned by pressroom_definer, executable by pressroom_app '
  'only.';
comment on function api.storage_media_object(uuid) is
  'Called by the storage router (server/storage/router.ts) for GET /storage/v1/media/{mediaId}, outside any request '
  'transaction, once the URL''s signature is checked: the object behind a signed view or download URL; null once '
  'deleted for good. Owned by pressroom_definer, executable by pressroom_app only.';
comment on function api.storage_signing_secret(bytea) is
  'Called by the URL signer (server/storage/signing.ts) when SIGNED_URL_SECRET is not configured: stores the first '
  'process''s random candidate in app.server_secrets and returns the stored value, so every process signs alike. '
  'Owned by pressroom_definer, executable by pressroom_app only.';

------------------------------------------------------------------------------
-- Publishing
------------------------------------------------------------------------------
comment on table app.publishing_states is
  'The publishing state of a scheduled edition''s current run (publishing, retrying, awaiting_confirmation, failed, '
  'published) and the job it belongs to; a new job (reschedule, publish, retry) starts a new run. Written by the '
  'publishing engine (pressroom_worker and its definer functions) only; tenant policies of app.apply_tenant_policies '
  'let requests read.';
comment on table app.publish_attempts is
  'One attempt to publish an edition, recorded before the platform is called (so a worker killed mid-publish never '
  'publishes twice), with its job, idempotency token and outcome (published, failed, transient, unknown, or resolved). '
  'Written by the publishing engine only; tenant policies of app.apply_tenant_policies let requests read.';
comment on table app.published_captions is
  'The caption of a sent edition as last edited on its platform, with the number of edits (api.record_published_caption, '
  'through app.publishing_set_caption). Written by definer functions and the engine only; tenant policies of '
  'app.apply_tenant_policies let requests read.';
comment on table app.sandbox_posts is
  'What the sandbox platform received: one post per integration and idempotency token, counting repeated deliveries and '
  'caption edits. Written by the publishing engine''s sandbox connector only; tenant policies of '
  'app.apply_tenant_policies let requests read (api.list_sandbox_posts).';

comment on function api.publish_content(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/publish (publishContent_v1). Moves a draft or scheduled edition '
  'to scheduled now, validated against its platform''s rules, and starts a new publishing run. Requires the editor role; '
  '404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED, 409 PUBLISHING_AWAITS_CONFIRMATION, 409 '
  'PUBLISHING_IN_PROGRESS.';
comment on function api.retry_content(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/retry (retryContent_v1). Moves a failed edition to scheduled '
  'now, clearing its error, and starts a new publishing run. Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS, 400 VALIDATION_FAILED.';
comment on function api.resolve_publishing_result(uuid,jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/content/{id}/resolve-publishing-result (resolvePublishingResult_v1). Records '
  'the outcome (published or failed) of an edition whose last attempt''s outcome is unknown, through the engine''s '
  'app.publishing_resolve. Requires the editor role; 404 NOT_FOUND, 400 VALIDATION_FAILED, 409 NOTHING_TO_RESOLVE.';
comment on function api.published_caption_target(uuid) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/published-caption (updatePublishedCaption_v1), first step: '
  'checks only, and returns what the connector needs; the route then calls the connector and '
  'api.record_published_caption. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS (not sent), 409 '
  'CAPTION_EDIT_NOT_SUPPORTED, 409 INTEGRATION_UNAVAILABLE.';
comment on function api.record_published_caption(uuid,text) is
  'Serves PATCH /v1/workspaces/{workspaceId}/content/{id}/published-caption (updatePublishedCaption_v1), second step: '
  'records the caption the platform accepted (app.published_captions). Requires the editor role; 404 NOT_FOUND, 400 '
  'INVALID_CONTENT_STATUS.';
comment on function api.list_sandbox_posts(uuid,integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/integrations/{id}/sandbox/posts (listSandboxPosts_v1). A page of what a '
  'sandbox integration received, oldest first, with the total. Requires the viewer role; 404 NOT_FOUND (no such '
  'sandbox integration).';

------------------------------------------------------------------------------
-- Articles
------------------------------------------------------------------------------
comment on table app.articles is
  'A long-form article for X: one per edition of kind article (content_item_id), with its sanitized HTML body, title, '
  'cover, a body version that guards concurrent edits, and the platform draft last sent. Trigger '
  'articles_20_draft_only_and_media_rules allows edits of draft articles only (400 INVALID_CONTENT_STATUS), bumps '
  'body_version and checks its media; articles_30_sync_images_* keep app.article_images in step. Tenant policies of '
  'app.apply_tenant_policies (writes need editor).';
comment on table app.article_images is
  'An inline image of an article body, by position (up to 20), referring to a media item of the workspace. Written by '
  'triggers articles_30_sync_images_*; trigger article_images_20_check_image allows draft articles only and checks the '
  'media. Tenant policies of app.apply_tenant_policies (select, insert, delete; writes need editor).';

comment on function api.list_articles(integer,bigint) is
  'Serves GET /v1/workspaces/{workspaceId}/articles (listArticles_v1). A page of live articles, most recently changed '
  'first, with limit, offset, total and hasMore. Requires the viewer role.';
comment on function api.get_article(uuid) is
  'Serves GET /v1/workspaces/{workspaceId}/articles/{contentId} (getArticle_v1). One live article with its body. '
  'Requires the viewer role; 404 NOT_FOUND.';
comment on function api.create_article(jsonb) is
  'Serves POST /v1/workspaces/{workspaceId}/articles (createArticle_v1). Creates a draft article (a root, an edition of '
  'kind article and the article) from a body the server sanitized, with the server''s findings on it. Requires the '
  'editor role; 400 VALIDATION_FAILED with details.fields (channel, title, media, body).';
comment on function api.update_article(uuid,jsonb) is
  'Serves PATCH /v1/workspaces/{workspaceId}/articles/{contentId} (updateArticle_v1). Changes a draft article''s title, '
  'body (with expectedBodyVersion) or cover. Requires the editor role; 404 NOT_FOUND, 400 INVALID_CONTENT_STATUS, 400 '
  'VALIDATION_FAILED, 409 POST_BODY_CHANGED when the body changed since expectedBodyVersion.';
comment on function api.begin_article_platform_draft(uuid) is
  'Serves POST /v1/workspaces/{workspaceId}/articles/{contentId}/platform-draft (createArticlePlatformDraft_v1), first '
  'step: the article with its media, its integration (secret included, for the connector), the content''s fingerprint, '
  'and the draft already made when the content has not changed since. Requires the editor role; 404 NOT_FOUND.';
comment on function api.record_article_platform_draft(uuid,text,text,text) is
  'Serves POST /v1/workspaces/{workspaceId}/articles/{contentId}/platform-draft (createArticlePlatformDraft_v1), second '
  'step: records the platform''s draft id and URL with the fingerprint of the content sent. Requires the editor role; '
  '404 NOT_FOUND.';

------------------------------------------------------------------------------
-- Audit
------------------------------------------------------------------------------
comment on table audit.api_calls is
  'One row per call to /v1, failures included: actor, organization, workspace, method, route template, status, '
  'duration, outcome, error code and request id, written by audit.record after the request''s own transaction. '
  'Partitioned by month (audit.ensure_partitions, run by a daily job, makes the partitions ahead). Append-only: triggers '
  'api_calls_10_append_only and api_calls_10_append_only_truncate refuse UPDATE, DELETE and TRUNCATE (409 '
  'AUDIT_APPEND_ONLY); only pressroom_definer inserts and reads it (policies api_calls_definer_insert, '
  'api_calls_definer_select); BI reads reporting.api_calls.';

--! split: 70-settings.sql
-- Settings in SQL: the rules read what is in force from one table.
--
-- The server writes its configuration here at start (api.apply_settings, as
-- pressroom_app); the rules read it with app.setting(). Before, sign-up
-- policy, trial length, session lifetime, rate limits and the publishing
-- retry policy arrived as arguments of each call, so a rule's outcome
-- depended on which caller passed what. The functions that took them keep
-- their bodies under app.*_with_* names; the api and engine entry points read
-- the settings and call them. Defaults here equal the server's (README.md,
-- "Configuration").

create table app.settings (
  key text primary key check (key ~ '^[a-z][a-z0-9_]*$'),
  value jsonb not null,
  kind text not null check (kind in ('boolean', 'integer', 'plan')),
  minimum int,
  description text not null,
  updated_at timestamptz not null default now(),
  check (kind = 'boolean' and jsonb_typeof(value) = 'boolean'
      or kind = 'integer' and jsonb_typeof(value) = 'number' and value::text ~ '^\d+$' and value::numeric >= coalesce(minimum, 0)
      or kind = 'plan' and value #>> '{}' in ('trial', 'basic', 'standard', 'premium'))
);
comment on table app.settings is
  'The configuration the rules read (app.setting). Written by the server at start through api.apply_settings from its '
  'environment (README.md, "Configuration"); readable by the roles that run rules, by BI through nothing.';
alter table app.settings enable row level security;
alter table app.settings force row level security;
create policy settings_read on app.settings for select to pressroom_api, pressroom_worker using (true);
create policy settings_definer on app.settings to pressroom_definer using (true) with check (true);
grant select on app.settings to pressroom_api, pressroom_worker, pressroom_definer;
grant update (value, updated_at) on app.settings to pressroom_definer;

insert into app.settings (key, value, kind, minimum, description) values
  ('allow_signup', 'false', 'boolean', null, 'Sign-up is open after the first organization exists (ALLOW_SIGNUP).'),
  ('default_plan', '"trial"', 'plan', null, 'Plan of organizations made by sign-up (DEFAULT_PLAN).'),
  ('trial_days', '3', 'integer', 0, 'Length of the trial plan in days (TRIAL_DAYS).'),
  ('session_ttl_seconds', '604800', 'integer', 60, 'Lifetime of a session token (SESSION_TTL_SECONDS).'),
  ('rate_limit_read', '120', 'integer', 1, 'Read calls per workspace and minute (RATE_LIMIT_READ).'),
  ('rate_limit_write', '30', 'integer', 1, 'Write calls per workspace and minute (RATE_LIMIT_WRITE).'),
  ('rate_limit_expensive', '15', 'integer', 1, 'Expensive calls per workspace and minute (RATE_LIMIT_EXPENSIVE).'),
  ('publish_max_attempts', '5', 'integer', 1, 'Attempts of a transiently failing publish before it fails (PUBLISH_MAX_ATTEMPTS).'),
  ('publish_retry_base_ms', '1000', 'integer', 1, 'First retry delay of a publish, doubled per attempt (PUBLISH_RETRY_BASE_MS).');

create function app.setting(p_key text) returns jsonb
language sql stable parallel safe
set search_path = pg_catalog
as $$ select value from app.settings where key = p_key $$;
comment on function app.setting(text) is 'The value in force of a setting (app.settings), or null for an unknown key.';

create function app.setting_int(p_key text) returns int
language plpgsql stable
set search_path = pg_catalog
as $$
declare
  v jsonb := app.setting(p_key);
begin
  if v is null or jsonb_typeof(v) <> 'number' then
    raise exception 'app.setting_int: % is not an integer setting', p_key;
  end if;
  return v::text::int;
end
$$;
comment on function app.setting_int(text) is 'An integer setting; raises for an unknown key.';
grant execute on function app.setting(text), app.setting_int(text) to pressroom_api, pressroom_worker, pressroom_definer;

-- Writes the settings the server was started with. Unknown keys and values of
-- the wrong kind are refused (400 VALIDATION_FAILED) and nothing is written.
create function api.apply_settings(p_settings jsonb) returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
declare
  v_key text;
  v_value jsonb;
  v_problems jsonb := '[]';
  v_row app.settings;
begin
  if jsonb_typeof(p_settings) is distinct from 'object' then
    perform app.raise(400, 'VALIDATION_FAILED', 'Settings are a JSON object.');
  end if;
  for v_key, v_value in select * from jsonb_each(p_settings) loop
    select * into v_row from app.settings where key = v_key;
    if v_row.key is null then
      v_problems := v_problems || jsonb_build_array(app.field_problem(v_key, 'unknown_setting', 'is not a setting'));
    elsif not (v_row.kind = 'boolean' and jsonb_typeof(v_value) = 'boolean'
            or v_row.kind = 'integer' and jsonb_typeof(v_value) = 'number' and v_value::text ~ '^\d+$'
               and v_value::numeric >= coalesce(v_row.minimum, 0)
            or v_row.kind = 'plan' and v_value #>> '{}' in ('trial', 'basic', 'standard', 'premium')) then
      v_problems := v_problems || jsonb_build_array(app.field_problem(v_key, 'invalid', format('must be a %s%s', v_row.kind,
        case when v_row.minimum is not null then format(' of at least %s', v_row.minimum) else '' end)));
    end if;
  end loop;
  if jsonb_array_length(v_problems) > 0 then
    perform app.raise_field_problems(v_problems);
  end if;
  update app.settings s set value = p_settings -> s.key, updated_at = now()
  where p_settings ? s.key and s.value is distinct from p_settings -> s.key;
  return (select jsonb_object_agg(key, value order by key) from app.settings);
end
$$;
alter function api.apply_settings(jsonb) owner to pressroom_definer;
revoke all on function api.apply_settings(jsonb) from public;
grant execute on function api.apply_settings(jsonb) to pressroom_app;
comment on function api.apply_settings(jsonb) is
  'Called by the server at start (as pressroom_app) with its configuration: writes the given settings after checking '
  'every key and value (400 VALIDATION_FAILED otherwise); returns every setting in force.';

------------------------------------------------------------------------------
-- The gate: the rate limit of a class is a setting.
------------------------------------------------------------------------------
alter function api.gate(bytea, uuid, text, int, text, text) set schema app;
alter function app.gate(bytea, uuid, text, int, text, text) rename to gate_with_limit;
revoke all on function app.gate_with_limit(bytea, uuid, text, int, text, text) from pressroom_app, pressroom_request;
comment on function app.gate_with_limit(bytea, uuid, text, int, text, text) is
  'The gate''s body (authentication, workspace grant, plan, rate limit) with the limit given; called by api.gate.';

create function api.gate(
  p_token_hash bytea,
  p_workspace_id uuid,
  p_class text,
  p_min_plan text default 'basic',
  p_bucket text default null)
returns jsonb
language plpgsql volatile security definer
set search_path = pg_catalog, app
as $$
begin
  if p_class not in ('read', 'write', 'expensive') then
    raise exception 'api.gate: unknown throttle class %', p_class;
  end if;
  return app.gate_with_limit(p_token_hash, p_workspace_id, p_class, app.setting_int('rate_limit_' || p_class),
                             p_min_plan, p_bucket);
end
$$;
alter function api.gate(bytea, uuid, text, text, text) owner to pressroom_definer;
revoke all on function api.gate(bytea, uuid, text, text, text) from public;
grant execute on function api.gate(bytea, uuid, text, text, text) to pressroom_app, pressroom_request;
comment on function api.gate(bytea, uuid, text, text, text) is
  'Runs first for every /v1 and /v2 call (server/http/pipeline.ts), as pressroom_app: authenticates the bearer token '
  '(session or API key), checks the workspace grant and the plan, and counts the rate limit of the operation''s class '
  'with the limit in force (app.settings rate_limit_<class>). Returns the principal, the workspace role and the rate '
  'state, or the error to answer (401 UNAUTHENTICATED, PLAN_REQUIRED; 403 WORKSPACE_FORBIDDEN; 429 RATE_LIMITED).';

------------------------------------------------------------------------------
-- Sign-up and sign-in: policy, plan, trial and session lifetime are settings.
------------------------------------------------------------------------------
alter function api.signup(text, text, text, text, bytea, int, boolean, text, int) set schema app;
alter function app.signup(text, text, text, text, bytea, int, boolean, text, int) rename to signup_with_policy;
revoke all on function app.signup_with_policy(text, text, text, text, bytea, int, boolean, text, int) from pressroom_request;
comment on function app.signup_with_policy(text, text, text, text, bytea, int, boolean, text, int) is
  'Sign-up''s body with the policy given; called by api.signup with the settings in force.';

create function api.signup(p_email text, p_password_hash text, p_organization_name text, p_workspace_name text,
  p_session_token_hash bytea)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.signup_with_policy(p_email, p_password_hash, p_organization_name, p_workspace_name, p_session_token_hash,
    app.setting_int('session_ttl_seconds'), (app.setting('allow_signup'))::text::boolean,
    app.setting('default_plan') #>> '{}', app.setting_int('trial_days'))
$$;
alter function api.signup(text, text, text, text, bytea) owner to pressroom_definer;
revoke all on function api.signup(text, text, text, text, bytea) from public;
grant execute on function api.signup(text, text, text, text, bytea) to pressroom_request;
comment on function api.signup(text, text, text, text, bytea) is
  'Serves POST /v1/auth/signup (signup_v1): creates an organization with the plan in force (default_plan, trial_days), '
  'its owner, a first workspace and a session. After the first organization, refused with 403 SIGNUP_CLOSED unless '
  'allow_signup is on.';

alter function api.create_session(uuid, text, bytea, int) set schema app;
alter function app.create_session(uuid, text, bytea, int) rename to create_session_with_ttl;
revoke all on function app.create_session_with_ttl(uuid, text, bytea, int) from pressroom_request;
comment on function app.create_session_with_ttl(uuid, text, bytea, int) is
  'Sign-in''s session creation with the lifetime given; called by api.create_session.';

create function api.create_session(p_user_id uuid, p_verified_hash text, p_token_hash bytea)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.create_session_with_ttl(p_user_id, p_verified_hash, p_token_hash, app.setting_int('session_ttl_seconds'))
$$;
alter function api.create_session(uuid, text, bytea) owner to pressroom_definer;
revoke all on function api.create_session(uuid, text, bytea) from public;
grant execute on function api.create_session(uuid, text, bytea) to pressroom_request;
comment on function api.create_session(uuid, text, bytea) is
  'Serves POST /v1/auth/login (login_v1) once the server verified the password against the hash it read: opens a '
  'session of the lifetime in force (session_ttl_seconds).';

------------------------------------------------------------------------------
-- The publishing engine: the retry policy is a setting, and a channel that is
-- disconnected or deleted fails the edition here, not in the worker.
------------------------------------------------------------------------------
alter function app.publish_record(uuid, text, text, text, text, int, int) rename to publish_record_with_policy;
comment on function app.publish_record_with_policy(uuid, text, text, text, text, int, int) is
  'Records a publish attempt''s outcome with the retry policy given; called by app.publish_record.';

create function app.publish_record(p_attempt_id uuid, p_outcome text, p_error text, p_platform_post_id text,
  p_permalink text)
returns jsonb
language sql volatile security definer
set search_path = pg_catalog, app
as $$
  select app.publish_record_with_policy(p_attempt_id, p_outcome, p_error, p_platform_post_id, p_permalink,
    app.setting_int('publish_max_attempts'), app.setting_int('publish_retry_base_ms'))
$$;
alter function app.publish_record(uuid, text, text, text, text) owner to pressroom_definer;
revoke all on function app.publish_record(uuid, text, text, text, text) from public;
grant execute on function app.publish_record(uuid, text, text, text, text) to pressroom_worker;
comment on function app.publish_record(uuid, text, text, text, text) is
  'The engine records what the platform answered for a claimed attempt (published, failed, transient, unknown): '
  'statuses, retries with exponential backoff (publish_max_attempts, publish_retry_base_ms), awaiting confirmation.';

alter function app.publish_claim(uuid, uuid, text[]) rename to publish_claim_attempt;
comment on function app.publish_claim_attempt(uuid, uuid, text[]) is
  'Claims a due edition for a publish job and commits the attempt before the platform is called; called by '
  'app.publish_claim.';

create function app.publish_claim(p_content_id uuid, p_job_id uuid, p_resendable text[]) returns jsonb
language plpgsql volatile
set search_path = pg_catalog, app
as $$
declare
  v_claim jsonb := app.publish_claim_attempt(p_content_id, p_job_id, p_resendable);
  v_integration jsonb := v_claim #> '{edition,integration}';
begin
  if v_claim ->> 'action' = 'send'
     and ((v_integration ->> 'deleted')::boolean or v_integration ->> 'status' = 'disconnected') then
    -- Nothing to send to: a permanent failure, recorded at once.
    perform app.publish_record((v_claim ->> 'attemptId')::uuid, 'failed', 'The channel was disconnected or deleted.',
      null, null);
    return jsonb_build_object('action', 'skip', 'reason', 'channel_unavailable');
  end if;
  return v_claim;
end
$$;
revoke all on function app.publish_claim(uuid, uuid, text[]) from public;
grant execute on function app.publish_claim(uuid, uuid, text[]) to pressroom_worker, pressroom_definer;
comment on function app.publish_claim(uuid, uuid, text[]) is
  'The engine''s claim of a due edition (app.publish_claim_attempt); an edition whose channel is disconnected or '
  'deleted fails permanently here instead of being sent.';

--! split: 90-harden-api-functions.sql
-- Every api function runs as pressroom_api (see 10-api-role-and-helpers.sql).
-- Each migration that adds api functions ends with this call.
select app.harden_api_functions();
