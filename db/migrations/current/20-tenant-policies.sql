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
